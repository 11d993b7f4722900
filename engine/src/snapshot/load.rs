//! Bytes → world: header checks, body decoding, validation of every structural claim, then
//! the build of a fresh world. Nothing is built before everything is checked, and the world
//! under construction is only handed out when the whole build succeeded.

use std::collections::{BTreeSet, HashSet};

use crate::component::{is_identifier, ComponentDef, ComponentId, ComponentInfo, Components, FieldType, StorageKind};
use crate::entity::{Entities, EntitiesState, Entity, EntityLocation};
use crate::snapshot::format::{
    body_config, field_type_from_code, storage_from_code, u32_at, u64_at, wire_size, Body, ColumnData, ColumnRecord,
    FieldRun, Header, TableRecord, FLAG_TICKS, FORMAT_VERSION, HEADER_LEN, INDEX_SECTION_VERSION, KNOWN_FLAGS, MAGIC,
};
use crate::snapshot::opaque::{OpaqueSerde, OpaqueSerdes};
use crate::snapshot::{IndexDefinition, LoadOptions, LoadStats, SnapshotError};
use rayon::prelude::*;

use crate::storage::{ArchetypeTable, Column, SparseSet};
use crate::tick::Tick;
use crate::world::World;

fn corrupt(msg: impl Into<String>) -> SnapshotError {
    SnapshotError::Corrupt(msg.into())
}

/// Checks the header and the body checksum; returns the flags and the body.
pub(crate) fn parse_header(bytes: &[u8]) -> Result<(Header, &[u8]), SnapshotError> {
    let truncated = || SnapshotError::Truncated { expected: HEADER_LEN as u64, actual: bytes.len() as u64 };
    if bytes.len() < MAGIC.len() {
        return Err(if MAGIC.starts_with(bytes) { truncated() } else { SnapshotError::NotASnapshot });
    }
    if bytes[..MAGIC.len()] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    if bytes.len() < 12 {
        return Err(truncated());
    }
    // The version is read before anything else so that a future layout of the rest of the
    // header is reported as what it is.
    let version = u32_at(bytes, 8);
    if version != FORMAT_VERSION {
        return Err(SnapshotError::UnsupportedVersion(version));
    }
    if bytes.len() < HEADER_LEN {
        return Err(truncated());
    }
    if crc32fast::hash(&bytes[..28]) != u32_at(bytes, 28) {
        return Err(corrupt("header checksum mismatch"));
    }
    let header = Header { version, flags: u32_at(bytes, 12), body_len: u64_at(bytes, 16), body_crc: u32_at(bytes, 24) };
    if header.flags & !KNOWN_FLAGS != 0 {
        return Err(SnapshotError::UnsupportedFlags(header.flags));
    }
    let body = &bytes[HEADER_LEN..];
    let expected = (HEADER_LEN as u64).saturating_add(header.body_len);
    if (body.len() as u64) < header.body_len {
        return Err(SnapshotError::Truncated { expected, actual: bytes.len() as u64 });
    }
    if body.len() as u64 > header.body_len {
        return Err(corrupt(format!("{} unexpected bytes after the body", body.len() as u64 - header.body_len)));
    }
    if crc32fast::hash(body) != header.body_crc {
        return Err(SnapshotError::ChecksumMismatch);
    }
    Ok((header, body))
}

/// Decodes the body, borrowing its byte runs and strings from `body`.
pub(crate) fn decode_body(body: &[u8]) -> Result<Body<'_>, SnapshotError> {
    let (decoded, used): (Body<'_>, usize) = bincode::serde::borrow_decode_from_slice(body, body_config())
        .map_err(|e| corrupt(format!("undecodable body: {e}")))?;
    if used != body.len() {
        return Err(corrupt(format!("{} unread bytes at the end of the body", body.len() - used)));
    }
    Ok(decoded)
}

