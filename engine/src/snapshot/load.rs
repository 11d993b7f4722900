//! Bytes → world: header checks, body decoding, validation, then the build of a fresh world.
//!
//! Loading runs in three steps. The body is decoded ([`Parser`]) and every structural claim
//! is checked: catalog, lengths of every run against the rows it describes, column kinds
//! against schemas, table and sparse-set membership. Then the world is built, several
//! columns at once when there is enough to do: long runs go straight from the input (memory,
//! or the file with positioned reads) into their columns, and their contents are checked on
//! the way (bools, string lengths and UTF-8, opaque blobs). Last, every table row is placed
//! in the entity allocator, which checks that each live entity has exactly one row.
//!
//! The body checksum is taken piece by piece while the bytes are read anyway, and compared
//! before the world is handed out. The world under construction is only handed out when
//! everything succeeded; on any error it is dropped and the target is unchanged. When a
//! load fails and the checksum does not match either, the checksum mismatch is reported, as
//! if it had been checked first.

use std::collections::{BTreeSet, HashSet};

use crate::component::{is_identifier, ComponentDef, ComponentId, ComponentInfo, Components, FieldType, StorageKind};
use crate::entity::{Entities, Entity, Misplaced};
use crate::par;
use crate::snapshot::format::{
    field_type_from_code, storage_from_code, u32_at, u64_at, wire_size, Body, Bytes, ColumnData, ColumnRecord,
    FieldRun, Header, TickRecord, FLAG_TICKS, FORMAT_VERSION, HEADER_LEN, INDEX_SECTION_VERSION,
    INDEX_SECTION_VERSION_REFERENCES, KNOWN_FLAGS, MAGIC, OLDEST_FORMAT_VERSION, SCHEDULE_SECTION_VERSION,
};
use crate::snapshot::opaque::{OpaqueSerde, OpaqueSerdes};
use crate::snapshot::read::{CrcCheck, Input, Parser, Sums};
use crate::snapshot::{IndexDefinition, LoadOptions, LoadStats, SnapshotError, SIZE_DIVISOR};
use crate::storage::{Column, SparseSet};
use crate::tick::Tick;
use crate::world::World;

fn corrupt(msg: impl Into<String>) -> SnapshotError {
    SnapshotError::Corrupt(msg.into())
}

/// Checks a header against the length of the whole snapshot (`total`, header included);
/// `bytes` holds the first `min(total, HEADER_LEN)` bytes.
pub(crate) fn check_header(bytes: &[u8], total: u64) -> Result<Header, SnapshotError> {
    let truncated = || SnapshotError::Truncated { expected: HEADER_LEN as u64, actual: total };
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
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
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
    let body = total - HEADER_LEN as u64;
    let expected = (HEADER_LEN as u64).saturating_add(header.body_len);
    if body < header.body_len {
        return Err(SnapshotError::Truncated { expected, actual: total });
    }
    if body > header.body_len {
        return Err(corrupt(format!("{} unexpected bytes after the body", body - header.body_len)));
    }
    Ok(header)
}

/// Checks the header of a snapshot in memory; returns it and the body (whose checksum the
/// load checks).
pub(crate) fn parse_header(bytes: &[u8]) -> Result<(Header, &[u8]), SnapshotError> {
    let header = check_header(&bytes[..bytes.len().min(HEADER_LEN)], bytes.len() as u64)?;
    Ok((header, &bytes[HEADER_LEN..]))
}

/// Decodes a body in memory, every run in place (tests craft bodies with it).
#[cfg(test)]
pub(crate) fn decode_body(body: &[u8]) -> Result<Body<'_>, SnapshotError> {
    let mut p = Parser::eager(Input::Mem(body));
    let b = p.body()?;
    p.finish(0)?;
    Ok(b)
}

