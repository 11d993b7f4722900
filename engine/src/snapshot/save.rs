//! World → body: the catalog, the allocator, and every column as byte runs.

use crate::component::{ComponentInfo, FieldType};
use crate::entity::Entity;
use crate::snapshot::format::{
    body_config, field_type_code, storage_code, wire_size, AllocatorRecord, Body, Bytes, ColumnData, ColumnRecord,
    ComponentRecord, FieldRecord, FieldRun, Header, IndexRecord, IndexSection, SparseRecord, TableRecord, Text,
    TickRecord, FLAG_TICKS, FORMAT_VERSION, HEADER_LEN,
};
use crate::snapshot::opaque::OpaqueSerde;
use std::io::{self, Write};

use crate::snapshot::{SaveOptions, SaveStats, SnapshotError};
use crate::storage::Column;
use crate::world::World;

/// How one component's columns are written.
#[derive(Clone, Copy)]
pub(crate) enum Codec<'w> {
    /// Zero-sized: no data.
    Tag,
    /// Plain numeric fields that tile the value exactly: the column's bytes as they are.
    Bulk,
    /// Field by field (strings, entities, padding).
    Fields,
    /// Opaque: serde blobs (no functions: only columns without rows can be written).
    Opaque(Option<&'w OpaqueSerde>),
}

/// Whether a component's column can be written as one byte run: every field a plain number
/// (or bool, or vector), and the fields cover the value exactly, so no padding byte (which
/// may be uninitialised) is read. Big-endian hosts always go field by field.
pub(crate) fn is_bulk(info: &ComponentInfo) -> bool {
    if cfg!(target_endian = "big") || info.is_opaque() || info.layout().size() == 0 {
        return false;
    }
    if info.fields().iter().any(|f| matches!(f.ty, FieldType::String | FieldType::Entity)) {
        return false;
    }
    let mut spans: Vec<(usize, usize)> = info.fields().iter().map(|f| (f.offset, f.offset + wire_size(f.ty))).collect();
    spans.sort_unstable();
    let mut end = 0;
    for (start, stop) in spans {
        if start != end {
            return false;
        }
        end = stop;
    }
    end == info.layout().size()
}

/// A world ready to be written: the body (borrowing the world's columns) and what will be
/// written. Writers that need the header first get two encoding passes (one into a
/// checksumming sink, one into the destination), so no copy of the whole snapshot is held in
/// memory; [`Encoder::into_vec`] encodes once and checksums the buffer.
pub(crate) struct Encoder<'w> {
    body: Body<'w>,
    flags: u32,
    pub(crate) stats: SaveStats,
}

/// Counts and checksums what is written to it.
struct CrcSink {
    crc: crc32fast::Hasher,
    len: u64,
}

impl Write for CrcSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.crc.update(buf);
        self.len += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn io_error(e: bincode::error::EncodeError) -> io::Error {
    match e {
        bincode::error::EncodeError::Io { inner, .. } => inner,
        other => io::Error::other(other.to_string()),
    }
}

