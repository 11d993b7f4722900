//! World → body: the catalog, the allocator, and every column as byte runs.
//!
//! The body is written by hand in the layout bincode gives [`Body`](super::format::Body)
//! (the format's definition; a test checks the two agree byte for byte), as a list of
//! pieces: small encoded parts, byte runs borrowed from the world (plain columns, entity
//! columns, ticks), and runs to be encoded (the allocator, strings, fields of remapped
//! layouts). Every piece's length is known before anything is encoded, so a file is written
//! while the encoding is still going on, each run at its place; in memory the pieces are
//! copied once. The checksum is taken piece by piece on the way and combined in body order.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};

use crate::component::OpaqueSerde;
use crate::component::{ComponentId, ComponentInfo, FieldType, FieldValue};
use crate::entity::{Entities, Entity};
use crate::par;
use crate::snapshot::format::{
    DEFAULTS_SECTION_VERSION, FLAG_TICKS, FORMAT_VERSION, HEADER_LEN, Header, INDEX_SECTION_VERSION,
    INDEX_SECTION_VERSION_REFERENCES, entities_le, field_type_code, storage_code, u32s_le, wire_size,
};
use crate::snapshot::{SIZE_DIVISOR, SaveOptions, SaveStats, SnapshotError};
use crate::storage::{ArchetypeTable, Column};
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

/// Runs shorter than this are copied into the encoded parts instead of being pieces of their
/// own.
const INLINE_MAX: usize = 512;
/// Bodies at least this long are encoded, copied, checksummed and written on several
/// threads.
pub(super) const PARALLEL_BYTES: u64 = (1 << 20) / SIZE_DIVISOR as u64;
/// Chunk size for fusing the checksum with a copy (hot in cache in between).
const CHUNK: usize = 64 * 1024 / SIZE_DIVISOR;
/// While writing a long file, the system is asked to start writing to the disk after every
/// this many bytes.
const SYNC_EVERY: u64 = 8 << 20;

/// A byte run to write.
enum Run<'w> {
    Borrowed(&'w [u8]),
    Owned(Vec<u8>),
}

impl<'w> From<Cow<'w, [u8]>> for Run<'w> {
    fn from(c: Cow<'w, [u8]>) -> Run<'w> {
        match c {
            Cow::Borrowed(b) => Run::Borrowed(b),
            Cow::Owned(v) => Run::Owned(v),
        }
    }
}

impl Run<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Run::Borrowed(b) => b,
            Run::Owned(v) => v,
        }
    }
}

/// A piece of the body.
enum Piece<'w> {
    /// `parts[start..end]`: encoded lengths, codes, names and short runs.
    Parts(usize, usize),
    Run(Run<'w>),
    /// Output `out` of encoding job `work`, `len` bytes long.
    Pending {
        work: usize,
        out: usize,
        len: usize,
    },
}