/// Loads a snapshot body into `target` (see [`load_into`]), checking its checksum. Errors
/// other than i/o errors are reported as a checksum mismatch when the body does not match
/// its checksum.
pub(crate) fn load_snapshot(
    target: &mut World,
    input: &Input<'_>,
    header: &Header,
    opts: &LoadOptions,
) -> Result<LoadStats, SnapshotError> {
    let mut attempt = || -> Result<LoadStats, SnapshotError> {
        let mut parser = Parser::for_version(*input, header.version);
        let body = parser.body()?;
        let check = parser.finish(header.body_crc)?;
        load_into(target, &body, header.flags, opts, Some((input, check)))
    };
    match attempt() {
        Err(e) if !matches!(e, SnapshotError::ChecksumMismatch | SnapshotError::Io(_) | SnapshotError::File { .. }) => {
            match input.body_crc() {
                Ok(crc) if crc != header.body_crc => Err(SnapshotError::ChecksumMismatch),
                _ => Err(e),
            }
        }
        r => r,
    }
}

/// Loads a decoded body into `target`, which must have no live entities: a new world is
/// built on `target`'s component registry and serde functions and replaces it only when
/// everything succeeded (the checksum too, when `check` is given). On error `target` is
/// unchanged.
pub(crate) fn load_into(
    target: &mut World,
    body: &Body<'_>,
    header_flags: u32,
    opts: &LoadOptions,
    check: Option<(&Input<'_>, CrcCheck)>,
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
    let no_input = Input::Mem(&[]);
    let input = check.as_ref().map_or(&no_input, |c| c.0);
    let built = build_world(&mut world, body, input, header_flags, opts).and_then(|(stats, sums)| {
        if let Some((input, mut check)) = check {
            check.add(sums);
            check.verify(input)?;
        }
        Ok(stats)
    });
    match built {
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

/// `(index, generation)` little-endian.
#[inline]
fn entity_le(c: &[u8]) -> Entity {
    Entity::from_parts(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), u32::from_le_bytes([c[4], c[5], c[6], c[7]]))
}

/// Appends the entities of a run chunk (a whole number of `(index, generation)` pairs).
fn extend_entities(dst: &mut Vec<Entity>, chunk: &[u8]) {
    let n = chunk.len() / 8;
    if cfg!(target_endian = "little") {
        dst.reserve(n);
        let spare = dst.spare_capacity_mut();
        // SAFETY: `reserve` made room for `n` more entities, so the first `n * 8` bytes of the
        // spare capacity are writable; `Entity` is `repr(C)` with two `u32` fields (index,
        // then generation), so on a little-endian host its bytes are exactly the run's, and
        // every bit pattern is a valid `Entity`. The `n` entities are initialised before the
        // length covers them.
        unsafe {
            std::ptr::copy_nonoverlapping(chunk.as_ptr(), spare.as_mut_ptr() as *mut u8, n * 8);
            dst.set_len(dst.len() + n);
        }
        return;
    }
    dst.extend(chunk.chunks_exact(8).map(entity_le));
}

/// Rows of an entity run, checked to be whole.
fn entity_rows(run: &Bytes<'_>, what: Place<'_>) -> Result<usize, SnapshotError> {
    if !run.len().is_multiple_of(8) {
        return Err(corrupt(format!("{what}: entity run of {} bytes is not a multiple of 8", run.len())));
    }
    Ok(run.len() / 8)
}

/// Checks the allocator's run lengths; returns the number of indices ever issued.
fn check_allocator(body: &Body<'_>) -> Result<usize, SnapshotError> {
    let a = &body.allocator;
    if !a.generations.len().is_multiple_of(4) {
        return Err(corrupt("allocator: generation run is not a multiple of 4 bytes"));
    }
    let n = a.generations.len() / 4;
    if n >= u32::MAX as usize {
        return Err(corrupt("allocator: too many entity indices"));
    }
    if a.live.len() != n.div_ceil(8) {
        return Err(corrupt(format!("allocator: {} live-flag bytes for {n} indices", a.live.len())));
    }
    if !a.free.len().is_multiple_of(4) {
        return Err(corrupt("allocator: free list is not a multiple of 4 bytes"));
    }
    Ok(n)
}

/// Builds the allocator: every index with its generation (live ones waiting for their
/// rows), then the free list.
fn build_allocator(body: &Body<'_>, input: &Input<'_>, n: usize, sums: &mut Sums) -> Result<Entities, SnapshotError> {
    let a = &body.allocator;
    let live = input.bytes(&a.live, sums)?;
    if !n.is_multiple_of(8) && live[n / 8] >> (n % 8) != 0 {
        return Err(corrupt("allocator: live flags set past the last index"));
    }
    let mut entities = Entities::loading(n);
    let mut first = 0usize;
    input.stream(&a.generations, sums, |chunk| {
        entities.push_loaded_slots(chunk, &live, first);
        first += chunk.len() / 4;
        Ok(())
    })?;
    let free = input.bytes(&a.free, sums)?;
    let free = free.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    entities.set_loaded_free_list(free).map_err(|e| corrupt(format!("allocator: {e}")))?;
    Ok(entities)
}

/// Checks one column's run lengths and kind against its component and row count; returns
/// the bytes of string text it holds. Contents are checked while the column is built.
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
    match &col.data {
        ColumnData::Opaque { lens, .. } if r.opaque => exact(lens.len(), 4, "opaque value lengths").map(|_| 0),
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
                        exact(lens.len(), 4, "string lengths")?;
                        total += data.len() as u64;
                    }
                    (FieldRun::Plain(bytes), ty) if ty != FieldType::String => {
                        exact(bytes.len(), wire_size(ty), "a field run")?;
                    }
                    _ => return Err(corrupt(format!("component '{name}': a field run does not match its type"))),
                }
            }
            Ok(total)
        }
        _ => Err(corrupt(format!("component '{name}': column kind does not match its schema"))),
    }
}

