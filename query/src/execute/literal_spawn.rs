//! SPAWNs of literal values ([`LiteralSpawn`]) checked and converted straight from a script's
//! text into a [`SpawnBatch`]: the components, values and checks of binding the statement's
//! syntax tree and running its check phase ([`crate::execute::mutate::spawn_values`]),
//! without building either.
//!
//! Only the plain case is taken: a known component given once, not opaque; known fields given
//! once; values the binder accepts for their field type and that convert; no reference.
//! Anything else is declined, and the statement then goes the general way, which
//! reports any error exactly as before.

use ecsdb_engine::{ComponentId, FieldType, FieldValue, Value, ValueType, World, convert_value};

use crate::execute::mutate::SpawnBatch;
use crate::parse::{LiteralField, LiteralSpawn, LiteralValue, Script};
use crate::types::rules::storable;

/// Writes the literal SPAWNs of a run into a [`SpawnBatch`], remembering the components it
/// looked up (nothing else may change the components meanwhile: [`LiteralSpawner::clear`]
/// between runs).
pub(crate) struct LiteralSpawner<'s> {
    /// The script's text.
    src: &'s str,
    /// Component names already looked up.
    known: Vec<(&'s str, ComponentId)>,
    /// The components of the SPAWN being converted.
    ids: Vec<ComponentId>,
}

impl<'s> LiteralSpawner<'s> {
    /// A spawner for the SPAWNs of the script `src`.
    pub(crate) fn new(src: &'s str) -> LiteralSpawner<'s> {
        LiteralSpawner { src, known: Vec::new(), ids: Vec::new() }
    }

    fn id(&mut self, world: &World, name: &'s str) -> Option<ComponentId> {
        // (A script names few components: a short list beats hashing each name.)
        if let Some(&(_, id)) = self.known.iter().find(|(n, _)| same_name(n, name)) {
            return Some(id);
        }
        let id = world.components().id_by_name(name)?;
        self.known.push((name, id));
        Some(id)
    }

    /// Forgets every component looked up (the components may change).
    pub(crate) fn clear(&mut self) {
        self.known.clear();
    }

    /// Checks and converts `spawn` (a statement of `script`) into `batch`, or returns `false`
    /// (`batch` as it was) if it is not the plain case: then the general path runs it.
    pub(crate) fn push(
        &mut self,
        world: &World,
        script: &Script,
        spawn: &LiteralSpawn,
        batch: &mut SpawnBatch,
    ) -> bool {
        let mark = batch.values().len();
        self.ids.clear();
        if self.convert(world, script, spawn, batch).is_none() {
            batch.values_mut().truncate(mark);
            return false;
        }
        batch.push_converted(&self.ids);
        true
    }

    /// Converts every component value of `spawn` into `batch`'s values and its components
    /// into `self.ids`; `None` if it is not the plain case.
    fn convert(&mut self, world: &World, script: &Script, spawn: &LiteralSpawn, batch: &mut SpawnBatch) -> Option<()> {
        let src = self.src;
        for c in script.components(spawn) {
            let name = c.name();
            let id = self.id(world, &src[name.start..name.end])?;
            let info = world.components().info(id);
            if self.ids.contains(&id) || info.is_opaque() {
                return None;
            }
            // Bit `i`: field `i` given (fields past 64 are rare: declined).
            let mut given = 0u64;
            for f in script.fields(c) {
                let name = f.name();
                let name = &src[name.start..name.end];
                let index = info.fields().iter().position(|field| same_name(&field.name, name))?;
                let field = &info.fields()[index];
                let bit = 1u64.checked_shl(u32::try_from(index).ok()?)?;
                // (References are checked against the SPAWNs before written: the general
                // path does so.)
                if given & bit != 0 || !storable(field.ty, literal_type(f)) || world.reference(id, index).is_some() {
                    return None;
                }
                given |= bit;
                let value = match (f.value, field.ty) {
                    (LiteralValue::Str, FieldType::String) => FieldValue::Str(f.str(src).to_string()),
                    _ => convert_value(info.name(), field, &literal_value(f)).ok()?,
                };
                batch.values_mut().push_field(index, value);
            }
            batch.values_mut().end_component();
            self.ids.push(id);
        }
        Some(())
    }
}

/// `a == b`, compared here: names are short, and the call to `memcmp` that `==` makes
/// costs more than comparing them.
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// The binder's type of the literal.
fn literal_type(f: &LiteralField) -> ValueType {
    match f.value {
        LiteralValue::Int(_) => ValueType::Int,
        LiteralValue::Float(_) => ValueType::Float,
        LiteralValue::Bool(_) => ValueType::Bool,
        LiteralValue::Null => ValueType::Null,
        LiteralValue::Str => ValueType::Str,
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
