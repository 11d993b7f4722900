//! Reading a snapshot body: a hand-written decoder of the body's bincode layout (fixed-width
//! little-endian integers, `u64` lengths, `u32` enum variants, `u8` option tags and bools),
//! over bytes in memory or a file, and the checksum of the body taken along the way.
//!
//! Decoding produces the same [`Body`] as bincode would, except that long byte runs are left
//! where they are ([`Bytes::Deferred`]): the builder copies them straight into their columns
//! (from memory, or from the file with positioned reads) and takes their checksum while they
//! are hot in the cache. Everything else is checksummed while it is decoded. [`CrcCheck`]
//! puts the pieces together in body order and compares the result with the header's.
//!
//! Nothing here allocates by a claimed length: every length is checked against the bytes
//! that remain before anything is reserved for it.

use std::borrow::Cow;
use std::fs::File;
use std::io;

use crate::snapshot::format::{
    AllocatorRecord, Body, Bytes, ColumnData, ColumnRecord, ComponentRecord, DefaultRecord, DefaultsSection, Deferred,
    FieldRecord, FieldRun, IndexRecord, IndexSection, ScheduleSection, SparseRecord, SystemEntry, TableRecord, Text,
    TickRecord,
};
use crate::snapshot::{SIZE_DIVISOR, SnapshotError};

/// Runs at least this long are deferred to the builder.
pub(crate) const DEFER_MIN: usize = 128 * 1024 / SIZE_DIVISOR;
/// Chunk size for copying and checksumming deferred runs (a multiple of every row and
/// scalar size the builder streams: 8-byte entities, 4-byte generations and ticks).
pub(crate) const CHUNK: usize = 128 * 1024 / SIZE_DIVISOR;
/// Bytes a file is read in while decoding (at least [`DEFER_MIN`]).
const WINDOW: usize = 256 * 1024 / SIZE_DIVISOR;

/// Test knobs: thresholds lowered so that small worlds take the deferred, file and parallel
/// paths (set per test thread; the decisions are made on the loading thread).
#[cfg(test)]
pub(crate) mod knobs {
    use std::cell::Cell;
    thread_local! {
        /// Overrides [`super::DEFER_MIN`].
        pub(crate) static DEFER_MIN: Cell<Option<usize>> = const { Cell::new(None) };
        /// Overrides the size up to which files are read into memory whole.
        pub(crate) static SMALL_FILE: Cell<Option<u64>> = const { Cell::new(None) };
        /// Overrides the amount of work from which loads use several threads.
        pub(crate) static PARALLEL_BYTES: Cell<Option<usize>> = const { Cell::new(None) };
    }
}

/// Runs at least this long are deferred (see [`DEFER_MIN`]).
fn defer_min() -> usize {
    #[cfg(test)]
    if let Some(v) = knobs::DEFER_MIN.with(|c| c.get()) {
        return v;
    }
    DEFER_MIN
}

fn undecodable(what: impl std::fmt::Display) -> SnapshotError {
    SnapshotError::Corrupt(format!("undecodable body: {what}"))
}

/// Where the body is.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    /// In memory.
    Mem(&'a [u8]),
    /// In a file, after the header: read with positioned reads, so several threads can read
    /// their runs at once.
    File {
        /// The file.
        file: &'a File,
        /// Offset of the body in the file.
        base: u64,
        /// Length of the body.
        len: u64,
    },
}

