//! Driving a scan from a sparse set: a query that requires a sparse component held by few
//! entities visits those entities (located through the entity table) instead of every row of
//! the matched tables, each probed for the component.
//!
//! The choice is made again on every run ([`SparseSetLookup::lookup`]): a system planned on an
//! empty world, or a prepared statement kept while the set grows, scans once the set is no
//! longer the smaller side.

use std::sync::Arc;

use ecsdb_engine::{ComponentId, StorageKind, Value, World};

use crate::error::Error;
use crate::expr::ExprKind;
use crate::plan::index_lookup::{IndexLookup, IndexScan};
use crate::plan::logical::{Source, Term};

/// Visiting one entity of a sparse set (locating it, then reading its row out of order)
/// against a scan's one probe per row: the set drives while it is this many times smaller.
const LOCATE_COST: usize = 4;

/// Whether a set of `len` entities is cheaper to visit than `scan_rows` rows.
fn drives(len: usize, scan_rows: usize) -> bool {
    len.saturating_mul(LOCATE_COST) < scan_rows
}

/// The entities of one sparse component's set, as an index answer.
struct SparseSetLookup {
    component: ComponentId,
}

impl IndexLookup for SparseSetLookup {
    fn lookup(
        &self,
        world: &World,
        _: &[Value],
        scan_rows: usize,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Result<bool, Error> {
        let entities = world.sparse_set(self.component).map_or(&[][..], |s| s.entities());
        if !drives(entities.len(), scan_rows) {
            return Ok(false);
        }
        ecsdb_engine::index::visit_in_batches(entities.iter().map(|e| e.index()), visit);
        Ok(true)
    }

    fn component(&self) -> Option<ComponentId> {
        Some(self.component)
    }

    fn holders_of(&self) -> Option<ComponentId> {
        Some(self.component)
    }

    fn describe_now(&self, world: &World, scan_rows: usize) -> Option<String> {
        let len = world.sparse_set(self.component).map_or(0, |s| s.len());
        let name = world.components().info(self.component).name();
        Some(describe(name, len, drives(len, scan_rows)))
    }
}

/// `n entities`.
fn entities(len: usize) -> String {
    format!("{len} entit{}", if len == 1 { "y" } else { "ies" })
}

/// `SPARSE SET C (n entities, …)`, as EXPLAIN shows the access path.
fn describe(name: &str, len: usize, drives: bool) -> String {
    let entities = entities(len);
    if drives {
        format!("SPARSE SET {name} ({entities}, each located)")
    } else {
        format!("SPARSE SET {name} ({entities}: too many to drive the scan now, so the tables are scanned)")
    }
}

/// The access path through the smallest set of the sparse components `source` requires, if
/// it requires one: `Ok((its size now, the path))` when it drives a scan of `scan_rows` rows
/// now, or nothing is there to scan yet (a statement prepared on an empty world keeps its
/// path); otherwise `Err(why the tables are scanned)`.
pub(crate) fn smallest_required_set(
    source: &Source,
    world: &World,
    scan_rows: usize,
) -> Option<Result<(usize, IndexScan), String>> {
    let components = world.components();
    let (len, id, name) = source
        .terms
        .iter()
        .filter_map(|t| match t {
            Term::Required { slot, .. } => source.slots.get(*slot),
            _ => None,
        })
        .filter(|s| components.info(s.id).storage() == StorageKind::Sparse)
        .map(|s| (world.sparse_set(s.id).map_or(0, |set| set.len()), s.id, s.name.as_str()))
        .min_by_key(|(len, ..)| *len)?;
    if scan_rows > 0 && !drives(len, scan_rows) {
        return Some(Err(format!("the sparse set of {name} ({}) is not small enough to drive it", entities(len))));
    }
    // `has(C)` conjuncts of the driving component hold on every entity of its set: the set
    // decides them, and they are not tested again row by row.
    let exact_conjuncts = source
        .filter
        .iter()
        .flat_map(|f| f.conjuncts())
        .filter(|c| matches!(c.kind, ExprKind::Has(slot) if source.slots.get(slot).is_some_and(|s| s.id == id)))
        .map(|c| c.span)
        .collect();
    let scan = IndexScan {
        description: describe(name, len, true),
        estimated_rows: len,
        exact_conjuncts,
        lookup: Arc::new(SparseSetLookup { component: id }),
    };
    Some(Ok((len, scan)))
}
