//! The file's catalog matched to the world being built: each component found or defined,
//! its fields matched by name and type, and what cannot be loaded named.

use super::*;

/// A catalog entry, checked and matched to a component of the world being built.
pub(super) struct Resolved<'b> {
    pub(super) name: &'b str,
    pub(super) storage: StorageKind,
    pub(super) opaque: bool,
    /// Size of a `Bulk` row.
    pub(super) size: u64,
    /// File fields in order: type and `Bulk` offset.
    pub(super) fields: Vec<(FieldType, u64)>,
    pub(super) target: Target,
}

/// What a catalog entry loads into.
pub(super) enum Target {
    /// An opaque component this program does not know: its values cannot be built.
    Unknown,
    /// A component of the world being built.
    Known {
        id: ComponentId,
        /// File field `j` is target field `map[j]`.
        map: Vec<usize>,
        /// Same size and offsets: `Bulk` rows copy as they are.
        same_layout: bool,
        serde: Option<OpaqueSerde>,
    },
}

impl Resolved<'_> {
    /// The component it loads into, if this program knows it.
    pub(super) fn id(&self) -> Option<ComponentId> {
        match self.target {
            Target::Known { id, .. } => Some(id),
            Target::Unknown => None,
        }
    }

    /// Whether values of this component can be built in this program.
    pub(super) fn loadable(&self) -> bool {
        match &self.target {
            Target::Unknown => false,
            Target::Known { serde, .. } => !self.opaque || serde.is_some(),
        }
    }
}

fn mismatch(component: &str, field: Option<&str>, reason: String) -> SnapshotError {
    SnapshotError::SchemaMismatch { component: component.to_string(), field: field.map(str::to_string), reason }
}

/// Whether `items` holds a value twice (quadratic for short lists, hashed for long ones).
fn has_duplicate<'a>(items: impl ExactSizeIterator<Item = &'a str> + Clone) -> bool {
    if items.len() <= 32 {
        let v: Vec<&str> = items.collect();
        v.iter().enumerate().any(|(i, a)| v[..i].contains(a))
    } else {
        let mut seen = HashSet::with_capacity(items.len());
        items.into_iter().any(|x| !seen.insert(x))
    }
}

pub(super) fn resolve_catalog<'b>(
    body: &'b Body<'_>,
    components: &mut Components,
    serdes: &OpaqueSerdes,
    stats: &mut LoadStats,
) -> Result<Vec<Resolved<'b>>, SnapshotError> {
    if has_duplicate(body.catalog.iter().map(|r| r.name.as_str())) {
        return Err(corrupt("a component is listed twice"));
    }
    let mut out = Vec::with_capacity(body.catalog.len());
    for rec in &body.catalog {
        let name = rec.name.as_str();
        if !is_identifier(name) {
            return Err(corrupt(format!("component name {name:?} is not an identifier")));
        }
        let storage = storage_from_code(rec.storage)
            .ok_or_else(|| corrupt(format!("component '{name}' has unknown storage code {}", rec.storage)))?;
        if rec.opaque && !rec.fields.is_empty() {
            return Err(corrupt(format!("opaque component '{name}' lists fields")));
        }
        let mut fields = Vec::with_capacity(rec.fields.len());
        for f in &rec.fields {
            let fname = f.name.as_str();
            let ty = field_type_from_code(f.ty)
                .ok_or_else(|| corrupt(format!("field '{name}.{fname}' has unknown type code {}", f.ty)))?;
            if !is_identifier(fname) {
                return Err(corrupt(format!("component '{name}' has an invalid field name {fname:?}")));
            }
            fields.push((ty, f.offset));
        }
        let target = match components.id_by_name(name) {
            Some(id) => {
                let info = components.info(id);
                let map = match_fields(name, rec.opaque, storage, &rec.fields, &fields, info)?;
                known(info, rec.size, &fields, map, serdes)
            }
            None if rec.opaque => Target::Unknown,
            None => {
                let def = ComponentDef {
                    name: name.to_string(),
                    fields: rec
                        .fields
                        .iter()
                        .zip(&fields)
                        .map(|(f, &(ty, _))| (f.name.as_str().to_string(), ty))
                        .collect(),
                    storage,
                };
                let id = components.define(&def).map_err(|e| corrupt(format!("component '{name}': {e}")))?;
                stats.defined.push(name.to_string());
                // A definition keeps the file's field order.
                known(components.info(id), rec.size, &fields, (0..fields.len()).collect(), serdes)
            }
        };
        out.push(Resolved { name, storage, opaque: rec.opaque, size: rec.size, fields, target });
    }
    Ok(out)
}

