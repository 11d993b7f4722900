//! What an index refresh reads: the places a component's rows live, the rows written since
//! the last refresh (from the write logs, or the change ticks), and the values an index
//! wants from them.

use super::{DynFn, Source, TypedFn};
use crate::component::{ComponentId, StorageKind};
use crate::entity::Entity;
use crate::storage::{Column, FieldPlace, FieldView, WrittenRows};
use crate::tick::Tick;
use crate::value::Value;
use crate::world::World;

/// Reads the values an index wants from rows of one segment.
pub(super) enum RowReader<'w> {
    Fields(Vec<FieldView<'w>>),
    Presence,
    Dynamic(Vec<(&'w str, FieldView<'w>)>, DynFn),
    Typed(TypedFn),
    /// The fields could not be viewed (cannot happen for a validated definition): every row
    /// counts as unreadable, so the index declines rather than answer wrongly.
    Broken,
}

impl<'w> RowReader<'w> {
    pub(super) fn new(world: &'w World, seg: FieldPlace, id: ComponentId, source: &Source) -> RowReader<'w> {
        let info = world.components().info(id);
        let view = |i: usize| Some(FieldView::new(world, seg, id, i)).filter(|v| !matches!(v, FieldView::Missing));
        match source {
            Source::Presence => RowReader::Presence,
            Source::Typed(f) => RowReader::Typed(f.clone()),
            Source::Fields(fields) => {
                fields.iter().map(|&i| view(i)).collect::<Option<Vec<_>>>().map_or(RowReader::Broken, RowReader::Fields)
            }
            Source::Dynamic(f) => info
                .fields()
                .iter()
                .enumerate()
                .map(|(i, fi)| Some((fi.name.as_str(), view(i)?)))
                .collect::<Option<Vec<_>>>()
                .map_or(RowReader::Broken, |v| RowReader::Dynamic(v, f.clone())),
        }
    }

    /// The values of `rows` of a one-field index, one a row, appended to `values`; `false`
    /// (and `values` as it was) for other indexes, or when a value cannot be read (a u64
    /// above i64::MAX), which the row-by-row path then marks. The field is read in a loop
    /// that dispatches on its type once, so the loads of many rows are in flight together.
    pub(super) fn read_one_field(&self, rows: &[u32], values: &mut Vec<Value>) -> bool {
        let RowReader::Fields(views) = self else { return false };
        let [view] = views.as_slice() else { return false };
        let start = values.len();
        if view.for_each_value(rows, |_, v| values.push(v)).is_ok() {
            return true;
        }
        values.truncate(start);
        false
    }

    /// Appends the values of `rows` (whose entities are `entities`) to `values`, and each
    /// row's span of them to `spans` (`None`: unreadable).
    pub(super) fn read_batch(
        &self,
        world: &World,
        rows: &[u32],
        entities: &[Entity],
        values: &mut Vec<Value>,
        spans: &mut Vec<Option<(usize, usize)>>,
    ) {
        for (&row, &e) in rows.iter().zip(entities) {
            let start = values.len();
            let readable = self.read_into(world, row as usize, e, values).is_some();
            if !readable {
                values.truncate(start);
            }
            spans.push(readable.then_some((start, values.len())));
        }
    }

    /// Appends the row's values to `out`; `None` when unreadable (then `out` may hold part
    /// of them).
    fn read_into(&self, world: &World, row: usize, e: Entity, out: &mut Vec<Value>) -> Option<()> {
        match self {
            RowReader::Fields(views) => {
                for v in views {
                    out.push(v.get(row)?);
                }
            }
            RowReader::Presence => {}
            RowReader::Dynamic(views, f) => {
                let obj = views.iter().map(|(n, v)| Some((n.to_string(), v.get(row)?))).collect::<Option<Vec<_>>>()?;
                out.push(Value::Bool(f(&Value::Object(obj))));
            }
            RowReader::Typed(f) => out.push(Value::Bool(f(world, e)?)),
            RowReader::Broken => return None,
        }
        Some(())
    }
}

/// One place a component's rows live (a table's column, or the sparse set), with what its
/// write log gave up.
pub(super) struct Segment<'w> {
    pub(super) place: FieldPlace,
    pub(super) entities: &'w [Entity],
    pub(super) ticks: &'w [Tick],
    pub(super) written: WrittenRows,
}

/// The segments of component `id`, draining their write logs when `drain` is set (else
/// every segment says [`WrittenRows::Scan`]).
pub(super) fn segments(world: &World, id: ComponentId, drain: bool) -> Vec<Segment<'_>> {
    fn segment<'w>(place: FieldPlace, entities: &'w [Entity], col: &'w Column, drain: bool) -> Segment<'w> {
        let written = if drain { col.drain_written() } else { WrittenRows::Scan };
        Segment { place, entities, ticks: col.changed_ticks(), written }
    }
    match world.components().info(id).storage() {
        StorageKind::Table => world
            .tables()
            .iter()
            .filter_map(|t| Some(segment(FieldPlace::Table(t.id()), t.entities(), t.column(id)?, drain)))
            .collect(),
        StorageKind::Sparse => world
            .sparse_set(id)
            .map(|set| segment(FieldPlace::Sparse, set.entities(), set.column(), drain))
            .into_iter()
            .collect(),
    }
}