/// Loads a decoded body into `target`, which must have no live entities: a new world is
/// built on `target`'s component registry and serde functions and replaces it only when
/// everything succeeded. On error `target` is unchanged.
pub(crate) fn load_into(
    target: &mut World,
    body: &Body<'_>,
    header_flags: u32,
    opts: &LoadOptions,
) -> Result<LoadStats, SnapshotError> {
    let mut world = World::new();
    // When every component of the file is already known, loading defines nothing, so the
    // registry can be moved over (and moved back on error) instead of cloned.
    let borrow = body.catalog.iter().all(|r| target.components.id_by_name(r.name.as_str()).is_some());
    if borrow {
        world.components = std::mem::take(&mut target.components);
        world.opaque_serde = std::mem::take(&mut target.opaque_serde);
    } else {
        world.components = target.components.clone();
        world.opaque_serde = target.opaque_serde.clone();
    }
    match build_world(&mut world, body, header_flags, opts) {
        Ok(stats) => {
            *target = world;
            Ok(stats)
        }
        Err(e) => {
            if borrow {
                target.components = std::mem::take(&mut world.components);
                target.opaque_serde = std::mem::take(&mut world.opaque_serde);
            }
            Err(e)
        }
    }
}

/// A catalog entry, checked and matched to a component of the world being built.
struct Resolved<'b> {
    name: &'b str,
    storage: StorageKind,
    opaque: bool,
    /// Size of a `Bulk` row.
    size: u64,
    /// File fields in order: type and `Bulk` offset.
    fields: Vec<(FieldType, u64)>,
    target: Target,
}

enum Target {
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
    fn id(&self) -> Option<ComponentId> {
        match self.target {
            Target::Known { id, .. } => Some(id),
            Target::Unknown => None,
        }
    }

    /// Whether values of this component can be built in this program.
    fn loadable(&self) -> bool {
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

fn resolve_catalog<'b>(
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

fn le_u32(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i.checked_mul(4)?..i.checked_mul(4)?.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Entities of a table or sparse set: `(index, generation)` pairs.
/// Where entities are listed, for error messages (formatted only on error).
#[derive(Clone, Copy)]
enum Place<'a> {
    Table(usize),
    Sparse(&'a str),
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Table(i) => write!(f, "table {i}"),
            Place::Sparse(name) => write!(f, "sparse component '{name}'"),
        }
    }
}

fn decode_entities<'b>(bytes: &'b [u8], what: Place<'_>) -> Result<impl Iterator<Item = Entity> + 'b, SnapshotError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(corrupt(format!("{what}: entity run of {} bytes is not a multiple of 8", bytes.len())));
    }
    Ok(bytes.chunks_exact(8).map(|c| {
        Entity::from_parts(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), u32::from_le_bytes([c[4], c[5], c[6], c[7]]))
    }))
}

/// The allocator state, checked.
struct Alloc {
    /// Indices ever issued.
    len: usize,
    entities: Entities,
}

fn decode_allocator(body: &Body<'_>) -> Result<Alloc, SnapshotError> {
    let a = &body.allocator;
    let gens: &[u8] = &a.generations.0;
    let live: &[u8] = &a.live.0;
    if !gens.len().is_multiple_of(4) {
        return Err(corrupt("allocator: generation run is not a multiple of 4 bytes"));
    }
    let n = gens.len() / 4;
    if n >= u32::MAX as usize {
        return Err(corrupt("allocator: too many entity indices"));
    }
    if live.len() != n.div_ceil(8) {
        return Err(corrupt(format!("allocator: {} live-flag bytes for {n} indices", live.len())));
    }
    if !n.is_multiple_of(8) && live[n / 8] >> (n % 8) != 0 {
        return Err(corrupt("allocator: live flags set past the last index"));
    }
    if !a.free.len().is_multiple_of(4) {
        return Err(corrupt("allocator: free list is not a multiple of 4 bytes"));
    }
    let state = EntitiesState {
        slots: gens
            .chunks_exact(4)
            .enumerate()
            .map(|(i, c)| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]), live[i / 8] & (1 << (i % 8)) != 0))
            .collect(),
        free: a.free.0.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
    };
    let entities = Entities::from_state(&state).map_err(|e| corrupt(format!("allocator: {e}")))?;
    Ok(Alloc { len: n, entities })
}

