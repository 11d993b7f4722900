//! Field defaults: the values new component values start with where a field is not given
//! (`DEFAULT` in the language). Kept in the component registry in their stored form, so a
//! spawn writes them like the zeros they replace.

use crate::component::ComponentId;
use crate::error::{EngineError, Result};
use crate::value::{Value, convert_value, read_field_value};
use crate::world::World;

impl World {
    /// Gives field `field` of component `component` a default (`None` takes it away): every
    /// value made from now on without that field (a spawn or insert by field values, `SPAWN`
    /// and `ADD` in text, an import without the column) holds it. Stored values keep theirs.
    /// The value converts to the field's type as a write would (a type error otherwise).
    ///
    /// ```
    /// use ecsdb_engine::{ComponentDef, FieldType, Value, World};
    /// let mut world = World::new();
    /// let hp = world.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F32)])).unwrap();
    /// world.set_field_default(hp, "hp", Some(&Value::Int(100))).unwrap();
    /// let e = world.spawn_values(&[("Health", &[])]).unwrap();
    /// assert_eq!(world.get_field(e, "Health", "hp").unwrap(), Value::Float(100.0));
    /// assert_eq!(world.field_default(hp, "hp").unwrap(), Some(Value::Float(100.0)));
    /// ```
    pub fn set_field_default(&mut self, component: ComponentId, field: &str, value: Option<&Value>) -> Result<()> {
        let info = self.components.info(component);
        let index = info.field_index(field).ok_or_else(|| EngineError::UnknownField {
            component: info.name().to_string(),
            field: field.to_string(),
        })?;
        let converted = value.map(|v| convert_value(info.name(), &info.fields()[index], v)).transpose()?;
        let mut defaults: Vec<_> = (0..info.fields().len()).map(|i| info.field_default(i).cloned()).collect();
        defaults[index] = converted;
        self.components.set_defaults(component, defaults)
    }

    /// The default of field `field` of component `component`, as it reads (`None` when it
    /// has none: a new value starts at the type's zero).
    pub fn field_default(&self, component: ComponentId, field: &str) -> Result<Option<Value>> {
        let info = self.components.info(component);
        let index = info.field_index(field).ok_or_else(|| EngineError::UnknownField {
            component: info.name().to_string(),
            field: field.to_string(),
        })?;
        let Some(stored) = info.field_default(index) else { return Ok(None) };
        read_field_value(stored, info.fields()[index].ty).map(Some).map_err(|ty| EngineError::OutOfRange {
            component: info.name().to_string(),
            field: field.to_string(),
            ty,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{ComponentDef, Entity, FieldType, Value, World};

    fn world() -> (World, crate::ComponentId) {
        let mut w = World::new();
        let def = ComponentDef::new(
            "Unit",
            &[("hp", FieldType::F32), ("name", FieldType::String), ("boss", FieldType::Entity), ("lvl", FieldType::U8)],
        );
        let id = w.define_component(&def).unwrap();
        (w, id)
    }

    #[test]
    fn new_values_take_the_defaults_and_given_fields_win() {
        let (mut w, id) = world();
        w.set_field_default(id, "hp", Some(&Value::Int(100))).unwrap();
        w.set_field_default(id, "name", Some(&Value::Str("grunt".into()))).unwrap();
        w.set_field_default(id, "boss", Some(&Value::Entity(Entity::from_parts(3, 1)))).unwrap();
        let a = w.spawn_values(&[("Unit", &[("lvl", Value::Int(2))])]).unwrap();
        let b = w.spawn_values(&[("Unit", &[("name", Value::Str("chief".into()))])]).unwrap();
        assert_eq!(w.get_field(a, "Unit", "hp").unwrap(), Value::Float(100.0));
        assert_eq!(w.get_field(a, "Unit", "name").unwrap(), Value::Str("grunt".into()));
        assert_eq!(w.get_field(a, "Unit", "lvl").unwrap(), Value::Int(2));
        assert_eq!(w.get_field(b, "Unit", "name").unwrap(), Value::Str("chief".into()));
        assert_eq!(w.field_default(id, "lvl").unwrap(), None);
        // Taken away: zeros again, for new values only.
        w.set_field_default(id, "name", None).unwrap();
        let c = w.spawn_values(&[("Unit", &[])]).unwrap();
        assert_eq!(w.get_field(c, "Unit", "name").unwrap(), Value::Str(String::new()));
        assert_eq!(w.get_field(a, "Unit", "name").unwrap(), Value::Str("grunt".into()));
        assert_eq!(w.get_field(c, "Unit", "hp").unwrap(), Value::Float(100.0));
    }

    #[test]
    fn a_default_must_fit_its_field() {
        let (mut w, id) = world();
        assert!(w.set_field_default(id, "lvl", Some(&Value::Int(300))).is_err());
        assert!(w.set_field_default(id, "hp", Some(&Value::Str("x".into()))).is_err());
        assert!(w.set_field_default(id, "nope", Some(&Value::Int(1))).is_err());
        assert_eq!(w.field_default(id, "lvl").unwrap(), None, "a refused default leaves none");
    }

    #[test]
    fn snapshots_keep_the_defaults() {
        let (mut w, id) = world();
        w.set_field_default(id, "hp", Some(&Value::Float(-0.5))).unwrap();
        w.set_field_default(id, "name", Some(&Value::Str("☃ grunt".into()))).unwrap();
        w.set_field_default(id, "lvl", Some(&Value::Int(255))).unwrap();
        let bytes = w.save_to_vec(&crate::SaveOptions::default()).unwrap();
        let mut back = World::load_from_bytes(&bytes).unwrap();
        let id = back.component_id("Unit").unwrap();
        assert_eq!(back.field_default(id, "hp").unwrap(), Some(Value::Float(-0.5)));
        assert_eq!(back.field_default(id, "name").unwrap(), Some(Value::Str("☃ grunt".into())));
        assert_eq!(back.field_default(id, "lvl").unwrap(), Some(Value::Int(255)));
        assert_eq!(back.field_default(id, "boss").unwrap(), None);
        let e = back.spawn_values(&[("Unit", &[])]).unwrap();
        assert_eq!(back.get_field(e, "Unit", "name").unwrap(), Value::Str("☃ grunt".into()));
        // Saved again, the same bytes.
        assert_eq!(World::load_from_bytes(&bytes).unwrap().save_to_vec(&crate::SaveOptions::default()).unwrap(), bytes);
    }

    #[test]
    fn bulk_rows_take_the_defaults() {
        let (mut w, id) = world();
        w.set_field_default(id, "name", Some(&Value::Str("grunt".into()))).unwrap();
        let table = w.spawn_values(&[("Unit", &[])]).map(|e| w.location(e).unwrap().table).unwrap();
        let rows = 200;
        for _ in 0..rows {
            w.spawn_values(&[("Unit", &[("hp", Value::Int(1))])]).unwrap();
        }
        let t = &w.tables()[table as usize];
        assert_eq!(t.len(), rows + 1);
        for e in t.entities() {
            assert_eq!(w.get_field(*e, "Unit", "name").unwrap(), Value::Str("grunt".into()));
        }
    }
}
