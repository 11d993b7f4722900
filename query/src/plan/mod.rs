//! The plan stage: logical plans ([`logical`]) become physical plans ([`physical`]), which
//! EXPLAIN prints ([`explain`]).
//!
//! A SELECT's physical plan is a [`PhysicalSelect`]: the row source ([`ScanPlan`]: access
//! path, matched tables, per-table pushed-down predicates) and the strategy for what happens
//! to the rows ([`Strategy`]). Prepared statements keep it and call [`PhysicalSelect::refresh`]
//! before each run, which matches only the tables created since (and plans the access path
//! again when indexes were created or dropped).

pub mod explain;
pub mod index_choice;
pub mod index_lookup;
pub mod logical;
pub mod physical;
mod sparse_drive;

use std::sync::Arc;

use ecsdb_engine::{FieldType, World};

use crate::expr::ExprKind;
use crate::plan::logical::SelectPlan;
use crate::plan::physical::ScanPlan;

/// Planner settings, per [`Database`](crate::Database).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// Use every secondary index that applies, even where the cost model would scan (on
    /// small worlds an index rarely pays). For tests that must exercise index paths and for
    /// comparing plans; answers never change.
    pub prefer_indexes: bool,
}

/// What happens to the selected rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Items evaluated per batch; LIMIT stops the scan early.
    Project,
    /// ORDER BY without LIMIT: every row's keys, then a sort.
    Sort,
    /// ORDER BY with LIMIT: a bounded heap of `offset + limit` rows.
    TopK,
    /// GROUP BY and/or aggregates.
    Aggregate,
}

/// The physical plan of a SELECT.
#[derive(Clone, Debug)]
pub struct PhysicalSelect {
    /// The logical plan it implements.
    pub logical: Arc<SelectPlan>,
    /// Where the rows come from.
    pub scan: ScanPlan,
    /// What happens to them.
    pub strategy: Strategy,
    /// A single ORDER BY key that is a numeric field read exactly as f64: (slot, field).
    pub fast_sort_key: Option<(usize, usize)>,
    /// `ORDER BY distance(C, point) … LIMIT k` with an rtree on C, or `ORDER BY C.f … LIMIT
    /// k` with a btree on C.f: answered by walking the index's ordered stream.
    pub ordered: Option<index_choice::OrderedPlan>,
}

impl PhysicalSelect {
    /// Plans a bound SELECT against the world.
    pub fn new(logical: Arc<SelectPlan>, world: &World, options: PlanOptions) -> PhysicalSelect {
        let scan = ScanPlan::new(&logical.source, world, options);
        let strategy = if logical.aggregated {
            Strategy::Aggregate
        } else if logical.order_by.is_empty() {
            Strategy::Project
        } else if logical.limit.is_some() {
            Strategy::TopK
        } else {
            Strategy::Sort
        };
        let fast_sort_key = match logical.order_by.as_slice() {
            [key] if !logical.aggregated => match key.expr.kind {
                ExprKind::Field { slot, field } => {
                    let ty = scan.slots.get(slot).and_then(|s| s.fields.get(field)).map(|f| f.ty);
                    let exact = matches!(
                        ty,
                        Some(
                            FieldType::I8
                                | FieldType::I16
                                | FieldType::I32
                                | FieldType::U8
                                | FieldType::U16
                                | FieldType::U32
                                | FieldType::F32
                                | FieldType::F64
                        )
                    );
                    exact.then_some((slot, field))
                }
                _ => None,
            },
            _ => None,
        };
        let ordered = match strategy {
            Strategy::TopK => index_choice::choose_ordered(&logical, world, options),
            _ => None,
        };
        PhysicalSelect { logical, scan, strategy, fast_sort_key, ordered }
    }

    /// Matches tables created since the plan was made or last refreshed; after an index was
    /// created or dropped, chooses the access path and the ordered walk again (as SQLite
    /// prepares a statement again after a schema change), so a prepared statement uses a new
    /// index from its next run.
    pub fn refresh(&mut self, world: &World) {
        let indexes_changed = self.scan.indexes_changed(world);
        self.scan.refresh(world);
        if indexes_changed && self.strategy == Strategy::TopK {
            self.ordered = index_choice::choose_ordered(&self.logical, world, self.scan.options());
        }
    }
}
