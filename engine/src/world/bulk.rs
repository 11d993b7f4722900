//! Structural changes to many entities in one call: the write phase of text statements that
//! spawn, despawn, add or remove for many targets.
//!
//! Each operation checks everything first (live, distinct targets; well-formed values) and
//! fails before changing anything, then works table by table: the targets' rows of one source
//! table move to their destination table together (one destination lookup per source table,
//! values copied as runs of consecutive rows), and are removed from the source by swap-remove
//! from the highest row down. The results equal the one-entity operations' (values, ticks,
//! index hooks), except for the order of rows within a table.

use super::{OwnedValue, Storage, World, sparse_mut};
use crate::component::{ComponentId, ComponentInfo, StorageKind};
use crate::entity::{Entity, EntityLocation};
use crate::error::{EngineError, Result};
use crate::storage::{SparseSet, TableId};
use crate::tick::Tick;
use crate::value::{ComponentValues, FieldValue};

/// Converted field values of one component for one entity (see [`World::convert_fields`]).
type ComponentFields = Vec<(usize, FieldValue)>;

/// The values [`World::insert_many`] gives its targets: fields left out of a component's
/// converted fields take their zero values.
#[derive(Clone, Debug, PartialEq)]
pub enum BulkValues {
    /// Every component's zero value on every target (`ADD Frozen`, a tag): nothing per target
    /// to build or check.
    Zero,
    /// The same converted fields on every target (`ADD Burning {t: 1} WHERE …`), one entry
    /// per component: checked once, not copied per target before the write.
    Same(Vec<ComponentFields>),
    /// `values[t * k + j]` holds target `t`'s converted fields of component `j` (`k`
    /// components).
    PerTarget(Vec<ComponentFields>),
}

/// [`BulkValues`] being written: hands each target's fields of each component out once.
enum FieldSource {
    Zero,
    Same(Vec<ComponentFields>),
    PerTarget(Vec<Option<ComponentFields>>, usize),
}

impl FieldSource {
    fn new(values: BulkValues, k: usize) -> FieldSource {
        match values {
            BulkValues::Zero => FieldSource::Zero,
            BulkValues::Same(v) => FieldSource::Same(v),
            BulkValues::PerTarget(v) => FieldSource::PerTarget(v.into_iter().map(Some).collect(), k),
        }
    }

    /// Target `i`'s fields of component `j`.
    fn take(&mut self, i: usize, j: usize) -> Fields<'_> {
        match self {
            FieldSource::Zero => Fields::Owned(Vec::new().into_iter()),
            FieldSource::Same(v) => Fields::Shared(v[j].iter()),
            FieldSource::PerTarget(v, k) => {
                Fields::Owned(v[i * *k + j].take().expect("each value is used once").into_iter())
            }
        }
    }

    /// Component `j`'s one value for every target, built once, when it is the same for all
    /// and plain (its bytes, copied, are a valid value): then each target's write is a copy
    /// of those bytes, not a zero value and its fields written over again.
    fn template(&self, info: &ComponentInfo, j: usize) -> Option<OwnedValue> {
        if !info.is_plain() {
            return None;
        }
        match self {
            FieldSource::Zero => Some(OwnedValue::from_converted(info, [])),
            FieldSource::Same(v) => Some(OwnedValue::from_converted(info, v[j].iter().cloned())),
            FieldSource::PerTarget(..) => None,
        }
    }
}

/// One target's converted fields of one component, moved or cloned.
enum Fields<'a> {
    Owned(std::vec::IntoIter<(usize, FieldValue)>),
    Shared(std::slice::Iter<'a, (usize, FieldValue)>),
}

impl Iterator for Fields<'_> {
    type Item = (usize, FieldValue);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Fields::Owned(it) => it.next(),
            Fields::Shared(it) => it.next().cloned(),
        }
    }
}

/// The targets of one source table: their rows (ascending) and their positions in the
/// caller's target list.
struct TableTargets {
    table: TableId,
    rows: Vec<u32>,
    targets: Vec<usize>,
}

