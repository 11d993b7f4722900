//! The world's side of declared references (`crate::reference`): declaring them, checking
//! writes against them, following them, and applying `ON DELETE` on despawns.

use std::collections::{HashMap, HashSet};

use crate::component::{ComponentId, FieldType, StorageKind};
use crate::entity::Entity;
use crate::error::{EngineError, Result};
use crate::index::Wanted;
use crate::on_delete::OnDelete;
use crate::reference::{Chain, Reference, ReferenceDef, ReferenceWrite};
use crate::value::Value;
use crate::world::World;

impl World {
    /// Declares `def.component.def.field` (an `entity` field) a reference. The component's
    /// present values must already satisfy it (live or null targets; no loop when `acyclic`).
    ///
    /// ```
    /// use ecsdb_engine::{ComponentDef, FieldType, OnDelete, ReferenceDef, Value, World};
    /// let mut world = World::new();
    /// world.define_component(&ComponentDef::new("ChildOf", &[("parent", FieldType::Entity)])).unwrap();
    /// world.declare_reference(&ReferenceDef::new("ChildOf", "parent", OnDelete::Cascade, true)).unwrap();
    /// let root = world.spawn_values(&[]).unwrap();
    /// let child = world.spawn_values(&[("ChildOf", &[("parent", Value::Entity(root))])]).unwrap();
    /// assert_eq!(world.despawn_many(&[root]).unwrap(), 2); // the child goes with its parent
    /// assert!(!world.is_alive(child));
    /// ```
    pub fn declare_reference(&mut self, def: &ReferenceDef) -> Result<()> {
        let id = self.component_id(&def.component)?;
        let info = self.components.info(id);
        let field = info
            .field_index(&def.field)
            .ok_or_else(|| EngineError::UnknownField { component: def.component.clone(), field: def.field.clone() })?;
        let f = &info.fields()[field];
        if f.ty != FieldType::Entity {
            return Err(EngineError::InvalidDefinition(format!(
                "'{}.{}' is {}, but only an entity field can be a reference",
                def.component, def.field, f.ty
            )));
        }
        if self.references.get(id, field).is_some() {
            return Err(EngineError::InvalidDefinition(format!(
                "'{}.{}' is already a reference",
                def.component, def.field
            )));
        }
        let r = Reference { component: id, field, offset: f.offset, on_delete: def.on_delete, acyclic: def.acyclic };
        self.validate_reference(&r)?;
        self.references.push(r);
        Ok(())
    }

    /// The declared references, by name, in declaration order.
    pub fn reference_definitions(&self) -> Vec<ReferenceDef> {
        self.references
            .all()
            .iter()
            .map(|r| {
                let info = self.components.info(r.component);
                ReferenceDef {
                    component: info.name().to_string(),
                    field: info.fields()[r.field].name.clone(),
                    on_delete: r.on_delete,
                    acyclic: r.acyclic,
                }
            })
            .collect()
    }

    /// The reference declared on field `field` of component `id`, if any.
    pub fn reference(&self, id: ComponentId, field: usize) -> Option<Reference> {
        self.references.get(id, field).copied()
    }

    /// The raw handle in `e`'s `id.field` (an `entity` field): `None` when `e` is not alive,
    /// lacks the component, or the field is not an entity field.
    pub fn entity_field(&self, e: Entity, id: ComponentId, field: usize) -> Option<Entity> {
        let info = self.components.info(id);
        let f = info.fields().get(field)?;
        if f.ty != FieldType::Entity {
            return None;
        }
        let ptr = self.component_ptr(e, id).ok()??;
        // SAFETY: `ptr` is a live value of component `id`, whose schema puts an initialised
        // `Entity` at this field's offset (its type was checked above).
        Some(unsafe { std::ptr::read_unaligned(ptr.add(f.offset) as *const Entity) })
    }

