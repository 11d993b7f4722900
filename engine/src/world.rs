//! The world: entities, the component registry, archetype tables and sparse sets.

use std::any::TypeId;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::bundle::{Bundle, BundleInfo};
use crate::component::{
    Component, ComponentDef, ComponentId, ComponentInfo, Components, DropFn, StorageKind, TypeIdMap,
};
use crate::entity::{Entities, Entity, EntityLocation};
use crate::error::{EngineError, Result};
use crate::storage::{ArchetypeTable, SparseSet, TableId};
use crate::tick::{Mut, Tick, CHECK_TICK_THRESHOLD};
use crate::value::{convert_value, read_field, read_object, FieldValue, Value};

static NEXT_WORLD_ID: AtomicU64 = AtomicU64::new(1);

/// Bytes a world holds, split into component data and everything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Bytes of component values (by capacity).
    pub component_bytes: usize,
    /// Bytes of bookkeeping: entity table, per-row entity ids, change ticks, sparse arrays.
    pub overhead_bytes: usize,
    /// Live entities.
    pub entities: usize,
}

impl MemoryUsage {
    /// Bookkeeping bytes per live entity.
    pub fn overhead_per_entity(&self) -> f64 {
        self.overhead_bytes as f64 / self.entities.max(1) as f64
    }
}

/// Tables and sparse sets, kept apart from the registry and allocator so operations can
/// borrow them side by side.
#[derive(Default)]
pub(crate) struct Storage {
    pub(crate) tables: Vec<ArchetypeTable>,
    table_by_set: HashMap<Box<[ComponentId]>, TableId>,
    pub(crate) sparse: Vec<Option<SparseSet>>,
}

impl Storage {
    /// The table of exactly these components (sorted), if there is one.
    pub(crate) fn table_id_of(&self, set: &[ComponentId]) -> Option<TableId> {
        self.table_by_set.get(set).copied()
    }

    pub(crate) fn table_for(&mut self, set: &[ComponentId], components: &Components) -> TableId {
        if let Some(&t) = self.table_by_set.get(set) {
            return t;
        }
        let id = TableId(self.tables.len() as u32);
        self.tables.push(ArchetypeTable::new(id, set.into(), components));
        self.table_by_set.insert(set.into(), id);
        id
    }

    fn two_tables(&mut self, a: TableId, b: TableId) -> (&mut ArchetypeTable, &mut ArchetypeTable) {
        assert_ne!(a, b);
        if a.index() < b.index() {
            let (x, y) = self.tables.split_at_mut(b.index());
            (&mut x[a.index()], &mut y[0])
        } else {
            let (x, y) = self.tables.split_at_mut(a.index());
            (&mut y[0], &mut x[b.index()])
        }
    }

    /// Pointer to an entity's value of a component, if it has one.
    fn component_ptr(
        &self,
        loc: EntityLocation,
        e: Entity,
        id: ComponentId,
        info: &ComponentInfo,
    ) -> Option<*const u8> {
        match info.storage() {
            StorageKind::Table => {
                let t = &self.tables[loc.table as usize];
                t.column(id).map(|c| c.get_ptr(loc.row as usize) as *const u8)
            }
            StorageKind::Sparse => self.sparse.get(id.index())?.as_ref()?.get_ptr(e).map(|p| p as *const u8),
        }
    }
}

/// An owned, type-erased component value built from field values (dynamic inserts).
pub(crate) struct OwnedValue {
    id: ComponentId,
    ptr: NonNull<u8>,
    layout: std::alloc::Layout,
    drop: Option<DropFn>,
    live: bool,
}

impl OwnedValue {
    /// The zero value of a component with the given fields set. Fails (allocating nothing that
    /// leaks) when a field is unknown, given twice, or a value does not convert.
    pub(crate) fn build(info: &ComponentInfo, fields: &[(&str, Value)]) -> Result<OwnedValue> {
        if info.is_opaque() {
            return Err(EngineError::Opaque(info.name().to_string()));
        }
        let mut converted = Vec::with_capacity(fields.len());
        for (i, (name, v)) in fields.iter().enumerate() {
            let idx = info.field_index(name).ok_or_else(|| EngineError::UnknownField {
                component: info.name().to_string(),
                field: name.to_string(),
            })?;
            if fields[..i].iter().any(|(n, _)| n == name) {
                return Err(EngineError::DuplicateField {
                    component: info.name().to_string(),
                    field: name.to_string(),
                });
            }
            converted.push((idx, convert_value(info.name(), &info.fields()[idx], v)?));
        }
        Ok(OwnedValue::from_converted(info, converted))
    }

    /// Takes over a value moved out of a bundle: its bytes are copied into an allocation of
    /// the component's layout.
    ///
    /// # Safety
    /// `src` points to a valid value of component `info`, which the caller gives up (it must
    /// not drop or use it afterwards).
    pub(crate) unsafe fn moved_from(info: &ComponentInfo, src: *const u8) -> OwnedValue {
        let layout = info.layout();
        let ptr = if layout.size() == 0 {
            NonNull::new(std::ptr::without_provenance_mut(layout.align())).expect("alignment is non-zero")
        } else {
            // SAFETY: non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            let p = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
            // SAFETY: `src` holds `layout.size()` bytes of a valid value (the caller's
            // contract); the fresh allocation does not overlap it.
            unsafe { std::ptr::copy_nonoverlapping(src, p.as_ptr(), layout.size()) };
            p
        };
        OwnedValue { id: info.id(), ptr, layout, drop: info.drop_fn().cloned(), live: true }
    }

