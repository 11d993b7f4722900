//! Components and their schemas: the catalog the query engine reads.
//!
//! Every component, whether it comes from a Rust type (`#[derive(Component)]`) or is defined
//! at run time from a name and a field list, is described by one [`ComponentInfo`]: name,
//! layout, drop function, storage kind, and its schema (fields with name, type and byte
//! offset). A field of a row lives at `column + row * size + offset` for both kinds.

use std::alloc::Layout;
use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::entity::Entity;
use crate::error::{EngineError, Result};

/// A component's id in one world's registry: a dense index.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ComponentId(pub(crate) u32);

impl ComponentId {
    /// The dense index of this id.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a component's values live.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub enum StorageKind {
    /// In the columns of archetype tables: fastest iteration; adding or removing the component
    /// moves the entity to another table.
    #[default]
    Table,
    /// In a sparse set keyed by entity index: adding or removing never moves the entity.
    Sparse,
}

impl fmt::Display for StorageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StorageKind::Table => "table",
            StorageKind::Sparse => "sparse",
        })
    }
}

/// The field types a schema can describe.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum FieldType {
    /// `bool`
    Bool,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `String`
    String,
    /// [`Entity`]
    Entity,
    /// `[f32; 2]`
    Vec2,
    /// `[f32; 3]`
    Vec3,
}

impl FieldType {
    /// Every field type, in a fixed order.
    pub const ALL: [FieldType; 15] = [
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

    /// The name used in the query language (`f32`, `string`, `vec3`, …).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Bool => "bool",
            FieldType::I8 => "i8",
            FieldType::I16 => "i16",
            FieldType::I32 => "i32",
            FieldType::I64 => "i64",
            FieldType::U8 => "u8",
            FieldType::U16 => "u16",
            FieldType::U32 => "u32",
            FieldType::U64 => "u64",
            FieldType::F32 => "f32",
            FieldType::F64 => "f64",
            FieldType::String => "string",
            FieldType::Entity => "entity",
            FieldType::Vec2 => "vec2",
            FieldType::Vec3 => "vec3",
        }
    }

    /// Parses a language type name (case-insensitive).
    pub fn from_name(name: &str) -> Option<FieldType> {
        FieldType::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// The in-memory layout of a value of this type.
    pub fn layout(self) -> Layout {
        match self {
            FieldType::Bool | FieldType::I8 | FieldType::U8 => Layout::new::<u8>(),
            FieldType::I16 | FieldType::U16 => Layout::new::<u16>(),
            FieldType::I32 | FieldType::U32 | FieldType::F32 => Layout::new::<u32>(),
            FieldType::I64 | FieldType::U64 | FieldType::F64 => Layout::new::<u64>(),
            FieldType::String => Layout::new::<String>(),
            FieldType::Entity => Layout::new::<Entity>(),
            FieldType::Vec2 => Layout::new::<[f32; 2]>(),
            FieldType::Vec3 => Layout::new::<[f32; 3]>(),
        }
    }

    /// Whether values are integers (any width or sign).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            FieldType::I8
                | FieldType::I16
                | FieldType::I32
                | FieldType::I64
                | FieldType::U8
                | FieldType::U16
                | FieldType::U32
                | FieldType::U64
        )
    }

    /// Whether values are numbers (integers or floats).
    pub fn is_numeric(self) -> bool {
        self.is_integer() || matches!(self, FieldType::F32 | FieldType::F64)
    }

    /// Whether a column of this type is plain bytes (no heap pointers), so it can be copied
    /// and saved as a byte run.
    pub fn is_plain(self) -> bool {
        !matches!(self, FieldType::String)
    }

    /// Whether every value of type `from` is a value of this type, unchanged: the changes of
    /// a field's type that lose nothing (an integer to a wider one of a sign that holds it,
    /// an integer to a float whose mantissa holds it, `f32` to `f64`).
    ///
    /// ```
    /// use ecsdb_engine::FieldType;
    /// assert!(FieldType::I64.holds_every(FieldType::U32));
    /// assert!(FieldType::F64.holds_every(FieldType::I32));
    /// assert!(!FieldType::F32.holds_every(FieldType::I32)); // 2^24 + 1 is not an f32
    /// assert!(!FieldType::U64.holds_every(FieldType::I8)); // -1 is not a u64
    /// ```
    pub fn holds_every(self, from: FieldType) -> bool {
        use FieldType::*;
        /// (signed, bits) of an integer type.
        fn int(t: FieldType) -> Option<(bool, u32)> {
            Some(match t {
                I8 => (true, 8),
                I16 => (true, 16),
                I32 => (true, 32),
                I64 => (true, 64),
                U8 => (false, 8),
                U16 => (false, 16),
                U32 => (false, 32),
                U64 => (false, 64),
                _ => return None,
            })
        }
        if self == from {
            return true;
        }
        match (int(from), int(self), self) {
            // Unsigned into wider of either sign; signed only into wider signed.
            (Some((fs, fb)), Some((ts, tb)), _) => (fs == ts && tb > fb) || (!fs && ts && tb > fb),
            // Integers whose magnitude fits the mantissa (24 bits for f32, 53 for f64).
            (Some((_, fb)), None, F32) => fb <= 16,
            (Some((_, fb)), None, F64) => fb <= 32,
            (None, None, F64) => from == F32,
            _ => false,
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod field_value;
pub(crate) mod opaque_serde;
mod relayout;
pub use field_value::FieldValue;
pub(crate) use opaque_serde::{OpaqueSerde, OpaqueSerdes};
pub(crate) use relayout::FieldMove;

mod sealed {
    pub trait Sealed {}
}

/// Rust types that are schema field types: exactly the types listed in [`FieldType`] (`bool`,
/// the integers and floats, `String`, [`Entity`], `[f32; 2]`, `[f32; 3]`).
/// `#[derive(Component)]` uses it to build schemas, and typed field views
/// ([`FieldColumn`](crate::storage::FieldColumn)) to check what they read. Sealed: the engine
/// relies on the mapping being exact, so no other crate can implement it.
pub trait SchemaField: sealed::Sealed + Send + Sync + 'static {
    /// The schema type of `Self`.
    const FIELD_TYPE: FieldType;
}

macro_rules! schema_fields {
    ($($t:ty => $v:ident),* $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl SchemaField for $t { const FIELD_TYPE: FieldType = FieldType::$v; }
        )*
    };
}
schema_fields!(
    bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64,
    String => String, Entity => Entity, [f32; 2] => Vec2, [f32; 3] => Vec3,
);

