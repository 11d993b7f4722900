//! Bundles: statically typed groups of components inserted or removed together.

use crate::component::{Component, ComponentId, Components, StorageKind};
use crate::error::{EngineError, Result};

/// A group of components: a single component or a tuple of up to 12.
///
/// # Safety
/// `put` must call `f` exactly once per component, in the order of `register`, with a pointer to
/// a valid value that the callee takes ownership of; `take` must read values in that order.
pub unsafe trait Bundle: Send + Sync + 'static {
    /// Registers the component types, pushing their ids in bundle order.
    fn register(components: &mut Components, out: &mut Vec<ComponentId>) -> Result<()>;

    /// Moves each component out, in bundle order: `f(i, ptr, size_of)`; the callee owns the
    /// value. The size is a compile-time constant, so copies made with it inline.
    fn put(self, f: impl FnMut(usize, *const u8, usize));

    /// Rebuilds the bundle by moving each component out of `f(i)`.
    ///
    /// # Safety
    /// `f(i)` must return a pointer to a valid value of the i-th component, which the caller
    /// gives up (it must not drop it afterwards).
    unsafe fn take(f: impl FnMut(usize) -> *const u8) -> Self;
}

// SAFETY: one component, put and taken once.
unsafe impl<C: Component> Bundle for C {
    fn register(components: &mut Components, out: &mut Vec<ComponentId>) -> Result<()> {
        out.push(components.register::<C>()?);
        Ok(())
    }

    #[inline]
    fn put(self, mut f: impl FnMut(usize, *const u8, usize)) {
        let v = std::mem::ManuallyDrop::new(self);
        f(0, &*v as *const C as *const u8, std::mem::size_of::<C>());
    }

    #[inline]
    unsafe fn take(mut f: impl FnMut(usize) -> *const u8) -> Self {
        // SAFETY: forwarded from the caller's contract.
        unsafe { std::ptr::read(f(0) as *const C) }
    }
}

macro_rules! tuple_bundle {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: each element is put and taken once, in declaration order.
        unsafe impl<$($name: Component),*> Bundle for ($($name,)*) {
            #[allow(unused_variables)]
            fn register(components: &mut Components, out: &mut Vec<ComponentId>) -> Result<()> {
                $(out.push(components.register::<$name>()?);)*
                Ok(())
            }

            #[inline]
            #[allow(non_snake_case, unused_variables, unused_mut)]
            fn put(self, mut f: impl FnMut(usize, *const u8, usize)) {
                let v = std::mem::ManuallyDrop::new(self);
                $(f($idx, &v.$idx as *const $name as *const u8, std::mem::size_of::<$name>());)*
            }

            #[inline]
            #[allow(unused_variables, unused_mut, unused_unsafe, clippy::unused_unit)]
            unsafe fn take(mut f: impl FnMut(usize) -> *const u8) -> Self {
                // SAFETY: forwarded from the caller's contract.
                unsafe { ($(std::ptr::read(f($idx) as *const $name),)*) }
            }
        }
    };
}

tuple_bundle!();
tuple_bundle!(A 0);
tuple_bundle!(A 0, B 1);
tuple_bundle!(A 0, B 1, C 2);
tuple_bundle!(A 0, B 1, C 2, D 3);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// What the world caches about a bundle type: its component ids, which of them live in
/// tables, and which in sparse sets.
#[derive(Clone, Debug)]
pub(crate) struct BundleInfo {
    /// Ids in bundle order.
    pub ids: Box<[ComponentId]>,
    /// The table-stored ids, sorted.
    pub table_ids: Box<[ComponentId]>,
    /// Whether any component is sparse.
    pub has_sparse: bool,
}

impl BundleInfo {
    pub(crate) fn new(ids: Vec<ComponentId>, components: &Components) -> Result<BundleInfo> {
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(EngineError::Invalid(format!(
                "component '{}' appears twice in one bundle",
                components.info(w[0]).name()
            )));
        }
        let table_ids: Box<[ComponentId]> =
            sorted.iter().copied().filter(|&c| components.info(c).storage() == StorageKind::Table).collect();
        let has_sparse = table_ids.len() != ids.len();
        Ok(BundleInfo { ids: ids.into_boxed_slice(), table_ids, has_sparse })
    }
}
