//! The on-disk format: the fixed header and the serde types of the body.
//!
//! ```text
//! offset  size  field
//!      0     8  magic            89 45 43 53 44 42 0D 0A  ("\x89ECSDB\r\n")
//!      8     4  format version   u32 LE (3; 2 and 1 are read too)
//!     12     4  flags            u32 LE (bit 0: change ticks saved; other bits must be 0)
//!     16     8  body length      u64 LE
//!     24     4  body checksum    u32 LE, CRC-32 (IEEE) of the body
//!     28     4  header checksum  u32 LE, CRC-32 of bytes 0..28
//!     32     …  body             bincode 2 (serde, little-endian, fixed-width integers)
//! ```
//!
//! The body is one [`Body`]: world tick, catalog, allocator, tables, sparse sets and index
//! definitions, then (since version 2, and absent from version 1 bodies) the schedule section:
//! version u32, systems [name, phase, after [name], before [name], kind u8 (0 text, 1 Rust),
//! text], fixed_hz u32, accumulator_ns u64, tick u64, time_ns u64; then (since version 3) the
//! field defaults section: version u32, [component position u32, field position u32, value
//! (length u64, the field's stored bytes: a plain field's little-endian value, a string
//! field's UTF-8)]. Byte runs ([`Bytes`]) are length-prefixed and borrowed straight out of the
//! input when loading, so decoding allocates nothing in proportion to claimed lengths.
//! Every enum code (field types, storage kinds) is written by this module's own tables, so
//! reordering an engine enum never changes the format.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::component::{FieldType, StorageKind};
use crate::entity::Entity;

/// The first eight bytes of every snapshot (PNG-style: a high byte, the name, CR LF).
pub const MAGIC: [u8; 8] = *b"\x89ECSDB\r\n";
/// The format version this build writes. It reads this one and every older one: version 3
/// added the field defaults section at the end of the body, version 2 the schedule section
/// before it (older bodies load with no defaults and an empty schedule).
pub const FORMAT_VERSION: u32 = 3;
/// Version of the field defaults section.
pub(crate) const DEFAULTS_SECTION_VERSION: u32 = 1;
/// The oldest format version this build reads.
pub const OLDEST_FORMAT_VERSION: u32 = 1;
/// Version of the `schedule` section.
pub(crate) const SCHEDULE_SECTION_VERSION: u32 = 1;
/// Bytes before the body.
pub const HEADER_LEN: usize = 32;
/// Flag bit: every column carries its added/changed ticks.
pub(crate) const FLAG_TICKS: u32 = 1;
/// Flags this build understands.
pub(crate) const KNOWN_FLAGS: u32 = FLAG_TICKS;
/// Version of the `index_definitions` section: 1 holds index definitions only; 2 may also hold
/// reference declarations (kind `reference`). A world without references writes 1, so its
/// files stay readable by builds that know only 1; a build that knows 1 refuses a 2 rather
/// than silently dropping constraints.
pub(crate) const INDEX_SECTION_VERSION: u32 = 1;
/// The section version written when the world declares references.
pub(crate) const INDEX_SECTION_VERSION_REFERENCES: u32 = 2;

/// The header fields, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub version: u32,
    pub flags: u32,
    pub body_len: u64,
    pub body_crc: u32,
}