    /// The value's bytes.
    pub(crate) fn ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Like [`OwnedValue::build`] with values already converted (infallible).
    pub(crate) fn from_converted(
        info: &ComponentInfo,
        fields: impl IntoIterator<Item = (usize, FieldValue)>,
    ) -> OwnedValue {
        let layout = info.layout();
        let ptr = if layout.size() == 0 {
            NonNull::new(std::ptr::without_provenance_mut(layout.align())).expect("alignment is non-zero")
        } else {
            // SAFETY: non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
        };
        // SAFETY: fresh allocation of the component's layout; the component has a schema.
        unsafe { info.write_zero(ptr.as_ptr()) };
        for (idx, fv) in fields {
            // SAFETY: the value is initialised (zeroed) and the field value was converted for
            // this field.
            unsafe { fv.write(ptr.as_ptr(), &info.fields()[idx]) };
        }
        OwnedValue { id: info.id(), ptr, layout, drop: info.drop_fn().cloned(), live: true }
    }
}

impl Drop for OwnedValue {
    fn drop(&mut self) {
        // SAFETY: `live` means the value is initialised and still ours.
        unsafe {
            if self.live {
                if let Some(d) = &self.drop {
                    d.call(self.ptr.as_ptr());
                }
            }
            if self.layout.size() != 0 {
                std::alloc::dealloc(self.ptr.as_ptr(), self.layout);
            }
        }
    }
}

/// Values the world can move into storage one component at a time, in a known order.
pub(crate) trait ComponentSource {
    /// Calls `f(i, ptr, size)` once per component, in order; the callee takes the value.
    fn put_all(self, f: impl FnMut(usize, *const u8, usize));
}

struct BundleSource<B>(B);

impl<B: Bundle> ComponentSource for BundleSource<B> {
    #[inline]
    fn put_all(self, f: impl FnMut(usize, *const u8, usize)) {
        self.0.put(f)
    }
}

impl ComponentSource for Vec<OwnedValue> {
    fn put_all(mut self, mut f: impl FnMut(usize, *const u8, usize)) {
        for (i, v) in self.iter_mut().enumerate() {
            v.live = false;
            f(i, v.ptr.as_ptr(), v.layout.size());
        }
    }
}

/// An in-memory entity database: entities with components, stored in archetype tables.
///
/// ```
/// use ecsdb_engine::{Component, World};
/// #[derive(Component, Debug, PartialEq)]
/// struct Position { x: f32, y: f32 }
/// #[derive(Component)]
/// struct Frozen;
///
/// let mut world = World::new();
/// let e = world.spawn((Position { x: 1.0, y: 2.0 }, Frozen));
/// world.get_mut::<Position>(e).unwrap().x += 1.0;
/// assert_eq!(world.get::<Position>(e).unwrap(), &Position { x: 2.0, y: 2.0 });
/// world.despawn(e).unwrap();
/// assert!(world.get::<Position>(e).is_err());
/// ```
pub struct World {
    id: u64,
    pub(crate) entities: Entities,
    pub(crate) components: Components,
    pub(crate) storage: Storage,
    bundles: Vec<BundleInfo>,
    bundle_by_type: TypeIdMap<usize>,
    /// The change counter as a 64-bit count (rows store its low 32 bits, see [`crate::tick`]).
    tick: AtomicU64,
    /// The counter at the last clamping pass over stored ticks.
    last_tick_check: u64,
    /// Whether a write may have happened since the indexes last refreshed: set whenever a
    /// tick is handed to a writer (every write path stamps one), cleared by the index
    /// refresh, which can then skip scanning change ticks.
    written: AtomicBool,
    /// Secondary indexes (`crate::index`): kept in step through change ticks and `note_removed`.
    pub(crate) indexes: crate::index::IndexRegistry,
    /// Serde functions of opaque components, for snapshots.
    pub(crate) opaque_serde: crate::snapshot::OpaqueSerdes,
    /// Declared references (`crate::reference`): checked on writes, applied on despawns.
    pub(crate) references: crate::reference::References,
    /// The systems and schedule clock, as plain records (snapshots save them).
    pub(crate) schedule: crate::ScheduleRecord,
    /// States of the one-shot queries run on this world (see `query::one_shot`).
    pub(crate) query_cache: crate::query::QueryCache,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// An empty world.
    pub fn new() -> World {
        let components = Components::default();
        let mut storage = Storage::default();
        storage.table_for(&[], &components);
        World {
            id: NEXT_WORLD_ID.fetch_add(1, Ordering::Relaxed),
            entities: Entities::default(),
            components,
            storage,
            bundles: Vec::new(),
            bundle_by_type: TypeIdMap::default(),
            tick: AtomicU64::new(1),
            last_tick_check: 1,
            written: AtomicBool::new(true),
            indexes: Default::default(),
            opaque_serde: Default::default(),
            references: Default::default(),
            schedule: Default::default(),
            query_cache: Default::default(),
        }
    }

    /// A number unique to this world (prepared queries check they are used with their world).
    pub fn id(&self) -> u64 {
        self.id
    }

    // ----- catalog -----------------------------------------------------------------------

    /// The component registry.
    pub fn components(&self) -> &Components {
        &self.components
    }

    /// Registers a Rust component type (spawning or inserting does this implicitly), and
    /// declares the references it declares (`#[references(...)]`).
    pub fn register<T: Component>(&mut self) -> Result<ComponentId> {
        let id = self.components.register::<T>()?;
        self.declare_typed_references(&[id])?;
        Ok(id)
    }

    /// Declares the references the Rust types of `ids` declare and the world does not have
    /// yet (a snapshot may already carry them).
    fn declare_typed_references(&mut self, ids: &[ComponentId]) -> Result<()> {
        for &id in ids {
            for r in self.components.info(id).typed_references() {
                let info = self.components.info(id);
                let declared = info.field_index(r.field).is_some_and(|f| self.reference(id, f).is_some());
                if !declared {
                    let def = crate::ReferenceDef::new(info.name(), r.field, r.on_delete, r.acyclic);
                    self.declare_reference(&def)?;
                }
            }
        }
        Ok(())
    }

    /// Defines a component at run time.
    ///
    /// ```
    /// use ecsdb_engine::{ComponentDef, FieldType, Value, World};
    /// let mut world = World::new();
    /// world.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F32)])).unwrap();
    /// let e = world.spawn_values(&[("Health", &[("hp", Value::Float(10.0))])]).unwrap();
    /// assert_eq!(world.get_field(e, "Health", "hp").unwrap(), Value::Float(10.0));
    /// ```
    pub fn define_component(&mut self, def: &ComponentDef) -> Result<ComponentId> {
        self.components.define(def)
    }

