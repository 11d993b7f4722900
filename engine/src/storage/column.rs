//! A type-erased, contiguous, aligned column of component values with per-row change ticks.
//!
//! # Safety contract
//! A `Column` owns `len` initialised values of one component laid out back to back at
//! `data + row * size`. Every method that hands out a pointer documents what the caller may
//! do with it; all bounds are checked with `debug_assert!` so the test suite (run in debug)
//! catches misuse that Miri would.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::component::{ComponentInfo, DropFn};
use crate::tick::Tick;

mod added;
mod bulk;
mod heads;
mod mirror;
mod relayout;
mod write_log;

use added::AddedTicks;
pub use added::AddedView;
pub(crate) use bulk::RemovalPlan;
use heads::HeadCache;
pub use heads::{StringHeads, string_head};
pub(crate) use mirror::ValueCopy;
use write_log::WriteLog;
pub use write_log::WrittenRows;

/// One component's values for every row of a table (or a sparse set), plus change ticks.
pub struct Column {
    data: NonNull<u8>,
    item: Layout,
    len: usize,
    cap: usize,
    /// Rows that fit without reallocating values or ticks: min of the three capacities.
    room: usize,
    drop: Option<DropFn>,
    /// When each row was added: one tick while all rows share it (see `added`).
    added: AddedTicks,
    changed: Vec<Tick>,
    /// Rows written since the index refresh last drained it (see `write_log`), made by the
    /// first drain: until then a write tests one word. Writers hold the column exclusively
    /// and reach the log without locking; the lock lets a refresh, which holds the world
    /// shared, drain it.
    log: OnceLock<Box<Mutex<WriteLog>>>,
    /// String fields' heads (see `heads`), made by the first reader that asks; readers hold
    /// the column shared and refresh them under the lock, writers reach them without it.
    heads: OnceLock<Box<Mutex<HeadCache>>>,
}

// SAFETY: a Column only stores values of `Component` types (which are `Send + Sync`) or
// run-time components made of plain data and `String`s, which are `Send + Sync` too.
unsafe impl Send for Column {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Column {}

impl Column {
    /// An empty column for the component.
    pub(crate) fn new(info: &ComponentInfo) -> Column {
        Column::with_layout(info.layout(), info.drop_fn().cloned())
    }

    pub(crate) fn with_layout(item: Layout, drop: Option<DropFn>) -> Column {
        Column {
            data: dangling(item.align()),
            item,
            len: 0,
            cap: if item.size() == 0 { usize::MAX } else { 0 },
            room: 0,
            drop,
            added: AddedTicks::default(),
            changed: Vec::new(),
            log: OnceLock::new(),
            heads: OnceLock::new(),
        }
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column has no rows.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of one value in bytes.
    #[inline]
    pub fn item_size(&self) -> usize {
        self.item.size()
    }

    /// Ticks at which each row's value was added.
    #[inline]
    pub fn added_ticks(&self) -> AddedView<'_> {
        self.added.view(self.len)
    }

    /// Ticks at which each row's value was last written.
    #[inline]
    pub fn changed_ticks(&self) -> &[Tick] {
        &self.changed
    }

    /// Every row's changed tick, to write any of them: the write log loses track (use
    /// [`Column::changed_tick_logged`] or [`Column::fill_changed`] where they fit).
    #[inline]
    pub(crate) fn changed_ticks_mut(&mut self) -> &mut [Tick] {
        self.log_lose_track();
        &mut self.changed
    }

    /// Row `row`'s changed tick, to stamp; the row goes to the write log.
    ///
    /// The note is made whole and inline, without first reading the row's tick to see
    /// whether the row was noted already this tick: on scattered writes that read misses
    /// the cache, and the write would wait for it (the guard only stores the tick). The
    /// log drops a repeat of the row noted last, and the drain drops the rest.
    #[inline]
    pub(crate) fn changed_tick_logged(&mut self, row: usize) -> &mut Tick {
        let len = self.len;
        if let Some(log) = self.log_mut() {
            log.note(row, len);
        }
        &mut self.changed[row]
    }