    /// Field `field` of `e`'s component `id` as a value: `Ok(None)` when `e` is not alive or
    /// lacks the component; an error for an unreadable value (a u64 above i64::MAX) or a field
    /// position out of range. Paths read through this.
    pub fn field_value(&self, e: Entity, id: ComponentId, field: usize) -> Result<Option<Value>> {
        let info = self.components.info(id);
        let Some(f) = info.fields().get(field) else {
            return Err(EngineError::Invalid(format!("component '{}' has no field #{field}", info.name())));
        };
        let Some(ptr) = self.component_ptr(e, id).ok().flatten() else { return Ok(None) };
        // SAFETY: `ptr` is a live value of component `id`, which `f` belongs to.
        unsafe { crate::value::read_field(ptr, f) }.map(Some).map_err(|ty| EngineError::OutOfRange {
            component: info.name().to_string(),
            field: f.name.clone(),
            ty,
        })
    }

    /// The live entity `e`'s `id.field` points at: `None` for a null or dead target, or when
    /// `e` lacks the component.
    pub fn live_target(&self, e: Entity, id: ComponentId, field: usize) -> Option<Entity> {
        self.entity_field(e, id, field).filter(|t| !t.is_null() && self.is_alive(*t))
    }

    /// Follows `id.field` up from `e` to the top of its chain: hops and the last live entity.
    /// A chain that loops has neither.
    pub fn walk_up(&self, e: Entity, id: ComponentId, field: usize) -> Chain {
        let mut cur = e;
        let mut depth = 0usize;
        // Beyond as many hops as there are entities, some entity was met twice.
        let limit = self.len();
        while let Some(next) = self.live_target(cur, id, field) {
            depth += 1;
            if depth > limit || next == e {
                return Chain { depth: None, root: None };
            }
            cur = next;
        }
        Chain { depth: Some(depth), root: Some(cur) }
    }

    /// Whether following `id.field` from `e` reaches `ancestor` within `max_depth` hops (no
    /// limit when `None`); `e` is not its own descendant. On a loop, true only if `ancestor`
    /// was met before the loop closed.
    pub fn is_descendant_of(
        &self,
        e: Entity,
        id: ComponentId,
        field: usize,
        ancestor: Entity,
        max_depth: Option<u64>,
    ) -> bool {
        let mut cur = e;
        let mut hops = 0u64;
        let limit = self.len() as u64;
        while let Some(next) = self.live_target(cur, id, field) {
            hops += 1;
            if max_depth.is_some_and(|m| hops > m) || next == e || hops > limit {
                return false;
            }
            if next == ancestor {
                return true;
            }
            cur = next;
        }
        false
    }

    /// [`World::is_descendant_of`] for many entities at once: for each of `entities`, the hops
    /// up `id.field` that reach `ancestor`, or `None` when its chain never does (an entity is
    /// not its own descendant). Each chain is read once: entities that share ancestors (a
    /// subtree's rows) reuse what an earlier walk found.
    pub fn hops_to_ancestor(
        &self,
        entities: &[Entity],
        id: ComponentId,
        field: usize,
        ancestor: Entity,
    ) -> Vec<Option<u64>> {
        // Hops to `ancestor` of every entity met so far (`None`: its chain never gets there).
        let mut known: HashMap<u32, Option<u64>, foldhash::fast::FixedState> =
            HashMap::with_capacity_and_hasher(entities.len() + 16, Default::default());
        // The chain being walked, nearest first; a node met twice on it closes a loop without
        // `ancestor`. Short chains are searched in place, long ones through `on_path`.
        const SHORT: usize = 16;
        let mut path: Vec<u32> = Vec::new();
        let mut on_path: HashSet<u32, foldhash::fast::FixedState> = HashSet::default();
        let mut out = Vec::with_capacity(entities.len());
        for &e in entities {
            if e == ancestor || e.is_null() {
                out.push(None);
                continue;
            }
            let mut cur = e;
            // Hops from the node past the end of `path` to `ancestor`.
            let tail = loop {
                if let Some(h) = known.get(&cur.index()) {
                    break *h;
                }
                let i = cur.index();
                let looped = if path.len() < SHORT { path.contains(&i) } else { !on_path.insert(i) };
                if looped {
                    break None;
                }
                if path.len() + 1 == SHORT {
                    on_path.extend(path.iter().copied().chain([i]));
                }
                path.push(i);
                match self.live_target(cur, id, field) {
                    Some(next) if next == ancestor => break Some(0),
                    Some(next) => cur = next,
                    None => break None,
                }
            };
            let mut hops = tail;
            for &node in path.iter().rev() {
                hops = hops.map(|h| h + 1);
                known.insert(node, hops);
            }
            // `path` starts at `e` unless `e` was known already.
            out.push(if path.is_empty() { tail } else { hops });
            path.clear();
            on_path.clear();
        }
        out
    }

