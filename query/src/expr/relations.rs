//! Following entities from a row: paths (`ChildOf.parent.Name.value`) and the hierarchy
//! functions (`depth`, `root`, `descendant_of`). A path of fields stored in tables is read
//! typed, a batch at a time ([`typed_path`]); the rest goes one value at a time through the
//! engine's reference walks. Kept apart from the batch evaluator so that it can be ported as
//! one piece.

use ecsdb_engine::storage::{FieldPlace, FieldView};
use ecsdb_engine::{ComponentId, Entity, FieldType, StorageKind, Value, World};

use crate::error::Error;
use crate::expr::eval_error;
use crate::expr::vector::{Prim, StrVec, Vector};
use crate::expr::{Expr, PathHop};
use crate::types::HierarchyFunc;

/// One hop's field, read through a typed view per archetype table (made on first use).
struct HopReader<'w> {
    world: &'w World,
    component: ComponentId,
    field: usize,
    views: Vec<Option<FieldView<'w>>>,
}

impl<'w> HopReader<'w> {
    fn new(world: &'w World, component: ComponentId, field: usize) -> HopReader<'w> {
        HopReader { world, component, field, views: Vec::new() }
    }

    /// The view of the field in the table holding live entity `e`, and `e`'s row there;
    /// `None` for a null or dead entity, or one whose table lacks the component.
    fn locate(&mut self, e: Entity) -> Option<(FieldView<'w>, usize)> {
        if e.is_null() {
            return None;
        }
        let loc = self.world.location(e).ok()?;
        let t = loc.table as usize;
        if self.views.len() <= t {
            self.views.resize(t + 1, None);
        }
        let view = match self.views[t] {
            Some(v) => v,
            None => {
                let id = self.world.tables().get(t)?.id();
                let v = FieldView::new(self.world, FieldPlace::Table(id), self.component, self.field);
                self.views[t] = Some(v);
                v
            }
        };
        (!matches!(view, FieldView::Missing)).then_some((view, loc.row as usize))
    }
}

/// A path read typed for a batch: every hop a field of a table-stored component, the start
/// an entity vector, the last field a scalar. `None` when the path is not of that shape (the
/// caller then follows it value by value).
pub fn typed_path<'w>(world: &'w World, start: &Vector<'w>, steps: &[PathHop]) -> Option<Vector<'w>> {
    let Vector::Entity(start) = start else { return None };
    let (last, hops) = steps.split_last()?;
    let stored_in_table = |h: &PathHop| world.components().info(h.component).storage() == StorageKind::Table;
    if !steps.iter().all(|h| h.field.is_some() && stored_in_table(h)) {
        return None;
    }
    let field_type =
        |h: &PathHop| -> Option<FieldType> { Some(world.components().info(h.component).fields().get(h.field?)?.ty) };
    if hops.iter().any(|h| field_type(h) != Some(FieldType::Entity)) {
        return None;
    }
    let valid = |i: usize| start.valid.as_ref().is_none_or(|v| v[i]);
    let mut entities: Vec<Entity> =
        start.values.iter().enumerate().map(|(i, &e)| if valid(i) { e } else { Entity::NULL }).collect();
    for hop in hops {
        let mut reader = HopReader::new(world, hop.component, hop.field?);
        for e in &mut entities {
            *e = match reader.locate(*e) {
                Some((FieldView::Entity(c), row)) => c.get(row).copied().unwrap_or(Entity::NULL),
                _ => Entity::NULL,
            };
        }
    }
    let mut reader = HopReader::new(world, last.component, last.field?);
    let n = entities.len();
    /// Fills a typed vector from each entity's value (null where there is none).
    fn prim<'w, T: Copy>(
        entities: &[Entity],
        reader: &mut HopReader<'w>,
        zero: T,
        read: impl Fn(FieldView<'w>, usize) -> Option<T>,
    ) -> Prim<T> {
        let mut values = Vec::with_capacity(entities.len());
        let mut valid: Option<Vec<bool>> = None;
        for (i, &e) in entities.iter().enumerate() {
            match reader.locate(e).and_then(|(v, row)| read(v, row)) {
                Some(x) => values.push(x),
                None => {
                    valid.get_or_insert_with(|| vec![true; entities.len()])[i] = false;
                    values.push(zero);
                }
            }
        }
        Prim { values, valid }
    }
    Some(match field_type(last)? {
        FieldType::String => {
            let mut out = StrVec::with_capacity(n);
            for &e in &entities {
                match reader.locate(e) {
                    Some((FieldView::Str(c), row)) => match c.get(row) {
                        Some(s) => out.push_view(s.as_str()),
                        None => out.push_null(),
                    },
                    _ => out.push_null(),
                }
            }
            Vector::Str(out)
        }
        FieldType::Entity => Vector::Entity(prim(&entities, &mut reader, Entity::NULL, |v, row| match v {
            FieldView::Entity(c) => c.get(row).copied().filter(|e| !e.is_null()),
            _ => None,
        })),
        FieldType::Bool => Vector::Bool(prim(&entities, &mut reader, false, |v, row| match v {
            FieldView::Bool(c) => c.get(row).copied(),
            _ => None,
        })),
        FieldType::F32 | FieldType::F64 => {
            Vector::Float(prim(&entities, &mut reader, 0.0, |v, row| v.get(row).and_then(|x| x.as_f64())))
        }
        t if t.is_integer() => Vector::Int(prim(&entities, &mut reader, 0, |v, row| match v.get(row) {
            Some(Value::Int(i)) => Some(i),
            _ => None,
        })),
        _ => return None,
    })
}

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
        HierarchyFunc::DescendantOf => match descendant_args(extra, e)? {
            Ok((ancestor, max)) => Value::Bool(world.is_descendant_of(this, component, field, ancestor, max)),
            Err(every_row) => every_row,
        },
    })
}