    /// Stamps rows `rows` changed at `tick`, noting them in the write log.
    pub(crate) fn fill_changed(&mut self, rows: std::ops::Range<usize>, tick: Tick) {
        let len = self.len;
        self.log_note_range(rows.clone(), len);
        self.changed[rows].fill(tick);
    }

    /// Stamps `rows` (in bounds) changed at `tick`, noting them in the write log.
    pub(crate) fn stamp_changed(&mut self, rows: &[u32], tick: Tick) {
        let len = self.len;
        let mut log = self.log.get_mut().map(|l| l.get_mut().unwrap_or_else(PoisonError::into_inner));
        for &r in rows {
            let changed = &mut self.changed[r as usize];
            if *changed != tick {
                if let Some(log) = log.as_mut() {
                    log.note(r as usize, len);
                }
                *changed = tick;
            }
        }
    }

    /// The rows written since the last call, for the index refresh (see `write_log`): the
    /// first call on a column always asks for a scan of its ticks.
    ///
    /// Crate-private although it takes `&self`: it consumes the record the indexes rely on,
    /// and `&World` hands out `&Column`s, so a public drain would let safe code outside make
    /// an index miss writes.
    pub(crate) fn drain_written(&self) -> WrittenRows {
        match self.log.get() {
            Some(log) => log.lock().unwrap_or_else(PoisonError::into_inner).drain(self.len),
            None => {
                // Armed now: the writes from here on are noted.
                let _ = self.log.set(Box::new(Mutex::new(WriteLog::armed())));
                WrittenRows::Scan
            }
        }
    }

    #[inline]
    fn log_mut(&mut self) -> Option<&mut WriteLog> {
        self.log.get_mut().map(|l| l.get_mut().unwrap_or_else(PoisonError::into_inner))
    }

    /// Notes a written row (the test is inlined into the write paths; the note is not, so
    /// that hot loops of appends stay as small as they were without a log).
    #[inline(always)]
    fn log_note(&mut self, row: usize, len: usize) {
        if self.log.get().is_some() {
            self.log_note_armed(row, len);
        }
    }

    #[inline(never)]
    fn log_note_armed(&mut self, row: usize, len: usize) {
        if let Some(log) = self.log_mut() {
            log.note(row, len);
        }
    }

    fn log_note_range(&mut self, rows: std::ops::Range<usize>, len: usize) {
        if let Some(log) = self.log_mut() {
            log.note_range(rows, len);
        }
    }

    #[inline(always)]
    fn log_lose_track(&mut self) {
        if self.log.get().is_some() {
            self.log_lose_track_armed();
        }
    }

    #[inline(never)]
    fn log_lose_track_armed(&mut self) {
        if let Some(log) = self.log_mut() {
            log.lose_track();
        }
    }

    /// Clamps ticks too old to compare (see [`crate::tick`]).
    pub(crate) fn clamp_ticks(&mut self, now: Tick) {
        self.added.clamp(now);
        crate::tick::clamp_ticks(&mut self.changed, now);
    }

    /// Bytes held (values and ticks, by capacity).
    pub fn memory_bytes(&self) -> (usize, usize) {
        let data = if self.item.size() == 0 { 0 } else { self.cap * self.item.size() };
        let heads = self.heads.get().map_or(0, |h| h.lock().unwrap_or_else(PoisonError::into_inner).memory_bytes());
        (data, self.added.memory_bytes() + self.changed.capacity() * std::mem::size_of::<Tick>() + heads)
    }