/// Checks the contents of a column in memory (lengths were checked by [`check_column`]):
/// bools are 0 or 1, string and blob lengths add up, strings are UTF-8 and cut at
/// character boundaries.
fn check_content(r: &Resolved<'_>, col: &ColumnRecord<'_>, n: usize) -> Result<(), SnapshotError> {
    let name = r.name;
    let blobs = |lens: &[u8], data: &[u8], what: &str| -> Result<(), SnapshotError> {
        let total: u64 = lens.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64).sum();
        if total != data.len() as u64 {
            return Err(corrupt(format!("component '{name}': {what} add up to {total} bytes, not {}", data.len())));
        }
        Ok(())
    };
    match &col.data {
        ColumnData::Opaque { lens, data } => blobs(mem(lens), mem(data), "opaque value lengths"),
        ColumnData::Bulk(bytes) => {
            for &(ty, off) in &r.fields {
                if ty == FieldType::Bool {
                    check_bools(name, mem(bytes), r.size as usize, off as usize, n)?;
                }
            }
            Ok(())
        }
        ColumnData::Fields(runs) => {
            for (run, &(ty, _)) in runs.iter().zip(&r.fields) {
                match run {
                    FieldRun::Strings { lens, data } => {
                        let (lens, data) = (mem(lens), mem(data));
                        blobs(lens, data, "string lengths")?;
                        let text = std::str::from_utf8(data)
                            .map_err(|_| corrupt(format!("component '{name}': a string is not UTF-8")))?;
                        let mut at = 0usize;
                        for c in lens.chunks_exact(4) {
                            at += u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize;
                            if !text.is_char_boundary(at) {
                                return Err(corrupt(format!("component '{name}': a string is not UTF-8")));
                            }
                        }
                    }
                    FieldRun::Plain(bytes) if ty == FieldType::Bool => check_bools(name, mem(bytes), 1, 0, n)?,
                    FieldRun::Plain(_) => {}
                }
            }
            Ok(())
        }
        ColumnData::Empty => Ok(()),
    }
}

fn check_bools(name: &str, run: &[u8], stride: usize, at: usize, n: usize) -> Result<(), SnapshotError> {
    if (0..n).any(|i| run.get(i * stride + at).is_none_or(|&b| b > 1)) {
        return Err(corrupt(format!("component '{name}': a bool field holds a value other than 0 or 1")));
    }
    Ok(())
}

/// The bytes of a run known to be in memory.
fn mem<'r>(b: &'r Bytes<'_>) -> &'r [u8] {
    debug_assert!(b.mem().is_some(), "a run was not read");
    b.mem().unwrap_or_default()
}