    /// The ancestors of `e` along `id.field`, nearest first (stops at a null or dead target,
    /// or before repeating an entity).
    pub fn ancestors(&self, e: Entity, id: ComponentId, field: usize) -> Vec<Entity> {
        let mut out = Vec::new();
        let mut seen = HashSet::from([e]);
        let mut cur = e;
        while let Some(next) = self.live_target(cur, id, field) {
            if !seen.insert(next) {
                break;
            }
            out.push(next);
            cur = next;
        }
        out
    }

    /// The live entities whose `id.field` holds `target` (its children, for a parent field),
    /// in ascending entity order. Uses a relation index on the field when there is one.
    pub fn referrers(&self, target: Entity, id: ComponentId, field: usize) -> Vec<Entity> {
        if target.is_null() || !self.is_alive(target) {
            return Vec::new();
        }
        let reader = self.index_reader_for(Wanted::On(&[id]));
        if let Some(found) = reader.relation_on(id, field).and_then(|name| reader.referrers(&name, target)) {
            return found;
        }
        drop(reader);
        self.referrers_by_scan(target, id, field)
    }

    /// [`World::referrers`] without an index: every row of the component is read.
    fn referrers_by_scan(&self, target: Entity, id: ComponentId, field: usize) -> Vec<Entity> {
        let mut out = Vec::new();
        self.for_each_entity_field(id, field, |r, t| {
            if t == target {
                out.push(r);
            }
        });
        out.sort_unstable();
        out
    }

    /// Every descendant of `e` along `id.field` (children, their children, …), parents before
    /// children, each once.
    pub fn descendants(&self, e: Entity, id: ComponentId, field: usize) -> Vec<Entity> {
        let mut out = Vec::new();
        let mut seen = HashSet::from([e]);
        let mut frontier = vec![e];
        // One index reader for the whole walk (each opens with a refresh).
        let reader = self.index_reader_for(Wanted::On(&[id]));
        let index = reader.relation_on(id, field);
        let children = |t: Entity| match index.as_deref().and_then(|name| reader.referrers(name, t)) {
            Some(found) => found,
            None => self.referrers_by_scan(t, id, field),
        };
        while let Some(cur) = frontier.pop() {
            if cur.is_null() || !self.is_alive(cur) {
                continue;
            }
            for c in children(cur) {
                if seen.insert(c) {
                    out.push(c);
                    frontier.push(c);
                }
            }
        }
        out
    }

    /// Typed helper: the children of `parent` through `T`'s reference field `field`.
    pub fn children_of<T: crate::Component>(&self, parent: Entity, field: &str) -> Result<Vec<Entity>> {
        let (id, f) = self.typed_field::<T>(field)?;
        Ok(self.referrers(parent, id, f))
    }

    /// Typed helper: the ancestors of `e` through `T`'s field `field`, nearest first.
    pub fn ancestors_of<T: crate::Component>(&self, e: Entity, field: &str) -> Result<Vec<Entity>> {
        let (id, f) = self.typed_field::<T>(field)?;
        Ok(self.ancestors(e, id, f))
    }