/// One field of a component's schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: String,
    /// Its type.
    pub ty: FieldType,
    /// Byte offset within the component value.
    pub offset: usize,
}

/// How a component's values are dropped.
#[derive(Clone, Debug)]
pub(crate) enum DropFn {
    /// A Rust type's `drop_in_place`.
    Rust(unsafe fn(*mut u8)),
    /// A run-time component: drop the `String`s at these offsets.
    Strings(Box<[usize]>),
}

impl DropFn {
    /// Drops one value in place.
    ///
    /// # Safety
    /// `ptr` must point to a valid, initialised value of the component this was made for.
    #[inline]
    pub(crate) unsafe fn call(&self, ptr: *mut u8) {
        match self {
            // SAFETY: forwarded from the caller's contract.
            DropFn::Rust(f) => unsafe { f(ptr) },
            DropFn::Strings(offsets) => {
                for &off in offsets.iter() {
                    // SAFETY: run-time layouts put an initialised String at each listed offset.
                    unsafe { std::ptr::drop_in_place(ptr.add(off) as *mut String) };
                }
            }
        }
    }
}

/// `drop_in_place` for a Rust type behind an untyped pointer.
///
/// # Safety
/// `ptr` must point to a valid, initialised `T`.
pub(crate) unsafe fn drop_ptr<T>(ptr: *mut u8) {
    // SAFETY: forwarded from the caller's contract.
    unsafe { std::ptr::drop_in_place(ptr as *mut T) }
}

/// What `#[derive(Component)]` (or a hand-written impl) says about a Rust type.
#[derive(Clone, Debug)]
pub struct ComponentSchema {
    /// The component's name in the catalog and the query language.
    pub name: &'static str,
    /// Fields in declaration order (empty for tags and opaque components).
    pub fields: Vec<FieldInfo>,
    /// No schema: storable and queryable by presence only.
    pub opaque: bool,
}