    /// The id of the component with this name, or an `UnknownComponent` error.
    pub fn component_id(&self, name: &str) -> Result<ComponentId> {
        self.components.id_by_name(name).ok_or_else(|| EngineError::UnknownComponent(name.to_string()))
    }

    /// Number of live entities that have the component.
    pub fn component_count(&self, id: ComponentId) -> usize {
        match self.components.info(id).storage() {
            StorageKind::Table => self.storage.tables.iter().filter(|t| t.has(id)).map(|t| t.len()).sum(),
            StorageKind::Sparse => self.sparse_set(id).map_or(0, |s| s.len()),
        }
    }

    /// All archetype tables (some may be empty).
    pub fn tables(&self) -> &[ArchetypeTable] {
        &self.storage.tables
    }

    /// The sparse set of a sparse component, if any value was ever stored.
    pub fn sparse_set(&self, id: ComponentId) -> Option<&SparseSet> {
        self.storage.sparse.get(id.index())?.as_ref()
    }

    /// The entity allocator.
    pub fn entities(&self) -> &Entities {
        &self.entities
    }

    /// Number of live entities.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Whether the handle refers to a live entity.
    pub fn is_alive(&self, e: Entity) -> bool {
        self.entities.contains(e)
    }

    /// Where a live entity's row is.
    pub fn location(&self, e: Entity) -> Result<EntityLocation> {
        // A match, not `ok_or`: the error is made (and dropped) only when there is one.
        match self.entities.location(e) {
            Some(loc) => Ok(loc),
            None => Err(EngineError::StaleEntity(e)),
        }
    }

