//! The leaves of expressions over a table's rows, read from column memory straight into typed
//! vectors: a field of a component stored in the table is one typed gather (a contiguous run
//! of rows is a strided walk with no bounds check per row); sparse components are joined by
//! entity, with nulls where an entity lacks them.

use std::borrow::Cow;

use ecsdb_engine::storage::{FieldColumn, FieldScalar, StringHeads};
use ecsdb_engine::{Entity, Value, World};

use crate::error::Error;
use crate::execute::scan::{SlotReader, TableCtx, out_of_range};
use std::rc::Rc;

use crate::expr::compiled::{Columns, Program, as_range, compile};
use crate::expr::{Evaluator, Leaves, NoRows, Prim, StrVec, Vector, eval_error};
use crate::expr::{Expr, ExprKind};
use ecsdb_engine::storage::FieldView;

/// `conv(value)` for each of `rows` (all in range: they come from the table's own selection).
#[inline]
fn gather<T: FieldScalar, R>(c: &FieldColumn<'_, T>, rows: &[u32], conv: impl Fn(&T) -> R) -> Vec<R> {
    match as_range(rows) {
        Some((start, end)) => c.map_range(start, end, conv),
        None => rows.iter().map(|&r| c.get(r as usize).map(&conv)).map(|v| v.expect("row in range")).collect(),
    }
}

/// The typed values of one field over `rows`; `Err(v)` for a u64 above i64::MAX.
pub fn gather_field<'w>(reader: &FieldView<'w>, rows: &[u32]) -> Result<Vector<'w>, u64> {
    Ok(match reader {
        FieldView::Bool(c) => Vector::Bool(Prim::all(gather(c, rows, |v| *v))),
        FieldView::I8(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v as i64))),
        FieldView::I16(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v as i64))),
        FieldView::I32(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v as i64))),
        FieldView::I64(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v))),
        FieldView::U8(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v as i64))),
        FieldView::U16(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v as i64))),
        FieldView::U32(c) => Vector::Int(Prim::all(gather(c, rows, |v| *v as i64))),
        FieldView::U64(c) => {
            let raw = gather(c, rows, |v| *v);
            if let Some(&bad) = raw.iter().find(|&&v| v > i64::MAX as u64) {
                return Err(bad);
            }
            Vector::Int(Prim::all(raw.into_iter().map(|v| v as i64).collect()))
        }
        FieldView::F32(c) => Vector::Float(Prim::all(gather(c, rows, |v| *v as f64))),
        FieldView::F64(c) => Vector::Float(Prim::all(gather(c, rows, |v| *v))),
        FieldView::Str(c) => {
            let col = *c;
            let views = match as_range(rows) {
                Some((start, end)) => StrVec::from_views(col.range(start, end).map(String::as_str)),
                None => StrVec::from_views(rows.iter().filter_map(|&r| col.get(r as usize)).map(String::as_str)),
            };
            Vector::Str(views)
        }
        FieldView::Entity(c) => {
            let values = gather(c, rows, |v| *v);
            let valid = values.iter().any(|e| e.is_null()).then(|| values.iter().map(|e| !e.is_null()).collect());
            Vector::Entity(Prim { values, valid })
        }
        FieldView::Vec2(c) => Vector::Vec2(Prim::all(gather(c, rows, |v| [v[0] as f64, v[1] as f64]))),
        FieldView::Vec3(c) => Vector::Vec3(Prim::all(gather(c, rows, |v| [v[0] as f64, v[1] as f64, v[2] as f64]))),
        FieldView::Missing => Vector::nulls(rows.len()),
    })
}

/// A reference field's values with every handle to an entity no longer alive made null: a
/// dangling reference (left by `ON DELETE NO ACTION`) reads as null, in every expression.
fn dangling_as_null<'w>(world: &World, values: Vector<'w>) -> Vector<'w> {
    match values {
        Vector::Entity(mut p) => {
            if p.values.iter().any(|e| !e.is_null() && !world.is_alive(*e)) {
                let valid = p.valid.get_or_insert_with(|| vec![true; p.values.len()]);
                for (ok, e) in valid.iter_mut().zip(&p.values) {
                    *ok &= !e.is_null() && world.is_alive(*e);
                }
            }
            Vector::Entity(p)
        }
        Vector::Values(values) => Vector::from_values(
            values
                .into_iter()
                .map(|v| match v {
                    Value::Entity(e) if !world.is_alive(e) => Value::Null,
                    other => other,
                })
                .collect(),
        ),
        other => other,
    }
}