/// A column record with every run in memory: borrowed where it already is, read otherwise.
fn materialize<'r>(
    input: &Input<'_>,
    col: &'r ColumnRecord<'_>,
    sums: &mut Sums,
) -> Result<ColumnRecord<'r>, SnapshotError> {
    let mut m = |b: &'r Bytes<'_>| -> Result<Bytes<'r>, SnapshotError> { Ok(Bytes::Mem(input.bytes(b, sums)?)) };
    let data = match &col.data {
        ColumnData::Empty => ColumnData::Empty,
        ColumnData::Bulk(b) => ColumnData::Bulk(m(b)?),
        ColumnData::Fields(runs) => ColumnData::Fields(
            runs.iter()
                .map(|run| {
                    Ok(match run {
                        FieldRun::Plain(b) => FieldRun::Plain(m(b)?),
                        FieldRun::Strings { lens, data } => FieldRun::Strings { lens: m(lens)?, data: m(data)? },
                    })
                })
                .collect::<Result<_, SnapshotError>>()?,
        ),
        ColumnData::Opaque { lens, data } => ColumnData::Opaque { lens: m(lens)?, data: m(data)? },
    };
    let ticks = match &col.ticks {
        Some(t) => Some(TickRecord { added: m(&t.added)?, changed: m(&t.changed)? }),
        None => None,
    };
    Ok(ColumnRecord { data, ticks })
}

/// One table of the file, checked, with its place in the world being built.
struct TablePlan {
    /// Target component ids, sorted (unloadable components left out).
    set: Vec<ComponentId>,
    /// Rows.
    rows: usize,
    /// The target table.
    table: usize,
}

/// What the build reads: the body, where its bytes are, and the resolved catalog.
struct Ctx<'a, 'b> {
    body: &'a Body<'b>,
    input: &'a Input<'a>,
    resolved: &'a [Resolved<'a>],
    components: &'a Components,
    tick: Tick,
}

/// A piece of the build that can run on its own thread.
enum Job<'w> {
    /// The entity allocator, from `slots` indices; then every table's entity column, each
    /// row placed in the allocator as it arrives.
    Rows { slots: usize, tables: Vec<RowsOf<'w>> },
    /// A target column, from these `(file table, column)` pairs in order.
    Column { dst: &'w mut Column, id: ComponentId, sources: Vec<(usize, usize)>, rows: usize },
}

/// A target table's entity column, from these file tables in order.
struct RowsOf<'w> {
    dst: &'w mut Vec<Entity>,
    table: u32,
    sources: Vec<usize>,
    rows: usize,
}

impl Job<'_> {
    /// Roughly how much work: bytes to write.
    fn weight(&self) -> usize {
        match self {
            Job::Rows { slots, tables } => slots * 12 + tables.iter().map(|t| t.rows * 12).sum::<usize>(),
            Job::Column { dst, rows, .. } => rows * (dst.item_size() + 8),
        }
    }
}

/// Builds that write at least this many bytes run their jobs on several threads.
const PARALLEL_BYTES: usize = (1 << 20) / SIZE_DIVISOR;

