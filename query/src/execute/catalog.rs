//! Schema statements: CREATE COMPONENT, CREATE / DROP INDEX, SHOW, DESCRIBE.

use ecsdb_engine::{ComponentDef, ComponentId, Value, World};

use crate::error::{Error, ErrorKind, Span};
use crate::plan::logical::ShowKind;
use crate::result::ResultSet;

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The columns of `SHOW INDEXES`.
pub const INDEX_COLUMNS: [&str; 6] = ["name", "kind", "component", "fields", "entries", "memory_bytes"];

/// The columns of `SHOW SYSTEMS`.
pub const SHOW_SYSTEMS_COLUMNS: [&str; 9] =
    ["name", "phase", "position", "reads", "writes", "runs", "rows", "total_ms", "last_error"];

/// The result columns of a SHOW.
pub fn show_columns(kind: ShowKind) -> Vec<String> {
    match kind {
        ShowKind::Components => columns(&["name", "fields", "storage", "entities"]),
        ShowKind::Tables => columns(&["components", "rows"]),
        ShowKind::Indexes => columns(&INDEX_COLUMNS),
        ShowKind::Systems => columns(&SHOW_SYSTEMS_COLUMNS),
    }
}

/// The result columns of DESCRIBE.
pub fn describe_columns() -> Vec<String> {
    columns(&["field", "type", "default", "storage"])
}

/// `CREATE COMPONENT`.
/// The binder checked that each reference names an entity field of the new component, so the
/// declarations cannot fail on it (it has no rows yet).
pub fn create_component(
    world: &mut World,
    def: &ComponentDef,
    references: &[ecsdb_engine::ReferenceDef],
    defaults: &[(String, Value)],
) -> Result<ResultSet, Error> {
    let id = world.define_component(def)?;
    for (field, value) in defaults {
        world.set_field_default(id, field, Some(value))?;
    }
    for r in references {
        world.declare_reference(r)?;
    }
    Ok(ResultSet::default())
}

/// `CREATE INDEX`: the engine validates the definition against the catalog and builds the
/// index from the current data. Returns the index's name (the default one when none was
/// given).
pub fn create_index(world: &mut World, def: &ecsdb_engine::index::IndexDef, span: Span) -> Result<ResultSet, Error> {
    let name = world.create_index(def.clone()).map_err(|e| Error::from(e).with_span(span))?;
    let mut rs = ResultSet::empty(columns(&["name"]));
    rs.rows.push(vec![Value::Str(name)]);
    Ok(rs)
}

/// `DROP INDEX`.
pub fn drop_index(world: &mut World, name: &str, span: Span) -> Result<ResultSet, Error> {
    if world.index_info(name).is_none() {
        let names: Vec<String> = world.indexes().into_iter().map(|i| i.name).collect();
        let mut e = Error::new(ErrorKind::UnknownIndex, format!("unknown index '{name}'")).with_span(span);
        if let Some(s) = crate::error::suggest(name, names.iter().map(|n| n.as_str())) {
            e = e.with_suggestion(s);
        }
        return Err(e);
    }
    world.drop_index(name).map_err(|e| Error::from(e).with_span(span))?;
    Ok(ResultSet::default())
}

fn fields_text(world: &World, id: ComponentId) -> String {
    let info = world.components().info(id);
    if info.is_opaque() {
        return "opaque".to_string();
    }
    let field = |f: &ecsdb_engine::FieldInfo| match world.field_default(id, &f.name).ok().flatten() {
        Some(v) => format!("{} {} DEFAULT {}", f.name, f.ty, literal_text(&v)),
        None => format!("{} {}", f.name, f.ty),
    };
    info.fields().iter().map(field).collect::<Vec<_>>().join(", ")
}

/// A value as the language writes it: what `DEFAULT` would be given to get it back.
fn literal_text(v: &Value) -> String {
    let float = |x: f64| if x.is_finite() { format!("{x:?}") } else { "null".to_string() };
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => float(*x),
        Value::Str(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Entity(e) if e.is_null() => "null".into(),
        Value::Entity(e) => e.to_string(),
        Value::Vec2(a) => format!("[{}]", a.iter().map(|x| float(*x)).collect::<Vec<_>>().join(", ")),
        Value::Vec3(a) => format!("[{}]", a.iter().map(|x| float(*x)).collect::<Vec<_>>().join(", ")),
        Value::Object(_) => "null".into(),
    }
}

/// `SHOW COMPONENTS | TABLES | INDEXES`.
pub fn show(world: &World, kind: ShowKind) -> ResultSet {
    let mut rs = ResultSet::empty(show_columns(kind));
    match kind {
        ShowKind::Components => {
            for info in world.components().iter() {
                rs.rows.push(vec![
                    Value::Str(info.name().to_string()),
                    Value::Str(fields_text(world, info.id())),
                    Value::Str(info.storage().to_string()),
                    Value::Int(world.component_count(info.id()) as i64),
                ]);
            }
        }
        ShowKind::Tables => {
            for t in world.tables().iter().filter(|t| !world.is_retired_table(t)) {
                let names: Vec<&str> = t.components().iter().map(|c| world.components().info(*c).name()).collect();
                rs.rows.push(vec![Value::Str(names.join(", ")), Value::Int(t.len() as i64)]);
            }
        }
        ShowKind::Indexes => {
            for i in world.indexes() {
                rs.rows.push(vec![
                    Value::Str(i.name),
                    Value::Str(i.kind.name().to_string()),
                    Value::Str(i.component),
                    Value::Str(i.fields.join(", ")),
                    Value::Int(i.entries as i64),
                    Value::Int(i.memory_bytes as i64),
                ]);
            }
        }
        // The systems are the database's, not the world's: it answers SHOW SYSTEMS itself.
        ShowKind::Systems => {}
    }
    rs
}

/// `DESCRIBE C`: a row per field, each with the component's storage; a component without
/// fields (a tag) has one row, its field and type null, so that its storage shows too.
pub fn describe(world: &World, id: ComponentId) -> ResultSet {
    let info = world.components().info(id);
    let storage = Value::Str(info.storage().to_string());
    let mut rs = ResultSet::empty(describe_columns());
    for f in info.fields() {
        // A default that cannot read (a u64 above i64::MAX, set from Rust) shows as null.
        let default = world.field_default(id, &f.name).ok().flatten().unwrap_or(Value::Null);
        rs.rows.push(vec![Value::Str(f.name.clone()), Value::Str(f.ty.name().to_string()), default, storage.clone()]);
    }
    if info.fields().is_empty() {
        rs.rows.push(vec![Value::Null, Value::Null, Value::Null, storage]);
    }
    rs
}