impl<'w> TableCtx<'w> {
    /// Values of field `field` of slot `slot` over `rows`.
    fn field_leaf(&self, e: &Expr, slot: usize, field: usize, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let values = self.stored_field(e, slot, field, rows)?;
        let entities = matches!(values, Vector::Entity(_) | Vector::Values(_));
        Ok(if entities && self.is_reference(slot, field) { dangling_as_null(self.world, values) } else { values })
    }

    /// Values of field `field` of slot `slot` over `rows`, as stored.
    fn stored_field(&self, e: &Expr, slot: usize, field: usize, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let oor = |v| out_of_range(e, self.meta, slot, field, v);
        match self.slots.get(slot) {
            Some(SlotReader::Dense(readers)) => match readers.get(field) {
                Some(reader) => gather_field(reader, rows).map_err(oor),
                None => Ok(Vector::nulls(rows.len())),
            },
            Some(SlotReader::Sparse(set, readers)) => {
                // Every row's entity holds it (a required term): its dense rows, gathered as
                // a typed column read is.
                let Some(reader) = readers.get(field) else { return Ok(Vector::nulls(rows.len())) };
                let dense: Option<Vec<u32>> = rows
                    .iter()
                    .map(|&r| self.entities.get(r as usize).and_then(|e| set.row(*e)).map(|d| d as u32))
                    .collect();
                if let Some(dense) = dense {
                    return gather_field(reader, &dense).map_err(oor);
                }
                let mut out = Vec::with_capacity(rows.len());
                for &r in rows {
                    out.push(match self.locate(slot, r) {
                        Some((sr, readers)) => match readers.get(field) {
                            Some(reader) => reader.value(sr).map_err(oor)?,
                            None => Value::Null,
                        },
                        None => Value::Null,
                    });
                }
                Ok(Vector::from_values(out))
            }
            _ => Ok(Vector::nulls(rows.len())),
        }
    }

    /// A vector-like component over `rows` as vec2/vec3.
    fn vector_leaf(&self, e: &Expr, slot: usize, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let n_fields = self.meta.get(slot).map_or(0, |m| m.fields.len());
        if n_fields != 2 && n_fields != 3 {
            return Err(eval_error(e, "this component is not a vector"));
        }
        let mut cols = Vec::with_capacity(n_fields);
        for f in 0..n_fields {
            cols.push(self.field_leaf(e, slot, f, rows)?);
        }
        let n = rows.len();
        let mut xs: Vec<Cow<'_, [f64]>> = Vec::with_capacity(n_fields);
        let mut valid = None;
        for c in &cols {
            match c.f64s() {
                Some((vals, v)) => {
                    valid = crate::expr::and_validity(&valid, v);
                    xs.push(vals);
                }
                // Every field absent (a null column) or of run-time type: per row.
                None => {
                    let mut col = Vec::with_capacity(n);
                    for i in 0..n {
                        match c.value(i) {
                            Value::Null => {
                                col.push(0.0);
                                valid.get_or_insert_with(|| vec![true; n])[i] = false;
                            }
                            v => col.push(v.as_f64().unwrap_or(0.0)),
                        }
                    }
                    xs.push(Cow::Owned(col));
                }
            }
        }
        Ok(if let [x, y] = &xs[..] {
            Vector::Vec2(Prim { values: x[..n].iter().zip(&y[..n]).map(|(a, b)| [*a, *b]).collect(), valid })
        } else {
            let (x, y, z) = (&xs[0][..n], &xs[1][..n], &xs[2][..n]);
            Vector::Vec3(Prim { values: x.iter().zip(y).zip(z).map(|((a, b), c)| [*a, *b, *c]).collect(), valid })
        })
    }

    /// `changed(C)` / `added(C)` over `rows`: whether the row's tick of the slot's component
    /// is new in this run (false where the row lacks the component).
    fn changed_leaf(&self, slot: usize, added: bool, rows: &[u32]) -> Vec<bool> {
        let window = self.changes;
        let id = self.meta.get(slot).map(|m| m.id);
        match (self.slots.get(slot), id) {
            (Some(SlotReader::Dense(_)), Some(id)) => match self.table.column(id) {
                Some(col) => {
                    let tick = |r: u32| match added {
                        true => col.added_ticks().get(r as usize),
                        false => col.changed_ticks().get(r as usize).copied(),
                    };
                    rows.iter().map(|&r| tick(r).is_some_and(|t| window.is_new(t))).collect()
                }
                None => vec![false; rows.len()],
            },
            (Some(SlotReader::Sparse(set, _)), _) => rows
                .iter()
                .map(|&r| {
                    let e = self.entities.get(r as usize).copied().unwrap_or(Entity::NULL);
                    let tick = if added { set.added_tick(e) } else { set.changed_tick(e) };
                    tick.is_some_and(|t| window.is_new(t))
                })
                .collect(),
            _ => vec![false; rows.len()],
        }
    }