/// A Rust type that can be stored as a component. Use `#[derive(Component)]`.
///
/// # Safety
/// The engine reads and writes values through the schema without knowing the type: an
/// implementation must describe `Self` exactly. Each field of [`Component::schema`] must be a
/// field of `Self` of the Rust type its [`FieldType`] names (see [`SchemaField`]) at the
/// given byte offset; opaque schemas list no fields. `#[derive(Component)]` upholds this.
/// Registration also rejects schemas whose fields do not fit `Self`'s size and alignment or
/// overlap, but it cannot see field types.
///
/// ```
/// use ecsdb_engine::{Component, FieldType};
/// #[derive(Component)]
/// struct Health { hp: f32, max: f32 }
/// let s = Health::schema();
/// assert_eq!(s.name, "Health");
/// assert_eq!(s.fields[1].name, "max");
/// assert_eq!(s.fields[1].ty, FieldType::F32);
/// ```
pub unsafe trait Component: Send + Sync + 'static {
    /// Table or sparse storage.
    const STORAGE: StorageKind = StorageKind::Table;
    /// Entity fields declared references (`#[references(...)]` on a field): the world declares
    /// them the first time it spawns or inserts the type, as `World::declare_reference`
    /// would.
    const REFERENCES: &'static [TypedReference] = &[];
    /// The schema of this type.
    fn schema() -> ComponentSchema;
}

/// A reference declared on a Rust type's `entity` field (see [`Component::REFERENCES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypedReference {
    /// The field's name.
    pub field: &'static str,
    /// What despawning the target does.
    pub on_delete: crate::on_delete::OnDelete,
    /// Whether following the field may never lead an entity back to itself.
    pub acyclic: bool,
}

/// A component definition for run-time components (no Rust type).
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentDef {
    /// Name, unique in the world.
    pub name: String,
    /// Fields in declaration order.
    pub fields: Vec<(String, FieldType)>,
    /// Table or sparse storage.
    pub storage: StorageKind,
}

impl ComponentDef {
    /// A table-stored component with the given fields.
    pub fn new(name: impl Into<String>, fields: &[(&str, FieldType)]) -> ComponentDef {
        ComponentDef {
            name: name.into(),
            fields: fields.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
            storage: StorageKind::Table,
        }
    }

    /// The same definition with sparse storage.
    pub fn sparse(mut self) -> ComponentDef {
        self.storage = StorageKind::Sparse;
        self
    }
}

/// Everything the engine and the query engine know about a component.
#[derive(Clone, Debug)]
pub struct ComponentInfo {
    id: ComponentId,
    name: String,
    layout: Layout,
    drop: Option<DropFn>,
    storage: StorageKind,
    fields: Vec<FieldInfo>,
    opaque: bool,
    type_id: Option<TypeId>,
    /// References its Rust type declares (empty for run-time components).
    typed_references: &'static [TypedReference],
    /// Per field (in `fields` order), the value a new value starts with instead of the
    /// type's zero (`DEFAULT` in the language); `None` when no field has one.
    defaults: Option<Arc<[Option<FieldValue>]>>,
}

