//! Many rows of a table at once: moved to another table (ADD, REMOVE) or removed (DESPAWN).
//! Rows are given ascending and distinct; see `Column::move_rows_to` for how holes fill.

use super::ArchetypeTable;
use crate::entity::Entity;

impl ArchetypeTable {
    /// Moves `rows` (ascending, distinct, in bounds) to the end of `dst`, in that order:
    /// shared columns move bit-for-bit keeping their ticks, columns `dst` lacks are dropped.
    /// Returns the row in `dst` of the first moved row. `filled(entity, row)` is called for
    /// every entity that stays here but moved into a hole (its location changed).
    ///
    /// The caller must then push exactly `rows.len()` values, in order, to every column only
    /// `dst` has.
    pub(crate) fn move_rows(
        &mut self,
        rows: &[u32],
        dst: &mut ArchetypeTable,
        filled: impl FnMut(Entity, usize),
    ) -> usize {
        let first = dst.entities.len();
        dst.entities.extend(rows.iter().map(|&r| self.entities[r as usize]));
        for (i, &c) in self.components.iter().enumerate() {
            match dst.column_mut(c) {
                Some(d) => self.columns[i].move_rows_to(rows, d),
                None => self.columns[i].remove_rows_drop(rows),
            }
        }
        self.remove_entities(rows, filled);
        first
    }

    /// Drops the values of `rows` (ascending, distinct, in bounds) and removes them;
    /// `filled` as in [`ArchetypeTable::move_rows`].
    pub(crate) fn remove_rows(&mut self, rows: &[u32], filled: impl FnMut(Entity, usize)) {
        for c in self.columns.iter_mut() {
            c.remove_rows_drop(rows);
        }
        self.remove_entities(rows, filled);
    }

    /// The entity column's half of a bulk removal, the same swaps as the columns'.
    fn remove_entities(&mut self, rows: &[u32], mut filled: impl FnMut(Entity, usize)) {
        for &row in rows.iter().rev() {
            let row = row as usize;
            self.entities.swap_remove(row);
            if let Some(&e) = self.entities.get(row) {
                filled(e, row);
            }
        }
    }
}