impl Input<'_> {
    /// Length of the body.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Input::Mem(b) => b.len() as u64,
            Input::File { len, .. } => *len,
        }
    }

    /// Copies body bytes `at..at + dst.len()`, which must lie inside the body.
    pub(crate) fn read_at(&self, at: u64, dst: &mut [u8]) -> io::Result<()> {
        match self {
            Input::Mem(b) => {
                let start = usize::try_from(at).map_err(|_| io::ErrorKind::UnexpectedEof)?;
                let src = b.get(start..start.saturating_add(dst.len())).ok_or(io::ErrorKind::UnexpectedEof)?;
                dst.copy_from_slice(src);
                Ok(())
            }
            Input::File { file, base, .. } => read_exact_at(file, dst, base + at),
        }
    }

    /// The CRC-32 of the whole body, read afresh (the error path's check).
    pub(crate) fn body_crc(&self) -> io::Result<u32> {
        match self {
            Input::Mem(b) => Ok(crc32fast::hash(b)),
            Input::File { len, .. } => {
                let mut crc = crc32fast::Hasher::new();
                let mut buf = vec![0u8; CHUNK];
                let mut at = 0;
                while at < *len {
                    let n = (*len - at).min(CHUNK as u64) as usize;
                    self.read_at(at, &mut buf[..n])?;
                    crc.update(&buf[..n]);
                    at += n as u64;
                }
                Ok(crc.finalize())
            }
        }
    }

    /// Streams a run to `f` in chunks of at most [`CHUNK`] bytes (every chunk but the last
    /// exactly `CHUNK`), checksumming it when its checksum was deferred. Memory runs are
    /// handed out in place; file runs go through one small buffer.
    pub(crate) fn stream(
        &self,
        run: &Bytes<'_>,
        sums: &mut Sums,
        mut f: impl FnMut(&[u8]) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        match run {
            Bytes::Mem(b) => {
                for c in b.chunks(CHUNK) {
                    f(c)?;
                }
                Ok(())
            }
            Bytes::Deferred(d) => {
                let mut crc = crc32fast::Hasher::new();
                match d.mem {
                    Some(b) => {
                        for c in b.chunks(CHUNK) {
                            crc.update(c);
                            f(c)?;
                        }
                    }
                    None => {
                        let mut buf = vec![0u8; d.len.min(CHUNK)];
                        let mut done = 0usize;
                        while done < d.len {
                            let n = (d.len - done).min(CHUNK);
                            self.read_at(d.at + done as u64, &mut buf[..n])?;
                            crc.update(&buf[..n]);
                            f(&buf[..n])?;
                            done += n;
                        }
                    }
                }
                sums.push((d.slot, crc));
                Ok(())
            }
        }
    }

    /// A run's bytes in memory: borrowed when they are, read from the file otherwise
    /// (checksummed when deferred).
    pub(crate) fn bytes<'r>(&self, run: &'r Bytes<'_>, sums: &mut Sums) -> Result<Cow<'r, [u8]>, SnapshotError> {
        match run {
            Bytes::Mem(b) => Ok(Cow::Borrowed(b)),
            Bytes::Deferred(d) => match d.mem {
                Some(b) => {
                    sums.push((d.slot, hasher_of(b)));
                    Ok(Cow::Borrowed(b))
                }
                None => {
                    // The length was checked against the file's length while decoding.
                    let mut v = Vec::with_capacity(d.len);
                    self.stream(run, sums, |c| {
                        v.extend_from_slice(c);
                        Ok(())
                    })?;
                    Ok(Cow::Owned(v))
                }
            },
        }
    }
}

fn hasher_of(b: &[u8]) -> crc32fast::Hasher {
    let mut h = crc32fast::Hasher::new();
    h.update(b);
    h
}

#[cfg(unix)]
fn read_exact_at(file: &File, dst: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, dst, at)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut dst: &mut [u8], mut at: u64) -> io::Result<()> {
    while !dst.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, dst, at) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                dst = &mut dst[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_exact_at(_: &File, _: &mut [u8], _: u64) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "positioned reads"))
}

/// Whether this platform reads files with positioned reads (otherwise files are read into
/// memory whole).
pub(crate) const POSITIONED_READS: bool = cfg!(any(unix, windows));

/// Checksums of deferred runs taken by the builder: `(slot, state)`.
pub(crate) type Sums = Vec<(u32, crc32fast::Hasher)>;

/// One piece of the body's checksum, in body order.
enum Seg {
    /// Bytes checksummed while decoding.
    Decoded(crc32fast::Hasher),
    /// A deferred run.
    Run(u32),
}

/// The body's checksum, assembled from what the decoder and the builder read.
pub(crate) struct CrcCheck {
    segs: Vec<Seg>,
    /// Per deferred run: where it is, and its checksum once taken.
    runs: Vec<(u64, usize, Option<crc32fast::Hasher>)>,
    expected: u32,
}

impl CrcCheck {
    /// Records checksums the builder took.
    pub(crate) fn add(&mut self, sums: Sums) {
        for (slot, h) in sums {
            if let Some(r) = self.runs.get_mut(slot as usize) {
                r.2 = Some(h);
            }
        }
    }

