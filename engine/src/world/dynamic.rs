//! The world through values instead of Rust types: fields read and written by name as
//! [`Value`]s, components built from field values, spawned, inserted and removed by name, as
//! the query language and tools that lack the game's types use it.

use super::*;

/// An owned, type-erased component value built from field values (dynamic inserts).
pub(crate) struct OwnedValue {
    pub(super) id: ComponentId,
    pub(super) ptr: NonNull<u8>,
    pub(super) layout: std::alloc::Layout,
    pub(super) drop: Option<DropFn>,
    pub(super) live: bool,
}

impl OwnedValue {
    /// The zero value of a component with the given fields set. Fails (allocating nothing that
    /// leaks) when a field is unknown, given twice, or a value does not convert.
    pub(crate) fn build(info: &ComponentInfo, fields: &[(&str, Value)]) -> Result<OwnedValue> {
        if info.is_opaque() {
            return Err(EngineError::Opaque(info.name().to_string()));
        }
        let mut converted = Vec::with_capacity(fields.len());
        for (i, (name, v)) in fields.iter().enumerate() {
            let idx = info.field_index(name).ok_or_else(|| EngineError::UnknownField {
                component: info.name().to_string(),
                field: name.to_string(),
            })?;
            if fields[..i].iter().any(|(n, _)| n == name) {
                return Err(EngineError::DuplicateField {
                    component: info.name().to_string(),
                    field: name.to_string(),
                });
            }
            converted.push((idx, convert_value(info.name(), &info.fields()[idx], v)?));
        }
        Ok(OwnedValue::from_converted(info, converted))
    }

    /// Takes over a value moved out of a bundle: its bytes are copied into an allocation of
    /// the component's layout.
    ///
    /// # Safety
    /// `src` points to a valid value of component `info`, which the caller gives up (it must
    /// not drop or use it afterwards).
    pub(crate) unsafe fn moved_from(info: &ComponentInfo, src: *const u8) -> OwnedValue {
        let layout = info.layout();
        let ptr = if layout.size() == 0 {
            NonNull::new(std::ptr::without_provenance_mut(layout.align())).expect("alignment is non-zero")
        } else {
            // SAFETY: non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            let p = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
            // SAFETY: `src` holds `layout.size()` bytes of a valid value (the caller's
            // contract); the fresh allocation does not overlap it.
            unsafe { std::ptr::copy_nonoverlapping(src, p.as_ptr(), layout.size()) };
            p
        };
        OwnedValue { id: info.id(), ptr, layout, drop: info.drop_fn().cloned(), live: true }
    }

    /// The value's bytes.
    pub(crate) fn ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Like [`OwnedValue::build`] with values already converted (infallible).
    pub(crate) fn from_converted(
        info: &ComponentInfo,
        fields: impl IntoIterator<Item = (usize, FieldValue)>,
    ) -> OwnedValue {
        let layout = info.layout();
        let ptr = if layout.size() == 0 {
            NonNull::new(std::ptr::without_provenance_mut(layout.align())).expect("alignment is non-zero")
        } else {
            // SAFETY: non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
        };
        // SAFETY: fresh allocation of the component's layout; the component has a schema.
        unsafe { info.write_zero(ptr.as_ptr()) };
        for (idx, fv) in fields {
            // SAFETY: the value is initialised (zeroed) and the field value was converted for
            // this field.
            unsafe { fv.write(ptr.as_ptr(), &info.fields()[idx]) };
        }
        OwnedValue { id: info.id(), ptr, layout, drop: info.drop_fn().cloned(), live: true }
    }
}

impl Drop for OwnedValue {
    fn drop(&mut self) {
        // SAFETY: `live` means the value is initialised and still ours.
        unsafe {
            if self.live
                && let Some(d) = &self.drop
            {
                d.call(self.ptr.as_ptr());
            }
            if self.layout.size() != 0 {
                std::alloc::dealloc(self.ptr.as_ptr(), self.layout);
            }
        }
    }
}