impl<'w> Encoder<'w> {
    pub(crate) fn new(world: &'w World, opts: &SaveOptions) -> Result<Encoder<'w>, SnapshotError> {
        let (body, stats) = build_body(world, opts)?;
        Ok(Encoder { body, flags: if opts.change_ticks { FLAG_TICKS } else { 0 }, stats })
    }

    fn header(&self, body_len: u64, body_crc: u32) -> [u8; HEADER_LEN] {
        Header { version: FORMAT_VERSION, flags: self.flags, body_len, body_crc }.to_bytes()
    }

    /// Writes header and body; returns the bytes written.
    pub(crate) fn write_to(&mut self, mut w: impl Write) -> io::Result<u64> {
        let mut sink = CrcSink { crc: crc32fast::Hasher::new(), len: 0 };
        bincode::serde::encode_into_std_write(&self.body, &mut sink, body_config()).map_err(io_error)?;
        w.write_all(&self.header(sink.len, sink.crc.finalize()))?;
        bincode::serde::encode_into_std_write(&self.body, &mut w, body_config()).map_err(io_error)?;
        w.flush()?;
        self.stats.bytes = HEADER_LEN as u64 + sink.len;
        Ok(self.stats.bytes)
    }

    /// The whole snapshot in one buffer.
    pub(crate) fn into_vec(self) -> Result<(Vec<u8>, SaveStats), SnapshotError> {
        let mut out = Vec::with_capacity(HEADER_LEN + size_hint(&self.body));
        out.resize(HEADER_LEN, 0);
        bincode::serde::encode_into_std_write(&self.body, &mut out, body_config())
            .map_err(|e| SnapshotError::Encode(e.to_string()))?;
        let body_len = (out.len() - HEADER_LEN) as u64;
        let header = self.header(body_len, crc32fast::hash(&out[HEADER_LEN..]));
        out[..HEADER_LEN].copy_from_slice(&header);
        let mut stats = self.stats;
        stats.bytes = out.len() as u64;
        Ok((out, stats))
    }
}

/// The encoded size of a body, closely enough to allocate its buffer once: every byte run
/// and string, plus a generous allowance for lengths and codes.
fn size_hint(body: &Body<'_>) -> usize {
    fn column(c: &ColumnRecord<'_>) -> usize {
        let data = match &c.data {
            ColumnData::Empty => 0,
            ColumnData::Bulk(b) => b.len(),
            ColumnData::Fields(runs) => runs
                .iter()
                .map(|r| match r {
                    FieldRun::Plain(b) => b.len(),
                    FieldRun::Strings { lens, data } => lens.len() + data.len(),
                } + 16)
                .sum(),
            ColumnData::Opaque { lens, data } => lens.len() + data.len(),
        };
        data + c.ticks.as_ref().map_or(0, |t| t.added.len() + t.changed.len()) + 48
    }
    let catalog: usize = body
        .catalog
        .iter()
        .map(|c| c.name.as_str().len() + 32 + c.fields.iter().map(|f| f.name.as_str().len() + 24).sum::<usize>())
        .sum();
    let a = &body.allocator;
    let tables: usize = body
        .tables
        .iter()
        .map(|t| t.entities.len() + t.components.len() * 4 + 32 + t.columns.iter().map(column).sum::<usize>())
        .sum();
    let sparse: usize = body.sparse.iter().map(|s| s.entities.len() + 32 + column(&s.column)).sum();
    catalog + a.generations.len() + a.live.len() + a.free.len() + tables + sparse + 256
}

fn build_body<'w>(world: &'w World, opts: &SaveOptions) -> Result<(Body<'w>, SaveStats), SnapshotError> {
    let comps = &world.components;
    let mut stats = SaveStats { entities: world.len(), ..SaveStats::default() };

    // Catalog: every component except opaque ones skipped for lack of serde functions.
    let mut codecs: Vec<Option<Codec<'w>>> = Vec::with_capacity(comps.len());
    let mut positions: Vec<Option<u32>> = Vec::with_capacity(comps.len());
    let mut catalog = Vec::with_capacity(comps.len());
    let mut missing = Vec::new();
    for info in comps.iter() {
        let codec = if info.is_opaque() {
            let serde = world.opaque_serde.get(info.type_id());
            if serde.is_none() && world.component_count(info.id()) > 0 {
                if opts.skip_opaque {
                    stats.skipped_opaque.push(info.name().to_string());
                    codecs.push(None);
                    positions.push(None);
                    continue;
                }
                missing.push(info.name().to_string());
            }
            Codec::Opaque(serde)
        } else if info.layout().size() == 0 {
            Codec::Tag
        } else if is_bulk(info) {
            Codec::Bulk
        } else {
            Codec::Fields
        };
        codecs.push(Some(codec));
        positions.push(Some(catalog.len() as u32));
        catalog.push(ComponentRecord {
            name: Text::borrowed(info.name()),
            storage: storage_code(info.storage()),
            opaque: info.is_opaque(),
            size: info.layout().size() as u64,
            fields: info
                .fields()
                .iter()
                .map(|f| FieldRecord {
                    name: Text::borrowed(&f.name),
                    ty: field_type_code(f.ty),
                    offset: f.offset as u64,
                })
                .collect(),
        });
    }
    if !missing.is_empty() {
        return Err(SnapshotError::OpaqueWithoutSerde(missing));
    }

    // Allocator.
    let state = world.entities.state();
    let mut generations = Vec::with_capacity(state.slots.len() * 4);
    let mut live = vec![0u8; state.slots.len().div_ceil(8)];
    for (i, &(g, alive)) in state.slots.iter().enumerate() {
        generations.extend_from_slice(&g.to_le_bytes());
        if alive {
            live[i / 8] |= 1 << (i % 8);
        }
    }
    let free: Vec<u8> = state.free.iter().flat_map(|i| i.to_le_bytes()).collect();
    let allocator =
        AllocatorRecord { generations: Bytes::owned(generations), live: Bytes::owned(live), free: Bytes::owned(free) };

    // Tables, in order, empty ones too (so table ids survive a round trip).
    let mut tables = Vec::with_capacity(world.storage.tables.len());
    for t in &world.storage.tables {
        let mut components = Vec::with_capacity(t.components().len());
        let mut columns = Vec::with_capacity(t.components().len());
        for (&cid, col) in t.components().iter().zip(t.columns()) {
            let (Some(pos), Some(codec)) = (positions[cid.index()], codecs[cid.index()]) else { continue };
            components.push(pos);
            columns.push(encode_column(col, comps.info(cid), codec, opts.change_ticks, &mut stats)?);
        }
        tables.push(TableRecord { components, entities: encode_entities(t.entities()), columns });
    }

    // Sparse sets holding values.
    let mut sparse = Vec::new();
    for (i, set) in world.storage.sparse.iter().enumerate() {
        let Some(set) = set.as_ref().filter(|s| !s.is_empty()) else { continue };
        let (Some(pos), Some(codec)) = (positions[i], codecs[i]) else { continue };
        let info = comps.info(crate::component::ComponentId(i as u32));
        let column = encode_column(set.column(), info, codec, opts.change_ticks, &mut stats)?;
        sparse.push(SparseRecord { component: pos, entities: encode_entities(set.entities()), column });
    }

    stats.tables = tables.iter().filter(|t| !t.entities.0.is_empty()).count();
    let body = Body {
        world_tick: world.change_tick(),
        catalog,
        allocator,
        tables,
        sparse,
        index_definitions: IndexSection {
            definitions: world
                .snapshot_index_definitions()
                .into_iter()
                .map(|d| IndexRecord {
                    name: Text(d.name.into()),
                    kind: Text(d.kind.into()),
                    component: Text(d.component.into()),
                    fields: d.fields.into_iter().map(|f| Text(f.into())).collect(),
                })
                .collect(),
            ..IndexSection::default()
        },
    };
    Ok((body, stats))
}