/// Encoding left for later, filling [`Piece::Pending`] pieces.
enum Work<'w> {
    /// The allocator: a generation per index, live flags (two outputs).
    Allocator(&'w Entities),
    /// A string field: lengths and text (two outputs).
    Strings { col: &'w Column, offset: usize, text: usize },
    /// A plain field of a column written field by field (one output).
    Plain { col: &'w Column, offset: usize, ty: FieldType },
}

impl Work<'_> {
    /// Roughly how much work: bytes read and written.
    fn weight(&self) -> usize {
        match self {
            Work::Allocator(e) => e.capacity_used() * 5,
            Work::Strings { col, text, .. } => col.len() * 28 + text,
            Work::Plain { col, ty, .. } => col.len() * wire_size(*ty),
        }
    }

    fn run(&self) -> Vec<Vec<u8>> {
        match *self {
            Work::Allocator(e) => {
                let (gens, live) = e.snapshot_slots();
                vec![gens, live]
            }
            Work::Strings { col, offset, text } => {
                let n = col.len();
                let mut lens = Vec::with_capacity(n * 4);
                let mut data = Vec::with_capacity(text);
                for row in 0..n {
                    // SAFETY: `row < len`; a String field holds an initialised String.
                    let s = unsafe { &*(col.get_ptr(row).add(offset) as *const String) };
                    // Lengths were checked to fit a u32 when the body was laid out.
                    lens.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    data.extend_from_slice(s.as_bytes());
                }
                vec![lens, data]
            }
            Work::Plain { col, offset, ty } => {
                let w = wire_size(ty);
                let mut out = vec![0u8; col.len() * w];
                for (row, dst) in out.chunks_exact_mut(w).enumerate() {
                    // SAFETY: `row < len`; a plain field is `w` initialised bytes (no padding
                    // inside) at its offset. Only those bytes are read, never the value's
                    // padding.
                    let src = unsafe { std::slice::from_raw_parts(col.get_ptr(row).add(offset), w) };
                    crate::snapshot::format::copy_le(ty, src, dst);
                }
                vec![out]
            }
        }
    }
}

/// Writes the body's bincode layout: fixed-width little-endian integers, `u64` lengths,
/// `u32` enum variants, `u8` option tags and bools.
struct BodyWriter<'w> {
    parts: Vec<u8>,
    pieces: Vec<Piece<'w>>,
    /// Start of the encoded parts not yet in a piece.
    cut: usize,
    works: Vec<Work<'w>>,
}

impl<'w> BodyWriter<'w> {
    fn u8(&mut self, v: u8) {
        self.parts.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.parts.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.parts.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.parts.extend_from_slice(s.as_bytes());
    }
    fn close_parts(&mut self) {
        self.pieces.push(Piece::Parts(self.cut, self.parts.len()));
        self.cut = self.parts.len();
    }
    fn run(&mut self, run: Run<'w>) {
        let b = run.bytes();
        self.len(b.len());
        if b.len() < INLINE_MAX {
            self.parts.extend_from_slice(b);
            return;
        }
        self.close_parts();
        self.pieces.push(Piece::Run(run));
    }
    /// A run of `len` bytes that `work` (given as its outputs' lengths) produces later.
    fn work(&mut self, work: Work<'w>, lens: &[usize]) {
        let w = self.works.len();
        self.works.push(work);
        for (out, &len) in lens.iter().enumerate() {
            self.len(len);
            self.close_parts();
            self.pieces.push(Piece::Pending { work: w, out, len });
        }
    }
}

/// A world ready to be written: the body as pieces (borrowing the world's columns) and what
/// will be written.
pub(crate) struct Encoder<'w> {
    parts: Vec<u8>,
    pieces: Vec<Piece<'w>>,
    works: Vec<Work<'w>>,
    body_len: u64,
    flags: u32,
    pub(crate) stats: SaveStats,
}

fn crc_of<'a>(slices: impl Iterator<Item = &'a [u8]>) -> crc32fast::Hasher {
    let mut crc = crc32fast::Hasher::new();
    for s in slices {
        crc.update(s);
    }
    crc
}

fn internal(what: &str) -> SnapshotError {
    SnapshotError::Encode(format!("internal: {what}"))
}

/// Checks that the pieces written at offsets cover the body exactly, once each, and combines
/// their checksums in body order. The lengths were promised in the layout, so a gap or an
/// overlap is a bug of the encoder, reported rather than written.
///
/// An empty piece may start where another one does (an emptied table's string column, say):
/// sorting by start and then length puts it first, wherever the threads left it.
fn combine_piece_sums(
    mut sums: Vec<(u64, crc32fast::Hasher)>,
    body_start: u64,
    body_len: u64,
) -> Result<u32, SnapshotError> {
    sums.sort_unstable_by_key(|(start, crc)| (*start, crc.total_len()));
    let mut total = crc32fast::Hasher::new();
    let mut at = body_start;
    for (start, crc) in &sums {
        if *start != at {
            return Err(internal("a piece of the body is missing"));
        }
        at += crc.total_len();
        total.combine(crc);
    }
    if at != body_start + body_len {
        return Err(internal("the body's length"));
    }
    Ok(total.finalize())
}

