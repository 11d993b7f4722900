//! EXPLAIN: the physical plan as lines a person reads, SQLite style (one step per line,
//! indented as a tree, estimated rows on each step).
//!
//! ```text
//! PROJECT entity, Health.hp (est. 10 rows)
//! `--TOP-K 10 BY Health.hp DESC, then entity (est. 10 rows)
//!    `--SCAN Health, Team: 4 tables, 1000 rows; no index applies (est. 100 rows)
//!       |--TABLE {Health, Player, Position, Team}: 450 rows; Team.name = 'red' [string heads] (est. 45 rows)
//!       `--TABLE {Frozen, Health, Player, Position, Team}: 50 rows; Team.name = 'red' [string heads] (est. 5 rows)
//! ```

use ecsdb_engine::{StorageKind, Value, ValueType, World};

use crate::expr::compiled::MAX_STRING_IN;
use crate::expr::like::{HeadTest, LikeMatcher, ShortTest};
use crate::expr::{DisplayContext, Expr, ExprKind, ParamSpec, literal_text};
use crate::plan::index_lookup::Operand;
use crate::plan::logical::{SelectPlan, SortKey, slot_fields};
use crate::plan::physical::{Access, FilterStep, PhysicalSlot, RowCheck, TableFilter};
use crate::plan::{PhysicalSelect, Strategy};
use crate::types::BinaryOp;

/// Whether a filter step tests a string field's heads when it runs (see
/// [`World::table_string_heads`]): `=` or `!=` of a string column and a value, `LIKE` of a
/// table component's field and a constant prefix, exact, suffix or substring pattern, and
/// `IN` of such a field and a short list of strings.
fn reads_string_heads(step: &FilterStep, slots: &[PhysicalSlot]) -> bool {
    match step {
        FilterStep::Compare { ty, op, .. } => {
            *ty == ecsdb_engine::FieldType::String && matches!(op, BinaryOp::Eq | BinaryOp::Ne)
        }
        FilterStep::Expr(e) => match &e.kind {
            ExprKind::Like { expr, pattern, .. } => match (&expr.kind, &pattern.kind) {
                (ExprKind::Field { slot, .. }, ExprKind::Literal(Value::Str(p))) => {
                    let m = LikeMatcher::new(p);
                    slots.get(*slot).is_some_and(|s| s.storage == StorageKind::Table)
                        && (HeadTest::new(&m).is_some() || ShortTest::new(&m).is_some())
                }
                _ => false,
            },
            ExprKind::InList { expr, list, .. } => match &expr.kind {
                ExprKind::Field { slot, .. } => {
                    slots.get(*slot).is_some_and(|s| s.storage == StorageKind::Table)
                        && list.len() <= MAX_STRING_IN
                        && list.iter().all(|e| matches!(e.kind, ExprKind::Literal(Value::Str(_))))
                }
                _ => false,
            },
            _ => false,
        },
    }
}

struct Node {
    text: String,
    children: Vec<Node>,
}

fn node(text: String) -> Node {
    Node { text, children: Vec::new() }
}

fn render(n: &Node, prefix: &str, connector: &str, out: &mut Vec<String>) {
    out.push(format!("{prefix}{connector}{}", n.text));
    let child_prefix = match connector {
        "" => prefix.to_string(),
        "|--" => format!("{prefix}|  "),
        _ => format!("{prefix}   "),
    };
    for (i, c) in n.children.iter().enumerate() {
        let last = i + 1 == n.children.len();
        render(c, &child_prefix, if last { "`--" } else { "|--" }, out);
    }
}

fn rows(n: f64) -> String {
    let n = n.ceil().max(0.0) as u64;
    format!("est. {n} row{}", if n == 1 { "" } else { "s" })
}

