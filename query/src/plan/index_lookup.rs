//! What the planner hands execution to reach rows through indexes: the constant operands of
//! predicates, and an index's answer ([`IndexLookup`]) with what EXPLAIN says of it
//! ([`IndexScan`]). [`crate::plan::index_choice`] builds them; [`crate::plan::physical`]
//! keeps them in its access paths.

use std::sync::Arc;

use ecsdb_engine::{ComponentId, Value, World};

use crate::error::{Error, Span};
use crate::expr::{Expr, ExprKind};

/// A constant operand of a kernel: a literal, or a parameter resolved when the plan runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A literal value.
    Value(Value),
    /// Parameter `n` of the statement.
    Param(usize),
}

impl Operand {
    /// The value, given the statement's parameter values.
    pub fn resolve<'a>(&'a self, params: &'a [Value]) -> &'a Value {
        match self {
            Operand::Value(v) => v,
            Operand::Param(n) => params.get(*n).unwrap_or(&Value::Null),
        }
    }

    pub(crate) fn from_expr(e: &Expr) -> Option<Operand> {
        match &e.kind {
            ExprKind::Literal(v) => Some(Operand::Value(v.clone())),
            ExprKind::Param(n) => Some(Operand::Param(*n)),
            _ => None,
        }
    }
}

/// What the index layer answers: the entity indices for one predicate.
///
/// This is the seam for secondary indexes. The planner's
/// [`choose_index`](crate::plan::index_choice::choose_index) makes one; the executor intersects the matched tables' rows with the answer and
/// applies the predicate but for the conjuncts [`IndexScan::exact_conjuncts`] names.
pub trait IndexLookup: Send + Sync {
    /// Calls `visit` with batches of the entity indices that may satisfy the predicate (a
    /// superset is fine; each once, in any order) and returns true, or returns false without calling it
    /// when the executor should scan the matched tables' `scan_rows` rows instead: an index
    /// dropped since planning, one declining the bound values, or values that make visiting
    /// the answer dearer than the scan (a plan made without them, for a prepared statement's
    /// `$1`, assumed a selective value).
    fn lookup(
        &self,
        world: &World,
        params: &[Value],
        scan_rows: usize,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Result<bool, Error>;

    /// The component of the one index every answer comes from (`None` for a combination of
    /// several): each entity such an index answers is alive and has that component, so a
    /// count over tables that hold every entity with it need not locate them.
    fn component(&self) -> Option<ComponentId> {
        None
    }

    /// A component every entity of a run's answer holds at that moment (the entities of a
    /// sparse set), so that the scan need not check it again; `None` for an index, whose
    /// removals may wait in a buffer.
    fn holders_of(&self) -> Option<ComponentId> {
        None
    }

    /// What EXPLAIN shows after `USING` when it depends on the world as it is now (a cached
    /// plan's [`IndexScan::description`] was written when it was planned); `scan_rows` are
    /// the matched tables' rows now. `None`: the description stands.
    fn describe_now(&self, _world: &World, _scan_rows: usize) -> Option<String> {
        None
    }
}

/// An access path through secondary indexes: one index's answer, or several combined.
#[derive(Clone)]
pub struct IndexScan {
    /// What EXPLAIN shows after `USING`: `INDEX name (kind) FOR predicate`, or `INDEXES …`
    /// joined by `AND` / `OR`.
    pub description: String,
    /// The estimate of the rows it returns.
    pub estimated_rows: usize,
    /// The spans of the WHERE conjuncts its answer decides exactly (an index of a kind that
    /// answers exactly, intersected with the others): when the answer is used, the scan
    /// does not test them again on its rows.
    pub exact_conjuncts: Vec<Span>,
    /// The lookup.
    pub lookup: Arc<dyn IndexLookup>,
}

impl std::fmt::Debug for IndexScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexScan(USING {})", self.description)
    }
}