impl ComponentSource for Vec<OwnedValue> {
    fn put_all(mut self, mut f: impl FnMut(usize, *const u8, usize)) {
        for (i, v) in self.iter_mut().enumerate() {
            v.live = false;
            f(i, v.ptr.as_ptr(), v.layout.size());
        }
    }
}

impl World {
    /// Whether the live entity has the component with this id.
    pub fn has_component(&self, e: Entity, id: ComponentId) -> Result<bool> {
        let loc = self.location(e)?;
        Ok(self.has_id(e, loc, id))
    }

    /// The ids of every component the entity has (table and sparse), sorted.
    pub fn components_of(&self, e: Entity) -> Result<Vec<ComponentId>> {
        let loc = self.location(e)?;
        let mut out = self.storage.tables[loc.table as usize].components().to_vec();
        for (i, s) in self.storage.sparse.iter().enumerate() {
            if s.as_ref().is_some_and(|s| s.contains(e)) {
                out.push(ComponentId(i as u32));
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Pointer to the entity's value of a component (for readers that know its schema).
    pub fn component_ptr(&self, e: Entity, id: ComponentId) -> Result<Option<*const u8>> {
        let loc = self.location(e)?;
        Ok(self.storage.component_ptr(loc, e, id, self.components.info(id)))
    }

    fn missing(&self, e: Entity, id: ComponentId) -> EngineError {
        EngineError::MissingComponent { entity: e, component: self.components.info(id).name().to_string() }
    }

    /// Reads one field by name.
    pub fn get_field(&self, e: Entity, component: &str, field: &str) -> Result<Value> {
        let id = self.component_id(component)?;
        let info = self.components.info(id);
        if info.is_opaque() {
            return Err(EngineError::Opaque(component.to_string()));
        }
        let f = info
            .field(field)
            .ok_or_else(|| EngineError::UnknownField { component: component.to_string(), field: field.to_string() })?;
        let ptr = self.component_ptr(e, id)?.ok_or_else(|| self.missing(e, id))?;
        // SAFETY: `ptr` is a live value of this component, which `f` belongs to.
        let v = unsafe { read_field(ptr, f) }.map_err(|ty| EngineError::OutOfRange {
            component: component.to_string(),
            field: field.to_string(),
            ty,
        })?;
        let at = info.field_index(field).expect("the field was found above");
        Ok(self.dangling_as_null(id, at, v))
    }

    /// `v`, read from field `field` of component `id`, or null when the field is a declared
    /// reference and `v` a handle to an entity no longer alive: a dangling reference (left
    /// by `ON DELETE NO ACTION`) reads as null here as it does in queries.
    fn dangling_as_null(&self, id: ComponentId, field: usize, v: Value) -> Value {
        match v {
            Value::Entity(t) if !self.is_alive(t) && self.references.get(id, field).is_some() => Value::Null,
            other => other,
        }
    }

    /// Reads a whole component as a [`Value::Object`]; a dangling reference field reads as
    /// null.
    pub fn get_component_value(&self, e: Entity, id: ComponentId) -> Result<Value> {
        let ptr = self.component_ptr(e, id)?.ok_or_else(|| self.missing(e, id))?;
        // SAFETY: `ptr` is a live value of this component.
        let object = unsafe { read_object(ptr, self.components.info(id)) }?;
        Ok(match object {
            Value::Object(fields) if !self.references.is_empty() => Value::Object(
                fields.into_iter().enumerate().map(|(i, (name, v))| (name, self.dangling_as_null(id, i, v))).collect(),
            ),
            other => other,
        })
    }

    /// Converts named field values for a component, checking names, duplicates and types.
    pub fn convert_fields(&self, id: ComponentId, fields: &[(&str, Value)]) -> Result<Vec<(usize, FieldValue)>> {
        let info = self.components.info(id);
        if info.is_opaque() {
            return Err(EngineError::Opaque(info.name().to_string()));
        }
        let mut out: Vec<(usize, FieldValue)> = Vec::with_capacity(fields.len());
        for (name, v) in fields {
            let idx = info.field_index(name).ok_or_else(|| EngineError::UnknownField {
                component: info.name().to_string(),
                field: name.to_string(),
            })?;
            if out.iter().any(|(i, _)| *i == idx) {
                return Err(EngineError::DuplicateField {
                    component: info.name().to_string(),
                    field: name.to_string(),
                });
            }
            out.push((idx, convert_value(info.name(), &info.fields()[idx], v)?));
        }
        Ok(out)
    }

    /// Writes field values by name into a component the entity has. All values are checked
    /// before any is written.
    pub fn set_fields(&mut self, e: Entity, component: &str, fields: &[(&str, Value)]) -> Result<()> {
        let id = self.component_id(component)?;
        let loc = self.location(e)?;
        let converted = self.convert_fields(id, fields)?;
        if !self.has_id(e, loc, id) {
            return Err(self.missing(e, id));
        }
        self.write_fields(e, id, converted)
    }

    /// Writes already-converted field values (see [`World::convert_fields`]) into a component
    /// the entity has, stamping its changed tick. Fails for stale entities, missing components
    /// and reference targets that are stale or would close an `ACYCLIC` loop
    /// ([`World::check_reference_writes`]), before writing anything.
    pub fn write_fields(&mut self, e: Entity, id: ComponentId, fields: Vec<(usize, FieldValue)>) -> Result<()> {
        if !self.references.is_empty() {
            let targets = fields.iter().filter_map(|(i, fv)| Some((*i, fv.as_entity()?)));
            let writes = self.reference_writes_of(Some(e), id, targets);
            self.check_reference_writes(&writes)?;
        }
        self.write_fields_unchecked(e, id, fields)
    }

    /// [`World::write_fields`] without the reference checks: for a caller that checked every
    /// reference of a whole statement at once with [`World::check_reference_writes`] (a
    /// statement is checked on its final state, which single writes cannot see).
    pub fn write_fields_unchecked(
        &mut self,
        e: Entity,
        id: ComponentId,
        fields: Vec<(usize, FieldValue)>,
    ) -> Result<()> {
        let loc = self.location(e)?;
        let tick = self.write_tick();
        let info = self.components.info(id);
        let (col, row) = match info.storage() {
            StorageKind::Table => {
                let t = &mut self.storage.tables[loc.table as usize];
                match t.column_mut(id) {
                    Some(c) => (c, loc.row as usize),
                    None => return Err(self.missing(e, id)),
                }
            }
            StorageKind::Sparse => match self.storage.sparse.get_mut(id.index()).and_then(|s| s.as_mut()) {
                Some(set) if set.contains(e) => {
                    let r = set.row(e).expect("contains");
                    (set.column_mut(), r)
                }
                _ => return Err(self.missing(e, id)),
            },
        };
        let base = col.get_ptr(row);
        for (idx, fv) in fields {
            // SAFETY: `base` is a live value of the component; `fv` was converted for this field.
            unsafe { fv.write(base, &info.fields()[idx]) };
        }
        *col.changed_tick_logged(row) = tick;
        Ok(())
    }

    /// Builds component values from field values (zero for fields left out), checking
    /// everything; nothing in the world changes.
    pub(crate) fn build_values(&self, components: &[(&str, &[(&str, Value)])]) -> Result<Vec<OwnedValue>> {
        let mut out: Vec<OwnedValue> = Vec::with_capacity(components.len());
        for (name, fields) in components {
            let id = self.component_id(name)?;
            if out.iter().any(|v| v.id == id) {
                return Err(EngineError::Invalid(format!("component '{name}' given twice")));
            }
            out.push(OwnedValue::build(self.components.info(id), fields)?);
        }
        Ok(out)
    }

    /// Spawns an entity from components given by name and field values.
    /// Reference targets are checked (live or null).
    pub fn spawn_values(&mut self, components: &[(&str, &[(&str, Value)])]) -> Result<Entity> {
        let values = self.build_values(components)?;
        self.check_owned_references(None, &values)?;
        Ok(self.spawn_owned(values))
    }

    /// Adds (or overwrites) components given by name and field values; fields left out are
    /// zero. Checks everything (reference targets and `ACYCLIC` included) before changing
    /// anything.
    pub fn insert_values(&mut self, e: Entity, components: &[(&str, &[(&str, Value)])]) -> Result<()> {
        self.location(e)?;
        let values = self.build_values(components)?;
        self.check_owned_references(Some(e), &values)?;
        self.insert_owned(e, values)
    }

    /// [`World::insert_values`] without the reference checks, for a caller that checked a
    /// whole statement's references at once ([`World::check_reference_writes`]).
    pub fn insert_values_unchecked(&mut self, e: Entity, components: &[(&str, &[(&str, Value)])]) -> Result<()> {
        self.location(e)?;
        let values = self.build_values(components)?;
        self.insert_owned(e, values)
    }

    pub(super) fn check_owned_references(&self, e: Option<Entity>, values: &[OwnedValue]) -> Result<()> {
        if self.references.is_empty() {
            return Ok(());
        }
        let mut writes = Vec::new();
        for v in values {
            let info = self.components.info(v.id);
            let targets = self.references.on(v.id).map(|r| {
                // SAFETY: `v` holds an initialised value of its component, whose schema puts an
                // `Entity` at the reference field's offset (references are entity fields).
                (r.field, unsafe {
                    std::ptr::read_unaligned(v.ptr().add(info.fields()[r.field].offset) as *const Entity)
                })
            });
            writes.extend(self.reference_writes_of(e, v.id, targets.collect::<Vec<_>>()));
        }
        self.check_reference_writes(&writes)
    }

    /// Spawns an entity from prebuilt values (infallible once built).
    pub(crate) fn spawn_owned(&mut self, values: Vec<OwnedValue>) -> Entity {
        let e = self.entities.alloc();
        self.entities.set_location(e.index(), EntityLocation { table: TableId::EMPTY.0, row: u32::MAX });
        let row = self.storage.tables[0].push_entity(e);
        self.entities.set_location(e.index(), EntityLocation { table: 0, row: row as u32 });
        self.insert_owned(e, values).expect("entity was just spawned");
        e
    }

    /// Inserts prebuilt values into a live entity.
    pub(crate) fn insert_owned(&mut self, e: Entity, values: Vec<OwnedValue>) -> Result<()> {
        let loc = self.location(e)?;
        let mut set: Vec<ComponentId> = self.storage.tables[loc.table as usize].components().to_vec();
        let ids: Vec<ComponentId> = values.iter().map(|v| v.id).collect();
        set.extend(ids.iter().copied().filter(|&c| self.components.info(c).storage() == StorageKind::Table));
        set.sort_unstable();
        set.dedup();
        let target = self.storage.table_for(&set, &self.components);
        self.place_existing(e, loc, target, &ids, values);
        Ok(())
    }

    /// Removes a component by id. Returns whether the entity had it.
    pub fn remove_by_id(&mut self, e: Entity, id: ComponentId) -> Result<bool> {
        let loc = self.location(e)?;
        if !self.has_id(e, loc, id) {
            return Ok(false);
        }
        self.note_removed(e, id);
        match self.components.info(id).storage() {
            StorageKind::Sparse => {
                self.storage.sparse[id.index()].as_mut().expect("has it").remove(e, None);
            }
            StorageKind::Table => {
                let set: Vec<ComponentId> =
                    self.storage.tables[loc.table as usize].components().iter().copied().filter(|&c| c != id).collect();
                let target = self.storage.table_for(&set, &self.components);
                let (from, to) = self.storage.two_tables(TableId(loc.table), target);
                let (new_row, swapped) = from.move_row(loc.row as usize, to);
                if let Some(s) = swapped {
                    self.entities.set_location(s.index(), loc);
                }
                self.entities.set_location(e.index(), EntityLocation { table: target.0, row: new_row as u32 });
            }
        }
        Ok(true)
    }

    /// Removes a component by name. Returns whether the entity had it.
    pub fn remove_component(&mut self, e: Entity, component: &str) -> Result<bool> {
        let id = self.component_id(component)?;
        self.remove_by_id(e, id)
    }
}