/// Checks that the program's component agrees with the file's (opacity, storage, and every
/// field's name and type; order may differ) and maps file field `j` to program field
/// `map[j]`.
fn match_fields(
    name: &str,
    opaque: bool,
    storage: StorageKind,
    records: &[crate::snapshot::format::FieldRecord<'_>],
    fields: &[(FieldType, u64)],
    info: &ComponentInfo,
) -> Result<Vec<usize>, SnapshotError> {
    if opaque != info.is_opaque() {
        let (file, prog) = if opaque { ("opaque", "has a schema") } else { ("has a schema", "is opaque") };
        return Err(mismatch(name, None, format!("it {file} in the snapshot but {prog} in the program")));
    }
    if storage != info.storage() {
        return Err(mismatch(
            name,
            None,
            format!("its storage is {storage} in the snapshot but {} in the program", info.storage()),
        ));
    }
    let mut map = Vec::with_capacity(records.len());
    for (j, (f, &(ty, _))) in records.iter().zip(fields).enumerate() {
        let fname = f.name.as_str();
        // Usually the same declaration order: try the same position first.
        let t = match info.fields().get(j) {
            Some(g) if g.name == fname => Some(j),
            _ => info.field_index(fname),
        };
        let Some(t) = t else {
            return Err(mismatch(
                name,
                Some(fname),
                format!("field '{fname}' is in the snapshot but not in the program"),
            ));
        };
        let g = &info.fields()[t];
        if g.ty != ty {
            return Err(mismatch(
                name,
                Some(fname),
                format!("field '{fname}' is {ty} in the snapshot but {} in the program", g.ty),
            ));
        }
        map.push(t);
    }
    // A file field named twice maps twice to the same program field. (Definitions of unknown
    // components reject repeated names themselves.)
    let repeated = if map.iter().enumerate().all(|(j, &t)| j == t) {
        false // same order as the program's (distinct) fields
    } else {
        let mut hit = vec![false; info.fields().len()];
        map.iter().any(|&t| std::mem::replace(&mut hit[t], true))
    };
    if repeated {
        return Err(corrupt(format!("component '{name}' lists a field twice")));
    }
    // File names are distinct, so `map` is injective: equal counts mean every program field
    // is covered.
    if map.len() != info.fields().len() {
        let g = info
            .fields()
            .iter()
            .find(|g| records.iter().all(|f| f.name.as_str() != g.name))
            .ok_or_else(|| corrupt("internal: field count mismatch"))?;
        return Err(mismatch(
            name,
            Some(&g.name),
            format!("field '{}' is in the program but not in the snapshot", g.name),
        ));
    }
    Ok(map)
}

fn known(
    info: &ComponentInfo,
    size: u64,
    fields: &[(FieldType, u64)],
    map: Vec<usize>,
    serdes: &OpaqueSerdes,
) -> Target {
    let same_layout = info.layout().size() as u64 == size
        && map.iter().zip(fields).all(|(&t, &(_, off))| info.fields()[t].offset as u64 == off);
    Target::Known {
        id: info.id(),
        map,
        same_layout,
        serde: if info.is_opaque() { serdes.get(info.type_id()).copied() } else { None },
    }
}

/// Checks the file's field defaults against its catalog and sets them on the components
/// they load into (a field the file gives no default keeps the program's).
pub(super) fn resolve_defaults(
    body: &Body<'_>,
    resolved: &[Resolved<'_>],
    components: &mut Components,
) -> Result<(), SnapshotError> {
    let section = &body.defaults;
    if section.version != DEFAULTS_SECTION_VERSION {
        return Err(corrupt(format!("unsupported field defaults version {}", section.version)));
    }
    let mut seen: HashSet<(u32, u32)> = HashSet::new();
    let mut by_target: Vec<(ComponentId, Vec<Option<FieldValue>>)> = Vec::new();
    for d in &section.defaults {
        let r = resolved
            .get(d.component as usize)
            .ok_or_else(|| corrupt(format!("a field default names component #{}, not in the catalog", d.component)))?;
        let &(ty, _) = r.fields.get(d.field as usize).ok_or_else(|| {
            corrupt(format!("a field default of component '{}' names field #{}, which it lacks", r.name, d.field))
        })?;
        if !seen.insert((d.component, d.field)) {
            return Err(corrupt(format!("component '{}' field #{}: two defaults", r.name, d.field)));
        }
        let Bytes::Mem(bytes) = &d.value else {
            return Err(corrupt("a field default was not decoded in place"));
        };
        let bad = || corrupt(format!("component '{}' field #{}: the default is not a {ty} value", r.name, d.field));
        let value = if ty == FieldType::String {
            FieldValue::Str(std::str::from_utf8(bytes).map_err(|_| bad())?.to_string())
        } else {
            if bytes.len() != ty.layout().size() || (ty == FieldType::Bool && bytes[0] > 1) {
                return Err(bad());
            }
            FieldValue::plain(bytes)
        };
        let Target::Known { id, map, .. } = &r.target else { continue };
        let at = match by_target.iter().position(|(t, _)| t == id) {
            Some(at) => at,
            None => {
                let info = components.info(*id);
                let current = (0..info.fields().len()).map(|i| info.field_default(i).cloned()).collect();
                by_target.push((*id, current));
                by_target.len() - 1
            }
        };
        by_target[at].1[map[d.field as usize]] = Some(value);
    }
    for (id, defaults) in by_target {
        components.set_defaults(id, defaults).map_err(|e| corrupt(e.to_string()))?;
    }
    Ok(())
}