    /// Typed helper: every descendant of `e` through `T`'s field `field`, parents first.
    pub fn descendants_of<T: crate::Component>(&self, e: Entity, field: &str) -> Result<Vec<Entity>> {
        let (id, f) = self.typed_field::<T>(field)?;
        Ok(self.descendants(e, id, f))
    }

    /// Sets `e`'s reference field `component.field` to `target`, checking the target (live or
    /// null) and `ACYCLIC` first; the entity must have the component.
    pub fn set_reference(&mut self, e: Entity, component: &str, field: &str, target: Entity) -> Result<()> {
        self.set_fields(e, component, &[(field, Value::Entity(target))])
    }

    fn typed_field<T: crate::Component>(&self, field: &str) -> Result<(ComponentId, usize)> {
        let name = T::schema().name;
        let id = self.components.id_of::<T>().ok_or_else(|| EngineError::UnknownComponent(name.to_string()))?;
        let f = self
            .components
            .info(id)
            .field_index(field)
            .ok_or_else(|| EngineError::UnknownField { component: name.to_string(), field: field.to_string() })?;
        Ok((id, f))
    }

    /// Calls `f(entity, handle)` for every entity holding component `id`, with the raw handle
    /// in its entity field `field`.
    pub(crate) fn for_each_entity_field(&self, id: ComponentId, field: usize, mut f: impl FnMut(Entity, Entity)) {
        match self.components.info(id).storage() {
            StorageKind::Table => {
                for (t, table) in self.storage.tables.iter().enumerate() {
                    if !table.has(id) {
                        continue;
                    }
                    let Some(col) = self.table_field::<Entity>(crate::storage::TableId(t as u32), id, field) else {
                        return;
                    };
                    for (e, h) in table.entities().iter().zip(col.iter()) {
                        f(*e, *h);
                    }
                }
            }
            StorageKind::Sparse => {
                if let (Some(set), Some(col)) = (self.sparse_set(id), self.sparse_field::<Entity>(id, field)) {
                    for (e, h) in set.entities().iter().zip(col.iter()) {
                        f(*e, *h);
                    }
                }
            }
        }
    }

    /// Checks that component `id`'s present values satisfy `r`.
    fn validate_reference(&self, r: &Reference) -> Result<()> {
        let mut writes = Vec::new();
        self.for_each_entity_field(r.component, r.field, |e, t| {
            // A `NO ACTION` handle may dangle (its target was despawned): it reads as null.
            let dangling_allowed = r.on_delete == OnDelete::NoAction && !t.is_null() && !self.is_alive(t);
            if !dangling_allowed {
                writes.push(ReferenceWrite { entity: Some(e), component: r.component, field: r.field, target: t });
            }
        });
        self.check_writes_against(&writes, std::slice::from_ref(r))
    }

    /// [`EngineError::MutableReference`] when one of `writes` (components a typed borrow would
    /// write) holds a declared reference.
    ///
    /// The test of a world with no references is inlined: every `get_mut` and one-shot
    /// `query_mut` makes it.
    #[inline]
    pub(crate) fn refuse_mutable_references(&self, writes: &[ComponentId]) -> Result<()> {
        if self.references.is_empty() {
            return Ok(());
        }
        self.refuse_declared_references(writes)
    }

    #[inline(never)]
    fn refuse_declared_references(&self, writes: &[ComponentId]) -> Result<()> {
        for &id in writes {
            if let Some(r) = self.references.on(id).next() {
                let info = self.components.info(id);
                return Err(EngineError::MutableReference {
                    component: info.name().to_string(),
                    field: info.fields()[r.field].name.clone(),
                });
            }
        }
        Ok(())
    }

    /// Whether a typed bundle of components `ids` writes a declared reference (and so goes
    /// through the checked path).
    pub(crate) fn writes_references(&self, ids: &[ComponentId]) -> bool {
        !self.references.is_empty() && ids.iter().any(|&id| self.references.on(id).next().is_some())
    }