impl Header {
    pub(crate) fn to_bytes(self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&self.version.to_le_bytes());
        h[12..16].copy_from_slice(&self.flags.to_le_bytes());
        h[16..24].copy_from_slice(&self.body_len.to_le_bytes());
        h[24..28].copy_from_slice(&self.body_crc.to_le_bytes());
        let crc = crc32fast::hash(&h[0..28]);
        h[28..32].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The bincode configuration whose layout of [`Body`] is the format (the snapshot code
/// writes and reads that layout by hand; tests check both agree with bincode).
#[cfg(test)]
pub(crate) fn body_config() -> impl bincode::config::Config {
    bincode::config::standard().with_little_endian().with_fixed_int_encoding().with_limit::<{ usize::MAX / 2 }>()
}

// ----- borrowed byte runs and strings --------------------------------------------------------

/// A length-prefixed byte run.
///
/// Runs decoded from memory are borrowed from the input. The loader leaves long runs where
/// they are ([`Bytes::Deferred`]): their checksum is taken, and a file's bytes are read,
/// only when they are copied into their destination, so the data is touched once.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Bytes<'a> {
    /// In memory.
    Mem(Cow<'a, [u8]>),
    /// Not read (or not checksummed) yet.
    Deferred(Deferred<'a>),
}

/// A run whose bytes the loader has not taken yet.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deferred<'a> {
    /// Offset in the body.
    pub at: u64,
    /// Length in bytes.
    pub len: usize,
    /// The run's slot in the load's checksum plan.
    pub slot: u32,
    /// The bytes, when the body is in memory; `None` when they are still in the file.
    pub mem: Option<&'a [u8]>,
}

impl Default for Bytes<'_> {
    fn default() -> Self {
        Bytes::Mem(Cow::Borrowed(&[]))
    }
}

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({})", self.len())
    }
}

impl<'a> Bytes<'a> {
    pub(crate) fn borrowed(b: &'a [u8]) -> Bytes<'a> {
        Bytes::Mem(Cow::Borrowed(b))
    }
    pub(crate) fn owned(b: Vec<u8>) -> Bytes<'static> {
        Bytes::Mem(Cow::Owned(b))
    }
    pub(crate) fn len(&self) -> usize {
        match self {
            Bytes::Mem(b) => b.len(),
            Bytes::Deferred(d) => d.len,
        }
    }
    /// The bytes, when they are in memory (always, except for runs left in a file).
    pub(crate) fn mem(&self) -> Option<&[u8]> {
        match self {
            Bytes::Mem(b) => Some(b),
            Bytes::Deferred(d) => d.mem,
        }
    }
}

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.mem() {
            Some(b) => s.serialize_bytes(b),
            None => Err(serde::ser::Error::custom("a byte run still in its file")),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Bytes<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bytes<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte run")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(Bytes::Mem(Cow::Borrowed(v)))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(Bytes::Mem(Cow::Owned(v.to_vec())))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
                Ok(Bytes::Mem(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // Grows with the elements actually present, never by the claimed length.
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes::Mem(Cow::Owned(out)))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// A length-prefixed UTF-8 string, borrowed from the input when decoding.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Text<'a>(pub Cow<'a, str>);

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl<'a> Text<'a> {
    #[cfg(test)]
    pub(crate) fn borrowed(s: &'a str) -> Text<'a> {
        Text(Cow::Borrowed(s))
    }
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

// ----- the body --------------------------------------------------------------------------------

/// Everything after the header.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Body<'a> {
    /// The world's change tick.
    pub world_tick: u32,
    /// Every saved component, in the saving world's id order; tables and sparse sets refer
    /// to components by position in this list.
    #[serde(borrow)]
    pub catalog: Vec<ComponentRecord<'a>>,
    /// The entity allocator.
    #[serde(borrow)]
    pub allocator: AllocatorRecord<'a>,
    /// Archetype tables, in the saving world's table order (empty ones included).
    #[serde(borrow)]
    pub tables: Vec<TableRecord<'a>>,
    /// Sparse sets that hold at least one value.
    #[serde(borrow)]
    pub sparse: Vec<SparseRecord<'a>>,
    /// Secondary index definitions (rebuilt from the data on load).
    #[serde(borrow)]
    pub index_definitions: IndexSection<'a>,
    /// The schedule (absent from version 1 bodies, which load with an empty one).
    #[serde(borrow)]
    pub schedule: ScheduleSection<'a>,
    /// Field defaults (absent from bodies before version 3, which have none).
    #[serde(borrow)]
    pub defaults: DefaultsSection<'a>,
}

/// The defaults of catalog components' fields (format version 3).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DefaultsSection<'a> {
    pub version: u32,
    #[serde(borrow)]
    pub defaults: Vec<DefaultRecord<'a>>,
}

impl Default for DefaultsSection<'_> {
    fn default() -> Self {
        DefaultsSection { version: DEFAULTS_SECTION_VERSION, defaults: Vec::new() }
    }
}

/// One field's default: catalog component and field positions, and the value as the field
/// stores it (a plain field's little-endian bytes at its type's size, as in a `Plain` run;
/// a string field's UTF-8).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DefaultRecord<'a> {
    pub component: u32,
    pub field: u32,
    #[serde(borrow)]
    pub value: Bytes<'a>,
}