impl Alloc {
    /// Checks that `e` is the live entity at its index.
    #[inline]
    fn check_live(&self, e: Entity, what: Place<'_>) -> Result<(), SnapshotError> {
        if self.entities.resolve(e.index()) != Some(e) {
            return Err(corrupt(format!("{what}: entity {e} is not alive in the allocator")));
        }
        Ok(())
    }
}

/// Validates one column's data against its component and row count; returns the bytes of
/// string text it holds.
fn check_column(r: &Resolved<'_>, col: &ColumnRecord<'_>, n: usize, ticks: bool) -> Result<u64, SnapshotError> {
    let name = r.name;
    let exact = |len: usize, per: usize, what: &str| -> Result<(), SnapshotError> {
        match n.checked_mul(per) {
            Some(want) if want == len => Ok(()),
            _ => Err(corrupt(format!("component '{name}': {what} has {len} bytes for {n} rows"))),
        }
    };
    match (&col.ticks, ticks) {
        (Some(t), true) => {
            exact(t.added.len(), 4, "added ticks")?;
            exact(t.changed.len(), 4, "changed ticks")?;
        }
        (None, false) => {}
        _ => return Err(corrupt(format!("component '{name}': change ticks disagree with the header flags"))),
    }
    let blobs = |lens: &[u8], data: &[u8], what: &str| -> Result<u64, SnapshotError> {
        exact(lens.len(), 4, what)?;
        let total: u64 = lens.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64).sum();
        if total != data.len() as u64 {
            return Err(corrupt(format!("component '{name}': {what} add up to {total} bytes, not {}", data.len())));
        }
        Ok((lens.len() + data.len()) as u64)
    };
    let check_bools = |run: &[u8], stride: usize, at: usize| -> Result<(), SnapshotError> {
        if (0..n).any(|i| run[i * stride + at] > 1) {
            return Err(corrupt(format!("component '{name}': a bool field holds a value other than 0 or 1")));
        }
        Ok(())
    };
    match &col.data {
        ColumnData::Opaque { lens, data } if r.opaque => blobs(&lens.0, &data.0, "opaque value lengths").map(|_| 0),
        _ if r.opaque => Err(corrupt(format!("opaque component '{name}' has a non-opaque column"))),
        ColumnData::Empty if r.fields.is_empty() => Ok(0),
        ColumnData::Bulk(bytes) if !r.fields.is_empty() => {
            let size = usize::try_from(r.size).map_err(|_| corrupt(format!("component '{name}': size too large")))?;
            for &(ty, off) in &r.fields {
                let end = off.checked_add(wire_size(ty) as u64);
                if ty == FieldType::String || end.is_none_or(|e| e > r.size) {
                    return Err(corrupt(format!("component '{name}': a field does not fit a bulk row")));
                }
            }
            exact(bytes.len(), size, "bulk data")?;
            for &(ty, off) in &r.fields {
                if ty == FieldType::Bool {
                    check_bools(&bytes.0, size, off as usize)?;
                }
            }
            Ok(0)
        }
        ColumnData::Fields(runs) if !r.fields.is_empty() => {
            if runs.len() != r.fields.len() {
                return Err(corrupt(format!(
                    "component '{name}': {} field runs for {} fields",
                    runs.len(),
                    r.fields.len()
                )));
            }
            let mut total = 0;
            for (run, &(ty, _)) in runs.iter().zip(&r.fields) {
                match (run, ty) {
                    (FieldRun::Strings { lens, data }, FieldType::String) => {
                        blobs(&lens.0, &data.0, "string lengths")?;
                        total += data.len() as u64;
                        let text = std::str::from_utf8(&data.0)
                            .map_err(|_| corrupt(format!("component '{name}': a string is not UTF-8")))?;
                        let mut at = 0usize;
                        for c in lens.0.chunks_exact(4) {
                            at += u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize;
                            if !text.is_char_boundary(at) {
                                return Err(corrupt(format!("component '{name}': a string is not UTF-8")));
                            }
                        }
                    }
                    (FieldRun::Plain(bytes), ty) if ty != FieldType::String => {
                        exact(bytes.len(), wire_size(ty), "a field run")?;
                        if ty == FieldType::Bool {
                            check_bools(&bytes.0, 1, 0)?;
                        }
                    }
                    _ => return Err(corrupt(format!("component '{name}': a field run does not match its type"))),
                }
            }
            Ok(total)
        }
        _ => Err(corrupt(format!("component '{name}': column kind does not match its schema"))),
    }
}

