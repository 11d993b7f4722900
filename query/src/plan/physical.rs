//! The physical plan: *how* rows are found.
//!
//! A [`ScanPlan`] turns a logical [`Source`] (terms + WHERE) into
//!
//! - an **access path** ([`Access`]): scan every matched table, fetch listed entities through
//!   the entity table (`entity = 12v0`, a statement's entity target), or — the seam for the
//!   index layer — take the entity set an index answers ([`Access::Index`]);
//! - the **matched archetype tables** ([`TablePlan`]), found once and extended incrementally as
//!   the world creates tables (tables are append-only, so [`ScanPlan::refresh`] only looks at
//!   tables it has not seen);
//! - per table, the **pushed-down predicate**: the WHERE clause specialised to what the table
//!   stores. A component the table lacks (under `?C` or `A | B`) reads as null and `has(C)` is
//!   a constant, so the predicate is folded per table; what remains is split into conjuncts,
//!   and a conjunct comparing a stored scalar field with a constant becomes a column kernel
//!   ([`FilterStep::Compare`]): a tight loop over the column producing a selection vector.
//!   Other conjuncts ([`FilterStep::Expr`]) run on the batch evaluator. A table whose predicate
//!   folds to false or null is skipped outright;
//! - **row checks** ([`RowCheck`]) for sparse components, which are not part of the table's
//!   component set and are joined by entity.

use std::sync::Arc;

use ecsdb_engine::storage::TableId;
use ecsdb_engine::{ChangeWindow, ComponentId, FieldInfo, FieldType, StorageKind, Value, World};

use crate::expr::fold_constants;
use crate::expr::{ComponentSlot, Expr, ExprKind, Slot};
use crate::plan::index_lookup::{IndexScan, Operand};
use crate::plan::logical::{EntityRef, Source, Term};
use crate::types::BinaryOp;

/// How the rows of the matched tables are reached.
#[derive(Clone, Debug)]
pub enum Access {
    /// Every row of every matched table.
    Scan {
        /// Why no index is used (shown by EXPLAIN).
        reason: String,
    },
    /// Only these entities, found through the entity table.
    Entities {
        /// The entities (literals or parameters).
        entities: Vec<Operand>,
        /// A statement's entity target: a stale entity is an error rather than no row.
        must_exist: bool,
        /// What it came from (for EXPLAIN).
        origin: String,
        /// Where the entity target is written (for errors).
        span: Option<crate::error::Span>,
    },
    /// The entities an index answers.
    Index(IndexScan),
}

/// A per-row presence check for sparse components (joined by entity).
#[derive(Clone, Debug, PartialEq)]
pub enum RowCheck {
    /// The entity has the sparse component.
    Has(Slot),
    /// The entity lacks the sparse component.
    Lacks(Slot),
    /// The entity has at least one of these sparse components.
    AnyOf(Vec<Slot>),
}

/// Where a slot's component is found in one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotSource {
    /// A column of the table.
    Column,
    /// The component's sparse set (looked up by entity).
    Sparse,
    /// Nowhere: it reads as null in this table.
    Absent,
}

/// One conjunct of a table's pushed-down predicate.
#[derive(Clone, Debug)]
pub enum FilterStep {
    /// `field <op> constant` on a column of the table: a column kernel.
    Compare {
        /// The component.
        slot: Slot,
        /// The field's position.
        field: usize,
        /// The field's type.
        ty: FieldType,
        /// The comparison (`field op rhs`).
        op: BinaryOp,
        /// The constant.
        rhs: Operand,
        /// The conjunct it came from (for EXPLAIN and errors).
        expr: Expr,
    },
    /// Any other condition, run on the batch evaluator; rows where it is true pass.
    Expr(Expr),
}

impl FilterStep {
    /// The conjunct this step runs.
    pub fn expr(&self) -> &Expr {
        match self {
            FilterStep::Compare { expr, .. } | FilterStep::Expr(expr) => expr,
        }
    }

    /// A rough selectivity used for estimates.
    pub fn selectivity(&self) -> f64 {
        match self {
            FilterStep::Compare { op: BinaryOp::Eq, .. } => 0.1,
            FilterStep::Compare { op: BinaryOp::Ne, .. } => 0.9,
            FilterStep::Compare { .. } => 1.0 / 3.0,
            FilterStep::Expr(_) => 0.5,
        }
    }
}

