//! References between entities, worked out naively from the model's data (never through the
//! engine): paths (`ChildOf.parent.Name.value`), the hierarchy functions (`depth`, `root`,
//! `descendant_of`), what a DESPAWN does under each `ON DELETE` policy, and the checks writes
//! of declared references must pass.
//!
//! Semantics, from `docs/query-language.md` ("References between entities", "v2 details"):
//! - a step of a path or a chain goes to a *live* target only: a null or dead handle (or, for
//!   a path, a target without the step's component) ends it — a path then gives null;
//! - the chain from an entity lists the targets met one hop at a time, stopping at the top or
//!   just before an entity met already (the entity itself included): on such a loop `depth`
//!   and `root` are null, and `descendant_of` is true only for an entity met before the loop
//!   closed; an entity is never its own descendant;
//! - a dangling `NO ACTION` handle reads as null everywhere (the model keeps the handle, as
//!   the world does, and reads it as null: `Reference::as_read`).

use std::collections::BTreeSet;

use ecsdb::query::parse::{Expr, ExprKind, PathStep};
use ecsdb::{Entity, OnDelete, Value};

use super::model::Model;
use super::reference::{RefError, Reference, Row};

/// The names of the hierarchy functions.
pub const HIERARCHY_FUNCTIONS: [&str; 3] = ["depth", "root", "descendant_of"];

pub fn is_hierarchy_function(name: &str) -> bool {
    HIERARCHY_FUNCTIONS.iter().any(|f| name.eq_ignore_ascii_case(f))
}

/// The value of `comp.field` on live entity `e`; `None` when `e` is dead or lacks `comp`.
fn stored(model: &Model, e: Entity, comp: &str, field: &str) -> Option<Value> {
    let fields = model.entities.get(&e)?.get(comp)?;
    fields.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone())
}

/// The live entity `e`'s `comp.field` refers to: `None` for a null or dead target, or when
/// `e` lacks the component.
pub fn live_target(model: &Model, e: Entity, comp: &str, field: &str) -> Option<Entity> {
    match stored(model, e, comp, field)? {
        Value::Entity(t) if !t.is_null() && model.is_alive(t) => Some(t),
        _ => None,
    }
}

/// How a walk up from an entity ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// At an entity without a live target.
    Top,
    /// The next target was the entity the walk started from.
    BackToStart,
    /// The next target was an entity met earlier on the walk (not the start).
    LoopElsewhere,
}

/// The targets met following `comp.field` up from `e`, nearest first, each once, and how the
/// walk ended.
pub fn chain(model: &Model, e: Entity, comp: &str, field: &str) -> (Vec<Entity>, End) {
    let mut met = Vec::new();
    let mut seen = BTreeSet::from([e]);
    let mut cur = e;
    while let Some(next) = live_target(model, cur, comp, field) {
        if next == e {
            return (met, End::BackToStart);
        }
        if !seen.insert(next) {
            return (met, End::LoopElsewhere);
        }
        met.push(next);
        cur = next;
    }
    (met, End::Top)
}

/// `depth(comp.field)` of `e`: hops to the top, null on a loop.
pub fn depth(model: &Model, e: Entity, comp: &str, field: &str) -> Value {
    match chain(model, e, comp, field) {
        (met, End::Top) => Value::Int(met.len() as i64),
        _ => Value::Null,
    }
}

/// `root(comp.field)` of `e`: the last live entity of the chain (`e` itself when it has no
/// live target), null on a loop.
pub fn root(model: &Model, e: Entity, comp: &str, field: &str) -> Value {
    match chain(model, e, comp, field) {
        (met, End::Top) => Value::Entity(met.last().copied().unwrap_or(e)),
        _ => Value::Null,
    }
}

/// `descendant_of(comp.field, ancestor [, max_depth])` of `e`.
pub fn descendant_of(
    model: &Model,
    e: Entity,
    comp: &str,
    field: &str,
    ancestor: &Value,
    max_depth: Option<&Value>,
) -> Result<Value, RefError> {
    let ancestor = match ancestor {
        Value::Null => return Ok(Value::Null),
        Value::Entity(a) => *a,
        other => return Err(RefError::Invalid(format!("descendant_of ancestor {other:?}"))),
    };
    let max = match max_depth {
        None => None,
        Some(Value::Null) => return Ok(Value::Null),
        Some(Value::Int(m)) if *m < 0 => return Ok(Value::Bool(false)),
        Some(Value::Int(m)) => Some(*m as usize),
        Some(other) => return Err(RefError::Invalid(format!("descendant_of depth {other:?}"))),
    };
    let (met, _) = chain(model, e, comp, field);
    // `met` holds each entity once, in hop order: its position + 1 is the hop count.
    let hops = met.iter().position(|x| *x == ancestor).map(|i| i + 1);
    Ok(Value::Bool(hops.is_some_and(|h| max.is_none_or(|m| h <= m))))
}