/// `(index, generation)` little-endian per entity.
///
/// On little-endian hosts that is exactly how `Entity` (`repr(C)`: index, then generation) is
/// laid out, so the slice is borrowed as it is.
pub(crate) fn encode_entities(es: &[Entity]) -> Bytes<'_> {
    if cfg!(target_endian = "little") {
        // SAFETY: `Entity` is `repr(C)` with two `u32` fields: 8 bytes, no padding, every byte
        // initialised; `u8` has alignment 1; the byte slice covers exactly the entity slice
        // and borrows it for the same lifetime.
        let bytes = unsafe { std::slice::from_raw_parts(es.as_ptr() as *const u8, std::mem::size_of_val(es)) };
        return Bytes::borrowed(bytes);
    }
    let mut out = Vec::with_capacity(es.len() * 8);
    for e in es {
        out.extend_from_slice(&e.index().to_le_bytes());
        out.extend_from_slice(&e.generation().to_le_bytes());
    }
    Bytes::owned(out)
}

fn ticks_bytes(ticks: &[u32]) -> Bytes<'static> {
    Bytes::owned(ticks.iter().flat_map(|t| t.to_le_bytes()).collect())
}

fn encode_column<'w>(
    col: &'w Column,
    info: &ComponentInfo,
    codec: Codec<'_>,
    ticks: bool,
    stats: &mut SaveStats,
) -> Result<ColumnRecord<'w>, SnapshotError> {
    let n = col.len();
    // Component data as the world holds it: every value, plus the text of its strings.
    stats.component_bytes += (n * info.layout().size()) as u64;
    let data = match codec {
        Codec::Tag => ColumnData::Empty,
        Codec::Bulk => {
            let bytes = col.bytes();
            ColumnData::Bulk(Bytes::borrowed(bytes))
        }
        Codec::Fields => {
            let mut runs = Vec::with_capacity(info.fields().len());
            for f in info.fields() {
                if f.ty == FieldType::String {
                    let mut lens = Vec::with_capacity(n * 4);
                    let mut data = Vec::new();
                    for row in 0..n {
                        // SAFETY: `row < len`; a String field holds an initialised String.
                        let s = unsafe { &*(col.get_ptr(row).add(f.offset) as *const String) };
                        let len = u32::try_from(s.len()).map_err(|_| SnapshotError::TooLarge {
                            what: format!("a string in field '{}.{}'", info.name(), f.name),
                        })?;
                        lens.extend_from_slice(&len.to_le_bytes());
                        data.extend_from_slice(s.as_bytes());
                    }
                    stats.component_bytes += data.len() as u64;
                    runs.push(FieldRun::Strings { lens: Bytes::owned(lens), data: Bytes::owned(data) });
                } else {
                    let w = wire_size(f.ty);
                    let mut out = vec![0u8; n * w];
                    for (row, dst) in out.chunks_exact_mut(w).enumerate() {
                        // SAFETY: `row < len`; a plain field is `w` initialised bytes (no
                        // padding inside) at its offset. Only those bytes are read, never the
                        // value's padding.
                        let src = unsafe { std::slice::from_raw_parts(col.get_ptr(row).add(f.offset), w) };
                        crate::snapshot::format::copy_le(f.ty, src, dst);
                    }
                    runs.push(FieldRun::Plain(Bytes::owned(out)));
                }
            }
            ColumnData::Fields(runs)
        }
        Codec::Opaque(serde) => {
            let mut lens = Vec::with_capacity(n * 4);
            let mut data = Vec::new();
            if n > 0 {
                let serde = serde.ok_or_else(|| SnapshotError::OpaqueWithoutSerde(vec![info.name().to_string()]))?;
                for row in 0..n {
                    let before = data.len();
                    // SAFETY: the row holds a valid value of the registered type.
                    unsafe { (serde.encode)(col.get_ptr(row), &mut data) }
                        .map_err(|message| SnapshotError::Serde { component: info.name().to_string(), message })?;
                    let len = u32::try_from(data.len() - before).map_err(|_| SnapshotError::TooLarge {
                        what: format!("a value of opaque component '{}'", info.name()),
                    })?;
                    lens.extend_from_slice(&len.to_le_bytes());
                }
            }
            ColumnData::Opaque { lens: Bytes::owned(lens), data: Bytes::owned(data) }
        }
    };
    let ticks =
        ticks.then(|| TickRecord { added: ticks_bytes(col.added_ticks()), changed: ticks_bytes(col.changed_ticks()) });
    Ok(ColumnRecord { data, ticks })
}
