//! The build of a fresh world from a checked body: tables and sparse sets made, columns filled
//! (several at once when there is enough to do) straight from the input, contents checked on
//! the way, and every row placed in the entity allocator.

use super::*;

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

/// Validates and builds into fresh `parts` (whose registry may be extended), for
/// [`World::from_parts`] to assemble. On success they hold exactly the snapshot's contents;
/// returns the checksums of the deferred runs read.
pub(super) fn build_world(
    parts: &mut WorldParts,
    body: &Body<'_>,
    input: &Input<'_>,
    header_flags: u32,
    opts: &LoadOptions,
) -> Result<(LoadStats, Sums), SnapshotError> {
    let ticks = header_flags & FLAG_TICKS != 0;
    let mut stats = LoadStats::default();

    // ----- validate the structure -----------------------------------------------------
    let resolved = resolve_catalog(body, &mut parts.components, &parts.opaque_serde, &mut stats)?;
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
                stats.component_bytes += (n * parts.components.info(id).layout().size()) as u64 + text;
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
                stats.component_bytes += (n * parts.components.info(id).layout().size()) as u64 + text;
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
    parts.schedule = body.schedule.to_record();
    resolve_defaults(body, &resolved, &mut parts.components)?;

    // ----- build: tables, then every column and the allocator ---------------------------
    let tick = body.world_tick;
    {
        let WorldParts { storage, components, .. } = &mut *parts;
        for p in plans.iter_mut() {
            let tid = storage.table_for(&p.set, components).index();
            p.table = tid;
        }
    }
    let mut rows_of = vec![0usize; parts.storage.tables.len()];
    let mut sources: Vec<Vec<usize>> = vec![Vec::new(); parts.storage.tables.len()];
    for (ri, p) in plans.iter().enumerate() {
        rows_of[p.table] += p.rows;
        sources[p.table].push(ri);
    }
    let ctx = Ctx { body, input, resolved: &resolved, components: &parts.components, tick };
    let mut jobs = Vec::new();
    let mut rows_jobs = Vec::new();
    for (ti, ((table, srcs), &rows)) in parts.storage.tables.iter_mut().zip(&sources).zip(&rows_of).enumerate() {
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
    parts.entities = allocator.ok_or_else(|| corrupt("internal: no allocator"))?;

    // Every row was placed: each live entity has exactly one row unless some have none.
    let placed: usize = plans.iter().map(|p| p.rows).sum();
    if placed != parts.entities.len() {
        return Err(corrupt(format!(
            "{} live entities in the allocator but {placed} table rows",
            parts.entities.len()
        )));
    }
    stats.entities = parts.entities.len();

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
        let info = parts.components.info(id);
        let sparse = &mut parts.storage.sparse;
        if sparse.len() <= id.index() {
            sparse.resize_with(id.index() + 1, || None);
        }
        let set = sparse[id.index()].get_or_insert_with(|| SparseSet::new(info));
        let mut src = Source::new(r, info, &column, tick)?;
        for (i, c) in entities.chunks_exact(8).enumerate() {
            let e = entity_le(c);
            if parts.entities.resolve(e.index()) != Some(e) {
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
    parts.tick = body.world_tick;
    parts.all_at_tick = !ticks;
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
                            )));
                        }
                        Err((i, Misplaced::Twice)) => {
                            return Err(corrupt(format!("entity {} has two table rows", placed[i])));
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
