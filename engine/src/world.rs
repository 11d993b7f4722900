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
use crate::tick::{CHECK_TICK_THRESHOLD, Mut, Tick};
use crate::value::{FieldValue, Value, convert_value, read_field, read_object};

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

    #[inline]
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
    pub(crate) indexes: indexes::IndexRegistry,
    /// Serde functions of opaque components, for snapshots.
    pub(crate) opaque_serde: crate::component::OpaqueSerdes,
    /// Declared references (`crate::reference`): checked on writes, applied on despawns.
    pub(crate) references: crate::reference::References,
    /// The systems and schedule clock, as plain records (snapshots save them).
    pub(crate) schedule: crate::ScheduleRecord,
    /// States of the one-shot queries run on this world (see `query::one_shot`).
    pub(crate) query_cache: query_cache::QueryCache,
    /// What a [`World::mirror_from`] stopped while moving rows had done, for the next call
    /// to finish.
    mirror_pending: Option<Box<mirror::MirrorPending>>,
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
            mirror_pending: None,
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

    /// Whether `table` is one that `ALTER COMPONENT … SET STORAGE SPARSE` emptied: its set
    /// names a component now stored sparse. It holds no rows and never will unless the
    /// component returns to the tables; snapshots and listings leave it out.
    pub fn is_retired_table(&self, table: &ArchetypeTable) -> bool {
        table.components().iter().any(|&c| self.components.info(c).storage() != StorageKind::Table)
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
    #[inline]
    pub fn is_alive(&self, e: Entity) -> bool {
        self.entities.contains(e)
    }

    /// Where a live entity's row is.
    #[inline]
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

    // ----- typed API ---------------------------------------------------------------------

    /// The bundle type's id, registering it on first use. The lookup is inlined into every
    /// insert and remove; the registration is not.
    #[inline]
    fn bundle_id<B: Bundle>(&mut self) -> usize {
        match self.bundle_by_type.get(&TypeId::of::<B>()) {
            Some(&b) => b,
            None => self.register_bundle::<B>(),
        }
    }

    #[inline(never)]
    #[cold]
    fn register_bundle<B: Bundle>(&mut self) -> usize {
        let mut ids = Vec::new();
        let info = B::register(&mut self.components, &mut ids)
            .and_then(|()| self.declare_typed_references(&ids).map(|()| ids))
            .and_then(|ids| BundleInfo::new(ids, &self.components))
            .unwrap_or_else(|e| panic!("invalid bundle {}: {e}", std::any::type_name::<B>()));
        self.bundles.push(info);
        self.bundle_by_type.insert(TypeId::of::<B>(), self.bundles.len() - 1);
        self.bundles.len() - 1
    }

    #[inline]
    fn insert_target(&mut self, from: TableId, bundle: usize) -> TableId {
        match self.storage.tables[from.index()].insert_edge(bundle) {
            Some(t) => t,
            None => self.new_insert_target(from, bundle),
        }
    }

    /// [`World::insert_target`] the first time: the table found (or made) and the edge kept.
    #[inline(never)]
    fn new_insert_target(&mut self, from: TableId, bundle: usize) -> TableId {
        let mut set: Vec<ComponentId> = self.storage.tables[from.index()].components().to_vec();
        set.extend_from_slice(&self.bundles[bundle].table_ids);
        set.sort_unstable();
        set.dedup();
        let to = self.storage.table_for(&set, &self.components);
        self.storage.tables[from.index()].set_insert_edge(bundle, to);
        to
    }

    #[inline]
    fn remove_target(&mut self, from: TableId, bundle: usize) -> TableId {
        match self.storage.tables[from.index()].remove_edge(bundle) {
            Some(t) => t,
            None => self.new_remove_target(from, bundle),
        }
    }

    /// [`World::remove_target`] the first time: the table found (or made) and the edge kept.
    #[inline(never)]
    fn new_remove_target(&mut self, from: TableId, bundle: usize) -> TableId {
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

    /// Where an entity's `T` lives, found once: its component id, its location, and the
    /// column's position in its table (table storage) or its row in the sparse set.
    #[inline]
    fn typed_place<T: Component>(&self, e: Entity) -> Result<(ComponentId, EntityLocation, usize)> {
        let loc = self.location(e)?;
        let missing = || EngineError::MissingComponent { entity: e, component: T::schema().name.to_string() };
        let id = self.components.id_of::<T>().ok_or_else(missing)?;
        let place = match T::STORAGE {
            StorageKind::Table => self.storage.tables[loc.table as usize].column_index(id),
            StorageKind::Sparse => self.storage.sparse.get(id.index()).and_then(|s| s.as_ref()?.row(e)),
        }
        .ok_or_else(missing)?;
        Ok((id, loc, place))
    }

    /// A shared reference to an entity's component.
    pub fn get<T: Component>(&self, e: Entity) -> Result<&T> {
        let (id, loc, place) = self.typed_place::<T>(e)?;
        let ptr = match T::STORAGE {
            StorageKind::Table => {
                // SAFETY: `place` is a position `column_index` gave for this table, which has
                // a column for each of its components.
                unsafe { self.storage.tables[loc.table as usize].column_at_unchecked(place) }.get_ptr(loc.row as usize)
            }
            StorageKind::Sparse => {
                self.storage.sparse[id.index()].as_ref().expect("presence checked").column().get_ptr(place)
            }
        };
        // SAFETY: the id was registered for `T`, so the pointer is a live `T` owned by self.
        Ok(unsafe { &*(ptr as *const T) })
    }

    /// Mutable access to an entity's component; writing through the guard stamps its tick.
    /// A component holding a declared reference is refused
    /// ([`EngineError::MutableReference`]): write it with [`World::insert`] or
    /// [`World::set_reference`], which check the target.
    pub fn get_mut<T: Component>(&mut self, e: Entity) -> Result<Mut<'_, T>> {
        let (id, loc, place) = self.typed_place::<T>(e)?;
        self.refuse_mutable_references(&[id])?;
        let tick = self.write_tick();
        let (col, row) = match T::STORAGE {
            StorageKind::Table => {
                let t = &mut self.storage.tables[loc.table as usize];
                // SAFETY: `place` is a position `column_index` gave for this table, which has
                // a column for each of its components.
                (unsafe { t.column_at_unchecked_mut(place) }, loc.row as usize)
            }
            StorageKind::Sparse => {
                (self.storage.sparse[id.index()].as_mut().expect("presence checked").column_mut(), place)
            }
        };
        let ptr = col.get_ptr(row) as *mut T;
        // SAFETY: the row holds a live `T`; `&mut self` guarantees exclusive access, and the
        // value and its tick are disjoint memory.
        let value = unsafe { &mut *ptr };
        let changed = col.changed_tick_logged(row);
        Ok(Mut::new(value, changed, tick))
    }

    /// Whether the live entity has the component.
    pub fn has<T: Component>(&self, e: Entity) -> Result<bool> {
        let loc = self.location(e)?;
        Ok(self.components.id_of::<T>().is_some_and(|id| self.has_id(e, loc, id)))
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

mod alter;
pub use alter::{AlteredComponent, ComponentChange};
mod columnar;
mod defaults;
mod dynamic;
mod fields;
mod indexes;
pub use indexes::{IndexFunction, IndexReader};
mod mirror;
mod opaque;
mod parts;
pub(crate) use parts::{RefusedParts, WorldParts};
mod query_cache;
mod references;
mod rewrite;
mod storage_switch;
pub use rewrite::{RowByRow, RowRewrite};
mod ticks;
mod writers;
pub use crate::storage::TypedFieldValues;
pub use columnar::FieldRows;
pub(crate) use dynamic::OwnedValue;
pub use mirror::Mirrored;
pub use writers::ComponentWriter;

mod bulk;
pub use bulk::BulkValues;
#[cfg(test)]
mod tests;