    /// Every live entity, in table order.
    pub fn iter_entities(&self) -> impl Iterator<Item = Entity> + '_ {
        self.storage.tables.iter().flat_map(|t| t.entities().iter().copied())
    }

    /// Bytes held by the world.
    pub fn memory_usage(&self) -> MemoryUsage {
        let mut data = 0;
        let mut overhead = self.entities.memory_bytes();
        for t in &self.storage.tables {
            let (d, o) = t.memory_bytes();
            data += d;
            overhead += o;
        }
        for s in self.storage.sparse.iter().flatten() {
            let (d, o) = s.memory_bytes();
            data += d;
            overhead += o;
        }
        MemoryUsage { component_bytes: data, overhead_bytes: overhead, entities: self.len() }
    }

    // ----- schedule records ----------------------------------------------------------------

    /// The world's systems and schedule clock as saved (written by the query layer).
    pub fn schedule_record(&self) -> &crate::ScheduleRecord {
        &self.schedule
    }

    /// The world's schedule record, to update in place (a running schedule keeps its clock
    /// here every tick without rebuilding the systems' records).
    pub fn schedule_record_mut(&mut self) -> &mut crate::ScheduleRecord {
        &mut self.schedule
    }

    /// Replaces the world's schedule record.
    pub fn set_schedule_record(&mut self, record: crate::ScheduleRecord) {
        self.schedule = record;
    }

    // ----- ticks -------------------------------------------------------------------------

    /// The current change tick: writes made now are stamped with it.
    #[inline]
    pub fn change_tick(&self) -> Tick {
        self.written.store(true, Ordering::Relaxed);
        self.tick.load(Ordering::Relaxed) as Tick
    }

    /// The change counter as a 64-bit count, for readers that do not advance it.
    #[inline]
    pub(crate) fn change_tick_wide(&self) -> u64 {
        self.tick.load(Ordering::Relaxed)
    }

    /// Starts a run of a change-tracking reader whose previous run was `last_run` (`None`: it
    /// never ran), exactly as a typed [`QueryState`](crate::QueryState) starts one: takes a
    /// reader's tick and returns the run's [`ChangeWindow`] and the value to pass as
    /// `last_run` next time.
    pub fn begin_change_run(&self, last_run: Option<u64>) -> (crate::tick::ChangeWindow, u64) {
        let this_run = self.read_change_tick_wide();
        (crate::tick::ChangeWindow::since(last_run, this_run), this_run)
    }

    /// Takes the current tick for a reader and advances the counter, so every later write is
    /// newer than the returned tick. Returns the taken tick.
    #[inline]
    pub fn read_change_tick(&self) -> Tick {
        self.read_change_tick_wide() as Tick
    }

    /// [`World::read_change_tick`] as a 64-bit count.
    #[inline]
    pub(crate) fn read_change_tick_wide(&self) -> u64 {
        self.written.store(true, Ordering::Relaxed);
        self.tick.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether a tick went to a writer since the index refresh last took one
    /// ([`World::take_index_tick`]), without taking one.
    #[inline]
    pub(crate) fn written_since_index_tick(&self) -> bool {
        self.written.load(Ordering::Relaxed)
    }

    /// [`World::read_change_tick_wide`] for a holder of `&mut World`: the same tick, taken
    /// without an atomic read-modify-write (which costs more than the rest of a small
    /// query's setup).
    #[inline]
    pub(crate) fn take_change_tick_mut(&mut self) -> u64 {
        *self.written.get_mut() = true;
        let tick = self.tick.get_mut();
        *tick += 1;
        *tick - 1
    }

    /// For the index refresh: a new tick as [`World::read_change_tick_wide`] gives, and
    /// whether any tick went to a writer since the last call (if not, no component value, row
    /// or entity changed: writes need `&mut World` and every write path takes a tick first).
    pub(crate) fn take_index_tick(&self) -> (u64, bool) {
        let written = self.written.swap(false, Ordering::Relaxed);
        (self.tick.fetch_add(1, Ordering::Relaxed), written)
    }

    /// Sets the counter (snapshot loading, with the stored rows' ticks relative to it) and
    /// clamps stored ticks, unless `all_at_tick` says every stored tick is `tick` itself (a
    /// build that gave every row the current tick: nothing can be old).
    pub(crate) fn set_change_tick(&mut self, tick: Tick, all_at_tick: bool) {
        *self.written.get_mut() = true;
        *self.tick.get_mut() = tick as u64;
        if all_at_tick {
            self.last_tick_check = tick as u64;
        } else {
            self.check_change_ticks();
        }
    }

    /// Moves the change counter `n` ticks forward, as `n` reads would, clamping stored ticks
    /// on the way. For tests and simulations that must reach a late point of the change
    /// history (for example the counter's wraparound) without doing `n` reads.
    pub fn advance_change_tick(&mut self, n: u64) {
        let mut left = n;
        while left > 0 {
            let step = left.min(CHECK_TICK_THRESHOLD as u64);
            *self.tick.get_mut() += step;
            left -= step;
            self.maybe_check_change_ticks();
        }
        *self.written.get_mut() = true;
    }

    /// Runs [`World::check_change_ticks`] if the counter moved [`CHECK_TICK_THRESHOLD`] ticks
    /// since the last pass. Every write path calls it, so stored ticks never age past 2³²
    /// as long as no more than about a billion reads happen between two writes.
    #[inline]
    pub(crate) fn maybe_check_change_ticks(&mut self) {
        if *self.tick.get_mut() - self.last_tick_check >= CHECK_TICK_THRESHOLD as u64 {
            self.check_change_ticks();
        }
    }

    /// Clamps every stored tick older than [`MAX_CHANGE_AGE`](crate::tick::MAX_CHANGE_AGE)
    /// to that age, so ticks keep comparing correctly after the 32-bit counter wraps. Runs
    /// by itself on writes when due; a holder of a world that only reads for a very long time
    /// may call it now and then.
    pub fn check_change_ticks(&mut self) {
        let now64 = *self.tick.get_mut();
        let now = now64 as Tick;
        for t in &mut self.storage.tables {
            for c in t.columns_mut() {
                c.clamp_ticks(now);
            }
        }
        for s in self.storage.sparse.iter_mut().flatten() {
            s.column_mut().clamp_ticks(now);
        }
        self.last_tick_check = now64;
    }

    /// The tick for a write made now: clamps stored ticks first when due.
    #[inline]
    fn write_tick(&mut self) -> Tick {
        self.maybe_check_change_ticks();
        self.change_tick()
    }

    // ----- typed API ---------------------------------------------------------------------

    fn bundle_id<B: Bundle>(&mut self) -> usize {
        if let Some(&b) = self.bundle_by_type.get(&TypeId::of::<B>()) {
            return b;
        }
        let mut ids = Vec::new();
        let info = B::register(&mut self.components, &mut ids)
            .and_then(|()| self.declare_typed_references(&ids).map(|()| ids))
            .and_then(|ids| BundleInfo::new(ids, &self.components))
            .unwrap_or_else(|e| panic!("invalid bundle {}: {e}", std::any::type_name::<B>()));
        self.bundles.push(info);
        self.bundle_by_type.insert(TypeId::of::<B>(), self.bundles.len() - 1);
        self.bundles.len() - 1
    }

    fn insert_target(&mut self, from: TableId, bundle: usize) -> TableId {
        if let Some(t) = self.storage.tables[from.index()].insert_edge(bundle) {
            return t;
        }
        let mut set: Vec<ComponentId> = self.storage.tables[from.index()].components().to_vec();
        set.extend_from_slice(&self.bundles[bundle].table_ids);
        set.sort_unstable();
        set.dedup();
        let to = self.storage.table_for(&set, &self.components);
        self.storage.tables[from.index()].set_insert_edge(bundle, to);
        to
    }

    fn remove_target(&mut self, from: TableId, bundle: usize) -> TableId {
        if let Some(t) = self.storage.tables[from.index()].remove_edge(bundle) {
            return t;
        }
        let removed = &self.bundles[bundle].table_ids;
        let set: Vec<ComponentId> =
            self.storage.tables[from.index()].components().iter().copied().filter(|c| !removed.contains(c)).collect();
        let to = self.storage.table_for(&set, &self.components);
        self.storage.tables[from.index()].set_remove_edge(bundle, to);
        to
    }

    /// Spawns an entity with the components of a bundle.
    ///
    /// # Panics
    /// If the bundle names a component type twice (a programming error, caught on first use),
    /// or holds a declared reference to a stale entity ([`World::try_spawn`] returns that
    /// error instead).
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.try_spawn(bundle).unwrap_or_else(|e| panic!("spawn: {e}"))
    }

    /// Spawns an entity with the components of a bundle, checking the bundle's declared
    /// references first (each target live or null: [`EngineError::StaleEntity`]); on an error
    /// nothing changes.
    ///
    /// ```
    /// use ecsdb_engine::{Component, Entity, World};
    /// #[derive(Component)]
    /// struct ChildOf {
    ///     #[references(on_delete = "cascade")]
    ///     parent: Entity,
    /// }
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// world.try_spawn(ChildOf { parent }).unwrap();
    /// world.despawn(parent).unwrap();
    /// assert!(world.try_spawn(ChildOf { parent }).is_err());
    /// ```
    pub fn try_spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity> {
        let bid = self.bundle_id::<B>();
        if self.writes_references(&self.bundles[bid].ids) {
            let values = self.own_bundle(bid, bundle);
            self.check_owned_references(None, &values)?;
            return Ok(self.spawn_owned(values));
        }
        Ok(self.spawn_unchecked(bid, bundle))
    }

    fn spawn_unchecked<B: Bundle>(&mut self, bid: usize, bundle: B) -> Entity {
        let table = self.insert_target(TableId::EMPTY, bid);
        let e = self.entities.alloc();
        let tick = self.write_tick();
        let row = self.place_new(e, table, bid, BundleSource(bundle), tick);
        self.entities.set_location(e.index(), EntityLocation { table: table.0, row: row as u32 });
        e
    }

    /// The bundle's values moved into owned values, to be checked before they are placed.
    fn own_bundle<B: Bundle>(&self, bid: usize, bundle: B) -> Vec<OwnedValue> {
        let ids = &self.bundles[bid].ids;
        let mut out = Vec::with_capacity(ids.len());
        bundle.put(|i, ptr, _| {
            // SAFETY: the bundle hands over a valid value of its i-th component, `ids[i]`.
            out.push(unsafe { OwnedValue::moved_from(self.components.info(ids[i]), ptr) })
        });
        out
    }

    /// Spawns one entity per bundle, reserving room up front.
    ///
    /// # Panics
    /// If a bundle holds a declared reference to a stale entity; every bundle is checked
    /// before the first is spawned, so then nothing is.
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&mut self, iter: I) -> Vec<Entity> {
        let iter = iter.into_iter();
        let bid = self.bundle_id::<B>();
        if self.writes_references(&self.bundles[bid].ids) {
            let all: Vec<Vec<OwnedValue>> = iter.map(|b| self.own_bundle(bid, b)).collect();
            for values in &all {
                if let Err(e) = self.check_owned_references(None, values) {
                    panic!("spawn_batch: {e}");
                }
            }
            return all.into_iter().map(|values| self.spawn_owned(values)).collect();
        }
        if self.bundles[bid].has_sparse {
            // Sparse components go through the general path, one entity at a time.
            return iter.map(|b| self.spawn_unchecked(bid, b)).collect();
        }
        let table = self.insert_target(TableId::EMPTY, bid);
        let (lower, _) = iter.size_hint();
        let tick = self.write_tick();
        let t = &mut self.storage.tables[table.index()];
        let entities = &mut self.entities;
        t.reserve(lower);
        entities.reserve(lower);
        // Resolve each bundle component's column once for the whole batch.
        let columns: Vec<usize> =
            self.bundles[bid].ids.iter().map(|&c| t.column_index(c).expect("target table has it")).collect();
        let mut out = Vec::with_capacity(lower);
        for bundle in iter {
            let e = entities.alloc();
            let row = t.push_entity(e);
            bundle.put(|i, ptr, size| {
                // SAFETY: the bundle hands over a valid value of its i-th component, whose
                // column is `columns[i]`.
                unsafe { t.column_at_mut(columns[i]).push_sized(ptr, size, tick) }
            });
            entities.set_location(e.index(), EntityLocation { table: table.0, row: row as u32 });
            out.push(e);
        }
        out
    }

    /// Pushes a new row for `e` into `table` holding exactly the bundle's table components
    /// (and its sparse components into their sets).
    #[inline]
    fn place_new<S: ComponentSource>(&mut self, e: Entity, table: TableId, bid: usize, src: S, tick: Tick) -> usize {
        let ids = &self.bundles[bid].ids;
        let Storage { tables, sparse, .. } = &mut self.storage;
        let components = &self.components;
        let t = &mut tables[table.index()];
        let row = t.push_entity(e);
        src.put_all(|i, ptr, size| {
            let cid = ids[i];
            match t.column_mut(cid) {
                // SAFETY: the source hands over a valid value of component `cid`.
                Some(col) => unsafe { col.push_sized(ptr, size, tick) },
                None => {
                    let set = sparse_mut(sparse, cid, components);
                    // SAFETY: as above.
                    unsafe { set.insert(e, ptr, tick) };
                }
            }
        });
        row
    }

    /// Adds the bundle's components to a live entity, overwriting those it already has. A
    /// declared reference in the bundle is checked first (target live or null, `ACYCLIC`); on
    /// an error nothing changes.
    pub fn insert<B: Bundle>(&mut self, e: Entity, bundle: B) -> Result<()> {
        let loc = self.location(e)?;
        let bid = self.bundle_id::<B>();
        if self.writes_references(&self.bundles[bid].ids) {
            let values = self.own_bundle(bid, bundle);
            self.check_owned_references(Some(e), &values)?;
            return self.insert_owned(e, values);
        }
        let target = self.insert_target(TableId(loc.table), bid);
        // Borrow the id list out of the cache for the call instead of cloning it per insert.
        let ids = std::mem::take(&mut self.bundles[bid].ids);
        self.place_existing(e, loc, target, &ids, BundleSource(bundle));
        self.bundles[bid].ids = ids;
        Ok(())
    }

    /// Moves a live entity to `target` (a superset of its table) and writes the components,
    /// overwriting those it already had.
    fn place_existing<S: ComponentSource>(
        &mut self,
        e: Entity,
        loc: EntityLocation,
        target: TableId,
        ids: &[ComponentId],
        src: S,
    ) {
        let tick = self.write_tick();
        let source = TableId(loc.table);
        let mut row = loc.row as usize;
        if target != source {
            let (from, to) = self.storage.two_tables(source, target);
            let (new_row, swapped) = from.move_row(row, to);
            if let Some(s) = swapped {
                self.entities.set_location(s.index(), loc);
            }
            self.entities.set_location(e.index(), EntityLocation { table: target.0, row: new_row as u32 });
            row = new_row;
        }
        let Storage { tables, sparse, .. } = &mut self.storage;
        let components = &self.components;
        let t = &mut tables[target.index()];
        let had_before = |cid: ComponentId, t: &ArchetypeTable| t.column(cid).is_some_and(|c| c.len() > row);
        let pushed_to = t.len() - 1;
        src.put_all(|i, ptr, _| {
            let cid = ids[i];
            let existed = had_before(cid, t);
            match t.column_mut(cid) {
                Some(col) if existed => {
                    // SAFETY: the row holds a value of `cid`; the source hands over a new one.
                    unsafe { col.replace(row, ptr, tick) }
                }
                Some(col) => {
                    debug_assert_eq!(col.len(), pushed_to);
                    // SAFETY: the moved row is missing exactly this column's value.
                    unsafe { col.push_from(ptr, tick) }
                }
                None => {
                    let set = sparse_mut(sparse, cid, components);
                    // SAFETY: the source hands over a valid value of `cid`.
                    unsafe { set.insert(e, ptr, tick) };
                }
            }
        });
    }

    /// Removes the bundle's components from a live entity and returns them. Fails, changing
    /// nothing, if the entity lacks any of them.
    pub fn remove<B: Bundle>(&mut self, e: Entity) -> Result<B> {
        let loc = self.location(e)?;
        let bid = self.bundle_id::<B>();
        for &cid in self.bundles[bid].ids.iter() {
            if !self.has_id(e, loc, cid) {
                return Err(EngineError::MissingComponent {
                    entity: e,
                    component: self.components.info(cid).name().to_string(),
                });
            }
        }
        for i in 0..self.bundles[bid].ids.len() {
            self.note_removed(e, self.bundles[bid].ids[i]);
        }
        let target = self.remove_target(TableId(loc.table), bid);
        let info = &self.bundles[bid];
        let row = loc.row as usize;
        let storage = &self.storage;
        let components = &self.components;
        // SAFETY: every pointer is a live value of the bundle's i-th component (checked above);
        // the values are forgotten below rather than dropped.
        let out = unsafe {
            B::take(|i| {
                let cid = info.ids[i];
                storage.component_ptr(loc, e, cid, components.info(cid)).expect("presence checked above")
            })
        };
        if info.has_sparse {
            for &cid in info.ids.iter() {
                if components.info(cid).storage() == StorageKind::Sparse {
                    let set = self.storage.sparse[cid.index()].as_mut().expect("presence checked above");
                    set.remove(e, Some(&mut |_| {}));
                }
            }
        }
        if target != TableId(loc.table) {
            let (from, to) = self.storage.two_tables(TableId(loc.table), target);
            let (new_row, swapped) = from.move_row_taking(row, to, |_, _| {});
            if let Some(s) = swapped {
                self.entities.set_location(s.index(), loc);
            }
            self.entities.set_location(e.index(), EntityLocation { table: target.0, row: new_row as u32 });
        }
        Ok(out)
    }

    /// Called on every path that takes a component away from a live entity (remove, despawn),
    /// before the value is gone. Secondary indexes hook in here; value changes reach them
    /// through change ticks instead.
    fn note_removed(&mut self, e: Entity, id: ComponentId) {
        self.indexes.note_removed(e, id);
    }

    /// Despawns a live entity, dropping its components, and applies the `ON DELETE` policies
    /// of the references to it (see [`World::despawn_many`]): all or nothing.
    pub fn despawn(&mut self, e: Entity) -> Result<()> {
        if self.references.is_empty() {
            return self.despawn_one(e);
        }
        self.despawn_many(&[e]).map(|_| ())
    }

    /// Despawns one live entity, ignoring references.
    pub(crate) fn despawn_one(&mut self, e: Entity) -> Result<()> {
        let loc = self.location(e)?;
        for id in self.components_of(e)? {
            self.note_removed(e, id);
        }
        for set in self.storage.sparse.iter_mut().flatten() {
            set.remove(e, None);
        }
        let swapped = self.storage.tables[loc.table as usize].swap_remove_drop(loc.row as usize);
        if let Some(s) = swapped {
            self.entities.set_location(s.index(), loc);
        }
        self.entities.free(e);
        Ok(())
    }

    /// Despawns every entity (component definitions stay).
    pub fn clear(&mut self) {
        *self.written.get_mut() = true;
        let live: Vec<Entity> = self.iter_entities().collect();
        for t in self.storage.tables.iter_mut() {
            t.clear();
        }
        for s in self.storage.sparse.iter_mut().flatten() {
            s.clear();
        }
        for e in live {
            self.entities.free(e);
        }
    }

    fn has_id(&self, e: Entity, loc: EntityLocation, id: ComponentId) -> bool {
        match self.components.info(id).storage() {
            StorageKind::Table => self.storage.tables[loc.table as usize].has(id),
            StorageKind::Sparse => self.sparse_set(id).is_some_and(|s| s.contains(e)),
        }
    }

    fn typed_ptr<T: Component>(&self, e: Entity) -> Result<(ComponentId, EntityLocation, *const u8)> {
        let loc = self.location(e)?;
        let missing = || EngineError::MissingComponent { entity: e, component: T::schema().name.to_string() };
        let id = self.components.id_of::<T>().ok_or_else(missing)?;
        let ptr = self.storage.component_ptr(loc, e, id, self.components.info(id)).ok_or_else(missing)?;
        Ok((id, loc, ptr))
    }

    /// A shared reference to an entity's component.
    pub fn get<T: Component>(&self, e: Entity) -> Result<&T> {
        let (_, _, ptr) = self.typed_ptr::<T>(e)?;
        // SAFETY: the id was registered for `T`, so the pointer is a live `T` owned by self.
        Ok(unsafe { &*(ptr as *const T) })
    }

    /// Mutable access to an entity's component; writing through the guard stamps its tick.
    /// A component holding a declared reference is refused
    /// ([`EngineError::MutableReference`]): write it with [`World::insert`] or
    /// [`World::set_reference`], which check the target.
    pub fn get_mut<T: Component>(&mut self, e: Entity) -> Result<Mut<'_, T>> {
        let (id, loc, _) = self.typed_ptr::<T>(e)?;
        self.refuse_mutable_references(&[id])?;
        let tick = self.write_tick();
        let (col, row) = match T::STORAGE {
            StorageKind::Table => {
                let t = &mut self.storage.tables[loc.table as usize];
                (t.column_mut(id).expect("presence checked"), loc.row as usize)
            }
            StorageKind::Sparse => {
                let set = self.storage.sparse[id.index()].as_mut().expect("presence checked");
                let r = set.row(e).expect("presence checked");
                (set.column_mut(), r)
            }
        };
        let ptr = col.get_ptr(row) as *mut T;
        // SAFETY: the row holds a live `T`; `&mut self` guarantees exclusive access, and the
        // value and its tick are disjoint memory.
        let value = unsafe { &mut *ptr };
        let changed = col.changed_tick_logged(row, tick);
        Ok(Mut::new(value, changed, tick))
    }

    /// Whether the live entity has the component.
    pub fn has<T: Component>(&self, e: Entity) -> Result<bool> {
        let loc = self.location(e)?;
        Ok(self.components.id_of::<T>().is_some_and(|id| self.has_id(e, loc, id)))
    }

    // ----- dynamic API -------------------------------------------------------------------

    /// Whether the live entity has the component with this id.
    pub fn has_component(&self, e: Entity, id: ComponentId) -> Result<bool> {
        let loc = self.location(e)?;
        Ok(self.has_id(e, loc, id))
    }

    /// The ids of every component the entity has (table and sparse), sorted.
    pub fn components_of(&self, e: Entity) -> Result<Vec<ComponentId>> {
        let loc = self.location(e)?;
        let mut out = self.storage.tables[loc.table as usize].components().to_vec();
        for (i, s) in self.storage.sparse.iter().enumerate() {
            if s.as_ref().is_some_and(|s| s.contains(e)) {
                out.push(ComponentId(i as u32));
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Pointer to the entity's value of a component (for readers that know its schema).
    pub fn component_ptr(&self, e: Entity, id: ComponentId) -> Result<Option<*const u8>> {
        let loc = self.location(e)?;
        Ok(self.storage.component_ptr(loc, e, id, self.components.info(id)))
    }

    fn missing(&self, e: Entity, id: ComponentId) -> EngineError {
        EngineError::MissingComponent { entity: e, component: self.components.info(id).name().to_string() }
    }

    /// Reads one field by name.
    pub fn get_field(&self, e: Entity, component: &str, field: &str) -> Result<Value> {
        let id = self.component_id(component)?;
        let info = self.components.info(id);
        if info.is_opaque() {
            return Err(EngineError::Opaque(component.to_string()));
        }
        let f = info
            .field(field)
            .ok_or_else(|| EngineError::UnknownField { component: component.to_string(), field: field.to_string() })?;
        let ptr = self.component_ptr(e, id)?.ok_or_else(|| self.missing(e, id))?;
        // SAFETY: `ptr` is a live value of this component, which `f` belongs to.
        unsafe { read_field(ptr, f) }.map_err(|ty| EngineError::OutOfRange {
            component: component.to_string(),
            field: field.to_string(),
            ty,
        })
    }

    /// Reads a whole component as a [`Value::Object`].
    pub fn get_component_value(&self, e: Entity, id: ComponentId) -> Result<Value> {
        let ptr = self.component_ptr(e, id)?.ok_or_else(|| self.missing(e, id))?;
        // SAFETY: `ptr` is a live value of this component.
        unsafe { read_object(ptr, self.components.info(id)) }
    }

    /// Converts named field values for a component, checking names, duplicates and types.
    pub fn convert_fields(&self, id: ComponentId, fields: &[(&str, Value)]) -> Result<Vec<(usize, FieldValue)>> {
        let info = self.components.info(id);
        if info.is_opaque() {
            return Err(EngineError::Opaque(info.name().to_string()));
        }
        let mut out: Vec<(usize, FieldValue)> = Vec::with_capacity(fields.len());
        for (name, v) in fields {
            let idx = info.field_index(name).ok_or_else(|| EngineError::UnknownField {
                component: info.name().to_string(),
                field: name.to_string(),
            })?;
            if out.iter().any(|(i, _)| *i == idx) {
                return Err(EngineError::DuplicateField {
                    component: info.name().to_string(),
                    field: name.to_string(),
                });
            }
            out.push((idx, convert_value(info.name(), &info.fields()[idx], v)?));
        }
        Ok(out)
    }

    /// Writes field values by name into a component the entity has. All values are checked
    /// before any is written.
    pub fn set_fields(&mut self, e: Entity, component: &str, fields: &[(&str, Value)]) -> Result<()> {
        let id = self.component_id(component)?;
        let loc = self.location(e)?;
        let converted = self.convert_fields(id, fields)?;
        if !self.has_id(e, loc, id) {
            return Err(self.missing(e, id));
        }
        self.write_fields(e, id, converted)
    }

    /// Writes already-converted field values (see [`World::convert_fields`]) into a component
    /// the entity has, stamping its changed tick. Fails for stale entities, missing components
    /// and reference targets that are stale or would close an `ACYCLIC` loop
    /// ([`World::check_reference_writes`]), before writing anything.
    pub fn write_fields(&mut self, e: Entity, id: ComponentId, fields: Vec<(usize, FieldValue)>) -> Result<()> {
        if !self.references.is_empty() {
            let targets = fields.iter().filter_map(|(i, fv)| Some((*i, fv.as_entity()?)));
            let writes = self.reference_writes_of(Some(e), id, targets);
            self.check_reference_writes(&writes)?;
        }
        self.write_fields_unchecked(e, id, fields)
    }

    /// [`World::write_fields`] without the reference checks: for a caller that checked every
    /// reference of a whole statement at once with [`World::check_reference_writes`] (a
    /// statement is checked on its final state, which single writes cannot see).
    pub fn write_fields_unchecked(
        &mut self,
        e: Entity,
        id: ComponentId,
        fields: Vec<(usize, FieldValue)>,
    ) -> Result<()> {
        let loc = self.location(e)?;
        let tick = self.write_tick();
        let info = self.components.info(id);
        let (col, row) = match info.storage() {
            StorageKind::Table => {
                let t = &mut self.storage.tables[loc.table as usize];
                match t.column_mut(id) {
                    Some(c) => (c, loc.row as usize),
                    None => return Err(self.missing(e, id)),
                }
            }
            StorageKind::Sparse => match self.storage.sparse.get_mut(id.index()).and_then(|s| s.as_mut()) {
                Some(set) if set.contains(e) => {
                    let r = set.row(e).expect("contains");
                    (set.column_mut(), r)
                }
                _ => return Err(self.missing(e, id)),
            },
        };
        let base = col.get_ptr(row);
        for (idx, fv) in fields {
            // SAFETY: `base` is a live value of the component; `fv` was converted for this field.
            unsafe { fv.write(base, &info.fields()[idx]) };
        }
        *col.changed_tick_logged(row, tick) = tick;
        Ok(())
    }

    /// Builds component values from field values (zero for fields left out), checking
    /// everything; nothing in the world changes.
    pub(crate) fn build_values(&self, components: &[(&str, &[(&str, Value)])]) -> Result<Vec<OwnedValue>> {
        let mut out: Vec<OwnedValue> = Vec::with_capacity(components.len());
        for (name, fields) in components {
            let id = self.component_id(name)?;
            if out.iter().any(|v| v.id == id) {
                return Err(EngineError::Invalid(format!("component '{name}' given twice")));
            }
            out.push(OwnedValue::build(self.components.info(id), fields)?);
        }
        Ok(out)
    }

    /// Spawns an entity from components given by name and field values.
    /// Reference targets are checked (live or null).
    pub fn spawn_values(&mut self, components: &[(&str, &[(&str, Value)])]) -> Result<Entity> {
        let values = self.build_values(components)?;
        self.check_owned_references(None, &values)?;
        Ok(self.spawn_owned(values))
    }

    /// Adds (or overwrites) components given by name and field values; fields left out are
    /// zero. Checks everything (reference targets and `ACYCLIC` included) before changing
    /// anything.
    pub fn insert_values(&mut self, e: Entity, components: &[(&str, &[(&str, Value)])]) -> Result<()> {
        self.location(e)?;
        let values = self.build_values(components)?;
        self.check_owned_references(Some(e), &values)?;
        self.insert_owned(e, values)
    }

    /// [`World::insert_values`] without the reference checks, for a caller that checked a
    /// whole statement's references at once ([`World::check_reference_writes`]).
    pub fn insert_values_unchecked(&mut self, e: Entity, components: &[(&str, &[(&str, Value)])]) -> Result<()> {
        self.location(e)?;
        let values = self.build_values(components)?;
        self.insert_owned(e, values)
    }

    fn check_owned_references(&self, e: Option<Entity>, values: &[OwnedValue]) -> Result<()> {
        if self.references.is_empty() {
            return Ok(());
        }
        let mut writes = Vec::new();
        for v in values {
            let info = self.components.info(v.id);
            let targets = self.references.on(v.id).map(|r| {
                // SAFETY: `v` holds an initialised value of its component, whose schema puts an
                // `Entity` at the reference field's offset (references are entity fields).
                (r.field, unsafe {
                    std::ptr::read_unaligned(v.ptr().add(info.fields()[r.field].offset) as *const Entity)
                })
            });
            writes.extend(self.reference_writes_of(e, v.id, targets.collect::<Vec<_>>()));
        }
        self.check_reference_writes(&writes)
    }

    /// Spawns an entity from prebuilt values (infallible once built).
    pub(crate) fn spawn_owned(&mut self, values: Vec<OwnedValue>) -> Entity {
        let e = self.entities.alloc();
        self.entities.set_location(e.index(), EntityLocation { table: TableId::EMPTY.0, row: u32::MAX });
        let row = self.storage.tables[0].push_entity(e);
        self.entities.set_location(e.index(), EntityLocation { table: 0, row: row as u32 });
        self.insert_owned(e, values).expect("entity was just spawned");
        e
    }

    /// Inserts prebuilt values into a live entity.
    pub(crate) fn insert_owned(&mut self, e: Entity, values: Vec<OwnedValue>) -> Result<()> {
        let loc = self.location(e)?;
        let mut set: Vec<ComponentId> = self.storage.tables[loc.table as usize].components().to_vec();
        let ids: Vec<ComponentId> = values.iter().map(|v| v.id).collect();
        set.extend(ids.iter().copied().filter(|&c| self.components.info(c).storage() == StorageKind::Table));
        set.sort_unstable();
        set.dedup();
        let target = self.storage.table_for(&set, &self.components);
        self.place_existing(e, loc, target, &ids, values);
        Ok(())
    }

    /// Removes a component by id. Returns whether the entity had it.
    pub fn remove_by_id(&mut self, e: Entity, id: ComponentId) -> Result<bool> {
        let loc = self.location(e)?;
        if !self.has_id(e, loc, id) {
            return Ok(false);
        }
        self.note_removed(e, id);
        match self.components.info(id).storage() {
            StorageKind::Sparse => {
                self.storage.sparse[id.index()].as_mut().expect("has it").remove(e, None);
            }
            StorageKind::Table => {
                let set: Vec<ComponentId> =
                    self.storage.tables[loc.table as usize].components().iter().copied().filter(|&c| c != id).collect();
                let target = self.storage.table_for(&set, &self.components);
                let (from, to) = self.storage.two_tables(TableId(loc.table), target);
                let (new_row, swapped) = from.move_row(loc.row as usize, to);
                if let Some(s) = swapped {
                    self.entities.set_location(s.index(), loc);
                }
                self.entities.set_location(e.index(), EntityLocation { table: target.0, row: new_row as u32 });
            }
        }
        Ok(true)
    }

    /// Removes a component by name. Returns whether the entity had it.
    pub fn remove_component(&mut self, e: Entity, component: &str) -> Result<bool> {
        let id = self.component_id(component)?;
        self.remove_by_id(e, id)
    }
}

fn sparse_mut<'a>(
    sparse: &'a mut Vec<Option<SparseSet>>,
    id: ComponentId,
    components: &Components,
) -> &'a mut SparseSet {
    let i = id.index();
    if sparse.len() <= i {
        sparse.resize_with(i + 1, || None);
    }
    sparse[i].get_or_insert_with(|| SparseSet::new(components.info(id)))
}

mod columnar;
mod mirror;
mod writers;
pub use columnar::{FieldRows, TypedFieldValues};
pub use mirror::Mirrored;
pub use writers::ComponentWriter;

mod bulk;
#[cfg(test)]
mod tests;