/// A table's predicate after pushdown.
#[derive(Clone, Debug)]
pub enum TableFilter {
    /// No row of the table can pass (the predicate folds to false or null here).
    Never,
    /// Rows pass when every step passes (no steps: every row).
    Steps(Vec<FilterStep>),
}

/// One matched archetype table.
#[derive(Clone, Debug)]
pub struct TablePlan {
    /// The table.
    pub table: TableId,
    /// Where each slot's component is found.
    pub sources: Vec<SlotSource>,
    /// Presence checks for sparse components.
    pub checks: Vec<RowCheck>,
    /// The pushed-down predicate (shared by the tables where the statement's components are
    /// found the same way: it depends only on [`TablePlan::sources`]).
    pub filter: Arc<TableFilter>,
}

/// A slot with what the planner needs of its component.
#[derive(Clone, Debug)]
pub struct PhysicalSlot {
    /// The component.
    pub id: ComponentId,
    /// Its name.
    pub name: String,
    /// Table or sparse.
    pub storage: StorageKind,
    /// Its fields.
    pub fields: Vec<FieldInfo>,
}

/// The physical plan of a row source.
#[derive(Clone, Debug)]
pub struct ScanPlan {
    /// The components, by slot.
    pub slots: Vec<PhysicalSlot>,
    required: Vec<ComponentId>,
    forbidden: Vec<ComponentId>,
    any_of: Vec<(Vec<ComponentId>, Vec<Slot>)>,
    base_checks: Vec<RowCheck>,
    /// What it plans (kept to choose the access path again when the indexes change).
    source: Source,
    options: crate::plan::PlanOptions,
    /// [`World::index_catalog_version`] when the access path was chosen.
    index_version: u64,
    /// How rows are reached.
    pub access: Access,
    /// The matched tables, in table order.
    pub tables: Vec<TablePlan>,
    tables_seen: usize,
    /// How the index answer counts the rows (see [`ScanPlan::index_count`]).
    index_count: Option<IndexCount>,
    /// Pushed-down predicates by slot sources, computed once per distinct layout.
    filters: Vec<(Vec<SlotSource>, Arc<TableFilter>)>,
    /// The change run of a statement that tracks changes ([`ScanPlan::track_changes`]).
    changes: Option<ChangeRun>,
}

/// How an index answer gives `count(*)` ([`ScanPlan::index_count`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexCount {
    /// Every entity answered lies in a matched table (the one index is over a table
    /// component every holder of which is matched): the count is the answer's size.
    AnswerSize,
    /// The entities answered that lie in matched tables, each located.
    MatchedTables,
}

/// Where a change-tracking statement is: its previous run and the current run's window.
#[derive(Clone, Copy, Debug)]
struct ChangeRun {
    last_run: Option<u64>,
    window: ChangeWindow,
}

impl ScanPlan {
    /// Plans a source against the world's catalog and matches its current tables.
    pub fn new(source: &Source, world: &World, options: crate::plan::PlanOptions) -> ScanPlan {
        let slots: Vec<PhysicalSlot> = source
            .slots
            .iter()
            .map(|s: &ComponentSlot| {
                let info = world.components().info(s.id);
                PhysicalSlot { id: s.id, name: s.name.clone(), storage: info.storage(), fields: info.fields().to_vec() }
            })
            .collect();
        let sparse = |slot: Slot| slots.get(slot).is_some_and(|s| s.storage == StorageKind::Sparse);
        let mut required = Vec::new();
        let mut forbidden = Vec::new();
        let mut any_of = Vec::new();
        let mut base_checks = Vec::new();
        for term in &source.terms {
            match term {
                Term::Required { slot, .. } => {
                    if sparse(*slot) {
                        base_checks.push(RowCheck::Has(*slot));
                    } else if let Some(s) = slots.get(*slot) {
                        required.push(s.id);
                    }
                }
                Term::Not(slot) => {
                    if sparse(*slot) {
                        base_checks.push(RowCheck::Lacks(*slot));
                    } else if let Some(s) = slots.get(*slot) {
                        forbidden.push(s.id);
                    }
                }
                Term::Optional(_) => {}
                Term::AnyOf(group) => {
                    let table: Vec<ComponentId> =
                        group.iter().filter(|s| !sparse(**s)).filter_map(|s| slots.get(*s)).map(|s| s.id).collect();
                    let sp: Vec<Slot> = group.iter().copied().filter(|s| sparse(*s)).collect();
                    any_of.push((table, sp));
                }
            }
        }
        let mut plan = ScanPlan {
            slots,
            required,
            forbidden,
            any_of,
            base_checks,
            source: source.clone(),
            options,
            index_version: world.index_catalog_version(),
            access: Access::Scan { reason: String::new() },
            tables: Vec::new(),
            tables_seen: 0,
            index_count: None,
            filters: Vec::new(),
            changes: None,
        };
        plan.rematch(world);
        // After matching: an index must beat a scan of the matched tables, not of the world.
        plan.access = choose_access(source, world, plan.matched_rows(world), options);
        plan.index_count = plan.count_by_index(world);
        plan
    }

