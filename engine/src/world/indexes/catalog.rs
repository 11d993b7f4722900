//! The index catalog of a world: definitions checked and resolved, indexes created,
//! dropped, listed and asked through [`World`].

use std::sync::atomic::Ordering;
use std::sync::{Arc, TryLockError};

use roaring::RoaringBitmap;

use super::{IndexFunction, IndexReader, Slot, Source, TypedFn, function_of};
use crate::component::{Component, ComponentId, ComponentInfo, FieldType, is_identifier};
use crate::entity::Entity;
use crate::error::{EngineError, Result};
use crate::index::IndexBuild;
use crate::index::bitmap::{BitmapIndex, PresenceIndex};
use crate::index::btree::BtreeIndex;
use crate::index::function::FunctionIndex;
use crate::index::index_ref::{IndexId, next_serial};
use crate::index::keys::{KeyClass, KeyType, OrdF64};
use crate::index::relation::RelationIndex;
use crate::index::rtree::RtreeIndex;
use crate::index::skip::SkipIndex;
use crate::index::{
    Estimate, IndexAnswer, IndexDef, IndexInfo, IndexKind, IndexPredicate, RtreeUpdate, SecondaryIndex, Wanted,
};
use crate::value::Value;
use crate::world::World;

fn invalid(msg: String) -> EngineError {
    EngineError::Invalid(msg)
}

fn unknown_index(name: &str) -> EngineError {
    invalid(format!("unknown index '{name}'"))
}

/// Resolves and checks a definition: the fields an index reads and the empty index.
fn resolve(
    info: &ComponentInfo,
    def: &IndexDef,
    mode: RtreeUpdate,
) -> Result<(Vec<String>, Source, Box<dyn SecondaryIndex>)> {
    let comp = info.name();
    let mut idx = Vec::with_capacity(def.fields.len());
    for (i, f) in def.fields.iter().enumerate() {
        if info.is_opaque() {
            return Err(EngineError::Opaque(comp.to_string()));
        }
        let j = info
            .field_index(f)
            .ok_or_else(|| EngineError::UnknownField { component: comp.to_string(), field: f.clone() })?;
        if def.fields[..i].contains(f) {
            return Err(EngineError::DuplicateField { component: comp.to_string(), field: f.clone() });
        }
        idx.push(j);
    }
    let ty = |j: usize| info.fields()[j].ty;
    let keyed = |j: usize, kind: IndexKind| -> Result<Box<dyn SecondaryIndex>> {
        let key = KeyType::of(ty(j)).ok_or_else(|| {
            invalid(format!(
                "a {kind} index cannot order field '{comp}.{}' of type {}: use rtree for vectors",
                info.fields()[j].name,
                ty(j)
            ))
        })?;
        fn of<K: KeyClass + std::hash::Hash>(kind: IndexKind) -> Box<dyn SecondaryIndex> {
            match kind {
                IndexKind::Bitmap => Box::new(BitmapIndex::<K>::default()),
                IndexKind::Skip => Box::new(SkipIndex::<K>::default()),
                _ => Box::new(BtreeIndex::<K>::default()),
            }
        }
        Ok(match key {
            KeyType::Bool => of::<bool>(kind),
            KeyType::Int => of::<i64>(kind),
            KeyType::Float => of::<OrdF64>(kind),
            KeyType::Str => of::<Box<str>>(kind),
            KeyType::Entity => of::<Entity>(kind),
        })
    };
    let names = |idx: &[usize]| idx.iter().map(|&j| info.fields()[j].name.clone()).collect::<Vec<_>>();
    match def.kind {
        IndexKind::Rtree => {
            if idx.is_empty() {
                if info.is_vector_like() {
                    idx = (0..info.fields().len()).collect();
                } else if info.fields().len() == 1 && matches!(ty(0), FieldType::Vec2 | FieldType::Vec3) {
                    idx = vec![0];
                }
            }
            let dims = match idx.as_slice() {
                [j] => match ty(*j) {
                    FieldType::Vec2 => 2,
                    FieldType::Vec3 => 3,
                    _ => 0,
                },
                js if (2..=3).contains(&js.len()) && js.iter().all(|&j| ty(j).is_numeric()) => js.len(),
                _ => 0,
            };
            let index: Box<dyn SecondaryIndex> = match dims {
                2 => Box::new(RtreeIndex::<2>::new(mode)),
                3 => Box::new(RtreeIndex::<3>::new(mode)),
                _ => {
                    return Err(invalid(format!(
                        "an rtree index needs a vector-like component (2 or 3 numeric fields), one vec2/vec3 field, \
                         or 2 or 3 numeric fields; '{comp}' {}",
                        if def.fields.is_empty() {
                            "is not vector-like".to_string()
                        } else {
                            format!("fields {:?} are not", def.fields)
                        }
                    )));
                }
            };
            Ok((names(&idx), Source::Fields(idx), index))
        }
        IndexKind::Bitmap => match idx.as_slice() {
            [] => Ok((Vec::new(), Source::Presence, Box::new(PresenceIndex::default()))),
            [j] => Ok((names(&idx), Source::Fields(vec![*j]), keyed(*j, IndexKind::Bitmap)?)),
            _ => Err(invalid(format!("a bitmap index covers one field (or none, for presence); got {:?}", def.fields))),
        },
        IndexKind::Btree | IndexKind::Skip => {
            if idx.is_empty() && info.fields().len() == 1 && !info.is_opaque() {
                idx = vec![0];
            }
            match idx.as_slice() {
                [j] => Ok((names(&idx), Source::Fields(vec![*j]), keyed(*j, def.kind)?)),
                _ => Err(invalid(format!("a {} index covers one field of '{comp}'; got {:?}", def.kind, def.fields))),
            }
        }
        IndexKind::Relation => match idx.as_slice() {
            [j] if ty(*j) == FieldType::Entity => {
                Ok((names(&idx), Source::Fields(vec![*j]), Box::new(RelationIndex::default())))
            }
            _ => Err(invalid(format!("a relation index covers one entity field of '{comp}'; got {:?}", def.fields))),
        },
        IndexKind::Function => Err(invalid(
            "function indexes are created from Rust with create_function_index (they need the predicate)".to_string(),
        )),
    }
}

