//! The plain model of a world: the schema of the run-time components, and every live entity's
//! components as `name → [(field, value)]`, built from what the test spawned and changed (never
//! read back through the query engine).
//!
//! Values are stored exactly as the engine reads them back: an `f32` field holds the `f32`
//! rounding of what was written, a null entity field reads as `null`, vectors are `f32`
//! rounded.

use std::collections::BTreeMap;
use std::fmt::Write;

use ecsdb::{Entity, FieldType, OnDelete, Value};

/// A field declared `REFERENCES` (the engine's `OnDelete` is used as plain data only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefDecl {
    pub on_delete: OnDelete,
    pub acyclic: bool,
}

/// One component of the schema.
#[derive(Clone, Debug)]
pub struct CompDef {
    pub name: String,
    pub fields: Vec<(String, FieldType)>,
    pub sparse: bool,
    /// Fields declared `REFERENCES`, with their declaration.
    pub refs: Vec<(String, RefDecl)>,
}

impl CompDef {
    pub fn new(name: &str, fields: &[(&str, FieldType)]) -> CompDef {
        CompDef {
            name: name.into(),
            fields: fields.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
            sparse: false,
            refs: Vec::new(),
        }
    }

    /// The declaration of field `name`, when it is declared `REFERENCES`.
    pub fn reference(&self, name: &str) -> Option<RefDecl> {
        self.refs.iter().find(|(f, _)| f == name).map(|(_, d)| *d)
    }

    pub fn is_tag(&self) -> bool {
        self.fields.is_empty()
    }

    /// `Some(2 | 3)` when the component reads as a vector in expressions.
    pub fn vector_len(&self) -> Option<usize> {
        let numeric = self.fields.iter().all(|(_, t)| t.is_numeric());
        ((2..=3).contains(&self.fields.len()) && numeric).then_some(self.fields.len())
    }

    pub fn field(&self, name: &str) -> Option<FieldType> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
    }

    /// `CREATE COMPONENT …` for this component.
    pub fn create_text(&self) -> String {
        let storage = if self.sparse { " STORAGE SPARSE" } else { "" };
        if self.fields.is_empty() {
            return format!("CREATE COMPONENT {}{storage}", self.name);
        }
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(n, t)| match self.reference(n) {
                // `NO ACTION` is the default: written out only now and then.
                Some(d) => format!(
                    "{n} {} REFERENCES{}{}",
                    t.name(),
                    match d.on_delete {
                        OnDelete::NoAction if n.len() % 2 == 0 => String::new(),
                        p => format!(" ON DELETE {}", p.name()),
                    },
                    if d.acyclic { " ACYCLIC" } else { "" }
                ),
                None => format!("{n} {}", t.name()),
            })
            .collect();
        format!("CREATE COMPONENT {} ({}){storage}", self.name, fields.join(", "))
    }
}

/// The run-time components of a test world.
#[derive(Clone, Debug)]
pub struct Schema {
    pub comps: Vec<CompDef>,
}

impl Schema {
    /// The fixed schema every differential world uses.
    pub fn standard() -> Schema {
        use FieldType as T;
        let mut target = CompDef::new("Target", &[("who", T::Entity), ("at", T::Vec2), ("w", T::F64)]);
        target.sparse = true;
        Schema {
            comps: vec![
                CompDef::new("Position", &[("x", T::F32), ("y", T::F32), ("z", T::F32)]),
                CompDef::new("Velocity", &[("x", T::F32), ("y", T::F32), ("z", T::F32)]),
                CompDef::new("Health", &[("hp", T::F32), ("max", T::F32)]),
                CompDef::new("Team", &[("name", T::String)]),
                CompDef::new("Name", &[("value", T::String)]),
                CompDef::new("Level", &[("value", T::I32)]),
                CompDef::new("Score", &[("v", T::I64)]),
                CompDef::new("Flags", &[("a", T::Bool), ("b", T::U8)]),
                CompDef::new("Cell", &[("x", T::I16), ("y", T::I16)]),
                target,
                // Links between entities: declared `REFERENCES` in some worlds (see
                // `Schema::declare`), plain entity fields in others.
                CompDef::new("ChildOf", &[("parent", T::Entity)]),
                CompDef::new("Link", &[("to", T::Entity)]),
                CompDef::new("Player", &[]),
                CompDef::new("Monster", &[]),
                CompDef::new("Frozen", &[]),
            ],
        }
    }

    /// Declares `comp.field` a reference (before the world is created from the schema).
    pub fn declare(&mut self, comp: &str, field: &str, decl: RefDecl) {
        let c = self.comps.iter_mut().find(|c| c.name == comp).expect("a component of the schema");
        c.refs.push((field.to_string(), decl));
    }

    /// Every declared reference: `(component, field, declaration)`.
    pub fn references(&self) -> Vec<(String, String, RefDecl)> {
        let mut out = Vec::new();
        for c in &self.comps {
            for (f, d) in &c.refs {
                out.push((c.name.clone(), f.clone(), *d));
            }
        }
        out
    }

    pub fn get(&self, name: &str) -> Option<&CompDef> {
        self.comps.iter().find(|c| c.name == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.comps.iter().map(|c| c.name.as_str())
    }
}

/// The fields of one component value, in declaration order.
pub type Fields = Vec<(String, Value)>;

/// Entity → component name → fields.
pub type Entities = BTreeMap<Entity, BTreeMap<String, Fields>>;

/// The model world.
#[derive(Clone, Debug)]
pub struct Model {
    pub schema: Schema,
    pub entities: Entities,
}

impl Model {
    pub fn new(schema: Schema) -> Model {
        Model { schema, entities: BTreeMap::new() }
    }