    /// The heads of string field `field` of every row (see `heads`), brought up to the reader's
    /// tick that `take_tick` takes (64-bit; taken under the lock, so that refreshes go in tick
    /// order); `heads_of(rows, out)` reads the heads of a batch of rows from their values.
    pub(crate) fn string_heads(
        &self,
        field: usize,
        take_tick: impl FnOnce() -> u64,
        heads_of: impl FnMut(&[u32], &mut [u64]),
    ) -> StringHeads {
        let cache = self.heads.get_or_init(Box::default);
        // A refresh that panicked may have left the heads half made: start again.
        let mut cache = cache.lock().unwrap_or_else(|poisoned| {
            let mut cache = poisoned.into_inner();
            *cache = HeadCache::default();
            cache
        });
        cache.refresh(field, &self.changed, take_tick(), heads_of)
    }

    #[inline]
    fn heads_mut(&mut self) -> Option<&mut HeadCache> {
        let cache = self.heads.get_mut()?;
        if cache.is_poisoned() {
            cache.clear_poison();
            *cache.get_mut().unwrap_or_else(PoisonError::into_inner) = HeadCache::default();
        }
        Some(cache.get_mut().unwrap_or_else(PoisonError::into_inner))
    }

    /// Pointer to the start of the values. It carries the allocation's provenance (no
    /// reference to the values is made), so writers may write through it while they hold the
    /// column exclusively.
    #[inline]
    pub(crate) fn data_ptr(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    /// [`Column::data_ptr`] typed as the column's values (non-null, dangling when empty).
    #[inline]
    pub(crate) fn values_ptr<T>(&self) -> NonNull<T> {
        self.data.cast()
    }

    /// Pointer to the changed ticks, made without a reference to the tick slice: items of a
    /// query write single ticks through it while other items of the same column are alive.
    #[inline]
    pub(crate) fn changed_ticks_ptr(&mut self) -> *mut Tick {
        self.log_lose_track();
        self.changed.as_mut_ptr()
    }

    /// Pointer and mask for reading ticks of one kind without a reference to them: row `r`'s
    /// tick is at `ptr + (r & mask)` (added ticks shared by every row have mask 0).
    #[inline]
    pub(crate) fn ticks_reader(&self, added: bool) -> (*const Tick, usize) {
        if added { self.added.reader() } else { (self.changed.as_ptr(), usize::MAX) }
    }

    /// One row's added and changed ticks, read without a reference to the tick slices (so
    /// `&mut` ticks of other rows handed out by a query stay valid).
    #[inline]
    pub(crate) fn row_ticks(&self, row: usize) -> (Tick, Tick) {
        assert!(row < self.len, "row {row} out of bounds ({})", self.len);
        // SAFETY: the changed ticks hold `len` initialised ticks.
        (self.added.get(row), unsafe { *self.changed.as_ptr().add(row) })
    }

    /// Pointer to row `row`'s value (panics past the end). Reading through it is valid while
    /// the column is not mutated; writing needs exclusive access to the column.
    #[inline]
    pub(crate) fn get_ptr(&self, row: usize) -> *mut u8 {
        assert!(row < self.len, "row {row} out of bounds ({})", self.len);
        // SAFETY: row < len <= cap, so the offset stays inside the allocation.
        unsafe { self.data.as_ptr().add(row * self.item.size()) }
    }

    /// The rows as a typed slice.
    ///
    /// # Safety
    /// The column must hold values of type `T`.
    #[inline]
    pub unsafe fn as_slice<T>(&self) -> &[T] {
        debug_assert_eq!(Layout::new::<T>(), self.item);
        // SAFETY: the caller guarantees the element type; `len` values are initialised and
        // `data` is aligned for `T` (dangling-but-aligned when empty or zero-sized).
        unsafe { std::slice::from_raw_parts(self.data.as_ptr() as *const T, self.len) }
    }

    fn grow(&mut self, min_cap: usize) {
        debug_assert!(self.item.size() != 0);
        let new_cap = min_cap.max(self.cap.saturating_mul(2)).max(4);
        let new_layout = array_layout(self.item, new_cap);
        // SAFETY: layouts have non-zero size; the old layout is the one we allocated with.
        let ptr = unsafe {
            if self.cap == 0 {
                alloc::alloc(new_layout)
            } else {
                alloc::realloc(self.data.as_ptr(), array_layout(self.item, self.cap), new_layout.size())
            }
        };
        self.data = NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(new_layout));
        self.cap = new_cap;
        self.room = self.cap.min(self.changed.capacity());
    }

