//! SPAWNs of literal values ([`LiteralSpawn`]) checked and converted straight from a script's
//! text: the components, values and checks of binding the statement's syntax tree and running
//! its check phase ([`mutate::spawn_values`]), without building either.
//!
//! Only the plain case is taken: a known component given once, not opaque; known fields given
//! once; values the binder accepts for their field type and that convert; no reference.
//! Anything else is declined, and the statement then goes the general way, which
//! reports any error exactly as before.

use ecsdb_engine::{convert_value, ComponentId, FieldValue, Value, World};

use crate::bind::storable;
use crate::execute::mutate::{self, SpawnValues};
use crate::parse::{LiteralField, LiteralSpawn, LiteralValue, Script};
use crate::plan::logical::DataType;

/// Component names already looked up, for a run of SPAWNs (nothing else may change the
/// components meanwhile: [`ComponentNames::clear`] between runs).
#[derive(Default)]
pub(crate) struct ComponentNames<'s> {
    known: Vec<(&'s str, ComponentId)>,
}

impl<'s> ComponentNames<'s> {
    fn id(&mut self, world: &World, name: &'s str) -> Option<ComponentId> {
        // (A script names few components: a short list beats hashing each name.)
        if let Some(&(_, id)) = self.known.iter().find(|(n, _)| *n == name) {
            return Some(id);
        }
        let id = world.components().id_by_name(name)?;
        self.known.push((name, id));
        Some(id)
    }

    /// Forgets every name (the components may change).
    pub(crate) fn clear(&mut self) {
        self.known.clear();
    }
}

/// The checked values of `spawn` (a statement of `script`, whose text is `src`), or `None` if
/// it is not the plain case: then the general path runs it.
pub(crate) fn spawn_values<'s>(
    world: &World,
    script: &Script,
    spawn: &LiteralSpawn,
    src: &'s str,
    names: &mut ComponentNames<'s>,
) -> Option<SpawnValues> {
    let components = script.components(spawn);
    let mut ids = Vec::with_capacity(components.len());
    let mut fields = Vec::with_capacity(components.len());
    for c in components {
        let id = names.id(world, &src[c.name.start..c.name.end])?;
        let info = world.components().info(id);
        if ids.contains(&id) || info.is_opaque() {
            return None;
        }
        let given = script.fields(c);
        let mut converted: Vec<(usize, FieldValue)> = Vec::with_capacity(given.len());
        for f in given {
            let index = info.field_index(&src[f.name.start..f.name.end])?;
            let field = &info.fields()[index];
            if converted.iter().any(|(i, _)| *i == index) || !storable(field.ty, literal_type(f)) {
                return None;
            }
            let value = match (f.value, field.ty) {
                (LiteralValue::Str, ecsdb_engine::FieldType::String) => FieldValue::Str(f.str(src).to_string()),
                _ => convert_value(info.name(), field, &literal_value(f)).ok()?,
            };
            converted.push((index, value));
        }
        ids.push(id);
        fields.push(converted);
    }
    // (References are checked against the SPAWNs before written: the general path does so.)
    if mutate::writes_references(world, &ids, &fields) {
        return None;
    }
    Some(SpawnValues { ids, fields })
}

/// The binder's type of the literal.
fn literal_type(f: &LiteralField) -> DataType {
    match f.value {
        LiteralValue::Int(_) => DataType::Int,
        LiteralValue::Float(_) => DataType::Float,
        LiteralValue::Bool(_) => DataType::Bool,
        LiteralValue::Null => DataType::Null,
        LiteralValue::Str => DataType::Str,
    }
}

/// The literal's value, but a string's (which only converts to a string field, taken apart).
fn literal_value(f: &LiteralField) -> Value {
    match f.value {
        LiteralValue::Int(i) => Value::Int(i),
        LiteralValue::Float(x) => Value::Float(x),
        LiteralValue::Bool(b) => Value::Bool(b),
        LiteralValue::Null | LiteralValue::Str => Value::Null,
    }
}

#[cfg(test)]
mod tests;