impl ComponentInfo {
    /// The component's id.
    pub fn id(&self) -> ComponentId {
        self.id
    }
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Size and alignment of one value.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// The references its Rust type declares.
    pub fn typed_references(&self) -> &'static [TypedReference] {
        self.typed_references
    }
    /// Table or sparse.
    pub fn storage(&self) -> StorageKind {
        self.storage
    }
    /// Fields in declaration order (empty for tags and opaque components).
    pub fn fields(&self) -> &[FieldInfo] {
        &self.fields
    }
    /// The field with this name.
    pub fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }
    /// The default of field `index` (the position in [`ComponentInfo::fields`]): what a new
    /// value holds there when it is not given (`DEFAULT` in the language), in its stored
    /// form; `None` for a field without one, which starts at its type's zero.
    pub fn field_default(&self, index: usize) -> Option<&FieldValue> {
        self.defaults.as_ref()?.get(index)?.as_ref()
    }
    /// Whether any field has a default.
    pub fn has_defaults(&self) -> bool {
        self.defaults.is_some()
    }
    /// The position of the field with this name.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
    /// No schema: fields not readable by name.
    pub fn is_opaque(&self) -> bool {
        self.opaque
    }
    /// A tag: no fields and no data.
    pub fn is_tag(&self) -> bool {
        !self.opaque && self.fields.is_empty()
    }
    /// Defined at run time rather than by a Rust type.
    pub fn is_dynamic(&self) -> bool {
        self.type_id.is_none()
    }
    /// The Rust type, for components registered from one.
    pub fn type_id(&self) -> Option<TypeId> {
        self.type_id
    }
    pub(crate) fn drop_fn(&self) -> Option<&DropFn> {
        self.drop.as_ref()
    }
    /// Whether every byte of a value is plain data (no heap pointers): such columns are saved
    /// and copied as byte runs.
    pub fn is_plain(&self) -> bool {
        !self.opaque && self.fields.iter().all(|f| f.ty.is_plain())
    }
    /// When all fields are numeric and there are 2 or 3 of them, the component reads as a
    /// vector in the query language.
    pub fn is_vector_like(&self) -> bool {
        !self.opaque && (2..=3).contains(&self.fields.len()) && self.fields.iter().all(|f| f.ty.is_numeric())
    }

    /// Writes the initial value at `dst`: each field's default where it has one, else its
    /// type's zero (strings empty, entities null).
    ///
    /// # Safety
    /// `dst` must be valid for writes of `layout().size()` bytes, aligned, and uninitialised or
    /// holding nothing that needs dropping. The component must not be opaque.
    pub(crate) unsafe fn write_zero(&self, dst: *mut u8) {
        // SAFETY: forwarded.
        unsafe { self.write_zeros(dst, 1) }
    }

    /// [`ComponentInfo::write_zero`] for `n` values one after another from `dst`: the bytes
    /// zeroed at once, then the strings and entities of each value written, then the
    /// defaults.
    ///
    /// # Safety
    /// As `write_zero`, for `n` values (`n * layout().size()` bytes).
    pub(crate) unsafe fn write_zeros(&self, dst: *mut u8, n: usize) {
        debug_assert!(!self.opaque);
        let size = self.layout.size();
        // SAFETY: the caller guarantees `dst` is valid for `n` values.
        unsafe { zero_bytes(dst, size * n) };
        for f in self.fields.iter().filter(|f| matches!(f.ty, FieldType::String | FieldType::Entity)) {
            for v in 0..n {
                // SAFETY: value `v`'s field lies inside the `n` values; offsets come from the
                // layout and are aligned for the field type.
                unsafe {
                    let p = dst.add(v * size + f.offset);
                    match f.ty {
                        FieldType::String => std::ptr::write(p as *mut String, String::new()),
                        _ => std::ptr::write(p as *mut Entity, Entity::NULL),
                    }
                }
            }
        }
        let Some(defaults) = &self.defaults else { return };
        for (f, d) in self.fields.iter().zip(defaults.iter()) {
            let Some(d) = d else { continue };
            for v in 0..n {
                // SAFETY: value `v` is initialised (above) and `d` was converted for field
                // `f` of this component (`Components::set_defaults`).
                unsafe { d.clone().write(dst.add(v * size), f) };
            }
        }
    }

    /// The definition that would recreate this component at run time.
    pub fn to_def(&self) -> ComponentDef {
        ComponentDef {
            name: self.name.clone(),
            fields: self.fields.iter().map(|f| (f.name.clone(), f.ty)).collect(),
            storage: self.storage,
        }
    }
}

/// Zeroes `len` bytes from `dst`. A few words are zeroed with stores of a size known here,
/// which the compiler emits inline: a bulk SPAWN zeroes each of its small component values
/// before writing their fields, and a call to `memset` per value cost more than its stores.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
#[inline]
unsafe fn zero_bytes(dst: *mut u8, len: usize) {
    if len > 64 {
        // SAFETY: forwarded.
        unsafe { std::ptr::write_bytes(dst, 0, len) };
        return;
    }
    let mut at = 0;
    // SAFETY: each store lies inside `dst .. dst + len` (`at + 8 <= len`, then `at < len`),
    // which the caller guarantees writable; unaligned stores need no alignment.
    unsafe {
        while at + 8 <= len {
            dst.add(at).cast::<u64>().write_unaligned(0);
            at += 8;
        }
        if at + 4 <= len {
            dst.add(at).cast::<u32>().write_unaligned(0);
            at += 4;
        }
        while at < len {
            dst.add(at).write(0);
            at += 1;
        }
    }
}