/// One component of the catalog.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ComponentRecord<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    /// [`storage_code`].
    pub storage: u8,
    /// No schema: values travel as serde blobs.
    pub opaque: bool,
    /// Size of one value in the saving program's layout (how `Bulk` rows are laid out).
    pub size: u64,
    /// Fields in declaration order.
    #[serde(borrow)]
    pub fields: Vec<FieldRecord<'a>>,
}

/// One field of a catalog component.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FieldRecord<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    /// [`field_type_code`].
    pub ty: u8,
    /// Byte offset in the saving program's layout (meaningful for `Bulk` rows).
    pub offset: u64,
}

/// The entity allocator: per index its generation and liveness, and the free list.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct AllocatorRecord<'a> {
    /// u32 LE per index ever issued.
    #[serde(borrow)]
    pub generations: Bytes<'a>,
    /// Bit `i` (LSB first) set when index `i` is alive; `ceil(n / 8)` bytes.
    #[serde(borrow)]
    pub live: Bytes<'a>,
    /// u32 LE per free index, in the order they will be reused (last first).
    #[serde(borrow)]
    pub free: Bytes<'a>,
}

/// One archetype table.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TableRecord<'a> {
    /// Catalog positions of its components.
    pub components: Vec<u32>,
    /// `(index u32 LE, generation u32 LE)` per row.
    #[serde(borrow)]
    pub entities: Bytes<'a>,
    /// One column per entry of `components`.
    #[serde(borrow)]
    pub columns: Vec<ColumnRecord<'a>>,
}

/// The values of one sparse component.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SparseRecord<'a> {
    /// Catalog position of the component.
    pub component: u32,
    /// `(index u32 LE, generation u32 LE)` per dense row.
    #[serde(borrow)]
    pub entities: Bytes<'a>,
    #[serde(borrow)]
    pub column: ColumnRecord<'a>,
}

/// A column's values and, when the header says so, its ticks.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ColumnRecord<'a> {
    #[serde(borrow)]
    pub data: ColumnData<'a>,
    #[serde(borrow)]
    pub ticks: Option<TickRecord<'a>>,
}

/// How a column's values are written.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ColumnData<'a> {
    /// A tag: nothing but the row count (the table's).
    Empty,
    /// Plain numeric rows, back to back in the catalog layout (`size` bytes each, fields at
    /// their recorded offsets, little-endian): a bulk copy of the column.
    Bulk(#[serde(borrow)] Bytes<'a>),
    /// One run per schema field, in declaration order.
    Fields(#[serde(borrow)] Vec<FieldRun<'a>>),
    /// Opaque values: per row a u32 LE length in `lens`, the bincode blobs back to back in
    /// `data`.
    Opaque {
        #[serde(borrow)]
        lens: Bytes<'a>,
        #[serde(borrow)]
        data: Bytes<'a>,
    },
}

/// One field's values for every row.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum FieldRun<'a> {
    /// Fixed-size values, little-endian, back to back (entities as index then generation).
    Plain(#[serde(borrow)] Bytes<'a>),
    /// Strings: per row a u32 LE byte length in `lens`; the UTF-8 back to back in `data`.
    Strings {
        #[serde(borrow)]
        lens: Bytes<'a>,
        #[serde(borrow)]
        data: Bytes<'a>,
    },
}

/// Added and changed ticks, u32 LE per row.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TickRecord<'a> {
    #[serde(borrow)]
    pub added: Bytes<'a>,
    #[serde(borrow)]
    pub changed: Bytes<'a>,
}