/// One table of the file, checked, with its place in the world being built.
struct TablePlan {
    /// Target component ids, sorted (unloadable components left out).
    set: Vec<ComponentId>,
}

/// Validates and builds into a fresh `world` (whose registry may be extended). On success it
/// holds exactly the snapshot's contents.
fn build_world(
    world: &mut World,
    body: &Body<'_>,
    header_flags: u32,
    opts: &LoadOptions,
) -> Result<LoadStats, SnapshotError> {
    let ticks = header_flags & FLAG_TICKS != 0;
    let mut stats = LoadStats::default();

    // ----- validate --------------------------------------------------------------------
    let resolved = resolve_catalog(body, &mut world.components, &world.opaque_serde, &mut stats)?;
    let alloc = decode_allocator(body)?;
    let mut unloadable: BTreeSet<&str> = BTreeSet::new();
    let mut placed = vec![false; alloc.len];
    let mut placed_count = 0usize;
    let mut plans = Vec::with_capacity(body.tables.len());
    for (ti, t) in body.tables.iter().enumerate() {
        let what = Place::Table(ti);
        if t.columns.len() != t.components.len() {
            return Err(corrupt(format!("{what}: {} columns for {} components", t.columns.len(), t.components.len())));
        }
        for (k, &c) in t.components.iter().enumerate() {
            let r = resolved
                .get(c as usize)
                .ok_or_else(|| corrupt(format!("{what}: component #{c} is not in the catalog")))?;
            if r.storage != StorageKind::Table || t.components[..k].contains(&c) {
                return Err(corrupt(format!("{what}: component '{}' is sparse or listed twice", r.name)));
            }
        }
        let n = t.entities.len() / 8;
        for e in decode_entities(&t.entities.0, what)? {
            alloc.check_live(e, what)?;
            if std::mem::replace(&mut placed[e.index() as usize], true) {
                return Err(corrupt(format!("entity {e} has two table rows")));
            }
            placed_count += 1;
        }
        let mut set = Vec::with_capacity(t.components.len());
        for (&c, col) in t.components.iter().zip(&t.columns) {
            let r = &resolved[c as usize];
            let text = check_column(r, col, n, ticks)?;
            if r.loadable() {
                let id = r.id().expect("loadable components are known");
                stats.component_bytes += (n * world.components.info(id).layout().size()) as u64 + text;
                set.push(id);
            } else if n > 0 {
                unloadable.insert(r.name);
            }
        }
        set.sort_unstable();
        plans.push(TablePlan { set });
    }
    if placed_count != alloc.entities.len() {
        return Err(corrupt(format!(
            "{} live entities in the allocator but {placed_count} table rows",
            alloc.entities.len()
        )));
    }
    let mut sparse_seen = HashSet::new();
    let mut stamp = if body.sparse.is_empty() { Vec::new() } else { vec![u32::MAX; alloc.len] };
    for (si, s) in body.sparse.iter().enumerate() {
        let r = resolved
            .get(s.component as usize)
            .ok_or_else(|| corrupt(format!("sparse set {si}: component #{} is not in the catalog", s.component)))?;
        let what = Place::Sparse(r.name);
        if r.storage != StorageKind::Sparse || !sparse_seen.insert(s.component) {
            return Err(corrupt(format!("{what}: not sparse, or saved twice")));
        }
        for e in decode_entities(&s.entities.0, what)? {
            alloc.check_live(e, what)?;
            if std::mem::replace(&mut stamp[e.index() as usize], si as u32) == si as u32 {
                return Err(corrupt(format!("{what}: entity {e} listed twice")));
            }
        }
        let n = s.entities.len() / 8;
        let text = check_column(r, &s.column, n, ticks)?;
        match r.id() {
            Some(id) if r.loadable() => {
                stats.component_bytes += (n * world.components.info(id).layout().size()) as u64 + text;
            }
            _ if n > 0 => {
                unloadable.insert(r.name);
            }
            _ => {}
        }
    }
    if body.index_definitions.version != INDEX_SECTION_VERSION {
        return Err(corrupt(format!("unsupported index definitions version {}", body.index_definitions.version)));
    }
    if !unloadable.is_empty() {
        if !opts.skip_opaque {
            return Err(SnapshotError::OpaqueWithoutSerde(unloadable.iter().map(|s| s.to_string()).collect()));
        }
        stats.skipped_opaque = unloadable.iter().map(|s| s.to_string()).collect();
    }
    stats.index_definitions = body
        .index_definitions
        .definitions
        .iter()
        .map(|d| IndexDefinition {
            name: d.name.as_str().to_string(),
            kind: d.kind.as_str().to_string(),
            component: d.component.as_str().to_string(),
            fields: d.fields.iter().map(|f| f.as_str().to_string()).collect(),
        })
        .collect();

    // ----- build -----------------------------------------------------------------------
    let default_tick = body.world_tick;
    world.entities = alloc.entities;
    stats.entities = world.entities.len();
    // Rows first (sequential: the allocator is shared), then the columns of each table, in
    // parallel across tables when there is enough to do.
    let parallel =
        body.tables.len() > 1 && body.tables.iter().map(|t| t.entities.len() / 8).sum::<usize>() >= PARALLEL_ROWS;
    let mut work: Vec<Vec<(usize, usize)>> = Vec::new();
    for (ri, (t, plan)) in body.tables.iter().zip(&plans).enumerate() {
        let World { storage, components, entities, .. } = &mut *world;
        let tid = storage.table_for(&plan.set, components);
        let table = &mut storage.tables[tid.index()];
        let base_row = table.len();
        table.reserve(t.entities.len() / 8);
        for (i, e) in decode_entities(&t.entities.0, Place::Table(ri))?.enumerate() {
            table.push_entity(e);
            let loc = EntityLocation { table: tid.0, row: (base_row + i) as u32 };
            if !entities.mark_live(e, loc) {
                return Err(corrupt(format!("entity {e} is not in the allocator")));
            }
        }
        if parallel {
            if work.len() <= tid.index() {
                work.resize_with(tid.index() + 1, Vec::new);
            }
            work[tid.index()].push((ri, base_row));
        } else {
            fill_table(table, t, base_row, &resolved, components, default_tick)?;
        }
    }
    if parallel {
        let components = &world.components;
        let resolved = &resolved;
        let jobs: Vec<_> = world.storage.tables.iter_mut().zip(work).filter(|(_, w)| !w.is_empty()).collect();
        jobs.into_par_iter()
            .map(|(table, work)| {
                work.into_iter().try_for_each(|(ri, base_row)| {
                    fill_table(table, &body.tables[ri], base_row, resolved, components, default_tick)
                })
            })
            .collect::<Result<Vec<()>, _>>()?;
    }
    for s in &body.sparse {
        let r = &resolved[s.component as usize];
        if !r.loadable() {
            continue;
        }
        let id = r.id().expect("loadable components are known");
        let info = world.components.info(id);
        let sparse = &mut world.storage.sparse;
        if sparse.len() <= id.index() {
            sparse.resize_with(id.index() + 1, || None);
        }
        let set = sparse[id.index()].get_or_insert_with(|| SparseSet::new(info));
        let mut src = Source::new(r, info, &s.column, default_tick)?;
        for (i, e) in decode_entities(&s.entities.0, Place::Sparse(r.name))?.enumerate() {
            let (added, changed) = src.ticks(i)?;
            src.put(i, info, added, &mut |ptr| {
                // SAFETY: `ptr` is a valid value of the set's component, which it takes over.
                unsafe { set.insert(e, ptr, added) }
            })?;
            let row = set.row(e).ok_or_else(|| corrupt("internal: sparse insert failed"))?;
            set.column_mut().changed_ticks_mut()[row] = changed;
        }
    }
    world.set_change_tick(body.world_tick);
    Ok(stats)
}