    /// A component as an object per row (null where absent).
    fn object_leaf(&self, e: &Expr, slot: usize, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let meta = self.meta.get(slot);
        let mut out = Vec::with_capacity(rows.len());
        for &r in rows {
            let Some((sr, readers)) = self.locate(slot, r) else {
                out.push(Value::Null);
                continue;
            };
            let mut fields = Vec::with_capacity(readers.len());
            for (i, reader) in readers.iter().enumerate() {
                let v = match reader.value(sr).map_err(|v| out_of_range(e, self.meta, slot, i, v))? {
                    // A dangling reference reads as null in an object too.
                    Value::Entity(t) if !self.world.is_alive(t) && self.is_reference(slot, i) => Value::Null,
                    v => v,
                };
                let name = meta.and_then(|m| m.fields.get(i)).map_or_else(String::new, |f| f.name.clone());
                fields.push((name, v));
            }
            out.push(Value::Object(fields));
        }
        Ok(Vector::Values(out))
    }
}

impl<'w> Columns<'w> for TableCtx<'w> {
    fn column(&self, slot: usize, field: usize) -> Option<FieldView<'w>> {
        self.dense_reader(slot, field).copied()
    }

    fn field_count(&self, slot: usize) -> usize {
        self.meta.get(slot).map_or(0, |m| m.fields.len())
    }

    fn string_heads(&self, slot: usize, field: usize) -> Option<StringHeads> {
        self.dense_reader(slot, field)?;
        self.world.table_string_heads(self.table.id(), self.meta.get(slot)?.id, field)
    }
}

impl<'w> Leaves<'w> for TableCtx<'w> {
    fn world(&self) -> Option<&'w World> {
        Some(self.world)
    }

    /// Compiled once per table and expression: the plan's expressions outlive the context,
    /// so their addresses name them.
    fn compiled(&self, e: &Expr, params: &[Value]) -> Option<Rc<Program<'w>>> {
        let key = e as *const Expr as usize;
        if let Some((_, p)) = self.compiled.borrow().iter().find(|(k, _)| *k == key) {
            return p.clone();
        }
        let constants = |c: &Expr| Evaluator::new(&NoRows, params).eval_one(c).ok();
        let program = compile(e, self, &constants).map(Rc::new);
        self.compiled.borrow_mut().push((key, program.clone()));
        program
    }

    fn leaf(&self, e: &Expr, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let n = rows.len();
        Ok(match &e.kind {
            ExprKind::Entity => Vector::Entity(Prim::all(
                rows.iter().map(|&r| self.entities.get(r as usize).copied().unwrap_or(Entity::NULL)).collect(),
            )),
            ExprKind::Field { slot, field } => self.field_leaf(e, *slot, *field, rows)?,
            ExprKind::Component(slot) => self.object_leaf(e, *slot, rows)?,
            ExprKind::ComponentVector(slot) => self.vector_leaf(e, *slot, rows)?,
            ExprKind::Has(slot) => Vector::Bool(Prim::all(rows.iter().map(|&r| self.has(*slot, r)).collect())),
            ExprKind::Changed { slot, added } => Vector::Bool(Prim::all(self.changed_leaf(*slot, *added, rows))),
            ExprKind::IndexCall { func, slot } => {
                let set = self.function_sets.answer(func.name());
                let mut out = Vec::with_capacity(n);
                for &r in rows {
                    let entity = self.entities.get(r as usize).copied().unwrap_or(Entity::NULL);
                    out.push(if !self.has(*slot, r) {
                        Value::Null
                    } else if let Some(set) = &set {
                        Value::Bool(set.contains(entity.index()))
                    } else {
                        // The index is gone: run its predicate, which gives the same answer.
                        match func.0.eval(self.world, entity) {
                            Ok(Some(b)) => Value::Bool(b),
                            Ok(None) => Value::Null,
                            Err(err) => return Err(eval_error(e, err.to_string())),
                        }
                    });
                }
                Vector::from_values(out)
            }
            _ => return Err(Error::internal("group values read outside aggregation").with_span(e.span)),
        })
    }
}