/// Computes a C-like layout for run-time fields: declaration order is kept in the schema,
/// while fields are placed by decreasing alignment so no padding is wasted between them.
fn layout_fields(fields: &[(String, FieldType)]) -> (Layout, Vec<FieldInfo>) {
    let mut order: Vec<usize> = (0..fields.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(fields[i].1.layout().align()));
    let mut offsets = vec![0usize; fields.len()];
    let mut layout = Layout::from_size_align(0, 1).expect("empty layout is valid");
    for i in order {
        let (next, offset) = layout.extend(fields[i].1.layout()).expect("field layouts are small");
        layout = next;
        offsets[i] = offset;
    }
    let infos = fields
        .iter()
        .zip(offsets)
        .map(|((name, ty), offset)| FieldInfo { name: name.clone(), ty: *ty, offset })
        .collect();
    (layout.pad_to_align(), infos)
}

/// Checks run-time field names: identifiers, none twice.
fn check_field_names(component: &str, fields: &[(String, FieldType)]) -> Result<()> {
    for (i, (name, _)) in fields.iter().enumerate() {
        if !is_identifier(name) {
            return Err(EngineError::InvalidDefinition(format!("'{name}' is not a valid field name")));
        }
        if fields[..i].iter().any(|(n, _)| n == name) {
            return Err(EngineError::DuplicateField { component: component.to_string(), field: name.clone() });
        }
    }
    Ok(())
}

/// What dropping a run-time value must do: drop its strings, if it has any.
fn strings_drop(fields: &[FieldInfo]) -> Option<DropFn> {
    let strings: Box<[usize]> = fields.iter().filter(|f| f.ty == FieldType::String).map(|f| f.offset).collect();
    (!strings.is_empty()).then_some(DropFn::Strings(strings))
}

/// Whether a name is a valid identifier of the query language.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Hashes a `TypeId` by passing its bits through: type ids are already hashes, and SipHash on
/// every typed `get`/`insert`/`remove` costs more than the rest of the lookup.
#[derive(Default, Clone, Copy)]
pub(crate) struct TypeIdHasher(u64);

impl std::hash::Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only reached if `TypeId`'s `Hash` writes bytes: fold them in.
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

/// A map keyed by `TypeId` with the pass-through hasher.
pub(crate) type TypeIdMap<V> = HashMap<TypeId, V, std::hash::BuildHasherDefault<TypeIdHasher>>;

/// The component registry: every component the world knows, by id, name and Rust type.
#[derive(Clone, Debug, Default)]
pub struct Components {
    infos: Vec<ComponentInfo>,
    by_name: HashMap<String, ComponentId>,
    by_type: TypeIdMap<ComponentId>,
    /// Bumped by every change: a component defined or registered, its fields or defaults.
    version: u64,
    /// Bumped when a component that exists changes its fields (and so its layout): what was
    /// planned before holds offsets that are no longer the component's.
    layout_version: u64,
}