    /// How `count(*)` over the plan's rows follows from its index answer, when it does: the
    /// access reads indexes that decide every matched table's filter (exact answers to all
    /// its conjuncts, no other row check). `None` otherwise. Kept by [`ScanPlan::refresh`].
    pub fn index_count(&self) -> Option<IndexCount> {
        self.index_count
    }

    /// Whether table `t` is matched with a filter that can pass rows (not `Never`).
    pub fn table_can_pass(&self, t: TableId) -> bool {
        match self.tables.binary_search_by_key(&t, |tp| tp.table) {
            Ok(i) => !matches!(*self.tables[i].filter, TableFilter::Never),
            Err(_) => false,
        }
    }

    fn count_by_index(&self, world: &World) -> Option<IndexCount> {
        let Access::Index(ix) = &self.access else { return None };
        // A sparse set's answer holds its component: that presence check is decided.
        let held = ix.lookup.holders_of();
        let decided_check = |c: &RowCheck| matches!(c, RowCheck::Has(s) if self.slots.get(*s).map(|s| s.id) == held);
        let decided = |tp: &TablePlan| match &*tp.filter {
            TableFilter::Never => true,
            TableFilter::Steps(steps) => {
                tp.checks.iter().all(decided_check) && steps.iter().all(|s| ix.exact_conjuncts.contains(&s.expr().span))
            }
        };
        if !self.tables.iter().all(decided) {
            return None;
        }
        let Some(c) = ix.lookup.component() else { return Some(IndexCount::MatchedTables) };
        // A table component's holders lie in the tables that have it; a sparse one's in any
        // table in use (a retired table stays empty).
        let every_holder_passes = match world.components().info(c).storage() {
            StorageKind::Table => world.tables().iter().filter(|t| t.has(c)).all(|t| self.table_can_pass(t.id())),
            StorageKind::Sparse => {
                held == Some(c)
                    && world.tables().iter().filter(|t| !world.is_retired_table(t)).all(|t| self.table_can_pass(t.id()))
            }
        };
        Some(if every_holder_passes { IndexCount::AnswerSize } else { IndexCount::MatchedTables })
    }

    /// Readies the plan for a run; called once at the start of every run. Matches the tables
    /// created since the last run (tables are append-only), chooses the access path again if
    /// an index was created or dropped since it was chosen, and for a statement that tracks
    /// changes (`changed(C)`, `added(C)`) starts its change run, as a typed query does.
    pub fn refresh(&mut self, world: &World) {
        self.rematch(world);
        if let Some(run) = &mut self.changes {
            let (window, this_run) = world.begin_change_run(run.last_run);
            run.window = window;
            run.last_run = Some(this_run);
        }
    }

    /// Makes the statement track changes: `changed(C)` and `added(C)` then count rows changed
    /// since its previous run (every row on its first).
    pub fn track_changes(&mut self) {
        self.changes.get_or_insert(ChangeRun { last_run: None, window: ChangeWindow::EVERYTHING });
    }

    /// The rows `changed(C)` and `added(C)` count as new in this run.
    pub fn change_window(&self) -> ChangeWindow {
        self.changes.as_ref().map_or(ChangeWindow::EVERYTHING, |c| c.window)
    }