    /// Checks every declared reference against the world as it is (targets live or null, no
    /// loops on `ACYCLIC` fields), for a world that was changed without the checks (one loaded
    /// from a file, references declared over existing data). Dangling `NO ACTION` handles left
    /// by despawns are allowed.
    pub fn validate_references(&self) -> Result<()> {
        self.references.all().iter().try_for_each(|r| self.validate_reference(r))
    }

    /// Checks the references a statement would write, together, on its final state: each
    /// target live or null ([`EngineError::StaleEntity`]), and no `ACYCLIC` field leading an
    /// entity back to itself ([`EngineError::Constraint`]). Writes to fields that are not
    /// references are ignored.
    pub fn check_reference_writes(&self, writes: &[ReferenceWrite]) -> Result<()> {
        if self.references.is_empty() {
            return Ok(());
        }
        self.check_writes_against(writes, self.references.all())
    }

    fn check_writes_against(&self, writes: &[ReferenceWrite], refs: &[Reference]) -> Result<()> {
        let is_ref = |w: &ReferenceWrite| refs.iter().find(|r| r.component == w.component && r.field == w.field);
        let mut overlay: HashMap<(Entity, ComponentId, usize), Entity> = HashMap::new();
        for w in writes {
            if is_ref(w).is_none() {
                continue;
            }
            if !w.target.is_null() && !self.is_alive(w.target) {
                return Err(EngineError::StaleEntity(w.target));
            }
            if let Some(e) = w.entity {
                overlay.insert((e, w.component, w.field), w.target);
            }
        }
        let limit = self.len() + writes.len();
        for w in writes {
            let (Some(start), Some(r)) = (w.entity, is_ref(w)) else { continue };
            if !r.acyclic {
                continue;
            }
            // Follow the field from the new target on the final state; reaching the writer is
            // a cycle. (A loop elsewhere in existing data ends the walk after `limit` hops.)
            let mut cur = w.target;
            let mut hops = 0;
            while !cur.is_null() {
                if cur == start {
                    let name = self.components.info(r.component);
                    return Err(EngineError::Constraint(format!(
                        "'{}.{}' is ACYCLIC: setting it to {} on {} would make a cycle",
                        name.name(),
                        name.fields()[r.field].name,
                        w.target,
                        start
                    )));
                }
                hops += 1;
                if hops > limit {
                    break;
                }
                cur = match overlay.get(&(cur, r.component, r.field)) {
                    Some(t) => *t,
                    None => self.live_target(cur, r.component, r.field).unwrap_or(Entity::NULL),
                };
                if !cur.is_null() && !self.is_alive(cur) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// The reference writes a set of converted field values makes (for the checks).
    pub(crate) fn reference_writes_of(
        &self,
        entity: Option<Entity>,
        id: ComponentId,
        fields: impl IntoIterator<Item = (usize, Entity)>,
    ) -> Vec<ReferenceWrite> {
        fields
            .into_iter()
            .filter(|(f, _)| self.references.get(id, *f).is_some())
            .map(|(field, target)| ReferenceWrite { entity, component: id, field, target })
            .collect()
    }

    /// Despawns `roots` and everything their references' `ON DELETE` policies take with them,
    /// all or nothing: a stale root is [`EngineError::StaleEntity`], a `RESTRICT` referrer that
    /// is not despawned too is [`EngineError::Constraint`], and then nothing changes. Returns
    /// how many entities were despawned (roots and cascades; a root named twice counts once).
    pub fn despawn_many(&mut self, roots: &[Entity]) -> Result<usize> {
        for &e in roots {
            self.location(e)?;
        }
        if self.references.is_empty() {
            // Nothing refers to anything: the roots go, table by table.
            let mut alive: Vec<Entity> = roots.to_vec();
            alive.sort_unstable();
            alive.dedup();
            self.despawn_bulk(&alive)?;
            return Ok(alive.len());
        }
        let plan = self.plan_despawn(roots)?;
        for (e, id, field) in plan.set_null {
            let f = self.components.info(id).fields()[field].clone();
            let null = crate::value::convert_value("", &f, &Value::Null)?;
            self.write_fields_unchecked(e, id, vec![(field, null)])?;
        }
        for (e, id) in plan.remove {
            self.remove_by_id(e, id)?;
        }
        self.despawn_bulk(&plan.doomed)?;
        Ok(plan.doomed.len())
    }

    /// Decides everything a despawn of `roots` does, changing nothing.
    fn plan_despawn(&self, roots: &[Entity]) -> Result<DespawnPlan> {
        let refs = self.references.all().to_vec();
        let referring: Vec<ComponentId> = refs.iter().map(|r| r.component).collect();
        let reader = self.index_reader_for(Wanted::On(&referring));
        let relation: Vec<Option<String>> = refs.iter().map(|r| reader.relation_on(r.component, r.field)).collect();
        // Referrer lookup: a relation index per field where one exists, else one scan of the
        // component for all targets at once.
        let mut scanned: Vec<Option<HashMap<Entity, Vec<Entity>>>> = vec![None; refs.len()];
        let mut doomed_set: HashSet<Entity> = HashSet::new();
        let mut doomed: Vec<Entity> = Vec::new();
        let mut work: Vec<Entity> = Vec::new();
        for &e in roots {
            if doomed_set.insert(e) {
                doomed.push(e);
                work.push(e);
            }
        }
        let mut restrict: Vec<(Entity, Entity, usize)> = Vec::new();
        let mut set_null: Vec<(Entity, ComponentId, usize)> = Vec::new();
        let mut remove: Vec<(Entity, ComponentId)> = Vec::new();
        while let Some(target) = work.pop() {
            for (k, r) in refs.iter().enumerate() {
                if r.on_delete == OnDelete::NoAction {
                    continue;
                }
                let found = match relation[k].as_deref().and_then(|name| reader.referrers(name, target)) {
                    Some(v) => v,
                    None => {
                        let map = scanned[k].get_or_insert_with(|| {
                            let mut m: HashMap<Entity, Vec<Entity>> = HashMap::new();
                            self.for_each_entity_field(r.component, r.field, |e, t| {
                                if !t.is_null() {
                                    m.entry(t).or_default().push(e);
                                }
                            });
                            m
                        });
                        map.get(&target).cloned().unwrap_or_default()
                    }
                };
                for referrer in found {
                    match r.on_delete {
                        OnDelete::Cascade => {
                            if doomed_set.insert(referrer) {
                                doomed.push(referrer);
                                work.push(referrer);
                            }
                        }
                        OnDelete::Restrict => restrict.push((referrer, target, k)),
                        OnDelete::SetNull => set_null.push((referrer, r.component, r.field)),
                        OnDelete::Remove => remove.push((referrer, r.component)),
                        OnDelete::NoAction => {}
                    }
                }
            }
        }
        if let Some((referrer, target, k)) = restrict.iter().find(|(r, _, _)| !doomed_set.contains(r)) {
            let info = self.components.info(refs[*k].component);
            return Err(EngineError::Constraint(format!(
                "cannot despawn {target}: {referrer} refers to it through '{}.{}' (ON DELETE RESTRICT)",
                info.name(),
                info.fields()[refs[*k].field].name
            )));
        }
        set_null.retain(|(e, _, _)| !doomed_set.contains(e));
        set_null.sort_unstable();
        set_null.dedup();
        remove.retain(|(e, _)| !doomed_set.contains(e));
        remove.sort_unstable();
        remove.dedup();
        Ok(DespawnPlan { doomed, set_null, remove })
    }
}

/// What a despawn will do, decided before the first change.
struct DespawnPlan {
    /// Roots and cascades, each once.
    doomed: Vec<Entity>,
    /// Fields to null on surviving referrers.
    set_null: Vec<(Entity, ComponentId, usize)>,
    /// Components to remove from surviving referrers.
    remove: Vec<(Entity, ComponentId)>,
}