/// `depth(C.f)`, `root(C.f)`, `descendant_of(C.f, e [, max])` for the row's entity, walked
/// up the model (`None`: `x` is not such a call).
pub fn hierarchy(r: &Reference, x: &Expr, row: Row) -> Result<Option<Value>, RefError> {
    let ExprKind::Call { name, args } = &x.kind else { return Ok(None) };
    if !is_hierarchy_function(&name.name) {
        return Ok(None);
    }
    let Some(ExprKind::Field { component, field }) = args.first().map(|a| &a.kind) else {
        return Err(RefError::Invalid(format!("`{x}`: the first argument is not C.f")));
    };
    let (c, f) = (&component.name, &field.name);
    let lower = name.name.to_ascii_lowercase();
    Ok(Some(match (lower.as_str(), args.len()) {
        ("depth", 1) => depth(r.model, row.e, c, f),
        ("root", 1) => root(r.model, row.e, c, f),
        ("descendant_of", 2 | 3) => {
            let ancestor = r.eval_row(&args[1], row)?;
            let max = match args.get(2) {
                Some(m) => Some(r.eval_row(m, row)?),
                None => None,
            };
            descendant_of(r.model, row.e, c, f, &ancestor, max.as_ref())?
        }
        _ => return Err(RefError::Invalid(format!("`{x}`: wrong arity"))),
    }))
}

/// Checks the components and fields a path's steps name against the schema.
pub fn check_steps(model: &Model, steps: &[PathStep]) -> Result<(), RefError> {
    for step in steps {
        let comp = &step.component.name;
        let def = model.schema.get(comp).ok_or_else(|| RefError::Unknown("component", comp.clone()))?;
        if let Some(f) = &step.field
            && def.field(&f.name).is_none()
        {
            return Err(RefError::Unknown("field", format!("{comp}.{}", f.name)));
        }
    }
    Ok(())
}

/// The value at the end of a path whose first field read `start`.
pub fn follow_path(model: &Model, start: Value, steps: &[PathStep]) -> Result<Value, RefError> {
    check_steps(model, steps)?;
    let mut cur = start;
    for step in steps {
        let comp = &step.component.name;
        let entity = match cur {
            Value::Entity(x) if !x.is_null() && model.is_alive(x) => x,
            Value::Entity(_) | Value::Null => return Ok(Value::Null),
            other => return Err(RefError::Invalid(format!("a path steps through {other:?}"))),
        };
        let Some(fields) = model.entities[&entity].get(comp) else { return Ok(Value::Null) };
        cur = match &step.field {
            Some(f) => fields.iter().find(|(n, _)| *n == f.name).map(|(_, v)| v.clone()).expect("field stored"),
            None => Value::Object(fields.clone()),
        };
    }
    Ok(cur)
}

// -------------------------------------------------------------------------------------------------
// Writes and despawns

/// `DESPAWN roots` under the declared `ON DELETE` policies: the new model and how many
/// entities went (roots and cascades), or [`RefError::Constraint`] when a `RESTRICT` referrer
/// would survive. Every root must be alive.
pub fn despawn(model: &Model, roots: &[Entity]) -> Result<(Model, usize), RefError> {
    let refs = model.schema.references();
    let referrers = |target: Entity, policy: OnDelete| -> Vec<(Entity, String, String)> {
        let mut out = Vec::new();
        for (c, f, _) in refs.iter().filter(|(_, _, d)| d.on_delete == policy) {
            for e in model.entities.keys() {
                if stored(model, *e, c, f) == Some(Value::Entity(target)) {
                    out.push((*e, c.clone(), f.clone()));
                }
            }
        }
        out
    };
    // The closure of CASCADE, then the survivors' fate.
    let mut gone: BTreeSet<Entity> = roots.iter().copied().collect();
    let mut todo: Vec<Entity> = gone.iter().copied().collect();
    while let Some(t) = todo.pop() {
        for (e, _, _) in referrers(t, OnDelete::Cascade) {
            if gone.insert(e) {
                todo.push(e);
            }
        }
    }
    let mut next = model.clone();
    for &t in &gone {
        if referrers(t, OnDelete::Restrict).iter().any(|(e, _, _)| !gone.contains(e)) {
            return Err(RefError::Constraint(format!("a RESTRICT referrer of {t} survives")));
        }
        for (e, c, f) in referrers(t, OnDelete::SetNull) {
            if let Some(fields) = next.entities.get_mut(&e).and_then(|cs| cs.get_mut(&c)) {
                fields.iter_mut().find(|(n, _)| *n == f).expect("field").1 = Value::Null;
            }
        }
        for (e, c, _) in referrers(t, OnDelete::Remove) {
            if let Some(cs) = next.entities.get_mut(&e) {
                cs.remove(&c);
            }
        }
    }
    for e in &gone {
        next.entities.remove(e);
    }
    Ok((next, gone.len()))
}

/// One entity-field value a statement writes: the writer (`None` for a new entity),
/// component, field, value.
pub type Write = (Option<Entity>, String, String, Value);

/// The checks on a statement's writes to declared references, on its final state `after`
/// (`before` is the state it started from): every target live or null
/// ([`RefError::Stale`]); then no `ACYCLIC` field leading a writer back to itself
/// ([`RefError::Constraint`]). Writes to plain entity fields are not checked.
pub fn check_writes(before: &Model, after: &Model, writes: &[Write]) -> Result<(), RefError> {
    let decl = |c: &str, f: &str| before.schema.get(c).and_then(|d| d.reference(f));
    for (_, c, f, v) in writes {
        if decl(c, f).is_none() {
            continue;
        }
        if let Value::Entity(t) = v
            && !t.is_null()
            && !before.is_alive(*t)
        {
            return Err(RefError::Stale(*t));
        }
    }
    for (e, c, f, _) in writes {
        let (Some(e), Some(d)) = (e, decl(c, f)) else { continue };
        if d.acyclic && chain(after, *e, c, f).1 == End::BackToStart {
            return Err(RefError::Constraint(format!("{c}.{f} is ACYCLIC: {e} would reach itself")));
        }
    }
    Ok(())
}
