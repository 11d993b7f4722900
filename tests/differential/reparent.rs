//! Targeted re-parenting: `UPDATE ChildOf SET parent = p WHERE entity = x` (or `FROM x`, or
//! with `$` parameters, or `ADD ChildOf {parent: p} TO x`) where `p` is picked for what the
//! write must do: move `x`'s subtree under a node outside it (allowed), onto `x` itself or
//! one of its descendants (a loop: refused under `ACYCLIC`, nothing changed), onto a dead
//! entity (refused on a declared field), or to null; and bulk moves of every child of a node.
//! The random mutations of `mutate.rs` rarely aim this precisely.

use ecsdb::{Entity, Value};

use super::r#gen::Gen;
use super::model::Model;
use super::relations;
use super::rng::Rng;

/// A statement and its parameters (`("1", v)` for `$1`, `("p", v)` for `$p`).
pub type Statement = (String, Vec<(String, Value)>);

/// The entities below `x` following `comp.field` (those whose chain meets `x`).
fn subtree(model: &Model, x: Entity, comp: &str, field: &str) -> Vec<Entity> {
    model.entities.keys().copied().filter(|y| relations::chain(model, *y, comp, field).0.contains(&x)).collect()
}

/// What the new target is picked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aim {
    /// A live entity outside the subtree: always allowed.
    Move,
    /// The entity itself or one of its descendants: a loop.
    Cycle,
    /// A dead entity.
    Stale,
    /// Null: detached.
    Detach,
}

/// The new target for `x`'s `comp.field` under `aim` (`None` when there is none to pick).
fn target(
    rng: &mut Rng,
    model: &Model,
    dead: &[Entity],
    x: Entity,
    comp: &str,
    field: &str,
    aim: Aim,
) -> Option<Value> {
    Some(match aim {
        Aim::Move => {
            let below = subtree(model, x, comp, field);
            let outside: Vec<Entity> =
                model.entities.keys().copied().filter(|y| *y != x && !below.contains(y)).collect();
            if outside.is_empty() {
                return None;
            }
            Value::Entity(*rng.pick(&outside))
        }
        Aim::Cycle => {
            let below = subtree(model, x, comp, field);
            Value::Entity(if below.is_empty() || rng.chance(0.25) { x } else { *rng.pick(&below) })
        }
        Aim::Stale if dead.is_empty() => return None,
        Aim::Stale => Value::Entity(*rng.pick(dead)),
        Aim::Detach => Value::Null,
    })
}

/// One re-parenting statement for the model's world (`ChildOf.parent` mostly, `Link.to` now
/// and then). Returns the statement and what it aims at.
pub fn reparent(g: &mut Gen, model: &Model, dead: &[Entity]) -> (Statement, Aim) {
    let mut rng = g.rng.fork();
    let (comp, field) = if rng.chance(0.8) { ("ChildOf", "parent") } else { ("Link", "to") };
    // Mostly an entity that has the component (a move), now and then any live one (no row:
    // count 0, or a new component through ADD).
    let with: Vec<Entity> = model.entities.keys().copied().filter(|e| model.has(*e, comp)).collect();
    let live: Vec<Entity> = model.entities.keys().copied().collect();
    let aim = [Aim::Move, Aim::Cycle, Aim::Stale, Aim::Detach][rng.weighted(&[5, 4, 2, 1])];
    let x = match (with.is_empty(), live.is_empty()) {
        (false, _) if rng.chance(0.9) => *rng.pick(&with),
        (_, false) => *rng.pick(&live),
        // An empty world: a stale entity target.
        _ => return ((format!("UPDATE {comp} SET {field} = null FROM {}", g.entity_lit()), Vec::new()), aim),
    };
    let value = target(&mut rng, model, dead, x, comp, field, aim).unwrap_or(Value::Null);
    let lit = super::world_gen::literal(&value);
    // Bulk: every entity whose target is x's target moves too (siblings of x), judged on the
    // result.
    let siblings = match model.entities[&x].get(comp).map(|fs| &fs[0].1) {
        Some(Value::Entity(p)) if !p.is_null() => Some(*p),
        _ => None,
    };
    let st = match rng.weighted(&[4, 3, 3, 2, 2]) {
        1 => (format!("UPDATE {comp} SET {field} = {lit} FROM {x}"), Vec::new()),
        // (Systems take no parameters but `$dt`, `$tick`, `$time`.)
        2 if g.allow_params => {
            let params = vec![("1".to_string(), value), ("2".to_string(), Value::Entity(x))];
            if rng.chance(0.5) {
                (format!("UPDATE {comp} SET {field} = $1 WHERE entity = $2"), params)
            } else {
                let named = vec![("p".to_string(), params[0].1.clone()), ("e".to_string(), params[1].1.clone())];
                (format!("UPDATE {comp} SET {field} = $p FROM $e"), named)
            }
        }
        3 => match siblings {
            Some(p) if rng.chance(0.5) => {
                (format!("UPDATE {comp} SET {field} = {lit} WHERE {comp}.{field} = {p}"), Vec::new())
            }
            Some(p) => {
                (format!("UPDATE {comp} SET {field} = {lit} WHERE descendant_of({comp}.{field}, {p}, 1)"), Vec::new())
            }
            None => (format!("UPDATE {comp} SET {field} = {lit} WHERE entity = {x}"), Vec::new()),
        },
        4 => (format!("ADD {comp} {{{field}: {lit}}} TO {x}"), Vec::new()),
        _ => (format!("UPDATE {comp} SET {field} = {lit} WHERE entity = {x}"), Vec::new()),
    };
    (st, aim)
}