impl World {
    /// Groups live, distinct targets by table, rows ascending; fails (changing nothing) on a
    /// stale or repeated entity.
    fn group_targets(&self, targets: &[Entity]) -> Result<Vec<TableTargets>> {
        let mut located: Vec<(u32, u32, usize)> = Vec::with_capacity(targets.len());
        for (i, &e) in targets.iter().enumerate() {
            let loc = self.location(e)?;
            located.push((loc.table, loc.row, i));
        }
        // Scans hand targets over in table and row order already: one pass says so.
        if !located.is_sorted() {
            located.sort_unstable();
        }
        let mut groups: Vec<TableTargets> = Vec::new();
        for (k, &(table, row, i)) in located.iter().enumerate() {
            if k > 0 && located[k - 1].0 == table && located[k - 1].1 == row {
                return Err(given_twice(targets[i]));
            }
            match groups.last_mut() {
                Some(g) if g.table.0 == table => {
                    g.rows.push(row);
                    g.targets.push(i);
                }
                _ => groups.push(TableTargets { table: TableId(table), rows: vec![row], targets: vec![i] }),
            }
        }
        Ok(groups)
    }

    /// Fails (changing nothing) on a stale or repeated target, as [`World::group_targets`]
    /// does, for operations that move no rows and so need no grouping.
    fn check_targets(&self, targets: &[Entity]) -> Result<()> {
        let slots = self.entities.capacity_used();
        // A row holds one entity: targets in strictly rising table and row order (as scans
        // hand them over) are distinct, and the pass that finds them live says so.
        let mut last: Option<(u32, u32)> = None;
        let mut rising = true;
        for &e in targets {
            let loc = self.location(e)?;
            let at = Some((loc.table, loc.row));
            rising &= last < at;
            last = at;
        }
        if rising {
            return Ok(());
        }
        // A bit per entity slot when the targets are many; sorted indexes when few.
        if targets.len() >= slots / 64 {
            let mut seen = vec![0u64; slots.div_ceil(64)];
            for &e in targets {
                let (word, bit) = (e.index() as usize / 64, 1u64 << (e.index() % 64));
                if seen[word] & bit != 0 {
                    return Err(given_twice(e));
                }
                seen[word] |= bit;
            }
        } else {
            let mut order: Vec<Entity> = targets.to_vec();
            order.sort_unstable_by_key(|e| e.index());
            if let Some(w) = order.windows(2).find(|w| w[0] == w[1]) {
                return Err(given_twice(w[0]));
            }
        }
        Ok(())
    }

    /// Records the new rows of entities moved by a bulk operation.
    fn set_rows(&mut self, table: TableId, first: usize, moved: impl Iterator<Item = Entity>) {
        for (k, e) in moved.enumerate() {
            self.entities.set_location(e.index(), EntityLocation { table: table.0, row: (first + k) as u32 });
        }
    }

    /// Despawns every target, dropping their components; as [`World::despawn`] on each, but
    /// table by table. Fails, changing nothing, if a target is stale or repeated.
    pub fn despawn_bulk(&mut self, targets: &[Entity]) -> Result<()> {
        let groups = self.group_targets(targets)?;
        for g in &groups {
            let components = self.storage.tables[g.table.index()].components().to_vec();
            for &i in &g.targets {
                for &c in &components {
                    self.note_removed(targets[i], c);
                }
            }
        }
        let sparse: Vec<usize> = (0..self.storage.sparse.len()).filter(|&c| self.storage.sparse[c].is_some()).collect();
        for c in sparse {
            for &e in targets {
                if self.storage.sparse[c].as_ref().is_some_and(|s| s.contains(e)) {
                    self.note_removed(e, ComponentId(c as u32));
                    self.storage.sparse[c].as_mut().expect("checked above").remove(e, None);
                }
            }
        }
        for g in &groups {
            let Self { storage, entities, .. } = self;
            storage.tables[g.table.index()].remove_rows(&g.rows, |e, row| {
                entities.set_location(e.index(), EntityLocation { table: g.table.0, row: row as u32 })
            });
        }
        for &e in targets {
            self.entities.free(e);
        }
        Ok(())
    }