impl Components {
    /// The catalog's version: it changes whenever a component is defined or registered, or
    /// one's fields or defaults change.
    pub fn version(&self) -> u64 {
        self.version
    }
    /// The layout version: it changes whenever a component that exists changes its fields
    /// (`ALTER COMPONENT`). Field positions and offsets taken from the catalog before hold
    /// only while it stays the same.
    pub fn layout_version(&self) -> u64 {
        self.layout_version
    }
    /// All components, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &ComponentInfo> {
        self.infos.iter()
    }
    /// Number of registered components.
    pub fn len(&self) -> usize {
        self.infos.len()
    }
    /// Whether none are registered.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }
    /// The info of a component.
    #[inline]
    pub fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }
    /// The id of the component with this name.
    pub fn id_by_name(&self, name: &str) -> Option<ComponentId> {
        self.by_name.get(name).copied()
    }
    /// The info of the component with this name.
    pub fn by_name(&self, name: &str) -> Option<&ComponentInfo> {
        self.id_by_name(name).map(|id| self.info(id))
    }
    /// The id of a Rust component type, if registered.
    #[inline]
    pub fn id_of<T: Component>(&self) -> Option<ComponentId> {
        self.by_type.get(&TypeId::of::<T>()).copied()
    }
    /// The names of all components (for "did you mean" suggestions).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.infos.iter().map(|i| i.name.as_str())
    }

    /// Registers a Rust component type (idempotent). If a run-time component of the same name
    /// exists with the same schema (for example loaded from a snapshot), the Rust type adopts
    /// it; a different schema is an error.
    pub fn register<T: Component>(&mut self) -> Result<ComponentId> {
        if let Some(id) = self.id_of::<T>() {
            return Ok(id);
        }
        let schema = T::schema();
        let layout = Layout::new::<T>();
        check_schema_fits(&schema, layout)?;
        let drop = std::mem::needs_drop::<T>().then_some(DropFn::Rust(drop_ptr::<T>));
        if let Some(id) = self.id_by_name(schema.name) {
            let existing = &self.infos[id.index()];
            if existing.type_id.is_some() {
                return Err(EngineError::SchemaMismatch {
                    component: schema.name.to_string(),
                    reason: "another Rust type is registered under this name".into(),
                });
            }
            check_schema_agrees(existing, &schema, layout, T::STORAGE)?;
            let info = &mut self.infos[id.index()];
            // Defaults follow their fields by name: the Rust type may list them in another order.
            let defaults: Option<Arc<[Option<FieldValue>]>> = info
                .defaults
                .as_ref()
                .map(|d| schema.fields.iter().map(|f| info.field_index(&f.name).and_then(|i| d[i].clone())).collect());
            info.defaults = defaults;
            info.type_id = Some(TypeId::of::<T>());
            info.drop = drop;
            info.layout = layout;
            info.fields = schema.fields;
            info.typed_references = T::REFERENCES;
            self.by_type.insert(TypeId::of::<T>(), id);
            self.version += 1;
            self.layout_version += 1;
            return Ok(id);
        }
        let id = ComponentId(self.infos.len() as u32);
        self.infos.push(ComponentInfo {
            id,
            name: schema.name.to_string(),
            layout,
            drop,
            storage: T::STORAGE,
            fields: schema.fields,
            opaque: schema.opaque,
            type_id: Some(TypeId::of::<T>()),
            typed_references: T::REFERENCES,
            defaults: None,
        });
        self.by_name.insert(schema.name.to_string(), id);
        self.by_type.insert(TypeId::of::<T>(), id);
        self.version += 1;
        Ok(id)
    }

    /// Defines a run-time component. Names must be identifiers and unique; field names too.
    pub fn define(&mut self, def: &ComponentDef) -> Result<ComponentId> {
        if !is_identifier(&def.name) {
            return Err(EngineError::InvalidDefinition(format!("'{}' is not a valid component name", def.name)));
        }
        if self.by_name.contains_key(&def.name) {
            return Err(EngineError::DuplicateComponent(def.name.clone()));
        }
        check_field_names(&def.name, &def.fields)?;
        let (layout, fields) = layout_fields(&def.fields);
        let id = ComponentId(self.infos.len() as u32);
        self.infos.push(ComponentInfo {
            id,
            name: def.name.clone(),
            layout,
            drop: strings_drop(&fields),
            storage: def.storage,
            fields,
            opaque: false,
            type_id: None,
            typed_references: &[],
            defaults: None,
        });
        self.by_name.insert(def.name.clone(), id);
        self.version += 1;
        Ok(id)
    }
}