/// Tables with at least this many rows in all are filled on several threads.
const PARALLEL_ROWS: usize = 1 << 16;

/// Fills the columns of one file table's rows (already pushed at `base_row..`) into `table`.
fn fill_table(
    table: &mut ArchetypeTable,
    rec: &TableRecord<'_>,
    base_row: usize,
    resolved: &[Resolved<'_>],
    components: &Components,
    default_tick: Tick,
) -> Result<(), SnapshotError> {
    let n = rec.entities.len() / 8;
    for (&c, col) in rec.components.iter().zip(&rec.columns) {
        let r = &resolved[c as usize];
        if !r.loadable() {
            continue;
        }
        let id = r.id().ok_or_else(|| corrupt("internal: unknown component"))?;
        let info = components.info(id);
        let column = table.column_mut(id).ok_or_else(|| corrupt("internal: table lacks a column"))?;
        if column.len() != base_row {
            return Err(corrupt("internal: column and table lengths differ"));
        }
        fill_column(column, r, info, col, n, default_tick)?;
        if column.len() != base_row + n {
            return Err(corrupt("internal: column and table lengths differ"));
        }
    }
    Ok(())
}

/// Appends `n` rows of one column.
fn fill_column(
    column: &mut Column,
    r: &Resolved<'_>,
    info: &ComponentInfo,
    col: &ColumnRecord<'_>,
    n: usize,
    default_tick: Tick,
) -> Result<(), SnapshotError> {
    let mut src = Source::new(r, info, col, default_tick)?;
    if let Some(bytes) = src.bulk() {
        // SAFETY: the component is plain (no strings, opaque values or references), the
        // file's layout equals the column's, the length is a whole number of rows and every
        // bool byte was checked: the bytes are valid values.
        unsafe { column.extend_from_bytes(bytes, default_tick) };
        return Ok(());
    }
    column.reserve(n);
    let ticks = src.ticks.is_some();
    match &mut src.kind {
        SourceKind::Zst => {
            for i in 0..n {
                let (added, changed) = src_ticks(src.ticks, default_tick, i)?;
                // SAFETY: a zero-sized value needs no bytes written.
                unsafe { column.push_uninit(added) };
                if ticks {
                    set_changed(column, changed);
                }
            }
        }
        SourceKind::Fields(fields) => {
            for i in 0..n {
                let (added, changed) = src_ticks(src.ticks, default_tick, i)?;
                // SAFETY: the new row is initialised to the component's zero value right away
                // (non-opaque: `Fields` sources only exist for components with a schema), so
                // it is a valid value at every later step, errors included.
                let p = unsafe {
                    let p = column.push_uninit(added);
                    info.write_zero(p);
                    p
                };
                fill_fields(fields, i, p)?;
                if ticks {
                    set_changed(column, changed);
                }
            }
        }
        _ => {
            for i in 0..n {
                let (added, changed) = src_ticks(src.ticks, default_tick, i)?;
                src.put(i, info, added, &mut |ptr| {
                    // SAFETY: `ptr` is a valid value of this column's component, which the
                    // column takes over.
                    unsafe { column.push_from(ptr, added) }
                })?;
                if ticks {
                    set_changed(column, changed);
                }
            }
        }
    }
    Ok(())
}

#[inline]
fn set_changed(column: &mut Column, changed: Tick) {
    if let Some(t) = column.changed_ticks_mut().last_mut() {
        *t = changed;
    }
}

#[inline]
fn src_ticks(ticks: Option<(&[u8], &[u8])>, default_tick: Tick, i: usize) -> Result<(Tick, Tick), SnapshotError> {
    match ticks {
        None => Ok((default_tick, default_tick)),
        Some((a, c)) => match (le_u32(a, i), le_u32(c, i)) {
            (Some(a), Some(c)) => Ok((a, c)),
            _ => Err(corrupt("internal: tick run too short")),
        },
    }
}

/// Produces the values of one column, row by row, in the target component's layout.
struct Source<'b> {
    kind: SourceKind<'b>,
    ticks: Option<(&'b [u8], &'b [u8])>,
    default_tick: Tick,
    /// A one-row staging column for values built field by field.
    scratch: Option<Column>,
}