/// Validates and builds into a fresh `world` (whose registry may be extended). On success it
/// holds exactly the snapshot's contents; returns the checksums of the deferred runs read.
fn build_world(
    world: &mut World,
    body: &Body<'_>,
    input: &Input<'_>,
    header_flags: u32,
    opts: &LoadOptions,
) -> Result<(LoadStats, Sums), SnapshotError> {
    let ticks = header_flags & FLAG_TICKS != 0;
    let mut stats = LoadStats::default();

    // ----- validate the structure -----------------------------------------------------
    let resolved = resolve_catalog(body, &mut world.components, &world.opaque_serde, &mut stats)?;
    let slots = check_allocator(body)?;
    let mut unloadable: BTreeSet<&str> = BTreeSet::new();
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
        let n = entity_rows(&t.entities, what)?;
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
        plans.push(TablePlan { set, rows: n, table: 0 });
    }
    let mut sparse_seen = vec![false; resolved.len()];
    for (si, s) in body.sparse.iter().enumerate() {
        let r = resolved
            .get(s.component as usize)
            .ok_or_else(|| corrupt(format!("sparse set {si}: component #{} is not in the catalog", s.component)))?;
        let what = Place::Sparse(r.name);
        if r.storage != StorageKind::Sparse || std::mem::replace(&mut sparse_seen[s.component as usize], true) {
            return Err(corrupt(format!("{what}: not sparse, or saved twice")));
        }
        let n = entity_rows(&s.entities, what)?;
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
    if ![INDEX_SECTION_VERSION, INDEX_SECTION_VERSION_REFERENCES].contains(&body.index_definitions.version) {
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

    if body.schedule.version != SCHEDULE_SECTION_VERSION {
        return Err(corrupt(format!("unsupported schedule section version {}", body.schedule.version)));
    }
    world.schedule = body.schedule.to_record();

    // ----- build: tables, then every column and the allocator ---------------------------
    let tick = body.world_tick;
    {
        let World { storage, components, .. } = &mut *world;
        for p in plans.iter_mut() {
            let tid = storage.table_for(&p.set, components).index();
            p.table = tid;
        }
    }
    let mut rows_of = vec![0usize; world.storage.tables.len()];
    let mut sources: Vec<Vec<usize>> = vec![Vec::new(); world.storage.tables.len()];
    for (ri, p) in plans.iter().enumerate() {
        rows_of[p.table] += p.rows;
        sources[p.table].push(ri);
    }
    let ctx = Ctx { body, input, resolved: &resolved, components: &world.components, tick };
    let mut jobs = Vec::new();
    let mut rows_jobs = Vec::new();
    for (ti, ((table, srcs), &rows)) in world.storage.tables.iter_mut().zip(&sources).zip(&rows_of).enumerate() {
        if srcs.is_empty() {
            continue;
        }
        let ids: Vec<ComponentId> = table.components().to_vec();
        let (entities, columns) = table.parts_mut();
        rows_jobs.push(RowsOf { dst: entities, table: ti as u32, sources: srcs.clone(), rows });
        for (dst, id) in columns.iter_mut().zip(ids) {
            let mut cols = Vec::with_capacity(srcs.len());
            for &ri in srcs {
                let t = &body.tables[ri];
                let k = t
                    .components
                    .iter()
                    .position(|&c| resolved[c as usize].loadable() && resolved[c as usize].id() == Some(id))
                    .ok_or_else(|| corrupt("internal: a table lacks a column"))?;
                cols.push((ri, k));
            }
            jobs.push(Job::Column { dst, id, sources: cols, rows });
        }
    }
    jobs.insert(0, Job::Rows { slots, tables: rows_jobs });
    let work: usize = jobs.iter().map(Job::weight).sum();
    #[cfg(test)]
    let parallel_bytes = crate::snapshot::read::knobs::PARALLEL_BYTES.with(|c| c.get()).unwrap_or(PARALLEL_BYTES);
    #[cfg(not(test))]
    let parallel_bytes = PARALLEL_BYTES;
    let done: Vec<(Option<Entities>, Sums)> = if work >= parallel_bytes && jobs.len() > 1 {
        par::heaviest_first(jobs, Job::weight, |j| run_job(j, &ctx))
            .map_err(|e| e.unwrap_or_else(|| corrupt("internal: a build job did not run")))?
    } else {
        jobs.into_iter().map(|j| run_job(j, &ctx)).collect::<Result<_, _>>()?
    };
    let mut all_sums = Sums::new();
    let mut allocator = None;
    for (e, s) in done {
        allocator = allocator.or(e);
        all_sums.extend(s);
    }
    world.entities = allocator.ok_or_else(|| corrupt("internal: no allocator"))?;

    // Every row was placed: each live entity has exactly one row unless some have none.
    let placed: usize = plans.iter().map(|p| p.rows).sum();
    if placed != world.entities.len() {
        return Err(corrupt(format!(
            "{} live entities in the allocator but {placed} table rows",
            world.entities.len()
        )));
    }
    stats.entities = world.entities.len();

    // ----- sparse sets ------------------------------------------------------------------
    for s in &body.sparse {
        let r = &resolved[s.component as usize];
        if !r.loadable() {
            continue;
        }
        let what = Place::Sparse(r.name);
        let entities = input.bytes(&s.entities, &mut all_sums)?;
        let column = materialize(input, &s.column, &mut all_sums)?;
        let n = entities.len() / 8;
        check_content(r, &column, n)?;
        let id = r.id().expect("loadable components are known");
        let info = world.components.info(id);
        let sparse = &mut world.storage.sparse;
        if sparse.len() <= id.index() {
            sparse.resize_with(id.index() + 1, || None);
        }
        let set = sparse[id.index()].get_or_insert_with(|| SparseSet::new(info));
        let mut src = Source::new(r, info, &column, tick)?;
        for (i, c) in entities.chunks_exact(8).enumerate() {
            let e = entity_le(c);
            if world.entities.resolve(e.index()) != Some(e) {
                return Err(corrupt(format!("{what}: entity {e} is not alive in the allocator")));
            }
            if set.contains(e) {
                return Err(corrupt(format!("{what}: entity {e} listed twice")));
            }
            let (added, changed) = src.ticks(i)?;
            src.put(i, info, added, &mut |ptr| {
                // SAFETY: `ptr` is a valid value of the set's component, which it takes over.
                unsafe { set.insert(e, ptr, added) }
            })?;
            let row = set.row(e).ok_or_else(|| corrupt("internal: sparse insert failed"))?;
            set.column_mut().changed_ticks_mut()[row] = changed;
        }
    }
    // Without saved ticks every row got the body's tick: there is nothing to clamp.
    world.set_change_tick(body.world_tick, !ticks);
    Ok((stats, all_sums))
}

/// Runs one build job; returns the allocator when it built it, and the checksums it took.
fn run_job(job: Job<'_>, ctx: &Ctx<'_, '_>) -> Result<(Option<Entities>, Sums), SnapshotError> {
    let mut sums = Sums::new();
    match job {
        Job::Rows { slots, tables } => {
            let mut entities = build_allocator(ctx.body, ctx.input, slots, &mut sums)?;
            for RowsOf { dst, table, sources, rows } in tables {
                dst.reserve(rows);
                for ri in sources {
                    let base = dst.len();
                    ctx.input.stream(&ctx.body.tables[ri].entities, &mut sums, |c| {
                        extend_entities(dst, c);
                        Ok(())
                    })?;
                    let placed = &dst[base..];
                    match entities.place_loaded_rows(placed, table, base as u32) {
                        Ok(()) => {}
                        Err((i, Misplaced::NotAlive)) => {
                            return Err(corrupt(format!(
                                "{}: entity {} is not alive in the allocator",
                                Place::Table(ri),
                                placed[i]
                            )))
                        }
                        Err((i, Misplaced::Twice)) => {
                            return Err(corrupt(format!("entity {} has two table rows", placed[i])))
                        }
                    }
                }
            }
            return Ok((Some(entities), sums));
        }
        Job::Column { dst, id, sources, rows } => {
            let info = ctx.components.info(id);
            dst.reserve(rows);
            for (ri, k) in sources {
                let t = &ctx.body.tables[ri];
                let r = &ctx.resolved[t.components[k] as usize];
                fill_column(dst, r, info, &t.columns[k], t.entities.len() / 8, ctx, &mut sums)?;
            }
        }
    }
    Ok((None, sums))
}

/// Appends `n` rows of one column.
fn fill_column(
    column: &mut Column,
    r: &Resolved<'_>,
    info: &ComponentInfo,
    col: &ColumnRecord<'_>,
    n: usize,
    ctx: &Ctx<'_, '_>,
    sums: &mut Sums,
) -> Result<(), SnapshotError> {
    let Target::Known { same_layout, .. } = &r.target else {
        return Err(corrupt("internal: building an unknown component"));
    };
    let size = info.layout().size();
    let bulk = match &col.data {
        ColumnData::Empty if size == 0 && !r.opaque => Some(None),
        ColumnData::Bulk(run) if *same_layout && cfg!(target_endian = "little") && size != 0 => Some(Some(run)),
        _ => None,
    };
    let Some(run) = bulk else {
        // Row by row, from runs in memory.
        let col = materialize(ctx.input, col, sums)?;
        check_content(r, &col, n)?;
        return fill_rows(column, r, info, &col, n, ctx.tick);
    };
    let saved = match &col.ticks {
        Some(t) => Some((ctx.input.bytes(&t.added, sums)?, ctx.input.bytes(&t.changed, sums)?)),
        None => None,
    };
    let saved = saved.as_ref().map(|(a, c)| (&a[..], &c[..]));
    let Some(run) = run else {
        // SAFETY: zero-sized values need no bytes.
        return unsafe { column.append_with(n, ctx.tick, saved, |_| Ok(())) };
    };
    let len = n * size;
    // SAFETY: `fill` writes exactly `len` bytes at `dst` (the run's length, checked equal to
    // `n * size`, and checked again per chunk) before returning `Ok`. The component is plain
    // (a bulk codec: numbers, bools and vectors, no padding), the file's layout equals the
    // column's, and every bool byte is checked below, so the bytes are valid values.
    unsafe {
        column.append_with(n, ctx.tick, saved, |dst| {
            let mut off = 0usize;
            ctx.input.stream(run, sums, |c| {
                if c.len() > len - off {
                    return Err(corrupt("internal: bulk run longer than its rows"));
                }
                std::ptr::copy_nonoverlapping(c.as_ptr(), dst.add(off), c.len());
                off += c.len();
                Ok(())
            })?;
            if off != len {
                return Err(corrupt("internal: bulk run shorter than its rows"));
            }
            if r.fields.iter().any(|&(ty, _)| ty == FieldType::Bool) {
                let rows = std::slice::from_raw_parts(dst as *const u8, len);
                for &(ty, at) in &r.fields {
                    if ty == FieldType::Bool {
                        check_bools(r.name, rows, size, at as usize, n)?;
                    }
                }
            }
            Ok(())
        })
    }
}

/// Appends `n` rows of one column, value by value (strings, remapped layouts, opaque
/// values), from a column whose runs are in memory and checked.
fn fill_rows(
    column: &mut Column,
    r: &Resolved<'_>,
    info: &ComponentInfo,
    col: &ColumnRecord<'_>,
    n: usize,
    default_tick: Tick,
) -> Result<(), SnapshotError> {
    let mut src = Source::new(r, info, col, default_tick)?;
    column.reserve(n);
    let ticks = src.ticks.is_some();
    match &mut src.kind {
        SourceKind::Fields(fields) => {
            let size = info.layout().size();
            // Bytes the fields do not cover (padding, or a layout the schema does not fully
            // describe) are zeroed first, as the zero value would have them.
            let covered: usize = info
                .fields()
                .iter()
                .map(|f| if f.ty == FieldType::String { std::mem::size_of::<String>() } else { wire_size(f.ty) })
                .sum();
            let zero = covered != size || fields.len() != info.fields().len();
            // SAFETY: `write_fields` writes every field of each of the `n` rows (sources map
            // one to one onto the component's fields, checked when the catalog was matched),
            // after zeroing the rest of the rows when the fields do not tile them; plain
            // fields get bytes that are valid for their types (bools checked), string fields
            // get new Strings. The runs were checked (lengths, UTF-8, character boundaries),
            // so it cannot fail, and if it did, what it wrote would only leak.
            unsafe {
                column.append_with(n, default_tick, src.ticks, |dst| {
                    if zero {
                        std::ptr::write_bytes(dst, 0, n * size);
                    }
                    write_fields(fields, n, size, dst)
                })?;
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
        let ticks = col.ticks.as_ref().map(|t| (mem(&t.added), mem(&t.changed)));
        let kind = match &col.data {
            ColumnData::Opaque { lens, data } => {
                let serde = (*serde).ok_or_else(|| SnapshotError::OpaqueWithoutSerde(vec![r.name.to_string()]))?;
                SourceKind::Opaque { serde, lens: mem(lens), data: mem(data), at: 0 }
            }
            _ if info.layout().size() == 0 => SourceKind::Zst,
            ColumnData::Bulk(bytes) if *same_layout && cfg!(target_endian = "little") => {
                SourceKind::Rows { bytes: mem(bytes), size: info.layout().size() }
            }
            ColumnData::Bulk(bytes) => SourceKind::Fields(
                r.fields
                    .iter()
                    .zip(map)
                    .map(|(&(ty, off), &t)| FieldSource::Plain {
                        ty,
                        dst: info.fields()[t].offset,
                        run: mem(bytes),
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
                        FieldRun::Plain(b) => FieldSource::Plain { ty, dst, run: mem(b), stride: wire_size(ty), at: 0 },
                        FieldRun::Strings { lens, data } => {
                            let text = std::str::from_utf8(mem(data)).map_err(|_| corrupt("a string is not UTF-8"))?;
                            FieldSource::Str { dst, lens: mem(lens), text, at: 0 }
                        }
                    });
                }
                SourceKind::Fields(fields)
            }
            ColumnData::Empty => SourceKind::Fields(Vec::new()),
        };
        Ok(Source { kind, ticks, default_tick, scratch: None })
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

/// Writes every field of rows `0..n` into uninitialised rows of `size` bytes at `dst`, field
/// by field. The sources must have been checked (see [`check_content`]).
///
/// # Safety
/// `dst` must be valid for writes of `n * size` bytes, aligned for the component, and each
/// source's field must lie within a row.
unsafe fn write_fields(fields: &[FieldSource<'_>], n: usize, size: usize, dst: *mut u8) -> Result<(), SnapshotError> {
    let short = || corrupt("internal: field run too short");
    for f in fields {
        match *f {
            FieldSource::Plain { ty, dst: off, run, stride, at } => {
                let w = wire_size(ty);
                if n > 0
                    && (n - 1).checked_mul(stride).and_then(|l| l.checked_add(at + w)).is_none_or(|l| l > run.len())
                {
                    return Err(short());
                }
                // Little-endian bytes are the values: one fixed-width copy per row (every
                // plain type is 1, 2, 4, 8 or 12 bytes wide). Otherwise row by row, swapped.
                let scatter = match w {
                    1 => Some(scatter::<1> as ScatterFn),
                    2 => Some(scatter::<2> as ScatterFn),
                    4 => Some(scatter::<4> as ScatterFn),
                    8 => Some(scatter::<8> as ScatterFn),
                    12 => Some(scatter::<12> as ScatterFn),
                    _ => None,
                };
                if let Some(scatter) = scatter.filter(|_| cfg!(target_endian = "little")) {
                    // SAFETY: the run holds rows `0..n` (checked above); the rows lie within
                    // the caller's region and the field within each row; the bytes are valid
                    // values of the plain type (bools were checked).
                    unsafe { scatter(run, stride, at, n, dst.add(off), size) };
                    continue;
                }
                for i in 0..n {
                    let start = i * stride + at;
                    let mut buf = [0u8; 12];
                    crate::snapshot::format::copy_le(ty, &run[start..start + w], &mut buf[..w]);
                    // SAFETY: row `i < n` lies within the caller's region, the field within the
                    // row; `w` bytes of a plain type, valid for it (bools were checked).
                    unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.add(i * size + off), w) };
                }
            }
            FieldSource::Str { dst: off, lens, text, .. } => {
                let mut at = 0usize;
                for i in 0..n {
                    let len = le_u32(lens, i).ok_or_else(short)? as usize;
                    let s = text.get(at..at + len).ok_or_else(short)?;
                    at += len;
                    // SAFETY: row `i < n` lies within the caller's region and the String field
                    // within the row, aligned; the slot is uninitialised, so nothing is dropped.
                    unsafe { std::ptr::write(dst.add(i * size + off) as *mut String, String::from(s)) };
                }
            }
        }
    }
    Ok(())
}

/// Copies `n` values of `W` bytes, the `i`th from `run[i * stride + at..]`, to
/// `dst + i * size`: a field run scattered into rows, one fixed-size copy per row.
///
/// # Safety
///
/// `run` holds `(n - 1) * stride + at + W` bytes or more, and `dst + i * size` is valid for
/// writes of `W` bytes for every `i < n`.
#[inline]
unsafe fn scatter<const W: usize>(run: &[u8], stride: usize, at: usize, n: usize, dst: *mut u8, size: usize) {
    for i in 0..n {
        let start = i * stride + at;
        // SAFETY: the caller guarantees the source bytes exist and the destination is writable.
        unsafe { std::ptr::copy_nonoverlapping(run.as_ptr().add(start), dst.add(i * size), W) };
    }
}

/// A [`scatter`] of one width.
type ScatterFn = unsafe fn(&[u8], usize, usize, usize, *mut u8, usize);

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