    pub fn is_alive(&self, e: Entity) -> bool {
        self.entities.contains_key(&e)
    }

    pub fn has(&self, e: Entity, comp: &str) -> bool {
        self.entities.get(&e).is_some_and(|cs| cs.contains_key(comp))
    }

    /// Builds a component value from given fields (missing ones take their zero value),
    /// converting as the engine does. `Err` when a value cannot be stored in its field (or a
    /// field is unknown or given twice).
    pub fn build(&self, comp: &str, given: &[(String, Value)]) -> Result<Fields, String> {
        let def = self.schema.get(comp).ok_or_else(|| format!("unknown component {comp}"))?;
        for (i, (name, _)) in given.iter().enumerate() {
            if def.field(name).is_none() {
                return Err(format!("unknown field {comp}.{name}"));
            }
            if given[..i].iter().any(|(n, _)| n == name) {
                return Err(format!("field {comp}.{name} given twice"));
            }
        }
        def.fields
            .iter()
            .map(|(name, ty)| {
                let v = match given.iter().find(|(n, _)| n == name) {
                    Some((_, v)) => store(*ty, v).ok_or_else(|| format!("{comp}.{name}: cannot store {v:?}"))?,
                    None => zero(*ty),
                };
                Ok((name.clone(), v))
            })
            .collect()
    }

    /// A compact listing of every entity (for failure reports).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for (e, comps) in &self.entities {
            let _ = write!(out, "  {e}:");
            for (name, fields) in comps {
                if fields.is_empty() {
                    let _ = write!(out, " {name}");
                } else {
                    let fs: Vec<String> = fields.iter().map(|(f, v)| format!("{f}: {}", show(v))).collect();
                    let _ = write!(out, " {name} {{{}}}", fs.join(", "));
                }
            }
            out.push('\n');
        }
        out
    }

    /// One line: entity count and how many have each component.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("{} entities", self.entities.len())];
        for c in &self.schema.comps {
            let n = self.entities.values().filter(|cs| cs.contains_key(&c.name)).count();
            parts.push(format!("{}={n}{}", c.name, if c.sparse { " (sparse)" } else { "" }));
        }
        for (c, f, d) in self.schema.references() {
            parts.push(format!(
                "[{c}.{f} REFERENCES ON DELETE {}{}]",
                d.on_delete.name(),
                if d.acyclic { " ACYCLIC" } else { "" }
            ));
        }
        parts.join(" ")
    }
}

/// A value as the language writes it (strings quoted), for reports.
pub fn show(v: &Value) -> String {
    match v {
        Value::Str(s) => format!("{s:?}"),
        Value::Float(f) => format!("{f:?}"),
        other => other.to_string(),
    }
}

/// The zero value of a field type, as read back.
pub fn zero(ty: FieldType) -> Value {
    use FieldType as T;
    match ty {
        T::Bool => Value::Bool(false),
        T::F32 | T::F64 => Value::Float(0.0),
        T::String => Value::Str(String::new()),
        T::Entity => Value::Null,
        T::Vec2 => Value::Vec2([0.0; 2]),
        T::Vec3 => Value::Vec3([0.0; 3]),
        _ => Value::Int(0),
    }
}

/// `v` stored into a field of type `ty` and read back, or `None` when it cannot be stored
/// (the spec: converted where no information is lost; the engine also rounds floats into
/// `f32`, and reads a null entity as null).
pub fn store(ty: FieldType, v: &Value) -> Option<Value> {
    use FieldType as T;
    let int = || -> Option<i128> {
        match *v {
            Value::Int(i) => Some(i as i128),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1.8e19 => Some(f as i128),
            _ => None,
        }
    };
    let in_range = |lo: i128, hi: i128| -> Option<Value> {
        let i = int()?;
        (lo..=hi).contains(&i).then_some(Value::Int(i as i64))
    };
    let f32r = |x: f64| x as f32 as f64;
    match ty {
        T::Bool => matches!(v, Value::Bool(_)).then(|| v.clone()),
        T::I8 => in_range(i8::MIN as i128, i8::MAX as i128),
        T::I16 => in_range(i16::MIN as i128, i16::MAX as i128),
        T::I32 => in_range(i32::MIN as i128, i32::MAX as i128),
        T::I64 => in_range(i64::MIN as i128, i64::MAX as i128),
        T::U8 => in_range(0, u8::MAX as i128),
        T::U16 => in_range(0, u16::MAX as i128),
        T::U32 => in_range(0, u32::MAX as i128),
        T::U64 => in_range(0, i64::MAX as i128),
        T::F32 => v.as_f64().map(|x| Value::Float(f32r(x))),
        T::F64 => v.as_f64().map(Value::Float),
        T::String => matches!(v, Value::Str(_)).then(|| v.clone()),
        T::Entity => match v {
            Value::Entity(_) | Value::Null => Some(v.clone()),
            _ => None,
        },
        T::Vec2 => match v {
            Value::Vec2([a, b]) => Some(Value::Vec2([f32r(*a), f32r(*b)])),
            _ => None,
        },
        T::Vec3 => match v {
            Value::Vec3([a, b, c]) => Some(Value::Vec3([f32r(*a), f32r(*b), f32r(*c)])),
            _ => None,
        },
    }
}
