//! Many rows of a table at once: moved to another table (ADD, REMOVE) or removed (DESPAWN).
//! Rows are given ascending and distinct; the moves that fill the holes are worked out once
//! ([`RemovalPlan`]) and applied to every column and to the entity list.

use super::ArchetypeTable;
use crate::entity::Entity;
use crate::storage::column::RemovalPlan;

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
        let plan = RemovalPlan::new(rows, self.entities.len());
        dst.entities.extend(rows.iter().map(|&r| self.entities[r as usize]));
        for (i, &c) in self.components.iter().enumerate() {
            match dst.column_mut(c) {
                Some(d) => self.columns[i].move_rows_to(d, &plan),
                None => self.columns[i].remove_rows_drop(&plan),
            }
        }
        plan.apply_to(&mut self.entities, filled);
        first
    }

    /// Drops the values of `rows` (ascending, distinct, in bounds) and removes them;
    /// `filled` as in [`ArchetypeTable::move_rows`].
    pub(crate) fn remove_rows(&mut self, rows: &[u32], filled: impl FnMut(Entity, usize)) {
        let plan = RemovalPlan::new(rows, self.entities.len());
        for c in self.columns.iter_mut() {
            c.remove_rows_drop(&plan);
        }
        plan.apply_to(&mut self.entities, filled);
    }
}