    /// Matches new tables and chooses the access path again after index changes.
    #[inline]
    fn rematch(&mut self, world: &World) {
        // Most runs find neither: the check stays in the caller, the work out of line.
        if self.tables_seen < world.tables().len() || self.indexes_changed(world) {
            self.rematch_changed(world);
        }
    }

    #[inline(never)]
    fn rematch_changed(&mut self, world: &World) {
        let tables = world.tables();
        let mut changed = false;
        if self.tables_seen < tables.len() {
            // A retired table (emptied by `SET STORAGE SPARSE`) stays empty while the plan
            // lives: a storage change makes statements prepare again.
            for t in tables[self.tables_seen..].iter().filter(|t| !world.is_retired_table(t)) {
                if let Some(tp) = self.match_table(t) {
                    self.tables.push(tp);
                }
            }
            self.tables_seen = tables.len();
            changed = true;
        }
        if self.indexes_changed(world) {
            self.index_version = world.index_catalog_version();
            self.access = choose_access(&self.source, world, self.matched_rows(world), self.options);
            changed = true;
        }
        if changed {
            self.index_count = self.count_by_index(world);
        }
    }

    /// Whether an index was created or dropped since the access path was chosen.
    pub fn indexes_changed(&self, world: &World) -> bool {
        self.index_version != world.index_catalog_version()
    }

    /// The planner settings the plan was made with.
    pub fn options(&self) -> crate::plan::PlanOptions {
        self.options
    }

    /// The pushed-down predicate for tables whose slots are found as `sources`.
    fn filter_for(&mut self, sources: &[SlotSource]) -> Arc<TableFilter> {
        if let Some((_, f)) = self.filters.iter().find(|(s, _)| s == sources) {
            return f.clone();
        }
        let f = Arc::new(match &self.source.filter {
            None => TableFilter::Steps(Vec::new()),
            Some(f) => push_down(f, sources, &self.slots),
        });
        self.filters.push((sources.to_vec(), f.clone()));
        f
    }

    fn match_table(&mut self, t: &ecsdb_engine::storage::ArchetypeTable) -> Option<TablePlan> {
        if !self.required.iter().all(|c| t.has(*c)) || self.forbidden.iter().any(|c| t.has(*c)) {
            return None;
        }
        let mut checks = self.base_checks.clone();
        for (table_members, sparse_members) in &self.any_of {
            if table_members.iter().any(|c| t.has(*c)) {
                continue;
            }
            if sparse_members.is_empty() {
                return None;
            }
            checks.push(RowCheck::AnyOf(sparse_members.clone()));
        }
        let sources: Vec<SlotSource> = self
            .slots
            .iter()
            .map(|s| match s.storage {
                StorageKind::Sparse => SlotSource::Sparse,
                StorageKind::Table if t.has(s.id) => SlotSource::Column,
                StorageKind::Table => SlotSource::Absent,
            })
            .collect();
        let filter = self.filter_for(&sources);
        Some(TablePlan { table: t.id(), sources, checks, filter })
    }

    /// Rows in the matched tables right now.
    pub fn matched_rows(&self, world: &World) -> usize {
        self.tables.iter().map(|t| world.tables().get(t.table.index()).map_or(0, |x| x.len())).sum()
    }
}

/// Picks the access path. Entity targets and `entity = …` / `entity IN (…)` conjuncts are
/// answered through the entity table; otherwise secondary indexes where they are cheaper than
/// a scan ([`choose_index`](crate::plan::index_choice::choose_index)); otherwise a scan.
fn choose_access(source: &Source, world: &World, scan_rows: usize, options: crate::plan::PlanOptions) -> Access {
    if let Some(target) = &source.target {
        let (operand, origin, span) = match target {
            EntityRef::Literal(e, span) => (Operand::Value(Value::Entity(*e)), format!("entity {e}"), *span),
            EntityRef::Param(n, span) => (Operand::Param(*n), "an entity parameter".to_string(), *span),
        };
        return Access::Entities { entities: vec![operand], must_exist: true, origin, span: Some(span) };
    }
    if let Some(filter) = &source.filter {
        for c in filter.conjuncts() {
            if let Some(entities) = entity_lookup(c) {
                return Access::Entities {
                    entities, must_exist: false, origin: "entity = …".to_string(), span: None
                };
            }
        }
    }
    // A small sparse set of a required component beats both a scan and an index answering
    // more rows (it decides at run time between itself and the scan).
    let sparse = crate::plan::sparse_drive::smallest_required_set(source, world, scan_rows);
    match (crate::plan::index_choice::choose_index_or_why(source, world, scan_rows, options), sparse) {
        (Ok(ix), Some(Ok((len, set)))) if len < ix.estimated_rows => Access::Index(set),
        (Ok(ix), _) => Access::Index(ix),
        (Err(_), Some(Ok((_, set)))) => Access::Index(set),
        (Err(no_index), Some(Err(no_set))) => Access::Scan { reason: format!("{no_index}; {no_set}") },
        (Err(reason), None) => Access::Scan { reason },
    }
}