/// Splits the body into about `n` spans of equal length (pieces cut where needed), each a
/// list of slices.
fn spans<'a>(all: impl Iterator<Item = &'a [u8]>, total: u64, n: usize) -> Vec<Vec<&'a [u8]>> {
    let target = (total / n as u64).max(1) as usize;
    let mut out = vec![Vec::new()];
    let mut filled = 0usize;
    for mut s in all {
        while !s.is_empty() {
            if filled >= target {
                out.push(Vec::new());
                filled = 0;
            }
            let (a, b) = s.split_at(s.len().min(target - filled));
            out.last_mut().expect("at least one span").push(a);
            filled += a.len();
            s = b;
        }
    }
    out
}

impl<'w> Encoder<'w> {
    pub(crate) fn new(world: &'w World, opts: &SaveOptions) -> Result<Encoder<'w>, SnapshotError> {
        lay_out(world, opts)
    }

    fn header(&self, crc: u32) -> [u8; HEADER_LEN] {
        Header { version: FORMAT_VERSION, flags: self.flags, body_len: self.body_len, body_crc: crc }.to_bytes()
    }

    fn parallel(&self) -> bool {
        self.body_len >= PARALLEL_BYTES
    }

    /// Runs the encoding left (on several threads for long bodies) and puts its outputs in
    /// place of the pending pieces.
    fn finish_encoding(&mut self) -> Result<(), SnapshotError> {
        let works = std::mem::take(&mut self.works);
        if works.is_empty() {
            return Ok(());
        }
        let mut outs: Vec<Vec<Vec<u8>>> = if self.parallel() {
            par::heaviest_first(works, Work::weight, |w| Ok::<_, ()>(w.run())).map_err(|_| internal("encoding"))?
        } else {
            works.iter().map(Work::run).collect()
        };
        for p in &mut self.pieces {
            if let Piece::Pending { work, out, len } = *p {
                let bytes = std::mem::take(&mut outs[work][out]);
                if bytes.len() != len {
                    return Err(internal("an encoded run's length"));
                }
                *p = Piece::Run(Run::Owned(bytes));
            }
        }
        Ok(())
    }

    /// The bytes of each piece, in order (pending pieces must be encoded first).
    fn slices(&self) -> impl Iterator<Item = &[u8]> + Clone + '_ {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Parts(s, e) => &self.parts[*s..*e],
                Piece::Run(r) => r.bytes(),
                Piece::Pending { .. } => &[],
            })
            .filter(|b| !b.is_empty())
    }

    /// The body's checksum (on several threads for long bodies).
    fn crc(&self) -> u32 {
        if !self.parallel() {
            return crc_of(self.slices()).finalize();
        }
        let spans = spans(self.slices(), self.body_len, par::threads().max(2));
        let parts: Vec<crc32fast::Hasher> = par::map(spans, |s| crc_of(s.iter().copied()));
        let mut total = crc32fast::Hasher::new();
        for p in &parts {
            total.combine(p);
        }
        total.finalize()
    }

    /// Writes header and body to a writer; returns the bytes written.
    pub(crate) fn write_to(&mut self, mut w: impl Write) -> Result<u64, SnapshotError> {
        self.finish_encoding()?;
        let crc = self.crc();
        w.write_all(&self.header(crc))?;
        for s in self.slices() {
            w.write_all(s)?;
        }
        w.flush()?;
        self.stats.bytes = HEADER_LEN as u64 + self.body_len;
        Ok(self.stats.bytes)
    }

    /// Writes header and body to a new file. Long bodies are written by two threads at once,
    /// each run at its place: one writes the runs borrowed from the world while the other
    /// encodes the rest and writes it; both checksum what they write. A third thread asks
    /// the system to start writing to the disk (`sync_data`) as the file grows, so the
    /// caller's final sync waits only for the tail. The header goes last.
    pub(crate) fn write_file(&mut self, f: &mut File) -> Result<u64, SnapshotError> {
        if !self.parallel() || !POSITIONED_WRITES {
            self.finish_encoding()?;
            let crc = self.crc();
            let mut w: &File = f;
            w.write_all(&self.header(crc))?;
            for s in self.slices() {
                w.write_all(s)?;
            }
        } else {
            let f: &File = f;
            // Where each piece goes.
            let mut at = HEADER_LEN as u64;
            let mut placed: Vec<(u64, usize)> = Vec::with_capacity(self.pieces.len());
            for p in &self.pieces {
                let len = match p {
                    Piece::Parts(s, e) => e - s,
                    Piece::Run(r) => r.bytes().len(),
                    Piece::Pending { len, .. } => *len,
                };
                placed.push((at, len));
                at += len as u64;
            }
            // Per encoding job, where its outputs go.
            let mut targets: Vec<Vec<u64>> = self.works.iter().map(|_| Vec::new()).collect();
            for (p, &(at, _)) in self.pieces.iter().zip(&placed) {
                if let Piece::Pending { work, .. } = *p {
                    targets[work].push(at);
                }
            }
            let works = std::mem::take(&mut self.works);
            let jobs: Vec<(Work<'_>, Vec<u64>)> = works.into_iter().zip(targets).collect();
            let sums = std::thread::scope(|scope| -> Result<Vec<(u64, crc32fast::Hasher)>, SnapshotError> {
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                let syncer = scope.spawn(move || -> io::Result<()> {
                    while rx.recv().is_ok() {
                        while rx.try_recv().is_ok() {}
                        f.sync_data()?;
                    }
                    Ok(())
                });
                let (ready, encoded) = par::join(
                    || -> io::Result<Vec<(u64, crc32fast::Hasher)>> {
                        let mut sums = Vec::with_capacity(self.pieces.len());
                        let mut since_sync = 0u64;
                        for (p, &(at, len)) in self.pieces.iter().zip(&placed) {
                            let bytes = match p {
                                Piece::Parts(s, e) => &self.parts[*s..*e],
                                Piece::Run(r) => r.bytes(),
                                Piece::Pending { .. } => continue,
                            };
                            let mut crc = crc32fast::Hasher::new();
                            crc.update(bytes);
                            write_all_at(f, bytes, at)?;
                            sums.push((at, crc));
                            since_sync += len as u64;
                            if since_sync >= SYNC_EVERY {
                                since_sync = 0;
                                let _ = tx.send(());
                            }
                        }
                        drop(tx);
                        Ok(sums)
                    },
                    || {
                        par::heaviest_first(
                            jobs,
                            |(w, _)| w.weight(),
                            |(w, at)| -> io::Result<Vec<(u64, crc32fast::Hasher)>> {
                                let mut sums = Vec::with_capacity(at.len());
                                for (bytes, at) in w.run().iter().zip(at) {
                                    let mut crc = crc32fast::Hasher::new();
                                    crc.update(bytes);
                                    write_all_at(f, bytes, at)?;
                                    sums.push((at, crc));
                                }
                                Ok(sums)
                            },
                        )
                    },
                );
                let mut sums = ready?;
                for s in encoded.map_err(|e| e.map_or_else(|| internal("encoding"), SnapshotError::Io))? {
                    sums.extend(s);
                }
                syncer.join().map_err(|_| internal("the sync thread panicked"))??;
                Ok(sums)
            })?;
            let crc = combine_piece_sums(sums, HEADER_LEN as u64, self.body_len)?;
            write_all_at(f, &self.header(crc), 0)?;
        }
        self.stats.bytes = HEADER_LEN as u64 + self.body_len;
        Ok(self.stats.bytes)
    }

    /// The whole snapshot in one buffer, the checksum taken while copying.
    pub(crate) fn into_vec(mut self) -> Result<(Vec<u8>, SaveStats), SnapshotError> {
        self.finish_encoding()?;
        let total = HEADER_LEN
            + usize::try_from(self.body_len)
                .map_err(|_| SnapshotError::TooLarge { what: "the snapshot".to_string() })?;
        let crc;
        let mut out;
        if !self.parallel() {
            out = Vec::with_capacity(total);
            out.extend_from_slice(&[0u8; HEADER_LEN]);
            let mut h = crc32fast::Hasher::new();
            for s in self.slices() {
                for c in s.chunks(CHUNK) {
                    out.extend_from_slice(c);
                    h.update(c);
                }
            }
            crc = h.finalize();
        } else {
            // Zeroed memory this large comes fresh from the system, already zero: no pass.
            out = vec![0u8; total];
            let spans = spans(self.slices(), self.body_len, par::threads().max(2));
            let mut dsts = Vec::with_capacity(spans.len());
            let mut rest = &mut out[HEADER_LEN..];
            for s in &spans {
                let len = s.iter().map(|x| x.len()).sum();
                let (a, b) = rest.split_at_mut(len);
                dsts.push(a);
                rest = b;
            }
            let parts: Vec<crc32fast::Hasher> = par::map(spans.into_iter().zip(dsts).collect(), |(src, dst)| {
                let mut h = crc32fast::Hasher::new();
                let mut at = 0;
                for s in src {
                    for c in s.chunks(CHUNK) {
                        dst[at..at + c.len()].copy_from_slice(c);
                        h.update(&dst[at..at + c.len()]);
                        at += c.len();
                    }
                }
                h
            });
            let mut h = crc32fast::Hasher::new();
            for p in &parts {
                h.combine(p);
            }
            crc = h.finalize();
        }
        debug_assert_eq!(out.len(), total);
        out[..HEADER_LEN].copy_from_slice(&self.header(crc));
        let mut stats = self.stats;
        stats.bytes = out.len() as u64;
        Ok((out, stats))
    }
}