    /// Makes room for `additional` more rows.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let needed = self.len.checked_add(additional).expect("capacity overflow");
        if needed > self.cap {
            self.grow(needed);
        }
        self.added.reserve(additional);
        self.changed.reserve(additional);
        self.room = self.cap.min(self.changed.capacity());
    }

    #[cold]
    fn make_room(&mut self) {
        let extra = self.len.max(4);
        self.reserve(extra);
    }

    /// Appends an uninitialised row and returns a pointer to it; the caller must initialise
    /// it before the column is read, dropped or moved.
    ///
    /// # Safety
    /// The caller writes a valid value of the column's component to the returned pointer.
    #[inline]
    pub(crate) unsafe fn push_uninit(&mut self, tick: Tick) -> *mut u8 {
        if self.len == self.room {
            self.make_room();
        }
        let row = self.len;
        self.log_note(row, row + 1);
        self.added.push_n(row, 1, tick);
        // SAFETY: row < room, so the values and changed ticks have capacity for it; the
        // changed ticks always have the same length as the column.
        unsafe {
            self.changed.as_mut_ptr().add(row).write(tick);
            self.changed.set_len(row + 1);
            self.len = row + 1;
            self.data.as_ptr().add(row * self.item.size())
        }
    }

    /// Appends a value moved from `src`; the caller must not use or drop `src` afterwards.
    ///
    /// # Safety
    /// `src` must point to a valid value of the column's component.
    #[inline]
    pub(crate) unsafe fn push_from(&mut self, src: *const u8, tick: Tick) {
        // SAFETY: forwarded.
        unsafe { self.push_sized(src, self.item.size(), tick) }
    }

    /// [`Column::push_from`] with the item size passed in: when the caller knows it at
    /// compile time the copy becomes a few moves instead of a `memcpy` call.
    ///
    /// # Safety
    /// As `push_from`; `size` must equal the column's item size.
    #[inline(always)]
    pub(crate) unsafe fn push_sized(&mut self, src: *const u8, size: usize, tick: Tick) {
        debug_assert_eq!(size, self.item.size());
        // SAFETY: the destination row is fresh, `size` bytes long, and cannot overlap `src`
        // (which the caller owns elsewhere).
        unsafe {
            let dst = self.push_uninit(tick);
            copy_value(src, dst, size);
        }
    }

    /// Overwrites row `row` with a value moved from `src`, dropping the old value.
    ///
    /// # Safety
    /// `src` must point to a valid value of the column's component, owned by the caller,
    /// who must not use or drop it afterwards.
    pub(crate) unsafe fn replace(&mut self, row: usize, src: *const u8, tick: Tick) {
        let dst = self.get_ptr(row);
        self.added.set(self.len, row, tick);
        *self.changed_tick_logged(row) = tick;
        /// Moves the new value in when dropped: after the old value's drop returns, and also
        /// when it panics, so the row never holds a dropped value.
        struct MoveIn {
            src: *const u8,
            dst: *mut u8,
            size: usize,
        }
        impl Drop for MoveIn {
            fn drop(&mut self) {
                // SAFETY: `src` is the caller's value and `dst` the row (see `replace`).
                unsafe { std::ptr::copy_nonoverlapping(self.src, self.dst, self.size) };
            }
        }
        let move_in = MoveIn { src, dst, size: self.item.size() };
        if let Some(d) = &self.drop {
            // SAFETY: `dst` is an initialised row, dropped once; `move_in` refills it.
            unsafe { d.call(dst) };
        }
        drop(move_in);
    }