impl Components {
    /// Sets the defaults of component `id`'s fields (in [`ComponentInfo::fields`] order;
    /// `None` for a field without one). Each must be a value converted for its field
    /// ([`convert_value`](crate::convert_value)): a plain value of the field type's size, a
    /// string only for a string field. Values stored before keep their fields.
    pub(crate) fn set_defaults(&mut self, id: ComponentId, defaults: Vec<Option<FieldValue>>) -> Result<()> {
        let info = &mut self.infos[id.index()];
        let bad = |why: String| EngineError::InvalidDefinition(format!("component '{}': {why}", info.name));
        if info.opaque {
            return Err(bad("an opaque component has no fields to default".into()));
        }
        if defaults.len() != info.fields.len() {
            return Err(bad(format!("{} defaults for {} fields", defaults.len(), info.fields.len())));
        }
        for (f, d) in info.fields.iter().zip(&defaults) {
            let fits = match d {
                None => true,
                Some(FieldValue::Str(_)) => f.ty == FieldType::String,
                Some(FieldValue::Plain(b, n)) => {
                    f.ty != FieldType::String
                        && *n as usize == f.ty.layout().size()
                        && (f.ty != FieldType::Bool || b[0] <= 1)
                }
            };
            if !fits {
                return Err(bad(format!("the default of field '{}' is not a {} value", f.name, f.ty)));
            }
        }
        info.defaults = defaults.iter().any(Option::is_some).then(|| defaults.into());
        self.version += 1;
        Ok(())
    }
}

/// Checks what can be checked of a Rust type's schema against its layout: names, and that
/// every field lies inside the value, aligned for its type, without overlapping another.
fn check_schema_fits(schema: &ComponentSchema, layout: Layout) -> Result<()> {
    let bad = |reason: String| EngineError::SchemaMismatch { component: schema.name.to_string(), reason };
    if !is_identifier(schema.name) {
        return Err(EngineError::InvalidDefinition(format!("'{}' is not a valid component name", schema.name)));
    }
    if schema.opaque && !schema.fields.is_empty() {
        return Err(bad("an opaque schema lists fields".into()));
    }
    let mut spans = Vec::with_capacity(schema.fields.len());
    for (i, f) in schema.fields.iter().enumerate() {
        if !is_identifier(&f.name) || schema.fields[..i].iter().any(|g| g.name == f.name) {
            return Err(bad(format!("field name '{}' is invalid or repeated", f.name)));
        }
        let fl = f.ty.layout();
        let end = f.offset.checked_add(fl.size()).filter(|&end| end <= layout.size());
        let Some(end) = end else {
            return Err(bad(format!("field '{}' ({}) at offset {} lies outside the value", f.name, f.ty, f.offset)));
        };
        if f.offset % fl.align() != 0 || layout.align() < fl.align() {
            return Err(bad(format!("field '{}' ({}) at offset {} is misaligned", f.name, f.ty, f.offset)));
        }
        spans.push((f.offset, end, i));
    }
    spans.sort_unstable();
    for w in spans.windows(2) {
        if w[1].0 < w[0].1 {
            let (a, b) = (&schema.fields[w[0].2].name, &schema.fields[w[1].2].name);
            return Err(bad(format!("fields '{a}' and '{b}' overlap")));
        }
    }
    Ok(())
}