/// `entity = X`, `X = entity` or `entity IN (X, …)` with constant X: the entities to fetch.
fn entity_lookup(c: &Expr) -> Option<Vec<Operand>> {
    let is_entity = |e: &Expr| matches!(e.kind, ExprKind::Entity);
    match &c.kind {
        ExprKind::Binary { op: BinaryOp::Eq, left, right } => {
            if is_entity(left) {
                Operand::from_expr(right).map(|o| vec![o])
            } else if is_entity(right) {
                Operand::from_expr(left).map(|o| vec![o])
            } else {
                None
            }
        }
        ExprKind::InList { expr, list, negated: false } if is_entity(expr) => {
            list.iter().map(Operand::from_expr).collect()
        }
        _ => None,
    }
}

/// Specialises the predicate to one table: absent components read null, `has` of table
/// components is constant; then constant parts fold and the conjuncts become steps.
fn push_down(filter: &Expr, sources: &[SlotSource], slots: &[PhysicalSlot]) -> TableFilter {
    // Rewrite only when something changes (planning a typical query must stay in microseconds).
    let source = |slot: Slot| sources.get(slot).copied().unwrap_or(SlotSource::Absent);
    let needs_specialising = filter.any(&mut |e| match e.kind {
        ExprKind::Field { slot, .. }
        | ExprKind::Component(slot)
        | ExprKind::ComponentVector(slot)
        | ExprKind::IndexCall { slot, .. } => source(slot) == SlotSource::Absent,
        ExprKind::Has(slot) => source(slot) != SlotSource::Sparse,
        ExprKind::Changed { slot, .. } => source(slot) == SlotSource::Absent,
        _ => false,
    });
    let specialised;
    let filter = if needs_specialising {
        specialised = specialise(filter, sources);
        &specialised
    } else {
        filter
    };
    let needs_folding =
        filter.any(&mut |e| !matches!(e.kind, ExprKind::Literal(_)) && !e.reads_row() && !e.has_params());
    let folded;
    let filter = if needs_folding {
        folded = fold_constants(filter);
        &folded
    } else {
        filter
    };
    let mut steps = Vec::new();
    for c in filter.conjuncts() {
        match &c.kind {
            ExprKind::Literal(Value::Bool(true)) => continue,
            ExprKind::Literal(Value::Bool(false) | Value::Null) => return TableFilter::Never,
            _ => {}
        }
        steps.extend(compile_conjunct(c, sources, slots));
    }
    // Cheapest first: numeric kernels, then other kernels, then the evaluator.
    steps.sort_by_key(|s| match s {
        FilterStep::Compare { ty, .. } if ty.is_numeric() => 0,
        FilterStep::Compare { .. } => 1,
        FilterStep::Expr(_) => 2,
    });
    TableFilter::Steps(steps)
}

/// Replaces reads of absent components by null and `has` by constants where the table decides.
pub fn specialise(e: &Expr, sources: &[SlotSource]) -> Expr {
    let source = |slot: Slot| sources.get(slot).copied().unwrap_or(SlotSource::Absent);
    let null = || Expr { kind: ExprKind::Literal(Value::Null), ty: e.ty, span: e.span };
    match &e.kind {
        ExprKind::Field { slot, .. }
        | ExprKind::Component(slot)
        | ExprKind::ComponentVector(slot)
        | ExprKind::IndexCall { slot, .. }
            if source(*slot) == SlotSource::Absent =>
        {
            null()
        }
        ExprKind::Has(slot) if source(*slot) != SlotSource::Sparse => {
            Expr { kind: ExprKind::Literal(Value::Bool(source(*slot) == SlotSource::Column)), ty: e.ty, span: e.span }
        }
        // A row without the component has not changed it.
        ExprKind::Changed { slot, .. } if source(*slot) == SlotSource::Absent => {
            Expr { kind: ExprKind::Literal(Value::Bool(false)), ty: e.ty, span: e.span }
        }
        _ => e.map_children(&mut |c| specialise(c, sources)),
    }
}