    /// Takes the checksum of the runs the builder did not read, and compares the whole with
    /// the header's.
    pub(crate) fn verify(mut self, input: &Input<'_>) -> Result<(), SnapshotError> {
        let mut buf = Vec::new();
        for (at, len, h) in &mut self.runs {
            if h.is_none() {
                let mut crc = crc32fast::Hasher::new();
                match input {
                    Input::Mem(b) => crc.update(&b[*at as usize..*at as usize + *len]),
                    Input::File { .. } => {
                        buf.resize(CHUNK, 0);
                        let mut done = 0;
                        while done < *len {
                            let n = (*len - done).min(CHUNK);
                            input.read_at(*at + done as u64, &mut buf[..n])?;
                            crc.update(&buf[..n]);
                            done += n;
                        }
                    }
                }
                *h = Some(crc);
            }
        }
        let mut total: Option<crc32fast::Hasher> = None;
        for s in &self.segs {
            let h = match s {
                Seg::Decoded(h) => h,
                Seg::Run(slot) => self.runs[*slot as usize]
                    .2
                    .as_ref()
                    .ok_or_else(|| SnapshotError::Corrupt("internal: a run's checksum is missing".to_string()))?,
            };
            match &mut total {
                None => total = Some(h.clone()),
                Some(t) => t.combine(h),
            }
        }
        if total.map_or(0, |t| t.finalize()) != self.expected {
            return Err(SnapshotError::ChecksumMismatch);
        }
        Ok(())
    }
}