    /// Removes the components `ids` from every target; as [`World::remove_by_id`] on each
    /// target and id, but table by table. Returns how many targets had at least one of them.
    /// Fails, changing nothing, if a target is stale or repeated.
    pub fn remove_many(&mut self, targets: &[Entity], ids: &[ComponentId]) -> Result<usize> {
        let is_sparse = |c: &ComponentId| self.components.info(*c).storage() == StorageKind::Sparse;
        if ids.iter().all(is_sparse) {
            return self.remove_sparse_many(targets, ids);
        }
        let groups = self.group_targets(targets)?;
        let mut had = vec![false; targets.len()];
        for &id in ids {
            if !is_sparse(&id) {
                continue;
            }
            let Self { storage, indexes, .. } = self;
            if let Some(set) = storage.sparse.get_mut(id.index()).and_then(Option::as_mut) {
                let rows = set.held_rows(targets).expect("the targets are distinct (grouped above)");
                for &(_, i) in &rows {
                    indexes.note_removed(targets[i as usize], id);
                    had[i as usize] = true;
                }
                set.remove_rows(rows.into_iter().map(|(r, _)| r).collect());
            }
        }
        for g in groups {
            let from = &self.storage.tables[g.table.index()];
            let removed: Vec<ComponentId> = from.components().iter().copied().filter(|c| ids.contains(c)).collect();
            if removed.is_empty() {
                continue;
            }
            let set: Vec<ComponentId> = from.components().iter().copied().filter(|c| !ids.contains(c)).collect();
            for &i in &g.targets {
                had[i] = true;
                for &c in &removed {
                    self.note_removed(targets[i], c);
                }
            }
            let to = self.storage.table_for(&set, &self.components);
            self.move_group(&g, to, targets);
        }
        Ok(had.into_iter().filter(|&h| h).count())
    }