    /// Removes row `row` by moving the last row into its place, without dropping the removed
    /// value: the caller has already moved it out (or will read it through `out` first).
    ///
    /// # Safety
    /// If `out` is `Some`, it must be valid for `item_size` bytes of writes; the removed value
    /// is moved there. If `None`, the caller must have moved the value out already.
    #[inline(always)]
    pub(crate) unsafe fn swap_remove_forget(&mut self, row: usize, out: Option<*mut u8>) {
        debug_assert!(row < self.len);
        let size = self.item.size();
        let last = self.len - 1;
        // SAFETY: both rows are in bounds (and distinct when copied); `out` is caller-provided
        // storage.
        unsafe {
            let p = self.data.as_ptr().add(row * size);
            if let Some(out) = out {
                copy_value(p, out, size);
            }
            if row != last {
                copy_value(self.data.as_ptr().add(last * size), p, size);
            }
        }
        self.len -= 1;
        self.added.swap_remove(row);
        self.changed.swap_remove(row);
        self.note_moved_into(row);
    }

    /// After a swap-remove of `row`: the last row's value now lives at `row`, new to it.
    #[inline]
    fn note_moved_into(&mut self, row: usize) {
        let len = self.len;
        if row < len {
            self.log_note(row, len);
        }
        if self.heads.get().is_some() {
            self.heads_after_swap_remove(row);
        }
    }

    /// [`Column::note_moved_into`]'s part for the string heads: the old last row (now at the
    /// length) moved into `row`, unless it was `row` itself.
    #[inline(never)]
    fn heads_after_swap_remove(&mut self, row: usize) {
        let len = self.len;
        if let Some(heads) = self.heads_mut() {
            if row < len {
                heads.moved(row, len);
            }
            heads.truncate(len);
        }
    }

    /// Removes row `row` by swap-remove, dropping its value. The column is made consistent
    /// (the value moved past the end, `len` shrunk) before the drop runs, so a panicking
    /// `Drop` leaks the value instead of dropping it twice.
    pub(crate) fn swap_remove_drop(&mut self, row: usize) {
        assert!(row < self.len, "row {row} out of bounds ({})", self.len);
        let size = self.item.size();
        let last = self.len - 1;
        // SAFETY: both rows are in bounds and initialised; swapping them keeps every row
        // initialised.
        let removed = unsafe {
            let p = self.data.as_ptr().add(row * size);
            let q = self.data.as_ptr().add(last * size);
            if row != last {
                std::ptr::swap_nonoverlapping(p, q, size);
            }
            q
        };
        self.len -= 1;
        self.added.swap_remove(row);
        self.changed.swap_remove(row);
        self.note_moved_into(row);
        if let Some(d) = &self.drop {
            // SAFETY: the removed value now lies just past `len`: initialised, owned by no row,
            // dropped once.
            unsafe { d.call(removed) };
        }
    }

    /// Moves row `row` to the end of `dst` (same component), keeping its ticks, and swap-removes
    /// it here.
    pub(crate) fn move_row_to(&mut self, row: usize, dst: &mut Column) {
        assert!(row < self.len);
        debug_assert_eq!(self.item, dst.item);
        let (added, changed) = (self.added.get(row), self.changed[row]);
        // SAFETY: the value is moved bit-for-bit to `dst` and then forgotten here.
        unsafe {
            dst.push_from(self.get_ptr(row), added);
            let n = dst.len - 1;
            dst.changed[n] = changed;
            self.swap_remove_forget(row, None);
        }
    }

    /// Drops every value and empties the column.
    pub(crate) fn clear(&mut self) {
        let len = self.len;
        // Set len first so a panicking drop cannot cause a double drop.
        self.len = 0;
        self.added.clear();
        self.changed.clear();
        self.log_lose_track();
        if let Some(heads) = self.heads_mut() {
            heads.truncate(0);
        }
        if let Some(d) = &self.drop {
            for row in 0..len {
                // SAFETY: rows below the old len were initialised and are dropped once.
                unsafe { d.call(self.data.as_ptr().add(row * self.item.size())) };
            }
        }
    }