/// Field types a column kernel reads (u64 is left to the evaluator, which checks the range).
fn kernel_type(ty: FieldType) -> bool {
    !matches!(ty, FieldType::U64 | FieldType::Vec2 | FieldType::Vec3)
}

fn compile_conjunct(c: &Expr, sources: &[SlotSource], slots: &[PhysicalSlot]) -> Vec<FilterStep> {
    let column_field = |e: &Expr| -> Option<(Slot, usize, FieldType)> {
        if let ExprKind::Field { slot, field } = e.kind
            && sources.get(slot) == Some(&SlotSource::Column)
        {
            let ty = slots.get(slot)?.fields.get(field)?.ty;
            return kernel_type(ty).then_some((slot, field, ty));
        }
        None
    };
    let compare = |(slot, field, ty): (Slot, usize, FieldType), op: BinaryOp, rhs: Operand| FilterStep::Compare {
        slot,
        field,
        ty,
        op,
        rhs,
        expr: c.clone(),
    };
    match &c.kind {
        ExprKind::Binary { op, left, right } if op.is_comparison() => {
            if let (Some(f), Some(o)) = (column_field(left), Operand::from_expr(right)) {
                return vec![compare(f, *op, o)];
            }
            if let (Some(f), Some(o)) = (column_field(right), Operand::from_expr(left)) {
                return vec![compare(f, op.flip(), o)];
            }
        }
        ExprKind::Between { expr, low, high, negated: false } => {
            if let (Some(f), Some(lo), Some(hi)) =
                (column_field(expr), Operand::from_expr(low), Operand::from_expr(high))
            {
                return vec![compare(f, BinaryOp::Ge, lo), compare(f, BinaryOp::Le, hi)];
            }
        }
        _ => {}
    }
    vec![FilterStep::Expr(c.clone())]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bind::bind_statement;
    use crate::functions::FunctionRegistry;
    use crate::parse::parse_statement;
    use crate::plan::logical::LogicalPlan;
    use ecsdb_engine::{ComponentDef, FieldType};

    fn plan(w: &World, text: &str) -> ScanPlan {
        let stmt = parse_statement(text).unwrap();
        match bind_statement(&stmt, w, &FunctionRegistry::default()).unwrap().plan {
            LogicalPlan::Select(s) => ScanPlan::new(&s.source, w, Default::default()),
            other => panic!("not a select: {other:?}"),
        }
    }

    fn world() -> World {
        let mut w = World::new();
        w.define_component(&ComponentDef::new("A", &[("v", FieldType::I32), ("s", FieldType::String)])).unwrap();
        w.define_component(&ComponentDef::new("B", &[("v", FieldType::F32)])).unwrap();
        w.define_component(&ComponentDef::new("S", &[("v", FieldType::U8)]).sparse()).unwrap();
        w.spawn_values(&[("A", &[])]).unwrap();
        w.spawn_values(&[("A", &[]), ("B", &[])]).unwrap();
        w.spawn_values(&[("B", &[])]).unwrap();
        w
    }

    /// An index of a kind that answers exactly decides its conjunct (the scan does not test
    /// it again on the answer's rows); a skip index's superset decides nothing, nor does a
    /// union. (The differential test checks the answers: marking skip leaves exact fails it.)
    #[test]
    fn exact_index_answers_decide_their_conjuncts() {
        use ecsdb_engine::index::{IndexDef, IndexKind};
        let mut w = world();
        for i in 0..2000 {
            w.spawn_values(&[("A", &[("v", Value::Int(i)), ("s", Value::Str(format!("s{}", i % 7)))])]).unwrap();
        }
        w.create_index(IndexDef::new("A", &["v"], IndexKind::Btree)).unwrap();
        w.create_index(IndexDef::new("A", &["s"], IndexKind::Skip)).unwrap();
        let decided = |text: &str| -> Vec<String> {
            let p = plan(&w, text);
            match &p.access {
                Access::Index(ix) => ix.exact_conjuncts.iter().map(|s| text[s.start..s.end].to_string()).collect(),
                other => panic!("{text}: no index chosen ({other:?})"),
            }
        };
        assert_eq!(decided("SELECT entity FROM A WHERE A.v = 5"), ["A.v = 5"]);
        // Whether or not the skip index joins the answer, its conjunct stays to be tested.
        assert_eq!(decided("SELECT entity FROM A WHERE A.v < 3 AND A.s = 's1'"), ["A.v < 3"]);
        assert!(decided("SELECT entity FROM A WHERE A.v = 5 OR A.v = 9").is_empty(), "nor does a union");
    }

    #[test]
    fn tables_matched_once_and_incrementally() {
        let mut w = world();
        let mut p = plan(&w, "SELECT entity FROM A, !B");
        assert_eq!(p.tables.len(), 1);
        w.define_component(&ComponentDef::new("C", &[])).unwrap();
        w.spawn_values(&[("A", &[]), ("C", &[])]).unwrap();
        w.spawn_values(&[("A", &[]), ("B", &[]), ("C", &[])]).unwrap();
        p.refresh(&w);
        assert_eq!(p.tables.len(), 2);
        p.refresh(&w);
        assert_eq!(p.tables.len(), 2);
    }

    #[test]
    fn predicates_are_pushed_down_per_table() {
        let w = world();
        let p = plan(&w, "SELECT entity FROM ?B, A WHERE B.v > 1 AND A.v = 3 AND A.s = 'x' AND A.v + 1 > 2");
        assert_eq!(p.tables.len(), 2);
        for t in &p.tables {
            let has_b = t.sources[p.slots.iter().position(|s| s.name == "B").unwrap()] == SlotSource::Column;
            match &*t.filter {
                TableFilter::Never => assert!(!has_b, "only a table without B can never pass"),
                TableFilter::Steps(steps) => {
                    assert!(has_b);
                    let kinds: Vec<&str> = steps
                        .iter()
                        .map(|s| match s {
                            FilterStep::Compare { ty, .. } if ty.is_numeric() => "num",
                            FilterStep::Compare { .. } => "other",
                            FilterStep::Expr(_) => "expr",
                        })
                        .collect();
                    assert_eq!(kinds, ["num", "num", "other", "expr"]);
                }
            }
        }
    }

    #[test]
    fn sparse_terms_become_row_checks() {
        let w = world();
        let p = plan(&w, "SELECT entity FROM A, !S");
        assert!(p.tables.iter().all(|t| t.checks == [RowCheck::Lacks(1)]));
        let p = plan(&w, "SELECT entity FROM B | S");
        // The table with B needs no check; the others must have S.
        assert!(p.tables.iter().any(|t| t.checks.is_empty()));
        assert!(p.tables.iter().any(|t| matches!(t.checks.as_slice(), [RowCheck::AnyOf(_)])));
        // has() of a table component folds to a constant per table; of a sparse one, a step.
        let p = plan(&w, "SELECT entity WHERE has(S) AND has(A)");
        let a = p.slots.iter().position(|s| s.name == "A").unwrap();
        for t in &p.tables {
            match &*t.filter {
                TableFilter::Never => assert_eq!(t.sources[a], SlotSource::Absent),
                TableFilter::Steps(s) => assert!(t.sources[a] == SlotSource::Column && s.len() == 1),
            }
        }
    }

    #[test]
    fn access_paths() {
        let w = world();
        assert!(matches!(plan(&w, "SELECT entity FROM A").access, Access::Scan { .. }));
        assert!(matches!(
            plan(&w, "SELECT entity WHERE entity = 1v0").access,
            Access::Entities { must_exist: false, .. }
        ));
        assert!(matches!(
            plan(&w, "SELECT entity WHERE A.v > 0 AND entity IN (1v0, $1)").access,
            Access::Entities { ref entities, .. } if entities.len() == 2
        ));
        assert!(matches!(plan(&w, "SELECT entity WHERE entity = 1v0 OR A.v > 0").access, Access::Scan { .. }));
    }
}