/// Whether this platform writes files with positioned writes (otherwise in order).
const POSITIONED_WRITES: bool = cfg!(any(unix, windows));

#[cfg(unix)]
fn write_all_at(f: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, bytes, at)
}

#[cfg(windows)]
fn write_all_at(f: &File, mut bytes: &[u8], mut at: u64) -> io::Result<()> {
    while !bytes.is_empty() {
        match std::os::windows::fs::FileExt::seek_write(f, bytes, at) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = &bytes[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn write_all_at(_: &File, _: &[u8], _: u64) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "positioned writes"))
}

/// Lays the body out: the catalog, the allocator, tables and sparse sets, every length known,
/// encoding left for later where it takes work.
fn lay_out<'w>(world: &'w World, opts: &SaveOptions) -> Result<Encoder<'w>, SnapshotError> {
    let comps = &world.components;
    let rows = !opts.schema_only;
    let mut stats = SaveStats { entities: if rows { world.len() } else { 0 }, ..SaveStats::default() };

    // Catalog: every component except opaque ones skipped for lack of serde functions.
    let mut codecs: Vec<Option<Codec<'_>>> = Vec::with_capacity(comps.len());
    let mut positions: Vec<Option<u32>> = Vec::with_capacity(comps.len());
    let mut catalog: Vec<&ComponentInfo> = Vec::with_capacity(comps.len());
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
        catalog.push(info);
    }
    if !missing.is_empty() {
        return Err(SnapshotError::OpaqueWithoutSerde(missing));
    }

    // The body, in [`Body`]'s field order.
    let mut w = BodyWriter { parts: Vec::with_capacity(1024), pieces: Vec::new(), cut: 0, works: Vec::new() };
    w.u32(world.change_tick());
    w.len(catalog.len());
    for info in &catalog {
        w.str(info.name());
        w.u8(storage_code(info.storage()));
        w.u8(info.is_opaque() as u8);
        w.u64(info.layout().size() as u64);
        w.len(info.fields().len());
        for f in info.fields() {
            w.str(&f.name);
            w.u8(field_type_code(f.ty));
            w.u64(f.offset as u64);
        }
    }
    if rows {
        let slots = world.entities.capacity_used();
        w.work(Work::Allocator(&world.entities), &[slots * 4, slots.div_ceil(8)]);
        w.run(u32s(world.entities.free_list()));
    } else {
        // An allocator that never issued an index: generations, live flags, free list.
        for _ in 0..3 {
            w.run(u32s(&[]));
        }
    }
    let ticks = opts.change_ticks;
    let tables: Vec<&ArchetypeTable> =
        if rows { world.storage.tables.iter().filter(|t| !world.is_retired_table(t)).collect() } else { Vec::new() };
    w.len(tables.len());
    for t in tables {
        let present: Vec<(ComponentId, &Column)> =
            t.components().iter().copied().zip(t.columns()).filter(|(c, _)| positions[c.index()].is_some()).collect();
        w.len(present.len());
        for (c, _) in &present {
            w.u32(positions[c.index()].expect("present components are in the catalog"));
        }
        w.run(encode_entities(t.entities()));
        w.len(present.len());
        for (c, col) in present {
            let codec = codecs[c.index()].expect("present components have a codec");
            stats.component_bytes += column(&mut w, col, comps.info(c), codec, ticks)?;
        }
        stats.tables += !t.is_empty() as usize;
    }
    let sparse: Vec<_> = world
        .storage
        .sparse
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.as_ref().filter(|s| rows && !s.is_empty())?, positions[i]?, codecs[i]?)))
        .collect();
    w.len(sparse.len());
    for (i, set, pos, codec) in sparse {
        w.u32(pos);
        w.run(encode_entities(set.entities()));
        let info = comps.info(ComponentId(i as u32));
        stats.component_bytes += column(&mut w, set.column(), info, codec, ticks)?;
    }
    let defs = world.snapshot_index_definitions();
    let with_references = defs.iter().any(|d| d.kind == super::REFERENCE_KIND);
    w.u32(if with_references { INDEX_SECTION_VERSION_REFERENCES } else { INDEX_SECTION_VERSION });
    w.len(defs.len());
    for d in &defs {
        w.str(&d.name);
        w.str(&d.kind);
        w.str(&d.component);
        w.len(d.fields.len());
        for f in &d.fields {
            w.str(f);
        }
    }
    let schedule = world.schedule_record();
    w.u32(super::format::SCHEDULE_SECTION_VERSION);
    w.len(schedule.systems.len());
    for s in &schedule.systems {
        w.str(&s.name);
        w.str(&s.phase);
        for names in [&s.after, &s.before] {
            w.len(names.len());
            for n in names {
                w.str(n);
            }
        }
        match &s.body {
            crate::SystemBody::Text(text) => {
                w.u8(0);
                w.str(text);
            }
            crate::SystemBody::Rust => {
                w.u8(1);
                w.str("");
            }
        }
    }
    w.u32(schedule.fixed_hz);
    w.u64(schedule.accumulator_ns);
    w.u64(schedule.tick);
    w.u64(schedule.time_ns);
    // Field defaults, by catalog positions.
    let defaults: Vec<(u32, u32, &FieldValue)> = catalog
        .iter()
        .enumerate()
        .flat_map(|(c, info)| {
            (0..info.fields().len()).filter_map(move |f| Some((c as u32, f as u32, info.field_default(f)?)))
        })
        .collect();
    w.u32(DEFAULTS_SECTION_VERSION);
    w.len(defaults.len());
    for (c, f, value) in defaults {
        w.u32(c);
        w.u32(f);
        match value {
            FieldValue::Plain(bytes, n) => {
                w.len(*n as usize);
                w.parts.extend_from_slice(&bytes[..*n as usize]);
            }
            FieldValue::Str(s) => w.str(s),
        }
    }
    w.close_parts();
    let BodyWriter { parts, pieces, works, .. } = w;
    let body_len = pieces
        .iter()
        .map(|p| match p {
            Piece::Parts(s, e) => (e - s) as u64,
            Piece::Run(r) => r.bytes().len() as u64,
            Piece::Pending { len, .. } => *len as u64,
        })
        .sum();
    Ok(Encoder { parts, pieces, works, body_len, flags: if ticks { FLAG_TICKS } else { 0 }, stats })
}

