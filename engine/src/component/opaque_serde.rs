//! Serde functions for opaque components, registered per Rust type.
//!
//! An opaque component has no schema, so the engine cannot write its bytes: they may hold
//! pointers. A program that wants such a component in its snapshots registers the type's
//! serde implementation with [`World::register_opaque_serde`](crate::World::register_opaque_serde);
//! the world keeps type-erased
//! functions that encode one value (bincode, the body's configuration) and decode one value
//! into storage.

use std::any::TypeId;
use std::mem::ManuallyDrop;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::component::TypeIdMap;
use crate::error::Result;

/// Encodes the value at the pointer, appending the bytes.
type EncodeFn = unsafe fn(*const u8, &mut Vec<u8>) -> Result<(), String>;
/// Decodes one value and hands a pointer to it to the callback, which takes ownership.
type DecodeFn = fn(&[u8], &mut dyn FnMut(*const u8)) -> Result<(), String>;

/// The serde functions of one opaque type.
#[derive(Clone, Copy)]
pub(crate) struct OpaqueSerde {
    pub(crate) encode: EncodeFn,
    pub(crate) decode: DecodeFn,
}

/// A world's registered opaque serde functions, by Rust type.
#[derive(Clone, Default)]
pub(crate) struct OpaqueSerdes {
    by_type: TypeIdMap<OpaqueSerde>,
}

impl std::fmt::Debug for OpaqueSerdes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpaqueSerdes({} types)", self.by_type.len())
    }
}

impl OpaqueSerdes {
    pub(crate) fn get(&self, ty: Option<TypeId>) -> Option<&OpaqueSerde> {
        self.by_type.get(&ty?)
    }
}

/// Decodes a bincode blob of one value, reading nothing past it and allocating nothing by a
/// claimed length beyond a small multiple of the blob's size.
pub(crate) fn decode_value<T: DeserializeOwned>(blob: &[u8]) -> Result<T, String> {
    use bincode::config::{Config, standard};
    fn run<T: DeserializeOwned>(blob: &[u8], cfg: impl Config) -> Result<T, String> {
        let (v, used) = bincode::serde::borrow_decode_from_slice::<T, _>(blob, cfg).map_err(|e| e.to_string())?;
        if used != blob.len() {
            return Err(format!("{} trailing bytes after the value", blob.len() - used));
        }
        Ok(v)
    }
    // bincode sizes an owned string or byte buffer by its claimed length before reading it;
    // the limit (the smallest class ≥ 16 × the blob) bounds that claim by the input.
    let base = standard().with_little_endian().with_fixed_int_encoding();
    match blob.len() {
        n if n <= 1 << 12 => run(blob, base.with_limit::<{ 1 << 16 }>()),
        n if n <= 1 << 16 => run(blob, base.with_limit::<{ 1 << 20 }>()),
        n if n <= 1 << 20 => run(blob, base.with_limit::<{ 1 << 24 }>()),
        n if n <= 1 << 24 => run(blob, base.with_limit::<{ 1 << 28 }>()),
        _ => run(blob, base.with_limit::<{ usize::MAX / 2 }>()),
    }
}

/// Encodes one value with the configuration [`decode_value`] reads.
pub(crate) fn encode_value<T: Serialize>(v: &T, out: &mut Vec<u8>) -> Result<(), String> {
    let cfg = bincode::config::standard().with_little_endian().with_fixed_int_encoding();
    bincode::serde::encode_into_std_write(v, out, cfg).map(|_| ()).map_err(|e| e.to_string())
}

/// # Safety
/// `ptr` must point to a valid `T`.
unsafe fn encode_erased<T: Serialize>(ptr: *const u8, out: &mut Vec<u8>) -> Result<(), String> {
    // SAFETY: forwarded from the caller's contract.
    let v = unsafe { &*(ptr as *const T) };
    encode_value(v, out)
}

fn decode_erased<T: DeserializeOwned>(blob: &[u8], put: &mut dyn FnMut(*const u8)) -> Result<(), String> {
    let v = ManuallyDrop::new(decode_value::<T>(blob)?);
    // `put` moves the value out; `ManuallyDrop` keeps it from being dropped here too.
    put(&*v as *const T as *const u8);
    Ok(())
}

impl OpaqueSerdes {
    /// Keeps `T`'s serde functions (replacing any kept before).
    pub(crate) fn insert<T: Serialize + DeserializeOwned + 'static>(&mut self) {
        self.by_type.insert(TypeId::of::<T>(), OpaqueSerde { encode: encode_erased::<T>, decode: decode_erased::<T> });
    }
}