enum SourceKind<'b> {
    /// Zero-sized values: nothing to build.
    Zst,
    /// Rows in the target's own layout: copied as they are.
    Rows { bytes: &'b [u8], size: usize },
    /// Values assembled field by field over a zero value.
    Fields(Vec<FieldSource<'b>>),
    /// Opaque blobs decoded by the registered serde functions.
    Opaque { serde: OpaqueSerde, lens: &'b [u8], data: &'b [u8], at: usize },
}

enum FieldSource<'b> {
    Plain { ty: FieldType, dst: usize, run: &'b [u8], stride: usize, at: usize },
    Str { dst: usize, lens: &'b [u8], text: &'b str, at: usize },
}

impl<'b> Source<'b> {
    fn new(
        r: &Resolved<'_>,
        info: &ComponentInfo,
        col: &'b ColumnRecord<'_>,
        default_tick: Tick,
    ) -> Result<Source<'b>, SnapshotError> {
        let Target::Known { map, same_layout, serde, .. } = &r.target else {
            return Err(corrupt("internal: building an unknown component"));
        };
        let ticks = col.ticks.as_ref().map(|t| (&*t.added.0, &*t.changed.0));
        let kind = match &col.data {
            ColumnData::Opaque { lens, data } => {
                let serde = (*serde).ok_or_else(|| SnapshotError::OpaqueWithoutSerde(vec![r.name.to_string()]))?;
                SourceKind::Opaque { serde, lens: &lens.0, data: &data.0, at: 0 }
            }
            _ if info.layout().size() == 0 => SourceKind::Zst,
            ColumnData::Bulk(bytes) if *same_layout && cfg!(target_endian = "little") => {
                SourceKind::Rows { bytes: &bytes.0, size: info.layout().size() }
            }
            ColumnData::Bulk(bytes) => SourceKind::Fields(
                r.fields
                    .iter()
                    .zip(map)
                    .map(|(&(ty, off), &t)| FieldSource::Plain {
                        ty,
                        dst: info.fields()[t].offset,
                        run: &bytes.0,
                        stride: r.size as usize,
                        at: off as usize,
                    })
                    .collect(),
            ),
            ColumnData::Fields(runs) => {
                let mut fields = Vec::with_capacity(runs.len());
                for ((run, &(ty, _)), &t) in runs.iter().zip(&r.fields).zip(map) {
                    let dst = info.fields()[t].offset;
                    fields.push(match run {
                        FieldRun::Plain(b) => FieldSource::Plain { ty, dst, run: &b.0, stride: wire_size(ty), at: 0 },
                        FieldRun::Strings { lens, data } => {
                            let text = std::str::from_utf8(&data.0).map_err(|_| corrupt("a string is not UTF-8"))?;
                            FieldSource::Str { dst, lens: &lens.0, text, at: 0 }
                        }
                    });
                }
                SourceKind::Fields(fields)
            }
            ColumnData::Empty => SourceKind::Fields(Vec::new()),
        };
        Ok(Source { kind, ticks, default_tick, scratch: None })
    }

    /// The whole column as bytes in the target layout, when rows copy as they are and no
    /// ticks were saved.
    fn bulk(&self) -> Option<&'b [u8]> {
        match self.kind {
            SourceKind::Rows { bytes, .. } if self.ticks.is_none() => Some(bytes),
            _ => None,
        }
    }

    fn ticks(&self, i: usize) -> Result<(Tick, Tick), SnapshotError> {
        src_ticks(self.ticks, self.default_tick, i)
    }

    /// Builds row `i`'s value and hands it to `put`, which takes ownership.
    fn put(
        &mut self,
        i: usize,
        info: &ComponentInfo,
        tick: Tick,
        put: &mut dyn FnMut(*const u8),
    ) -> Result<(), SnapshotError> {
        let short = || corrupt("internal: value run too short");
        match &mut self.kind {
            SourceKind::Zst => put(std::ptr::NonNull::<u8>::dangling().as_ptr()),
            SourceKind::Rows { bytes, size } => {
                let at = i.checked_mul(*size).ok_or_else(short)?;
                let row = bytes.get(at..at + *size).ok_or_else(short)?;
                // The bytes were checked (lengths, bools) and the layouts agree, so the row is
                // a valid value; the receiver copies it byte-wise (no alignment needed).
                put(row.as_ptr());
            }
            SourceKind::Fields(fields) => {
                let scratch = self.scratch.get_or_insert_with(|| Column::new(info));
                // SAFETY: the staging column is of this component; the fresh row is
                // initialised to the zero value right away, so it is valid at every step.
                let p = unsafe {
                    let p = scratch.push_uninit(tick);
                    info.write_zero(p);
                    p
                };
                // On error the staged (valid) value is dropped with the staging column.
                fill_fields(fields, i, p)?;
                put(p);
                // SAFETY: `put` moved the value out.
                unsafe { scratch.swap_remove_forget(0, None) };
            }
            SourceKind::Opaque { serde, lens, data, at } => {
                let len = le_u32(lens, i).ok_or_else(short)? as usize;
                let blob = data.get(*at..*at + len).ok_or_else(short)?;
                *at += len;
                let mut called = false;
                (serde.decode)(blob, &mut |p| {
                    called = true;
                    put(p)
                })
                .map_err(|message| SnapshotError::Serde { component: info.name().to_string(), message })?;
                if !called {
                    return Err(corrupt("internal: opaque decode produced no value"));
                }
            }
        }
        Ok(())
    }
}