/// The EXPLAIN lines of a planned SELECT (with the world as it is now, for row counts).
pub fn explain_select(phys: &PhysicalSelect, world: &World, params: &[ParamSpec]) -> Vec<String> {
    let plan: &SelectPlan = &phys.logical;
    let fields = slot_fields(world, &plan.source.slots);
    let ctx = DisplayContext {
        slots: &plan.source.slots,
        fields: &fields,
        group_by: &plan.group_by,
        aggregates: &plan.aggregates,
        params,
    };
    let show = |e: &Expr| e.display(&ctx).to_string();
    let scan = &phys.scan;

    // The scan and its tables.
    let mut total_rows = 0usize;
    let mut estimate = 0f64;
    let mut table_nodes = Vec::new();
    let access_fraction = match &scan.access {
        Access::Entities { entities, .. } => Some(entities.len()),
        _ => None,
    };
    for tp in &scan.tables {
        let Some(table) = world.tables().get(tp.table.index()) else { continue };
        let n = table.len();
        total_rows += n;
        let names: Vec<&str> = table.components().iter().map(|c| world.components().info(*c).name()).collect();
        let mut text = format!("TABLE {{{}}}: {n} row{}", names.join(", "), if n == 1 { "" } else { "s" });
        let base = access_fraction.map_or(n as f64, |k| (k as f64).min(n as f64));
        let mut est = base;
        for check in &tp.checks {
            let name = |s: &usize| plan.source.slots.get(*s).map_or("?", |c| c.name.as_str()).to_string();
            // The share of the world's entities that hold a sparse component.
            let held = |s: &usize| {
                let len = scan.slots.get(*s).and_then(|c| world.sparse_set(c.id)).map_or(0, |set| set.len());
                len as f64 / world.len().max(1) as f64
            };
            let (what, share) = match check {
                RowCheck::Has(s) => (format!("; has sparse {}", name(s)), held(s)),
                RowCheck::Lacks(s) => (format!("; lacks sparse {}", name(s)), 1.0 - held(s)),
                RowCheck::AnyOf(ss) => (
                    format!("; has one of sparse {}", ss.iter().map(name).collect::<Vec<_>>().join(", ")),
                    ss.iter().map(held).sum::<f64>().min(1.0),
                ),
            };
            text.push_str(&what);
            est *= share.clamp(0.0, 1.0);
        }
        match &*tp.filter {
            TableFilter::Never => {
                text.push_str("; skipped: the filter cannot hold here");
                est = 0.0;
            }
            TableFilter::Steps(steps) => {
                let decided: &[crate::error::Span] = match &scan.access {
                    Access::Index(ix) => &ix.exact_conjuncts,
                    _ => &[],
                };
                for s in steps {
                    if decided.contains(&s.expr().span) {
                        // The index's answer holds exactly the rows where it is true.
                        text.push_str(&format!("; {} [decided by the index]", show(s.expr())));
                        continue;
                    }
                    let what = match s {
                        FilterStep::Compare { slot, field, ty, op, rhs, .. } => {
                            let column = format!(
                                "{}.{}",
                                plan.source.slots.get(*slot).map_or("?", |c| c.name.as_str()),
                                fields.get(*slot).and_then(|f| f.get(*field)).map_or("?", |f| f.as_str())
                            );
                            let value = match rhs {
                                Operand::Value(v) => literal_text(v),
                                Operand::Param(n) => params.get(*n).map_or_else(|| "?".into(), |p| p.key.to_string()),
                            };
                            if reads_string_heads(s, &scan.slots) {
                                format!("{column} {} {value} [string heads]", op.symbol())
                            } else {
                                format!("{column} {} {value} [{ty} column kernel]", op.symbol())
                            }
                        }
                        FilterStep::Expr(e) if reads_string_heads(s, &scan.slots) => {
                            format!("{} [string heads]", show(e))
                        }
                        FilterStep::Expr(e) => format!("{} [evaluator]", show(e)),
                    };
                    text.push_str(&format!("; {what}"));
                    est *= s.selectivity();
                }
            }
        }
        text.push_str(&format!(" ({})", rows(est)));
        estimate += est;
        table_nodes.push(node(text));
    }
    let tables = scan.tables.len();
    let terms = crate::plan::logical::render_terms(&plan.source);
    let scan_text = match &scan.access {
        Access::Scan { reason } => format!(
            "SCAN {terms}: {tables} table{}, {total_rows} row{}; {reason} ({})",
            if tables == 1 { "" } else { "s" },
            if total_rows == 1 { "" } else { "s" },
            rows(estimate)
        ),
        Access::Entities { entities, origin, .. } => format!(
            "SEARCH {terms} BY ENTITY ({} entit{} from {origin}, through the entity table) ({})",
            entities.len(),
            if entities.len() == 1 { "y" } else { "ies" },
            rows(estimate)
        ),
        Access::Index(ix) => format!(
            "SEARCH {terms} USING {} (index est. {} rows; {})",
            ix.lookup.describe_now(world, total_rows).unwrap_or_else(|| ix.description.clone()),
            ix.estimated_rows,
            rows(estimate)
        ),
    };
    let mut scan_node = node(scan_text);
    scan_node.children = table_nodes;
    let mut current = scan_node;

    let sort_text = |keys: &[SortKey], tie: &str| {
        let ks: Vec<String> =
            keys.iter().map(|k| format!("{}{}", show(&k.expr), if k.descending { " DESC" } else { "" })).collect();
        format!("{}, then {tie}", ks.join(", "))
    };
    let mut out_rows = estimate;
    let mut per_group = false;
    if plan.aggregated {
        let aggs: Vec<String> = (0..plan.aggregates.len())
            .map(|i| show(&Expr { kind: ExprKind::Aggregate(i), ty: ValueType::Any, span: Default::default() }))
            .collect();
        let text = if plan.group_by.is_empty() {
            out_rows = 1.0;
            format!("AGGREGATE {} (one row)", aggs.join(", "))
        } else {
            let keys: Vec<String> = plan.group_by.iter().map(&show).collect();
            per_group = true;
            format!("AGGREGATE {} GROUP BY {} (one row per group)", aggs.join(", "), keys.join(", "))
        };
        let mut agg = node(text);
        agg.children.push(current);
        current = agg;
        if !plan.order_by.is_empty() {
            let mut sort = node(format!("SORT groups BY {}", sort_text(&plan.order_by, "the GROUP BY values")));
            sort.children.push(current);
            current = sort;
        }
    } else if !plan.order_by.is_empty() {
        let nearest;
        let how = if let Some(n) = &phys.ordered {
            let walk = match n.source {
                crate::plan::index_choice::OrderedSource::Nearest { .. } => "nearest-neighbour walk",
                crate::plan::index_choice::OrderedSource::Field { .. } => "ordered walk",
            };
            let ties = if n.more_keys { ", rows tied on the first key fetched again" } else { "" };
            nearest = format!("; {walk} USING INDEX {} ({}){ties}", n.index, n.kind.name());
            nearest.as_str()
        } else if phys.fast_sort_key.is_some() {
            "; key read straight from its column"
        } else {
            ""
        };
        let text = match phys.strategy {
            Strategy::TopK => {
                let k = plan.limit.as_ref().map_or_else(String::new, |l| {
                    let mut s = show(l);
                    if let Some(o) = &plan.offset {
                        s = format!("{s} + offset {}", show(o));
                    }
                    s
                });
                if let Some(ExprKind::Literal(ecsdb_engine::Value::Int(l))) = plan.limit.as_ref().map(|l| &l.kind) {
                    out_rows = out_rows.min(*l as f64);
                }
                format!("TOP-K {k} BY {}{how} ({})", sort_text(&plan.order_by, "entity"), rows(out_rows))
            }
            _ => format!("SORT BY {}{how} ({})", sort_text(&plan.order_by, "entity"), rows(out_rows)),
        };
        let mut sort = node(text);
        sort.children.push(current);
        current = sort;
    }
    let limit_shown_by_top_k = phys.strategy == Strategy::TopK && plan.offset.is_none();
    if (plan.limit.is_some() || plan.offset.is_some()) && !limit_shown_by_top_k {
        let mut parts = Vec::new();
        if let Some(l) = &plan.limit {
            parts.push(format!("LIMIT {}", show(l)));
            if let ExprKind::Literal(ecsdb_engine::Value::Int(l)) = l.kind {
                out_rows = out_rows.min(l.max(0) as f64);
            }
        }
        if let Some(o) = &plan.offset {
            parts.push(format!("OFFSET {}", show(o)));
        }
        let stop = if phys.strategy == Strategy::Project { "; the scan stops early" } else { "" };
        let est = if per_group { "at most one row per group".to_string() } else { rows(out_rows) };
        let mut lim = node(format!("{}{stop} ({est})", parts.join(" ")));
        lim.children.push(current);
        current = lim;
    }
    let items: Vec<String> = plan
        .items
        .iter()
        .map(|i| {
            let text = show(&i.expr);
            if text == i.name { text } else { format!("{text} AS {}", i.name) }
        })
        .collect();
    let est = if per_group { "one row per group".to_string() } else { rows(out_rows) };
    let mut top = node(format!("PROJECT {} ({est})", items.join(", ")));
    top.children.push(current);
    let mut out = Vec::new();
    render(&top, "", "", &mut out);
    out
}