/// `u32`s little-endian (see [`u32s_le`]).
fn u32s(v: &[u32]) -> Run<'_> {
    Run::from(u32s_le(v))
}

/// `(index, generation)` little-endian per entity (see [`entities_le`]).
fn encode_entities(es: &[Entity]) -> Run<'_> {
    Run::from(entities_le(es))
}

/// Lays out one column record; returns its component data as the world holds it (every
/// value, plus the text of its strings).
fn column<'w>(
    w: &mut BodyWriter<'w>,
    col: &'w Column,
    info: &ComponentInfo,
    codec: Codec<'w>,
    ticks: bool,
) -> Result<u64, SnapshotError> {
    let n = col.len();
    let mut component_bytes = (n * info.layout().size()) as u64;
    match codec {
        Codec::Tag => w.u32(0),
        Codec::Bulk => {
            w.u32(1);
            // SAFETY: the bulk codec is chosen only for components whose fields tile the
            // value with no gap (`is_bulk`): every byte is initialised plain data.
            w.run(Run::Borrowed(unsafe { col.bytes() }));
        }
        Codec::Fields => {
            w.u32(2);
            w.len(info.fields().len());
            for f in info.fields() {
                if f.ty == FieldType::String {
                    let mut text = 0usize;
                    for row in 0..n {
                        // SAFETY: `row < len`; a String field holds an initialised String.
                        let s = unsafe { &*(col.get_ptr(row).add(f.offset) as *const String) };
                        if u32::try_from(s.len()).is_err() {
                            return Err(SnapshotError::TooLarge {
                                what: format!("a string in field '{}.{}'", info.name(), f.name),
                            });
                        }
                        text += s.len();
                    }
                    component_bytes += text as u64;
                    w.u32(1);
                    w.work(Work::Strings { col, offset: f.offset, text }, &[n * 4, text]);
                } else {
                    w.u32(0);
                    w.work(Work::Plain { col, offset: f.offset, ty: f.ty }, &[n * wire_size(f.ty)]);
                }
            }
        }
        Codec::Opaque(serde) => {
            // Blob lengths are only known once encoded: encoded here.
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
            w.u32(3);
            w.run(Run::Owned(lens));
            w.run(Run::Owned(data));
        }
    }
    if ticks {
        w.u8(1);
        match col.added_ticks() {
            crate::storage::AddedView::Rows(ticks) => w.run(u32s(ticks)),
            shared => w.run(Run::Owned(shared.iter().flat_map(|t| t.to_le_bytes()).collect())),
        }
        w.run(u32s(col.changed_ticks()));
    } else {
        w.u8(0);
    }
    Ok(component_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(bytes: &[u8]) -> crc32fast::Hasher {
        let mut h = crc32fast::Hasher::new();
        h.update(bytes);
        h
    }

    #[test]
    fn piece_sums_combine_in_body_order_whatever_order_the_threads_left() {
        let whole = crc32fast::hash(b"abcdefgh");
        // An empty piece starting where a full one does, listed after it.
        let sums = vec![(10, sum(b"efgh")), (6, sum(b"abcd")), (6, sum(b"")), (10, sum(b""))];
        assert_eq!(combine_piece_sums(sums, 6, 8).unwrap(), whole);
        let sums = vec![(6, sum(b"")), (10, sum(b"efgh")), (6, sum(b"abcd"))];
        assert_eq!(combine_piece_sums(sums, 6, 8).unwrap(), whole);
    }

    #[test]
    fn gaps_overlaps_and_short_bodies_are_reported() {
        let gap = vec![(6, sum(b"abc")), (10, sum(b"efgh"))];
        assert!(combine_piece_sums(gap, 6, 8).is_err());
        let overlap = vec![(6, sum(b"abcde")), (10, sum(b"efgh"))];
        assert!(combine_piece_sums(overlap, 6, 8).is_err());
        let short = vec![(6, sum(b"abcd"))];
        assert!(combine_piece_sums(short, 6, 8).is_err());
    }
}