/// The world's systems and schedule clock (format version 2).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ScheduleSection<'a> {
    pub version: u32,
    #[serde(borrow)]
    pub systems: Vec<SystemEntry<'a>>,
    pub fixed_hz: u32,
    pub accumulator_ns: u64,
    pub tick: u64,
    pub time_ns: u64,
}

impl Default for ScheduleSection<'_> {
    fn default() -> Self {
        let r = crate::ScheduleRecord::default();
        ScheduleSection {
            version: SCHEDULE_SECTION_VERSION,
            systems: Vec::new(),
            fixed_hz: r.fixed_hz,
            accumulator_ns: r.accumulator_ns,
            tick: r.tick,
            time_ns: r.time_ns,
        }
    }
}

impl ScheduleSection<'_> {
    /// The engine's record of it.
    pub(crate) fn to_record(&self) -> crate::ScheduleRecord {
        let owned = |t: &Text<'_>| t.0.to_string();
        crate::ScheduleRecord {
            systems: self
                .systems
                .iter()
                .map(|s| crate::SystemRecord {
                    name: owned(&s.name),
                    phase: owned(&s.phase),
                    after: s.after.iter().map(owned).collect(),
                    before: s.before.iter().map(owned).collect(),
                    body: if s.kind == 1 { crate::SystemBody::Rust } else { crate::SystemBody::Text(owned(&s.text)) },
                })
                .collect(),
            fixed_hz: self.fixed_hz.max(1),
            accumulator_ns: self.accumulator_ns,
            tick: self.tick,
            time_ns: self.time_ns,
        }
    }
}

/// One system on the wire: kind 0 is text (`text` its body), 1 a Rust system (`text` empty).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SystemEntry<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    #[serde(borrow)]
    pub phase: Text<'a>,
    #[serde(borrow)]
    pub after: Vec<Text<'a>>,
    #[serde(borrow)]
    pub before: Vec<Text<'a>>,
    pub kind: u8,
    #[serde(borrow)]
    pub text: Text<'a>,
}

/// The versioned list of index definitions.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct IndexSection<'a> {
    pub version: u32,
    #[serde(borrow)]
    pub definitions: Vec<IndexRecord<'a>>,
}

impl Default for IndexSection<'_> {
    fn default() -> Self {
        IndexSection { version: INDEX_SECTION_VERSION, definitions: Vec::new() }
    }
}

/// One index definition on the wire.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct IndexRecord<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
    #[serde(borrow)]
    pub kind: Text<'a>,
    #[serde(borrow)]
    pub component: Text<'a>,
    #[serde(borrow)]
    pub fields: Vec<Text<'a>>,
}

// ----- enum codes ------------------------------------------------------------------------------

/// The wire code of a storage kind.
pub(crate) fn storage_code(s: StorageKind) -> u8 {
    match s {
        StorageKind::Table => 0,
        StorageKind::Sparse => 1,
    }
}

/// The storage kind of a wire code.
pub(crate) fn storage_from_code(c: u8) -> Option<StorageKind> {
    match c {
        0 => Some(StorageKind::Table),
        1 => Some(StorageKind::Sparse),
        _ => None,
    }
}

/// Field types by wire code (the code is the position; append only).
const FIELD_CODES: [FieldType; 15] = [
    FieldType::Bool,
    FieldType::I8,
    FieldType::I16,
    FieldType::I32,
    FieldType::I64,
    FieldType::U8,
    FieldType::U16,
    FieldType::U32,
    FieldType::U64,
    FieldType::F32,
    FieldType::F64,
    FieldType::String,
    FieldType::Entity,
    FieldType::Vec2,
    FieldType::Vec3,
];

/// The wire code of a field type.
pub(crate) fn field_type_code(t: FieldType) -> u8 {
    FIELD_CODES.iter().position(|&c| c == t).expect("every field type has a code") as u8
}

/// The field type of a wire code.
pub(crate) fn field_type_from_code(c: u8) -> Option<FieldType> {
    FIELD_CODES.get(c as usize).copied()
}