impl World {
    fn check_new_index_name(&self, name: &str) -> Result<()> {
        if !is_identifier(name) {
            return Err(invalid(format!("'{name}' is not a valid index name")));
        }
        if self.indexes.read().find(name).is_some() {
            return Err(invalid(format!("index '{name}' already exists")));
        }
        Ok(())
    }

    /// Builds a new index over the current rows and adds it.
    fn install(
        &mut self,
        def: IndexDef,
        component: ComponentId,
        source: Source,
        index: Box<dyn SecondaryIndex>,
        build: IndexBuild,
    ) -> String {
        let name = def.name.clone().unwrap_or_default();
        let mut slot = Slot {
            def,
            component,
            source,
            index,
            last_tick: 0,
            unreadable: RoaringBitmap::new(),
            needs_rebuild: true,
            dirty: false,
            removals_while_dirty: 0,
            serial: next_serial(),
        };
        let world: &World = self;
        if build == IndexBuild::Now {
            let this = world.read_change_tick_wide();
            slot.refresh(world, this, None);
        }
        // Unbuilt, the slot keeps `needs_rebuild`: the next refresh (every read of the
        // indexes goes through one) builds it from the rows as they are then.
        world.indexes.write().slots.push(slot);
        self.indexes.version.fetch_add(1, Ordering::Relaxed);
        name
    }

    /// Creates an index and builds it from the current rows. Returns its name (given, or
    /// `<component>_<fields>_<kind>` with the fields as resolved).
    ///
    /// Errors: unknown component or field, fields that do not suit the kind (see
    /// [`IndexDef::fields`]), an invalid or taken name, or kind `function` (use
    /// [`World::create_function_index`]).
    pub fn create_index(&mut self, def: IndexDef) -> Result<String> {
        self.create_index_with(def, IndexBuild::Now)
    }