fn check_schema_agrees(
    existing: &ComponentInfo,
    schema: &ComponentSchema,
    layout: Layout,
    storage: StorageKind,
) -> Result<()> {
    let mismatch = |reason: String| EngineError::SchemaMismatch { component: schema.name.to_string(), reason };
    if schema.opaque {
        return Err(mismatch("the Rust type is opaque but the stored component has a schema".into()));
    }
    if existing.storage != storage {
        return Err(mismatch(format!("storage is {} here but {} in the Rust type", existing.storage, storage)));
    }
    for f in &schema.fields {
        match existing.field(&f.name) {
            None => return Err(mismatch(format!("field '{}' is missing from the stored component", f.name))),
            Some(g) if g.ty != f.ty => {
                return Err(mismatch(format!("field '{}' is {} in the Rust type but {} stored", f.name, f.ty, g.ty)));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = existing.fields.iter().find(|g| schema.fields.iter().all(|f| f.name != g.name)) {
        return Err(mismatch(format!("field '{}' is stored but not in the Rust type", extra.name)));
    }
    // Stored values are reinterpreted as the Rust type, so every byte must mean the same.
    let same_offsets = schema.fields.iter().all(|f| existing.field(&f.name).is_some_and(|g| g.offset == f.offset));
    if layout != existing.layout || !same_offsets {
        return Err(mismatch(
            "the Rust type lays its fields out differently from the stored component; \
             register Rust types before loading data that uses them"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exactly the bytes asked for are zeroed, for every length around the word sizes and
    /// past the inline limit, at every alignment.
    #[test]
    fn zero_bytes_zeroes_exactly_its_range() {
        for start in 0..8 {
            for len in 0..=70 {
                let mut buf = [0xA5u8; 96];
                // SAFETY: `start + len <= 78 < 96`: the range lies inside `buf`.
                unsafe { zero_bytes(buf.as_mut_ptr().add(start), len) };
                for (i, &b) in buf.iter().enumerate() {
                    let inside = (start..start + len).contains(&i);
                    assert_eq!(b, if inside { 0 } else { 0xA5 }, "start {start}, len {len}, byte {i}");
                }
            }
        }
    }

    #[test]
    fn runtime_layout_is_aligned_and_compact() {
        let def = ComponentDef::new(
            "Mixed",
            &[("a", FieldType::U8), ("name", FieldType::String), ("b", FieldType::F64), ("c", FieldType::Bool)],
        );
        let mut reg = Components::default();
        let id = reg.define(&def).unwrap();
        let info = reg.info(id);
        assert_eq!(info.fields().iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["a", "name", "b", "c"]);
        for f in info.fields() {
            assert_eq!(f.offset % f.ty.layout().align(), 0, "{} misaligned", f.name);
        }
        assert_eq!(info.layout().size(), 24 + 8 + 8);
        assert!(!info.is_plain());
    }

    #[test]
    fn definitions_are_validated() {
        let mut reg = Components::default();
        assert!(reg.define(&ComponentDef::new("1bad", &[])).is_err());
        assert!(reg.define(&ComponentDef::new("A", &[("x", FieldType::F32), ("x", FieldType::F32)])).is_err());
        reg.define(&ComponentDef::new("A", &[])).unwrap();
        assert_eq!(reg.define(&ComponentDef::new("A", &[])), Err(EngineError::DuplicateComponent("A".into())));
    }

    /// A schema whose fields do not fit the type.
    struct Lying;
    // SAFETY: (test) the schema lies, and registration must catch it before any value is read.
    unsafe impl Component for Lying {
        fn schema() -> ComponentSchema {
            ComponentSchema { name: "Lying", fields: LYING.with(|l| l.borrow().clone()), opaque: false }
        }
    }
    thread_local! {
        static LYING: std::cell::RefCell<Vec<FieldInfo>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    #[test]
    fn registration_checks_schemas_against_the_type() {
        let field = |name: &str, ty, offset| FieldInfo { name: name.into(), ty, offset };
        let cases = [
            vec![field("s", FieldType::String, 8)],
            vec![field("x", FieldType::U8, 0)],
            vec![field("x", FieldType::U8, usize::MAX)],
        ];
        for fields in cases {
            LYING.with(|l| *l.borrow_mut() = fields);
            let mut reg = Components::default();
            assert!(matches!(reg.register::<Lying>(), Err(EngineError::SchemaMismatch { .. })));
        }
        #[derive(crate::Component)]
        #[allow(dead_code)]
        struct Real {
            a: u32,
            b: u16,
        }
        #[allow(dead_code)]
        struct Fake(u64);
        // SAFETY: (test) see above.
        unsafe impl Component for Fake {
            fn schema() -> ComponentSchema {
                LYING.with(|l| ComponentSchema { name: "Fake", fields: l.borrow().clone(), opaque: false })
            }
        }
        for (fields, ok) in [
            (vec![field("a", FieldType::U32, 0), field("b", FieldType::U32, 4)], true),
            (vec![field("a", FieldType::U32, 0), field("b", FieldType::U32, 2)], false),
            (vec![field("a", FieldType::U32, 2)], false),
            (vec![field("a", FieldType::U32, 0), field("a", FieldType::U16, 4)], false),
            (vec![field("a", FieldType::F64, 0)], true),
        ] {
            LYING.with(|l| *l.borrow_mut() = fields.clone());
            let mut reg = Components::default();
            assert_eq!(reg.register::<Fake>().is_ok(), ok, "{fields:?}");
        }
        let mut reg = Components::default();
        reg.register::<Real>().unwrap();
    }

    #[test]
    fn type_names_round_trip() {
        for t in FieldType::ALL {
            assert_eq!(FieldType::from_name(t.name()), Some(t));
        }
    }
}
