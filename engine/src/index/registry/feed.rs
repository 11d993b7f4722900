//! What an index refresh reads: the places a component's rows live, the rows written since
//! the last refresh (from the write logs, or the change ticks), and the values an index
//! wants from them.

use super::{DynFn, Source, TypedFn};
use crate::component::{ComponentId, StorageKind};
use crate::entity::Entity;
use crate::storage::{Column, FieldPlace, FieldView, WrittenRows};
use crate::tick::{is_new, Tick};
use crate::value::Value;
use crate::world::World;

/// Calls `f(row)`, in row order, for every row whose tick is new for a refresh at `this`
/// with age bound `run_age` (see [`crate::tick`]). Ticks go 64 at a time: a word with no new
/// tick is passed over after one vectorised test; in the others, a mask of the new rows is
/// made without branches and only its set bits are visited (writes scattered over a large
/// column dirty about half the words, so the scan must not branch per row).
pub(super) fn for_each_changed(ticks: &[Tick], this: Tick, run_age: u32, mut f: impl FnMut(usize)) {
    const WORD: usize = 64;
    let mut words = ticks.chunks_exact(WORD);
    for (w, word) in words.by_ref().enumerate() {
        if !word.iter().fold(false, |any, &t| any | is_new(t, this, run_age)) {
            continue;
        }
        let mut flags = [0u8; WORD];
        for (flag, &t) in flags.iter_mut().zip(word) {
            *flag = u8::from(is_new(t, this, run_age));
        }
        let mut mask = 0u64;
        for (j, eight) in flags.chunks_exact(8).enumerate() {
            // Eight 0/1 bytes to eight bits: the multiply moves byte i's bit to bit 56 + i.
            let bytes = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
            mask |= (bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (j * 8);
        }
        while mask != 0 {
            f(w * WORD + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
    }
    let base = ticks.len() - words.remainder().len();
    for (i, &t) in words.remainder().iter().enumerate() {
        if is_new(t, this, run_age) {
            f(base + i);
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_each_changed_visits_exactly_the_new_rows_in_order() {
        let mut x = 0x9e37_79b9_u32;
        for len in [0usize, 1, 63, 64, 65, 200, 1000] {
            let ticks: Vec<Tick> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x % 40
                })
                .collect();
            let (this, age) = (30, 7);
            let mut seen = Vec::new();
            for_each_changed(&ticks, this, age, |r| seen.push(r));
            let expected: Vec<usize> = (0..len).filter(|&r| is_new(ticks[r], this, age)).collect();
            assert_eq!(seen, expected, "len {len}");
        }
    }
}