    /// [`World::create_index`] with the same checks and name, but the index is built by the
    /// next read of the indexes (a query, [`World::refresh_indexes`], [`World::indexes`])
    /// instead of now: for a world about to be saved, whose file keeps only the definition,
    /// building it would be wasted.
    pub fn create_index_deferred(&mut self, def: IndexDef) -> Result<String> {
        self.create_index_with(def, IndexBuild::Deferred)
    }

    /// [`World::create_index`], built now or deferred.
    pub(crate) fn create_index_with(&mut self, def: IndexDef, build: IndexBuild) -> Result<String> {
        let id = self.component_id(&def.component)?;
        let info = self.components().info(id);
        let (fields, source, index) = resolve(info, &def, RtreeUpdate::default())?;
        let name = match &def.name {
            Some(n) => n.clone(),
            None => {
                let mut n = info.name().to_string();
                for f in &fields {
                    n.push('_');
                    n.push_str(f);
                }
                n.push('_');
                n.push_str(def.kind.name());
                n
            }
        };
        self.check_new_index_name(&name)?;
        let def = IndexDef { name: Some(name), component: info.name().to_string(), fields, kind: def.kind };
        Ok(self.install(def, id, source, index, build))
    }

    /// Registers a predicate over a component as a function index named `name`: the set of
    /// entities for which `f(component as a Value::Object)` is true, re-evaluated only for
    /// rows that changed since the last refresh (and new rows). In text, `WHERE name(C)`.
    /// `f` must be pure (the same value gives the same answer) and should not panic.
    ///
    /// ```
    /// use ecsdb_engine::index::IndexPredicate;
    /// use ecsdb_engine::{Component, Value, World};
    /// #[derive(Component)] struct Position { x: f32, y: f32 }
    /// let mut world = World::new();
    /// let a = world.spawn(Position { x: 1.0, y: 5.0 });
    /// world.spawn(Position { x: -1.0, y: 5.0 });
    /// world.create_function_index("visible", "Position", |p: &Value| match p {
    ///     Value::Object(f) => f[0].1.as_f64().is_some_and(|x| x > 0.0),
    ///     _ => false,
    /// }).unwrap();
    /// let seen = world.index_answer("visible", &IndexPredicate::Function { name: "visible".into() }).unwrap();
    /// assert_eq!(seen.unwrap().into_vec(None), [a.index()]);
    /// ```
    pub fn create_function_index(
        &mut self,
        name: &str,
        component: &str,
        f: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Result<String> {
        let id = self.component_id(component)?;
        let info = self.components().info(id);
        if info.is_opaque() {
            return Err(EngineError::Opaque(component.to_string()));
        }
        self.check_new_index_name(name)?;
        let def = IndexDef {
            name: Some(name.to_string()),
            component: info.name().to_string(),
            fields: Vec::new(),
            kind: IndexKind::Function,
        };
        let source = Source::Dynamic(Arc::new(f));
        Ok(self.install(def, id, source, Box::new(FunctionIndex::new(name)), IndexBuild::Now))
    }

    /// Like [`World::create_function_index`] with a predicate over the Rust type (which is
    /// registered if needed); works for opaque components too.
    ///
    /// ```
    /// use ecsdb_engine::index::IndexPredicate;
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Health { hp: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Health { hp: 0.0 });
    /// world.create_function_index_typed("dead", |h: &Health| h.hp <= 0.0).unwrap();
    /// let dead = IndexPredicate::Function { name: "dead".into() };
    /// assert_eq!(world.index_answer("dead", &dead).unwrap().unwrap().into_vec(None), [e.index()]);
    /// world.get_mut::<Health>(e).unwrap().hp = 10.0;
    /// assert!(world.index_answer("dead", &dead).unwrap().unwrap().into_vec(None).is_empty());
    /// ```
    pub fn create_function_index_typed<T: Component>(
        &mut self,
        name: &str,
        f: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Result<String> {
        let id = self.register::<T>()?;
        self.check_new_index_name(name)?;
        let component = self.components().info(id).name().to_string();
        let def = IndexDef { name: Some(name.to_string()), component, fields: Vec::new(), kind: IndexKind::Function };
        let typed: TypedFn = Arc::new(move |w: &World, e: Entity| w.get::<T>(e).ok().map(&f));
        Ok(self.install(def, id, Source::Typed(typed), Box::new(FunctionIndex::new(name)), IndexBuild::Now))
    }

    /// Drops an index (an error if there is none by that name).
    pub fn drop_index(&mut self, name: &str) -> Result<()> {
        let set = self.indexes.get_mut();
        let i = set.slots.iter().position(|s| s.name() == name).ok_or_else(|| unknown_index(name))?;
        set.slots.remove(i);
        self.indexes.version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A number that changes whenever an index is created or dropped on this world, so that
    /// a plan made against its indexes can tell it should be made again (prepared statements
    /// in the query crate do).
    ///
    /// ```
    /// use ecsdb_engine::index::{IndexDef, IndexKind};
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Health { hp: f32 }
    /// let mut world = World::new();
    /// world.spawn(Health { hp: 1.0 });
    /// let before = world.index_catalog_version();
    /// let name = world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)).unwrap();
    /// let created = world.index_catalog_version();
    /// assert_ne!(created, before);
    /// world.drop_index(&name).unwrap();
    /// assert_ne!(world.index_catalog_version(), created);
    /// ```
    pub fn index_catalog_version(&self) -> u64 {
        self.indexes.version.load(Ordering::Relaxed)
    }

    /// Every index with its entries and memory, in creation order (`SHOW INDEXES`). Refreshes.
    pub fn indexes(&self) -> Vec<IndexInfo> {
        self.index_reader().list()
    }

    /// The index with this name (refreshes).
    pub fn index_info(&self, name: &str) -> Option<IndexInfo> {
        self.index_reader_for(Wanted::One(name)).info(name)
    }

    /// The id of the index named `name`, for readers to find it again without a search by
    /// name (see [`IndexId`]). Refreshes nothing.
    pub fn index_id(&self, name: &str) -> Option<IndexId> {
        self.indexes.read().id(name)
    }

    /// The indexes over a component (refreshes).
    pub fn indexes_on(&self, component: ComponentId) -> Vec<IndexInfo> {
        self.index_reader_for(Wanted::On(&[component])).on(component)
    }

    /// The definitions of every index, names and fields resolved, in creation order (what a
    /// snapshot saves). Function indexes are listed with kind `function`: their predicates are
    /// Rust closures, so a loader re-registers them with [`World::create_function_index`]
    /// rather than [`World::create_index`].
    pub fn index_definitions(&self) -> Vec<IndexDef> {
        self.indexes.read().slots.iter().map(|s| s.def.clone()).collect()
    }

    /// Brings every index up to date with `&mut` access (no locking). Cost: a scan of the
    /// change ticks of the indexed components plus the work for the rows that changed.
    pub fn refresh_indexes(&mut self) {
        let world: &World = self;
        world.indexes.write().refresh(world, Wanted::All);
    }

    /// Refreshes what changed since the last refresh and returns read access to every index:
    /// one per statement. Never stale: the reader borrows the world, so nothing changes
    /// while it lives.
    pub fn index_reader(&self) -> IndexReader<'_> {
        self.index_reader_for(Wanted::All)
    }

    /// [`World::index_reader`] refreshing only the `wanted` indexes: a statement asks for
    /// those it may use, so indexes nobody reads cost writers nothing until read. The reader
    /// answers from the indexes that are up to date and declines (`None`) the others, as it
    /// declines a shape an index does not answer.
    ///
    /// ```
    /// use ecsdb_engine::index::{IndexDef, IndexKind, IndexPredicate, Wanted};
    /// use ecsdb_engine::{ComponentDef, FieldType, Value, World};
    /// let mut world = World::new();
    /// world.define_component(&ComponentDef::new("Hp", &[("v", FieldType::I64)])).unwrap();
    /// world.define_component(&ComponentDef::new("Team", &[("t", FieldType::I64)])).unwrap();
    /// world.create_index(IndexDef::new("Hp", &["v"], IndexKind::Bitmap).named("hp")).unwrap();
    /// world.create_index(IndexDef::new("Team", &["t"], IndexKind::Bitmap).named("team")).unwrap();
    /// world.spawn_values(&[("Hp", &[("v", Value::Int(5))]), ("Team", &[("t", Value::Int(1))])]).unwrap();
    /// let five = IndexPredicate::Eq(Value::Int(5));
    /// let r = world.index_reader_for(Wanted::One("hp"));
    /// assert_eq!(r.estimate("hp", &five).unwrap().rows, 1);
    /// // "team" was left for later: it answers nothing until a reader wants it.
    /// assert!(r.estimate("team", &IndexPredicate::Eq(Value::Int(1))).is_none());
    /// ```
    pub fn index_reader_for(&self, wanted: Wanted<'_>) -> IndexReader<'_> {
        let set = self.indexes.read();
        if set.is_current(self, wanted) && !self.indexes.set.is_poisoned() {
            return IndexReader { world: self, set };
        }
        drop(set);
        match self.indexes.set.try_write() {
            Ok(mut set) => set.refresh(self, wanted),
            Err(TryLockError::Poisoned(p)) => {
                let mut set = p.into_inner();
                set.mark_all_for_rebuild();
                self.indexes.set.clear_poison();
                set.refresh(self, wanted);
            }
            // Another reader lives (nothing changed since it refreshed; indexes it left dirty
            // are declined) or another thread is refreshing (`read` waits for it).
            Err(TryLockError::WouldBlock) => {}
        }
        IndexReader { world: self, set: self.indexes.read() }
    }

    /// Estimate of index `name` for `pred` (refreshes first); `Ok(None)` when the index does
    /// not answer it, an error when there is no such index.
    pub fn index_estimate(&self, name: &str, pred: &IndexPredicate) -> Result<Option<Estimate>> {
        let r = self.index_reader_for(Wanted::One(name));
        r.set.find(name).ok_or_else(|| unknown_index(name))?;
        Ok(r.estimate(name, pred))
    }

    /// Answer of index `name` to `pred` (refreshes first), owning its data: an ordered answer
    /// is drained up to the predicate's `k` / `limit`. `Ok(None)` when the index does not
    /// answer it, an error when there is no such index.
    pub fn index_answer(&self, name: &str, pred: &IndexPredicate) -> Result<Option<IndexAnswer<'static>>> {
        let r = self.index_reader_for(Wanted::One(name));
        r.set.find(name).ok_or_else(|| unknown_index(name))?;
        let limit = match pred {
            IndexPredicate::Nearest { k, .. } => Some(*k),
            IndexPredicate::Ordered { limit, .. } => *limit,
            _ => None,
        };
        Ok(r.answer(name, pred).map(|a| a.into_owned(limit)))
    }

    /// The predicate of the function index `name`, to evaluate it in a scan.
    pub fn index_function(&self, name: &str) -> Option<IndexFunction> {
        function_of(self.indexes.read().find(name)?)
    }

    /// Chooses how an rtree index absorbs moved entities (see [`RtreeUpdate`]); the index is
    /// rebuilt at the next refresh.
    pub fn set_rtree_update(&mut self, name: &str, mode: RtreeUpdate) -> Result<()> {
        let dims = {
            let set = self.indexes.read();
            let slot = set.find(name).ok_or_else(|| unknown_index(name))?;
            let info = self.components().info(slot.component);
            match slot.def.fields.as_slice() {
                [f] if info.field(f).is_some_and(|f| f.ty == FieldType::Vec2) => 2,
                [_] => 3,
                fs => fs.len(),
            }
        };
        let set = self.indexes.get_mut();
        let slot = set.slots.iter_mut().find(|s| s.name() == name).ok_or_else(|| unknown_index(name))?;
        if slot.def.kind != IndexKind::Rtree {
            return Err(invalid(format!("index '{name}' is not an rtree index")));
        }
        slot.index = match dims {
            2 => Box::new(RtreeIndex::<2>::new(mode)),
            _ => Box::new(RtreeIndex::<3>::new(mode)),
        };
        slot.needs_rebuild = true;
        Ok(())
    }
}