/// `descendant_of`'s ancestor and optional maximum depth, checked: `Ok` with them, or
/// `Err` with the value every row gets (null for a null argument, false for a negative
/// depth).
fn descendant_args(extra: &[&Value], e: &Expr) -> Result<Result<(Entity, Option<u64>), Value>, Error> {
    let ancestor = match extra.first() {
        Some(Value::Entity(a)) => *a,
        Some(Value::Null) | None => return Ok(Err(Value::Null)),
        Some(other) => {
            return Err(eval_error(e, format!("descendant_of() takes an entity, found {}", other.describe())));
        }
    };
    let max = match extra.get(1) {
        None => None,
        Some(Value::Int(m)) if *m < 0 => return Ok(Err(Value::Bool(false))),
        Some(Value::Int(m)) => Some(*m as u64),
        Some(Value::Null) => return Ok(Err(Value::Null)),
        Some(other) => {
            return Err(eval_error(e, format!("descendant_of() takes an int depth, found {}", other.describe())));
        }
    };
    Ok(Ok((ancestor, max)))
}

/// `descendant_of(C.f, ancestor [, max])` for a batch of rows whose entities are `this`, when
/// the ancestor and depth are the same for every row (constants, parameters): each chain is
/// read once for the whole batch ([`World::hops_to_ancestor`]) instead of walked per row.
pub fn descendant_of_batch<'w>(
    world: &World,
    component: ComponentId,
    field: usize,
    this: &Vector<'w>,
    extra: &[&Value],
    e: &Expr,
) -> Result<Vector<'w>, Error> {
    let n = this.len();
    let (ancestor, max) = match descendant_args(extra, e)? {
        Ok(args) => args,
        Err(every_row) => return Ok(Vector::Scalar(every_row, n)),
    };
    let hops = match this {
        Vector::Entity(p) if p.valid.is_none() => world.hops_to_ancestor(&p.values, component, field, ancestor),
        _ => {
            let entities: Vec<Entity> = (0..n)
                .map(|i| match this.value(i) {
                    Value::Entity(x) => x,
                    _ => Entity::NULL,
                })
                .collect();
            world.hops_to_ancestor(&entities, component, field, ancestor)
        }
    };
    let values = hops.iter().map(|h| h.is_some_and(|h| max.is_none_or(|m| h <= m))).collect();
    Ok(Vector::Bool(Prim::all(values)))
}