    /// [`World::remove_many`] of sparse components only: no row moves, so the targets are
    /// not grouped by table. A target a set holds is live (sets hold live entities only), so
    /// only the targets no set holds are looked up in the entity table.
    fn remove_sparse_many(&mut self, targets: &[Entity], ids: &[ComponentId]) -> Result<usize> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut held = vec![false; targets.len()];
        let mut plans = Vec::with_capacity(ids.len());
        for &id in &ids {
            let Some(set) = self.storage.sparse.get(id.index()).and_then(Option::as_ref) else { continue };
            let rows = set.held_rows(targets).map_err(|i| given_twice(targets[i]))?;
            for &(_, i) in &rows {
                held[i as usize] = true;
            }
            plans.push((id, rows));
        }
        let rest: Vec<Entity> = targets.iter().zip(&held).filter(|(_, h)| !**h).map(|(e, _)| *e).collect();
        if !rest.is_empty() {
            self.check_targets(&rest)?;
        }
        let Self { storage, indexes, .. } = self;
        for (id, rows) in plans {
            for &(_, i) in &rows {
                indexes.note_removed(targets[i as usize], id);
            }
            let set = storage.sparse[id.index()].as_mut().expect("planned from this set");
            set.remove_rows(rows.into_iter().map(|(r, _)| r).collect());
        }
        Ok(held.into_iter().filter(|&h| h).count())
    }

    /// Moves a group's rows to `to` (no new columns) and fixes every location.
    fn move_group(&mut self, g: &TableTargets, to: TableId, targets: &[Entity]) -> usize {
        let Self { storage, entities, .. } = self;
        let (from, dst) = storage.two_tables(g.table, to);
        let first = from.move_rows(&g.rows, dst, |e, row| {
            entities.set_location(e.index(), EntityLocation { table: g.table.0, row: row as u32 })
        });
        self.set_rows(to, first, g.targets.iter().map(|&i| targets[i]));
        first
    }

    /// Adds (or overwrites) components on every target; as [`World::insert_values`] on each,
    /// but table by table. `components` lists the component ids and `values` their values
    /// (see [`BulkValues`]). Only entities whose table components are new move; sparse
    /// components are written where the entities are. Fails, changing nothing, if a target is
    /// stale or repeated, a component is opaque or listed twice, or a value does not fit its
    /// field.
    pub fn insert_many(&mut self, targets: &[Entity], components: &[ComponentId], values: BulkValues) -> Result<()> {
        match &values {
            BulkValues::Zero => self.check_components(components)?,
            BulkValues::Same(v) => self.check_component_values(components, v, 1)?,
            BulkValues::PerTarget(v) => self.check_component_values(components, v, targets.len())?,
        }
        let zero = values == BulkValues::Zero;
        let tick = self.change_tick();
        let mut values = FieldSource::new(values, components.len());
        let table_ids: Vec<ComponentId> =
            components.iter().copied().filter(|&c| self.components.info(c).storage() == StorageKind::Table).collect();
        if table_ids.is_empty() {
            // Nothing moves: no grouping by table, each component written in one pass.
            self.check_targets(targets)?;
            for (j, &c) in components.iter().enumerate() {
                let set = sparse_mut(&mut self.storage.sparse, c, &self.components);
                write_sparse(set, self.components.info(c), tick, targets, 0..targets.len(), &mut values, j);
            }
            return Ok(());
        }
        let groups = self.group_targets(targets)?;
        for g in &groups {
            let from = g.table;
            let mut set: Vec<ComponentId> = self.storage.tables[from.index()].components().to_vec();
            let had: Vec<bool> = components.iter().map(|&c| set.contains(&c)).collect();
            set.extend_from_slice(&table_ids);
            set.sort_unstable();
            set.dedup();
            let to = self.storage.table_for(&set, &self.components);
            let first = if to == from { None } else { Some(self.move_group(g, to, targets)) };
            let Storage { tables, sparse, .. } = &mut self.storage;
            let dst = &mut tables[to.index()];
            for (j, &c) in components.iter().enumerate() {
                let info = self.components.info(c);
                match (info.storage(), first) {
                    (StorageKind::Sparse, _) => {
                        let set = sparse_mut(sparse, c, &self.components);
                        write_sparse(set, info, tick, targets, g.targets.iter().copied(), &mut values, j);
                    }
                    // A new column of zero values: pushed for every moved row at once.
                    (StorageKind::Table, Some(_)) if !had[j] && zero => {
                        let col = dst.column_mut(c).expect("destination has every added component");
                        col.push_zeroed(g.targets.len(), tick, info);
                    }
                    // A new column of the destination: one value pushed per moved row, in order.
                    (StorageKind::Table, Some(_)) if !had[j] => {
                        let col = dst.column_mut(c).expect("destination has every added component");
                        col.reserve(g.targets.len());
                        let template = values.template(info, j);
                        for &i in &g.targets {
                            match &template {
                                // SAFETY: a plain value of `c`: its bytes, moved in, leave the
                                // template a valid value still.
                                Some(t) => unsafe { col.push_from(t.ptr(), tick) },
                                // SAFETY: the zero value is written into the fresh row, then
                                // fields converted for this component over it.
                                None => unsafe {
                                    let p = col.push_uninit(tick);
                                    write_value(info, p, values.take(i, j));
                                },
                            }
                        }
                    }
                    // A component the rows had: overwritten where they are now.
                    (StorageKind::Table, _) => {
                        let col = dst.column_mut(c).expect("destination has every added component");
                        let template = values.template(info, j);
                        for (n, &i) in g.targets.iter().enumerate() {
                            let row = match first {
                                Some(f) => f + n,
                                None => g.rows[n] as usize,
                            };
                            if let Some(t) = &template {
                                // SAFETY: a plain value of `c`: its bytes, moved in, leave the
                                // template a valid value still.
                                unsafe { col.replace(row, t.ptr(), tick) };
                                continue;
                            }
                            let v = OwnedValue::from_converted(info, values.take(i, j));
                            // SAFETY: a valid value of `c`, given up below (not dropped).
                            unsafe { col.replace(row, v.ptr.as_ptr(), tick) };
                            forget(v);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Spawns `n` entities, each with `components` (`values[t * k + j]`: entity `t`'s
    /// converted fields of component `j`, as for [`World::insert_many`]), straight into their
    /// table. Returns the new entities in order. Fails, changing nothing, if a component is
    /// opaque or listed twice or a value does not fit its field.
    pub fn spawn_many(
        &mut self,
        n: usize,
        components: &[ComponentId],
        values: Vec<Vec<(usize, FieldValue)>>,
    ) -> Result<Vec<Entity>> {
        self.spawn_mixed(&[components], &vec![0; n], &mut values.into())
    }

    /// Spawns entities of several component sets in one call, in order: the `i`-th new
    /// entity has the components `sets[order[i]]`, and its converted fields per component
    /// (in set order) come next in `values`. The result equals spawning them one by one
    /// (same entities, rows, values and ticks), but each table is looked up once. Returns
    /// the new entities in order, `values` left empty (its memory kept for the next ones).
    /// Fails, changing nothing (`values` included), if a set index is out of range, a
    /// component is opaque or listed twice in its set, a value does not fit its field, or
    /// `values` has fields after its last component value.
    pub fn spawn_mixed(
        &mut self,
        sets: &[&[ComponentId]],
        order: &[u32],
        values: &mut ComponentValues,
    ) -> Result<Vec<Entity>> {
        let mut counts = vec![0usize; sets.len()];
        for &g in order {
            *counts.get_mut(g as usize).ok_or_else(|| EngineError::Invalid(format!("no component set {g}")))? += 1;
        }
        let expected: usize = counts.iter().zip(sets).map(|(n, set)| n * set.len()).sum();
        if values.len() != expected || values.has_unended_fields() {
            return Err(EngineError::Invalid(format!(
                "{} component values for {} entities; their components take {expected}",
                values.len(),
                order.len()
            )));
        }
        for set in sets {
            self.check_components(set)?;
        }
        {
            let mut checked = values.iter();
            for &g in order {
                for (&c, fields) in sets[g as usize].iter().zip(checked.by_ref()) {
                    check_fields(self.components.info(c), fields)?;
                }
            }
        }
        // Per set: its table and, per component, its column there (None: sparse).
        let mut placement: Vec<(TableId, Vec<Option<usize>>)> = Vec::with_capacity(sets.len());
        for set in sets {
            let mut stored: Vec<ComponentId> =
                set.iter().copied().filter(|&c| self.components.info(c).storage() == StorageKind::Table).collect();
            stored.sort_unstable();
            let table = self.storage.table_for(&stored, &self.components);
            // (Not reserved to the exact size: scripts spawn in runs, and exact reservations
            // would copy the columns once per run instead of doubling them.)
            let dst = &self.storage.tables[table.index()];
            placement.push((table, set.iter().map(|&c| dst.column_index(c)).collect()));
        }
        let tick = self.change_tick();
        self.entities.reserve(order.len());
        let Storage { tables, sparse, .. } = &mut self.storage;
        let mut spawned = Vec::with_capacity(order.len());
        let (mut fields, field_counts) = values.drain();
        let mut field_counts = field_counts.into_iter();
        for &g in order {
            let (table, columns) = &placement[g as usize];
            let dst = &mut tables[table.index()];
            let e = self.entities.alloc();
            let row = dst.push_entity(e);
            self.entities.set_location(e.index(), EntityLocation { table: table.0, row: row as u32 });
            spawned.push(e);
            for (&c, column) in sets[g as usize].iter().zip(columns) {
                let info = self.components.info(c);
                let n = field_counts.next().expect("length checked");
                let fields = fields.by_ref().take(n);
                match column {
                    // SAFETY: the zero value is written into the fresh row, then fields
                    // converted for this component (checked above) over it.
                    Some(column) => unsafe {
                        let p = dst.column_at_mut(*column).push_uninit(tick);
                        write_value(info, p, fields);
                    },
                    None => {
                        let v = OwnedValue::from_converted(info, fields);
                        let s = sparse_mut(sparse, c, &self.components);
                        // SAFETY: a valid value of `c`, given up below (not dropped).
                        unsafe { s.insert(e, v.ptr.as_ptr(), tick) };
                        forget(v);
                    }
                }
            }
        }
        Ok(spawned)
    }

    /// The checks of [`World::insert_many`] on its components and values, for `n` entities.
    fn check_component_values(&self, components: &[ComponentId], values: &[ComponentFields], n: usize) -> Result<()> {
        if values.len() != n * components.len() {
            return Err(EngineError::Invalid(format!(
                "{} component values for {n} entities of {} components",
                values.len(),
                components.len()
            )));
        }
        self.check_components(components)?;
        if components.is_empty() {
            return Ok(());
        }
        for (v, fields) in values.iter().enumerate() {
            check_fields(self.components.info(components[v % components.len()]), fields)?;
        }
        Ok(())
    }

    /// Components written together by text statements: registered, not opaque, each once.
    fn check_components(&self, components: &[ComponentId]) -> Result<()> {
        for (j, &c) in components.iter().enumerate() {
            if c.index() >= self.components.len() {
                return Err(EngineError::Invalid(format!("no component with id {}", c.index())));
            }
            let info = self.components.info(c);
            if info.is_opaque() {
                return Err(EngineError::Opaque(info.name().to_string()));
            }
            if components[..j].contains(&c) {
                return Err(EngineError::Invalid(format!("component '{}' given twice", info.name())));
            }
        }
        Ok(())
    }
}

/// Writes sparse component `info` (component `j` of the bulk write) of `targets[i]` for each
/// `i` of `which`, with its fields from `values` over its zero value: overwritten where the
/// entity has the component, appended where it does not. The fields have passed
/// [`check_fields`].
fn write_sparse(
    set: &mut SparseSet,
    info: &ComponentInfo,
    tick: Tick,
    targets: &[Entity],
    which: impl ExactSizeIterator<Item = usize>,
    values: &mut FieldSource,
    j: usize,
) {
    set.reserve(which.len());
    let template = values.template(info, j);
    for i in which {
        let e = targets[i];
        if let Some(t) = &template {
            // SAFETY: a plain value of this set's component: its bytes, moved in, leave the
            // template a valid value still.
            unsafe { set.insert(e, t.ptr(), tick) };
        } else if set.contains(e) {
            let v = OwnedValue::from_converted(info, values.take(i, j));
            // SAFETY: a valid value of this set's component, given up below (not dropped).
            unsafe { set.insert(e, v.ptr.as_ptr(), tick) };
            forget(v);
        } else {
            // SAFETY: the zero value is written into the fresh row, then fields converted for
            // this component over it.
            unsafe { set.push_written(e, tick, |p| write_value(info, p, values.take(i, j))) };
        }
    }
}

/// The error for a target listed more than once.
fn given_twice(e: Entity) -> EngineError {
    EngineError::Invalid(format!("entity {e} given twice"))
}

/// A converted value must have been converted for its field: the right kind and size, each
/// field at most once.
fn check_fields(info: &ComponentInfo, fields: &[(usize, FieldValue)]) -> Result<()> {
    for (n, (idx, fv)) in fields.iter().enumerate() {
        let field = info
            .fields()
            .get(*idx)
            .ok_or_else(|| EngineError::Invalid(format!("component '{}' has no field number {idx}", info.name())))?;
        if fields[..n].iter().any(|(i, _)| i == idx) {
            return Err(EngineError::DuplicateField { component: info.name().to_string(), field: field.name.clone() });
        }
        let fits = match fv {
            FieldValue::Str(_) => field.ty == crate::component::FieldType::String,
            FieldValue::Plain(_, size) => {
                field.ty != crate::component::FieldType::String && *size as usize == field.ty.layout().size()
            }
        };
        if !fits {
            return Err(EngineError::Invalid(format!(
                "a value converted for another type written to {}.{}",
                info.name(),
                field.name
            )));
        }
    }
    Ok(())
}

/// Writes the component's zero value with `fields` over it to `dst`.
///
/// # Safety
/// `dst` must be valid for writes of the component's size, aligned, and hold nothing that
/// needs dropping; `fields` must have passed [`check_fields`] for `info`, which must not be
/// opaque.
unsafe fn write_value(info: &ComponentInfo, dst: *mut u8, fields: impl IntoIterator<Item = (usize, FieldValue)>) {
    // SAFETY: forwarded from the caller; after `write_zero` the value is initialised, and each
    // field value fits its field.
    unsafe {
        info.write_zero(dst);
        for (idx, fv) in fields {
            fv.write(dst, &info.fields()[idx]);
        }
    }
}

/// Gives up an owned value whose bytes were moved into storage: its memory is freed, the
/// value is not dropped.
fn forget(mut v: OwnedValue) {
    v.live = false;
}

#[cfg(test)]
mod tests;