/// Writes row `i` of every field source into the value at `p`.
fn fill_fields(fields: &mut [FieldSource<'_>], i: usize, p: *mut u8) -> Result<(), SnapshotError> {
    let short = || corrupt("internal: field run too short");
    for f in fields {
        match f {
            FieldSource::Plain { ty, dst, run, stride, at } => {
                let w = wire_size(*ty);
                let start = i.checked_mul(*stride).and_then(|s| s.checked_add(*at)).ok_or_else(short)?;
                let src = run.get(start..start + w).ok_or_else(short)?;
                if *ty == FieldType::Bool && src[0] > 1 {
                    return Err(corrupt("a bool field holds a value other than 0 or 1"));
                }
                let mut buf = [0u8; 12];
                crate::snapshot::format::copy_le(*ty, src, &mut buf[..w]);
                // SAFETY: `p` is a valid value of the component; the field lies at `dst`
                // within it, `w` bytes of a plain type for which these bytes are valid.
                unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), p.add(*dst), w) };
            }
            FieldSource::Str { dst, lens, text, at } => {
                let len = le_u32(lens, i).ok_or_else(short)? as usize;
                // `get` also refuses a range that splits a character.
                let s = text.get(*at..*at + len).ok_or_else(|| corrupt("a string is not UTF-8"))?;
                *at += len;
                // SAFETY: a String field of a valid value; assignment drops the old one.
                unsafe { *(p.add(*dst) as *mut String) = s.to_owned() };
            }
        }
    }
    Ok(())
}