/// Decodes a body. Call [`Parser::body`], then [`Parser::finish`].
pub(crate) struct Parser<'a> {
    input: Input<'a>,
    /// The body, when in memory.
    mem: &'a [u8],
    len: u64,
    /// Bytes consumed.
    pos: u64,
    /// File input: body bytes `win_at..win_at + win.len()`.
    win: Vec<u8>,
    win_at: u64,
    /// Checksum of decoded bytes since the last deferred run; bytes from `crc_from` to `pos`
    /// are not in it yet.
    crc: crc32fast::Hasher,
    crc_from: u64,
    segs: Vec<Seg>,
    runs: Vec<(u64, usize, Option<crc32fast::Hasher>)>,
    /// Runs at least this long are deferred.
    defer: usize,
    /// Whether the body has the schedule section (format version 2 and later).
    with_schedule: bool,
    /// Whether the body ends with the field defaults section (format version 3 and later).
    with_defaults: bool,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(input: Input<'a>) -> Parser<'a> {
        Parser {
            input,
            mem: match input {
                Input::Mem(b) => b,
                Input::File { .. } => &[],
            },
            len: input.len(),
            pos: 0,
            win: Vec::new(),
            win_at: 0,
            crc: crc32fast::Hasher::new(),
            crc_from: 0,
            segs: Vec::new(),
            runs: Vec::new(),
            defer: defer_min(),
            with_schedule: true,
            with_defaults: true,
        }
    }

    /// A parser of a body of format `version` (version 1 has no schedule section, versions
    /// before 3 no defaults section).
    pub(crate) fn for_version(input: Input<'a>, version: u32) -> Parser<'a> {
        Parser { with_schedule: version >= 2, with_defaults: version >= 3, ..Parser::new(input) }
    }

    /// A parser that defers nothing: every run is in memory in the result (memory input).
    #[cfg(test)]
    pub(crate) fn eager(input: Input<'a>) -> Parser<'a> {
        Parser { defer: usize::MAX, ..Parser::new(input) }
    }

    fn remaining(&self) -> u64 {
        self.len - self.pos
    }

    /// Checksums the decoded bytes `crc_from..pos` (still in memory or in the window).
    fn flush_crc(&mut self) {
        if self.crc_from < self.pos {
            let (from, to) = (self.crc_from, self.pos);
            match self.input {
                Input::Mem(b) => self.crc.update(&b[from as usize..to as usize]),
                Input::File { .. } => {
                    let s = (from - self.win_at) as usize;
                    let e = (to - self.win_at) as usize;
                    self.crc.update(&self.win[s..e]);
                }
            }
        }
        self.crc_from = self.pos;
    }

    /// The next `n` bytes, consumed.
    fn take(&mut self, n: usize) -> Result<&[u8], SnapshotError> {
        if (n as u64) > self.remaining() {
            return Err(undecodable("unexpected end of the body"));
        }
        let at = self.pos;
        self.pos += n as u64;
        match self.input {
            Input::Mem(b) => Ok(&b[at as usize..at as usize + n]),
            Input::File { .. } => {
                let end = at + n as u64;
                if at < self.win_at || end > self.win_at + self.win.len() as u64 {
                    // Checksum what the old window still holds, then read a new one.
                    self.pos = at;
                    self.flush_crc();
                    self.pos = end;
                    let size = (self.len - at).min(n.max(WINDOW) as u64) as usize;
                    self.win.resize(size, 0);
                    self.win_at = at;
                    self.input.read_at(at, &mut self.win).map_err(SnapshotError::Io)?;
                }
                let s = (at - self.win_at) as usize;
                Ok(&self.win[s..s + n])
            }
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], SnapshotError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, SnapshotError> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, SnapshotError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, SnapshotError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn bool(&mut self) -> Result<bool, SnapshotError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(undecodable(format!("invalid bool {b}"))),
        }
    }

    /// A length prefix of something at least `min` bytes per element long, checked against
    /// what remains.
    fn len(&mut self, min: u64) -> Result<usize, SnapshotError> {
        let n = self.u64()?;
        if n.saturating_mul(min.max(1)) > self.remaining() {
            return Err(undecodable(format!("a length of {n} exceeds the body")));
        }
        usize::try_from(n).map_err(|_| undecodable("a length exceeds the address space"))
    }

    /// A sequence; elements are decoded one by one, so the vector grows with what is there.
    fn seq<T>(
        &mut self,
        min: u64,
        mut f: impl FnMut(&mut Self) -> Result<T, SnapshotError>,
    ) -> Result<Vec<T>, SnapshotError> {
        let n = self.len(min)?;
        let mut v = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            v.push(f(self)?);
        }
        Ok(v)
    }

    fn bytes(&mut self) -> Result<Bytes<'a>, SnapshotError> {
        let n = self.len(1)?;
        let in_mem = matches!(self.input, Input::Mem(_));
        if n >= self.defer {
            // Left for the builder: close the decoded piece of the checksum, skip the run.
            self.flush_crc();
            let done = std::mem::take(&mut self.crc);
            self.segs.push(Seg::Decoded(done));
            let at = self.pos;
            let slot = self.runs.len() as u32;
            self.runs.push((at, n, None));
            self.segs.push(Seg::Run(slot));
            self.pos += n as u64;
            self.crc_from = self.pos;
            let mem = in_mem.then(|| &self.mem[at as usize..at as usize + n]);
            return Ok(Bytes::Deferred(Deferred { at, len: n, slot, mem }));
        }
        if in_mem {
            return Ok(Bytes::Mem(Cow::Borrowed(self.take_mem(n)?)));
        }
        Ok(Bytes::Mem(Cow::Owned(self.take(n)?.to_vec())))
    }

    /// The next `n` bytes of a body in memory, borrowed for the input's lifetime.
    fn take_mem(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let at = self.pos as usize;
        self.take(n)?;
        let mem: &'a [u8] = self.mem;
        Ok(&mem[at..at + n])
    }

    fn text(&mut self) -> Result<Text<'a>, SnapshotError> {
        let n = self.len(1)?;
        let not_utf8 = || undecodable("a string is not UTF-8");
        if matches!(self.input, Input::Mem(_)) {
            let b = self.take_mem(n)?;
            return Ok(Text(Cow::Borrowed(std::str::from_utf8(b).map_err(|_| not_utf8())?)));
        }
        let b = self.take(n)?;
        Ok(Text(Cow::Owned(std::str::from_utf8(b).map_err(|_| not_utf8())?.to_string())))
    }

    fn variant(&mut self, count: u32, what: &str) -> Result<u32, SnapshotError> {
        let v = self.u32()?;
        if v >= count {
            return Err(undecodable(format!("unknown {what} variant {v}")));
        }
        Ok(v)
    }

    fn column(&mut self) -> Result<ColumnRecord<'a>, SnapshotError> {
        let data = match self.variant(4, "column data")? {
            0 => ColumnData::Empty,
            1 => ColumnData::Bulk(self.bytes()?),
            2 => ColumnData::Fields(self.seq(12, |p| {
                Ok(match p.variant(2, "field run")? {
                    0 => FieldRun::Plain(p.bytes()?),
                    _ => FieldRun::Strings { lens: p.bytes()?, data: p.bytes()? },
                })
            })?),
            _ => ColumnData::Opaque { lens: self.bytes()?, data: self.bytes()? },
        };
        let ticks = match self.u8()? {
            0 => None,
            1 => Some(TickRecord { added: self.bytes()?, changed: self.bytes()? }),
            t => return Err(undecodable(format!("invalid option tag {t}"))),
        };
        Ok(ColumnRecord { data, ticks })
    }

    /// Decodes the whole body (in bincode's field order of [`Body`]).
    pub(crate) fn body(&mut self) -> Result<Body<'a>, SnapshotError> {
        let world_tick = self.u32()?;
        let catalog = self.seq(26, |p| {
            Ok(ComponentRecord {
                name: p.text()?,
                storage: p.u8()?,
                opaque: p.bool()?,
                size: p.u64()?,
                fields: p.seq(17, |p| Ok(FieldRecord { name: p.text()?, ty: p.u8()?, offset: p.u64()? }))?,
            })
        })?;
        let allocator = AllocatorRecord { generations: self.bytes()?, live: self.bytes()?, free: self.bytes()? };
        let tables = self.seq(24, |p| {
            Ok(TableRecord {
                components: p.seq(4, |p| p.u32())?,
                entities: p.bytes()?,
                columns: p.seq(5, |p| p.column())?,
            })
        })?;
        let sparse =
            self.seq(17, |p| Ok(SparseRecord { component: p.u32()?, entities: p.bytes()?, column: p.column()? }))?;
        let index_definitions = IndexSection {
            version: self.u32()?,
            definitions: self.seq(32, |p| {
                Ok(IndexRecord {
                    name: p.text()?,
                    kind: p.text()?,
                    component: p.text()?,
                    fields: p.seq(8, |p| p.text())?,
                })
            })?,
        };
        let schedule = if self.with_schedule { self.schedule()? } else { ScheduleSection::default() };
        let defaults = if self.with_defaults {
            DefaultsSection {
                version: self.u32()?,
                defaults: self
                    .seq(16, |p| Ok(DefaultRecord { component: p.u32()?, field: p.u32()?, value: p.short_bytes()? }))?,
            }
        } else {
            DefaultsSection::default()
        };
        Ok(Body { world_tick, catalog, allocator, tables, sparse, index_definitions, schedule, defaults })
    }

    /// A short byte run decoded in place (never deferred): a field default.
    fn short_bytes(&mut self) -> Result<Bytes<'a>, SnapshotError> {
        let n = self.len(1)?;
        if matches!(self.input, Input::Mem(_)) {
            return Ok(Bytes::Mem(Cow::Borrowed(self.take_mem(n)?)));
        }
        Ok(Bytes::owned(self.take(n)?.to_vec()))
    }

    /// The schedule section (format version 2).
    fn schedule(&mut self) -> Result<ScheduleSection<'a>, SnapshotError> {
        let version = self.u32()?;
        let systems = self.seq(49, |p| {
            Ok(SystemEntry {
                name: p.text()?,
                phase: p.text()?,
                after: p.seq(8, |p| p.text())?,
                before: p.seq(8, |p| p.text())?,
                kind: p.u8()?,
                text: p.text()?,
            })
        })?;
        Ok(ScheduleSection {
            version,
            systems,
            fixed_hz: self.u32()?,
            accumulator_ns: self.u64()?,
            tick: self.u64()?,
            time_ns: self.u64()?,
        })
    }

    /// Checks that the whole body was decoded; returns the checksum plan.
    pub(crate) fn finish(mut self, expected: u32) -> Result<CrcCheck, SnapshotError> {
        if self.pos != self.len {
            return Err(SnapshotError::Corrupt(format!("{} unread bytes at the end of the body", self.len - self.pos)));
        }
        self.flush_crc();
        let done = std::mem::take(&mut self.crc);
        self.segs.push(Seg::Decoded(done));
        Ok(CrcCheck { segs: self.segs, runs: self.runs, expected })
    }
}
