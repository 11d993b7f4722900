//! Following entities from a row: paths (`ChildOf.parent.Name.value`) and the hierarchy
//! functions (`depth`, `root`, `descendant_of`), one value at a time through the engine's
//! reference walks. Kept apart from the batch evaluator so that it can be ported as one piece.

use ecsdb_engine::{ComponentId, Value, World};

use crate::error::Error;
use crate::expr::eval_error;
use crate::plan::logical::{Expr, HierarchyFunc, PathHop};

/// The value at the end of a path from `start` (the path's first field): null as soon as a
/// step meets null, a dead entity, or an entity without the step's component.
pub fn follow_path(world: &World, start: &Value, steps: &[PathHop], e: &Expr) -> Result<Value, Error> {
    let mut cur = start.clone();
    for hop in steps {
        let entity = match cur {
            Value::Entity(x) if !x.is_null() && world.is_alive(x) => x,
            Value::Entity(_) | Value::Null => return Ok(Value::Null),
            other => return Err(eval_error(e, format!("a path steps through entities, found {}", other.describe()))),
        };
        cur = match hop.field {
            Some(f) => world.field_value(entity, hop.component, f).map_err(|err| eval_error(e, err.to_string()))?,
            None => match world.has_component(entity, hop.component) {
                Ok(true) => Some(
                    world.get_component_value(entity, hop.component).map_err(|err| eval_error(e, err.to_string()))?,
                ),
                _ => None,
            },
        }
        .unwrap_or(Value::Null);
    }
    Ok(cur)
}

/// `depth`, `root` or `descendant_of` of the row's entity `this` over field `field` of
/// `component`; `extra` are `descendant_of`'s ancestor and optional maximum depth.
pub fn hierarchy(
    world: &World,
    func: HierarchyFunc,
    component: ComponentId,
    field: usize,
    this: &Value,
    extra: &[&Value],
    e: &Expr,
) -> Result<Value, Error> {
    let Value::Entity(this) = *this else { return Ok(Value::Null) };
    Ok(match func {
        HierarchyFunc::Depth => {
            world.walk_up(this, component, field).depth.map_or(Value::Null, |d| Value::Int(d as i64))
        }
        HierarchyFunc::Root => world.walk_up(this, component, field).root.map_or(Value::Null, Value::Entity),
        HierarchyFunc::DescendantOf => {
            let ancestor = match extra.first() {
                Some(Value::Entity(a)) => *a,
                Some(Value::Null) | None => return Ok(Value::Null),
                Some(other) => {
                    return Err(eval_error(e, format!("descendant_of() takes an entity, found {}", other.describe())))
                }
            };
            let max = match extra.get(1) {
                None => None,
                Some(Value::Int(m)) if *m < 0 => return Ok(Value::Bool(false)),
                Some(Value::Int(m)) => Some(*m as u64),
                Some(Value::Null) => return Ok(Value::Null),
                Some(other) => {
                    return Err(eval_error(
                        e,
                        format!("descendant_of() takes an int depth, found {}", other.describe()),
                    ))
                }
            };
            Value::Bool(world.is_descendant_of(this, component, field, ancestor, max))
        }
    })
}