/// Bytes of one value of a non-string field type in the file (and in memory).
pub(crate) fn wire_size(t: FieldType) -> usize {
    match t {
        FieldType::Bool | FieldType::I8 | FieldType::U8 => 1,
        FieldType::I16 | FieldType::U16 => 2,
        FieldType::I32 | FieldType::U32 | FieldType::F32 => 4,
        FieldType::I64 | FieldType::U64 | FieldType::F64 | FieldType::Entity | FieldType::Vec2 => 8,
        FieldType::Vec3 => 12,
        FieldType::String => 0,
    }
}

/// Size of the scalars a field value is made of (what a big-endian host swaps).
pub(crate) fn scalar_size(t: FieldType) -> usize {
    match t {
        FieldType::Entity | FieldType::Vec2 | FieldType::Vec3 => 4,
        other => wire_size(other),
    }
}

/// Copies a field value between memory and the file: a plain copy on little-endian hosts,
/// each scalar byte-swapped on big-endian ones.
#[inline]
pub(crate) fn copy_le(ty: FieldType, src: &[u8], dst: &mut [u8]) {
    dst.copy_from_slice(src);
    if cfg!(target_endian = "big") {
        let s = scalar_size(ty);
        if s > 1 {
            for chunk in dst.chunks_exact_mut(s) {
                chunk.reverse();
            }
        }
    }
}

/// `u32`s as little-endian bytes: borrowed as they are on little-endian hosts.
pub(crate) fn u32s_le(v: &[u32]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: `u32` has no padding and every byte is initialised; `u8` has alignment 1;
        // the byte slice covers exactly the `u32` slice and borrows it for the same lifetime.
        return Cow::Borrowed(unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) });
    }
    Cow::Owned(v.iter().flat_map(|t| t.to_le_bytes()).collect())
}

/// Entities as `(index, generation)` little-endian, 8 bytes each.
///
/// On little-endian hosts that is exactly how `Entity` (`repr(C)`: index, then generation) is
/// laid out, so the slice is borrowed as it is.
pub(crate) fn entities_le(es: &[Entity]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: `Entity` is `repr(C)` with two `u32` fields: 8 bytes, no padding, every byte
        // initialised; `u8` has alignment 1; the byte slice covers exactly the entity slice
        // and borrows it for the same lifetime.
        let bytes = unsafe { std::slice::from_raw_parts(es.as_ptr() as *const u8, std::mem::size_of_val(es)) };
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(es.len() * 8);
    for e in es {
        out.extend_from_slice(&e.index().to_le_bytes());
        out.extend_from_slice(&e.generation().to_le_bytes());
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for t in FieldType::ALL {
            assert_eq!(field_type_from_code(field_type_code(t)), Some(t));
            if t != FieldType::String {
                assert_eq!(wire_size(t), t.layout().size(), "{t}");
            }
        }
        assert_eq!(field_type_from_code(15), None);
        for s in [StorageKind::Table, StorageKind::Sparse] {
            assert_eq!(storage_from_code(storage_code(s)), Some(s));
        }
    }

    #[test]
    fn byte_runs_borrow_from_the_input() {
        let body = (Bytes::borrowed(&[1, 2, 3]), Text::borrowed("név"));
        let enc = bincode::serde::encode_to_vec(&body, body_config()).unwrap();
        let (dec, used): ((Bytes<'_>, Text<'_>), usize) =
            bincode::serde::borrow_decode_from_slice(&enc, body_config()).unwrap();
        assert_eq!(used, enc.len());
        assert!(matches!(dec.0, Bytes::Mem(Cow::Borrowed(_))));
        assert!(matches!(dec.1.0, Cow::Borrowed(_)));
        assert_eq!(dec.0.mem(), Some(&[1u8, 2, 3][..]));
        assert_eq!(dec.1.as_str(), "név");
        // A claimed length beyond the input fails without allocating it.
        let mut bad = enc.clone();
        bad[0..8].copy_from_slice(&(u64::MAX / 4).to_le_bytes());
        assert!(bincode::serde::borrow_decode_from_slice::<(Bytes<'_>, Text<'_>), _>(&bad, body_config()).is_err());
    }
}
