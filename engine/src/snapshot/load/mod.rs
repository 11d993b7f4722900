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

mod build;
mod catalog;

use std::collections::{BTreeSet, HashSet};

use crate::component::{
    ComponentDef, ComponentId, ComponentInfo, Components, FieldType, FieldValue, StorageKind, is_identifier,
};
use crate::component::{OpaqueSerde, OpaqueSerdes};
use crate::entity::{Entities, Entity, Misplaced};
use crate::par;
use crate::snapshot::format::{
    Body, Bytes, ColumnData, ColumnRecord, DEFAULTS_SECTION_VERSION, FLAG_TICKS, FORMAT_VERSION, FieldRun, HEADER_LEN,
    Header, INDEX_SECTION_VERSION, INDEX_SECTION_VERSION_REFERENCES, KNOWN_FLAGS, MAGIC, OLDEST_FORMAT_VERSION,
    SCHEDULE_SECTION_VERSION, TickRecord, field_type_from_code, storage_from_code, u32_at, u64_at, wire_size,
};
use crate::snapshot::read::{CrcCheck, Input, Parser, Sums};
use crate::snapshot::{IndexDefinition, LoadOptions, LoadStats, SIZE_DIVISOR, SnapshotError};
use crate::storage::{Column, SparseSet};
use crate::tick::Tick;
use crate::world::{RefusedParts, World, WorldParts};
use build::build_world;
use catalog::{Resolved, Target, resolve_catalog, resolve_defaults};

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
    // When every component of the file is already known, loading defines nothing, so the
    // registry can be moved over (and moved back on error) instead of cloned.
    let borrow = body.catalog.iter().all(|r| target.components.id_by_name(r.name.as_str()).is_some());
    let (components, opaque_serde) = if borrow { target.lend_registry() } else { target.copy_registry() };
    let mut parts = WorldParts::new(components, opaque_serde);
    let no_input = Input::Mem(&[]);
    let input = check.as_ref().map_or(&no_input, |c| c.0);
    let built = build_world(&mut parts, body, input, header_flags, opts).and_then(|(stats, sums)| {
        if let Some((input, mut check)) = check {
            check.add(sums);
            check.verify(input)?;
        }
        Ok(stats)
    });
    // The world is assembled only from parts that were built whole, and checked once more.
    let refused = match built {
        Ok(stats) => match World::from_parts(parts) {
            Ok(world) => {
                *target = world;
                return Ok(stats);
            }
            Err(RefusedParts { error, parts }) => (corrupt(error.to_string()), *parts),
        },
        Err(e) => (e, parts),
    };
    let (e, parts) = refused;
    if borrow {
        target.return_registry(parts.components, parts.opaque_serde);
    }
    Err(e)
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