    /// Raw bytes of the values.
    ///
    /// # Safety
    /// The column's component must be plain data without padding (every byte initialised):
    /// plain fields that tile the whole value, as the snapshot writer's bulk codec checks.
    pub(crate) unsafe fn bytes(&self) -> &[u8] {
        // SAFETY: `len * size` bytes starting at `data` are values; the caller vouches that
        // they hold no uninitialised padding.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len * self.item.size()) }
    }

    /// Appends `n` rows at once (snapshot loading): `fill` writes the values' bytes through
    /// the pointer it gets, to the `n * item_size` uninitialised bytes after the last row;
    /// then the rows join the column, stamped `tick`, or with the saved ticks `saved`
    /// (little-endian `u32`s, added then changed, 4 bytes per row each). If `fill` fails, the
    /// column is left as it was (the bytes it wrote are never read nor dropped).
    ///
    /// # Safety
    /// When `fill` returns `Ok`, it must have initialised every one of the `n * item_size`
    /// bytes with valid values of the column's component, and must not keep the pointer.
    pub(crate) unsafe fn append_with<E>(
        &mut self,
        n: usize,
        tick: Tick,
        saved: Option<(&[u8], &[u8])>,
        fill: impl FnOnce(*mut u8) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some((added, changed)) = saved {
            assert!(added.len() / 4 == n && changed.len() / 4 == n, "tick runs must hold one tick per row");
        }
        self.reserve(n);
        let size = self.item.size();
        // SAFETY: `reserve` made room for `n` more rows, so the tail lies inside the allocation
        // (for zero-sized values the pointer is the aligned dangling one and nothing is
        // written).
        let tail = unsafe { self.data.as_ptr().add(self.len * size) };
        fill(tail)?;
        // The caller vouches that the tail now holds `n` valid values.
        self.len += n;
        let len = self.len;
        self.log_note_range(len - n..len, len);
        match saved {
            None => {
                self.added.push_n(self.len - n, n, tick);
                self.changed.resize(self.len, tick);
            }
            Some((added, changed)) => {
                let le = |c: &[u8]| Tick::from_le_bytes([c[0], c[1], c[2], c[3]]);
                self.added.extend_le(self.len - n, added, n);
                self.changed.extend(changed.chunks_exact(4).take(n).map(le));
            }
        }
        debug_assert!(self.added.view(self.len).len() == self.len && self.changed.len() == self.len);
        Ok(())
    }
}

impl Drop for Column {
    fn drop(&mut self) {
        self.clear();
        if self.item.size() != 0 && self.cap != 0 {
            // SAFETY: allocated with exactly this layout in `grow`.
            unsafe { alloc::dealloc(self.data.as_ptr(), array_layout(self.item, self.cap)) };
        }
    }
}

/// Copies one value of `size` bytes from `src` to `dst`. Most components are a few scalars:
/// for the common small sizes the copy is a move or two inline, not a call to `memcpy` (a row
/// moved between tables copies each value twice, once out and once into the hole).
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`] for `size` bytes.
#[inline(always)]
unsafe fn copy_value(src: *const u8, dst: *mut u8, size: usize) {
    // SAFETY: the caller's contract; each arm copies exactly `size` bytes.
    unsafe {
        match size {
            4 => std::ptr::copy_nonoverlapping(src, dst, 4),
            8 => std::ptr::copy_nonoverlapping(src, dst, 8),
            12 => std::ptr::copy_nonoverlapping(src, dst, 12),
            16 => std::ptr::copy_nonoverlapping(src, dst, 16),
            _ => std::ptr::copy_nonoverlapping(src, dst, size),
        }
    }
}

fn array_layout(item: Layout, n: usize) -> Layout {
    let size = item.size().checked_mul(n).expect("column too large");
    Layout::from_size_align(size, item.align()).expect("column too large")
}

fn dangling(align: usize) -> NonNull<u8> {
    // A well-aligned non-null pointer without provenance for empty and zero-sized columns:
    // never dereferenced for a non-zero size.
    NonNull::new(std::ptr::without_provenance_mut(align)).expect("alignment is non-zero")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_log_notes_each_written_row_once_per_tick_and_the_row_a_removal_fills() {
        let mut c = Column::with_layout(Layout::new::<u32>(), None);
        for v in 0..6u32 {
            // SAFETY: a u32 column, given a u32.
            unsafe { c.push_from((&v as *const u32).cast(), 1) };
        }
        assert_eq!(c.drain_written(), WrittenRows::Scan, "the first drain scans and arms");
        *c.changed_tick_logged(4) = 2;
        *c.changed_tick_logged(4) = 2;
        *c.changed_tick_logged(5) = 2;
        c.stamp_changed(&[1, 5], 2);
        c.swap_remove_drop(0);
        // Row 5 moved into row 0: it is past the end now, and row 0 is noted.
        assert_eq!(c.drain_written(), WrittenRows::Rows(vec![0, 1, 4]));
        *c.changed_tick_logged(4) = 3;
        assert_eq!(c.drain_written(), WrittenRows::Rows(vec![4]), "a later tick notes it again");
        let _ = c.changed_ticks_mut();
        assert_eq!(c.drain_written(), WrittenRows::Scan);
    }
    use crate::component::drop_ptr;
    use std::rc::Rc;

    fn string_column() -> Column {
        Column::with_layout(Layout::new::<String>(), Some(DropFn::Rust(drop_ptr::<String>)))
    }

    fn push<T>(c: &mut Column, v: T) {
        let v = std::mem::ManuallyDrop::new(v);
        // SAFETY: the column is of T; `v` is forgotten after the move.
        unsafe { c.push_from(&*v as *const T as *const u8, 1) };
    }

    #[test]
    fn push_swap_remove_drop() {
        let mut c = string_column();
        for i in 0..100 {
            push(&mut c, format!("s{i}"));
        }
        c.swap_remove_drop(0);
        // SAFETY: column of String.
        let s = unsafe { c.as_slice::<String>() };
        assert_eq!(s.len(), 99);
        assert_eq!(s[0], "s99");
        assert_eq!(c.added_ticks().len(), 99);
    }

    #[test]
    fn drops_everything_once() {
        let rc = Rc::new(());
        {
            let mut c = Column::with_layout(Layout::new::<Rc<()>>(), Some(DropFn::Rust(drop_ptr::<Rc<()>>)));
            for _ in 0..10 {
                push(&mut c, rc.clone());
            }
            c.swap_remove_drop(3);
            let mut other = Column::with_layout(Layout::new::<Rc<()>>(), Some(DropFn::Rust(drop_ptr::<Rc<()>>)));
            c.move_row_to(0, &mut other);
            assert_eq!(Rc::strong_count(&rc), 10);
            drop(other);
            assert_eq!(Rc::strong_count(&rc), 9);
        }
        assert_eq!(Rc::strong_count(&rc), 1);
    }

    #[test]
    fn zero_sized_columns() {
        let mut c = Column::with_layout(Layout::new::<()>(), None);
        for _ in 0..1000 {
            push(&mut c, ());
        }
        c.swap_remove_drop(500);
        assert_eq!(c.len(), 999);
        assert_eq!(c.memory_bytes().0, 0);
    }

    #[test]
    fn append_with_fills_values_and_ticks() {
        let mut c = Column::with_layout(Layout::new::<[u32; 3]>(), None);
        push(&mut c, [9u32, 9, 9]);
        // SAFETY: the closure writes 2 rows of [u32; 3] (24 bytes) before returning Ok.
        let r: Result<(), ()> = unsafe {
            c.append_with(2, 7, None, |dst| {
                let v: [u32; 6] = [1, 2, 3, 4, 5, 6];
                std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, dst, 24);
                Ok(())
            })
        };
        r.unwrap();
        // SAFETY: column of [u32; 3].
        assert_eq!(unsafe { c.as_slice::<[u32; 3]>() }, &[[9, 9, 9], [1, 2, 3], [4, 5, 6]]);
        assert_eq!(c.added_ticks(), &[1, 7, 7]);
        assert_eq!(c.changed_ticks(), &[1, 7, 7]);
        // Saved ticks, little-endian.
        let added: Vec<u8> = [10u32, 11].iter().flat_map(|t| t.to_le_bytes()).collect();
        let changed: Vec<u8> = [20u32, 21].iter().flat_map(|t| t.to_le_bytes()).collect();
        // SAFETY: as above.
        let r: Result<(), ()> = unsafe {
            c.append_with(2, 0, Some((&added, &changed)), |dst| {
                std::ptr::write_bytes(dst, 0, 24);
                Ok(())
            })
        };
        r.unwrap();
        assert_eq!(c.len(), 5);
        assert_eq!(c.added_ticks(), &[1, 7, 7, 10, 11]);
        assert_eq!(c.changed_ticks(), &[1, 7, 7, 20, 21]);
        // A failing fill leaves the column as it was.
        // SAFETY: nothing is appended on Err.
        let r = unsafe { c.append_with(1000, 3, None, |_| Err("no")) };
        assert_eq!(r, Err("no"));
        assert_eq!((c.len(), c.added_ticks().len(), c.changed_ticks().len()), (5, 5, 5));
        // SAFETY: column of [u32; 3].
        assert_eq!(unsafe { c.as_slice::<[u32; 3]>() }[4], [0, 0, 0]);
        // Pushing afterwards still works (capacity bookkeeping intact).
        push(&mut c, [8u32, 8, 8]);
        assert_eq!(c.len(), 6);
    }

    #[test]
    fn append_with_zero_sized_rows() {
        let mut c = Column::with_layout(Layout::new::<()>(), None);
        // SAFETY: zero-sized values need no bytes.
        let r: Result<(), ()> = unsafe { c.append_with(100_000, 4, None, |_| Ok(())) };
        r.unwrap();
        assert_eq!((c.len(), c.added_ticks().len()), (100_000, 100_000));
        c.swap_remove_drop(5);
        assert_eq!(c.len(), 99_999);
    }

    #[test]
    #[should_panic(expected = "one tick per row")]
    fn append_with_checks_tick_runs() {
        let mut c = Column::with_layout(Layout::new::<u32>(), None);
        // SAFETY: the length check fires before anything is written.
        let _: Result<(), ()> = unsafe { c.append_with(2, 0, Some((&[0; 4], &[0; 8])), |_| Ok(())) };
    }

    #[test]
    fn aligned_and_strided_reads() {
        #[repr(C, align(16))]
        #[derive(Clone, Copy)]
        struct V {
            a: u8,
            b: f64,
        }
        let mut c = Column::with_layout(Layout::new::<V>(), None);
        for i in 0..37 {
            push(&mut c, V { a: i as u8, b: i as f64 * 0.5 });
        }
        assert_eq!(c.data_ptr() as usize % 16, 0);
        // SAFETY: column of V.
        assert_eq!(unsafe { c.as_slice::<V>() }[36].b, 18.0);
        let mut d = Column::with_layout(Layout::new::<V>(), None);
        // SAFETY: the closure copies 37 rows of V (plain data from a column of V, padding
        // included, untyped) before Ok.
        let r: Result<(), ()> = unsafe {
            d.append_with(37, 2, None, |dst| {
                std::ptr::copy_nonoverlapping(c.data_ptr(), dst, 37 * std::mem::size_of::<V>());
                Ok(())
            })
        };
        r.unwrap();
        // SAFETY: column of V.
        assert_eq!(unsafe { d.as_slice::<V>() }[5].a, 5);
    }
}
