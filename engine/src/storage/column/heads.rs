//! String heads: for a string field of a column, each row's first seven bytes and its length
//! packed into one `u64` (see [`string_head`]). A scan that tests a short prefix or an exact
//! short string (`LIKE 'zi%'`, `LIKE 'orc'`) then reads eight bytes a row from one array
//! instead of following every row's pointer to its heap string, which on strings allocated
//! apart is a cache miss a row.
//!
//! Heads are made by the first reader that asks for a field and kept up to date by the readers
//! after it, each bringing them up to its own tick:
//!
//! - every value write stamps its row's changed tick, so a refresh re-reads exactly the rows
//!   changed since the last one (the test a change-tracking query makes);
//! - a swap-remove moves the last row's head into the emptied row, as it moves its ticks (the
//!   moved row's tick is not new, so the ticks alone would not tell), and a row whose head was
//!   not yet made is remembered for the next refresh;
//! - rows past the length the last refresh covered (appends, rows moved in from other tables)
//!   are read fresh.
//!
//! Writers pay one test of an empty cell on a swap-remove when no reader ever asked. Memory:
//! eight bytes a row for each field asked for, counted in [`Column::memory_bytes`].
//!
//! [`Column::memory_bytes`]: super::Column::memory_bytes

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::tick::{EVERYTHING_NEW, Tick, for_each_changed, run_age};

/// The head of `s`: bytes 0 to 6 hold its first seven bytes (zero past its end), byte 7 its
/// length capped at 255; little-endian, so `head & 0xff` is the first byte.
///
/// ```
/// use ecsdb_engine::storage::string_head;
/// assert_eq!(string_head("zi").to_le_bytes(), [b'z', b'i', 0, 0, 0, 0, 0, 2]);
/// assert_eq!(string_head("abcdefghij").to_le_bytes(), [b'a', b'b', b'c', b'd', b'e', b'f', b'g', 10]);
/// ```
#[inline]
pub fn string_head(s: &str) -> u64 {
    let bytes = s.as_bytes();
    let n = bytes.len();
    // Fixed-size loads only (a copy of a run-time length is a call to `memcpy`, and a loop
    // over the bytes a mispredicted branch a row): a string of 4 to 7 bytes is its first four
    // and its last four, which overlap and agree where they do; 2 or 3 bytes likewise in two.
    let first = if let Some(eight) = bytes.first_chunk::<8>() {
        u64::from_le_bytes(*eight) & ((1 << 56) - 1)
    } else if let (Some(lo), Some(hi)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*lo)) | (u64::from(u32::from_le_bytes(*hi)) << (8 * (n - 4)))
    } else if let (Some(lo), Some(hi)) = (bytes.first_chunk::<2>(), bytes.last_chunk::<2>()) {
        u64::from(u16::from_le_bytes(*lo)) | (u64::from(u16::from_le_bytes(*hi)) << (8 * (n - 2)))
    } else {
        bytes.first().map_or(0, |&b| u64::from(b))
    };
    first | ((n.min(255) as u64) << 56)
}

/// The heads of one string field of a column, one per row as of the refresh that made them
/// (see the module docs). Cheap to clone; a later refresh never changes these.
#[derive(Clone, Debug)]
pub struct StringHeads(Arc<Vec<u64>>);

impl StringHeads {
    /// The heads, indexed by row.
    #[inline]
    pub fn as_slice(&self) -> &[u64] {
        &self.0
    }
}

/// The heads a column keeps, by field.
#[derive(Debug, Default)]
pub(crate) struct HeadCache {
    fields: Vec<FieldHeads>,
}

/// One field's heads.
#[derive(Debug)]
struct FieldHeads {
    /// The field's index in the component's schema.
    field: usize,
    heads: Arc<Vec<u64>>,
    /// Rows below this had their head made, or moved in with their row, as of `last_run`.
    covered: usize,
    /// Rows below `covered` whose head is unknown (a row moved in from past `covered`, or
    /// from another such row).
    pending: RoaringBitmap,
    /// The world tick (64-bit count) of the last refresh.
    last_run: Option<u64>,
}

impl HeadCache {
    /// After a removal moved the value of row `from` into row `to` (`to < from`).
    pub(crate) fn moved(&mut self, to: usize, from: usize) {
        for f in &mut self.fields {
            if from < f.covered && !f.pending.contains(from as u32) {
                let heads = Arc::make_mut(&mut f.heads);
                heads[to] = heads[from];
                f.pending.remove(to as u32);
            } else if to < f.covered {
                f.pending.insert(to as u32);
            }
        }
    }

    /// After the column was cut to `len` rows.
    pub(crate) fn truncate(&mut self, len: usize) {
        for f in &mut self.fields {
            f.covered = f.covered.min(len);
        }
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.fields.iter().map(|f| f.heads.capacity() * 8 + f.pending.serialized_size()).sum()
    }

    /// Brings the heads of `field` up to a reader's tick `this_run` (64-bit) and returns them:
    /// `changed` is the column's changed ticks (one a row); `heads_of(rows, out)` reads the
    /// heads of `rows` (at most [`READ_BATCH`]) into `out` from their values.
    pub(crate) fn refresh(
        &mut self,
        field: usize,
        changed: &[Tick],
        this_run: u64,
        mut heads_of: impl FnMut(&[u32], &mut [u64]),
    ) -> StringHeads {
        let at = match self.fields.iter().position(|f| f.field == field) {
            Some(at) => at,
            None => {
                let empty = FieldHeads {
                    field,
                    heads: Arc::default(),
                    covered: 0,
                    pending: RoaringBitmap::new(),
                    last_run: None,
                };
                self.fields.push(empty);
                self.fields.len() - 1
            }
        };
        let f = &mut self.fields[at];
        let len = changed.len();
        let age = run_age(f.last_run, this_run);
        // Too old for the ticks to tell (they may have been clamped), or a world whose tick
        // went back: every head is made again.
        let covered = if age == EVERYTHING_NEW { 0 } else { f.covered.min(len) };
        let heads = Arc::make_mut(&mut f.heads);
        heads.resize(len, 0);
        // The rows to read: changed, moved in unknown, or past the covered ones. They go to
        // `heads_of` a batch at a time, so that its loads of scattered rows overlap.
        let mut rows = Vec::with_capacity(READ_BATCH);
        let mut out = [0u64; READ_BATCH];
        let mut read = |rows: &mut Vec<u32>, heads: &mut [u64]| {
            heads_of(rows, &mut out[..rows.len()]);
            for (&r, &h) in rows.iter().zip(&out) {
                heads[r as usize] = h;
            }
            rows.clear();
        };
        let mut take = |r: usize, heads: &mut [u64]| {
            rows.push(r as u32);
            if rows.len() == READ_BATCH {
                read(&mut rows, heads);
            }
        };
        for_each_changed(&changed[..covered], this_run as Tick, age, |r| take(r, heads));
        for r in f.pending.iter().take_while(|&r| (r as usize) < covered) {
            take(r as usize, heads);
        }
        if !rows.is_empty() {
            read(&mut rows, heads);
        }
        // Rows past the covered ones (all of them, the first time) go a batch at a time.
        for start in (covered..len).step_by(READ_BATCH) {
            rows.extend(start as u32..(start + READ_BATCH).min(len) as u32);
            read(&mut rows, heads);
        }
        f.pending.clear();
        f.covered = len;
        f.last_run = Some(this_run);
        StringHeads(Arc::clone(&f.heads))
    }
}

/// Rows a refresh hands to its reader at once.
pub(crate) const READ_BATCH: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    /// A model column: values and changed ticks, written, appended and swap-removed.
    struct Model {
        values: Vec<String>,
        changed: Vec<Tick>,
        cache: HeadCache,
        now: u64,
    }

    impl Model {
        fn refresh(&mut self) -> Vec<u64> {
            self.now += 1;
            let values = &self.values;
            let heads = self.cache.refresh(0, &self.changed, self.now, |rows, out| {
                for (o, &r) in out.iter_mut().zip(rows) {
                    *o = string_head(&values[r as usize]);
                }
            });
            // Later refreshes leave a handed-out copy alone.
            heads.as_slice().to_vec()
        }

        fn expected(&self) -> Vec<u64> {
            self.values.iter().map(|s| string_head(s)).collect()
        }

        fn write(&mut self, row: usize, s: &str) {
            self.values[row] = s.to_string();
            self.changed[row] = (self.now + 1) as Tick;
        }

        fn swap_remove(&mut self, row: usize) {
            let last = self.values.len() - 1;
            self.values.swap_remove(row);
            self.changed.swap_remove(row);
            if row < last {
                self.cache.moved(row, last);
            }
            self.cache.truncate(self.values.len());
        }

        fn push(&mut self, s: &str, tick: Tick) {
            self.values.push(s.to_string());
            self.changed.push(tick);
        }
    }

    #[test]
    fn heads_of_every_length_are_the_first_seven_bytes_and_the_length() {
        let text = "abcdefghijklmnopqrstu";
        for n in 0..=text.len() {
            let s = &text[..n];
            let mut want = [0u8; 8];
            want[..n.min(7)].copy_from_slice(&s.as_bytes()[..n.min(7)]);
            want[7] = n as u8;
            assert_eq!(string_head(s), u64::from_le_bytes(want), "{s:?}");
        }
    }

    #[test]
    fn heads_pack_seven_bytes_and_the_length() {
        assert_eq!(string_head(""), 0);
        assert_eq!(string_head("a").to_le_bytes(), [b'a', 0, 0, 0, 0, 0, 0, 1]);
        let long = "x".repeat(300);
        assert_eq!(string_head(&long) >> 56, 255);
        // A multi-byte character cut after seven bytes is fine: heads are bytes.
        assert_eq!(string_head("ééééé").to_le_bytes()[..7], "ééééé".as_bytes()[..7]);
    }

    #[test]
    fn heads_follow_writes_moves_appends_and_old_ticks() {
        let mut m = Model { values: Vec::new(), changed: Vec::new(), cache: HeadCache::default(), now: 10 };
        for i in 0..200 {
            m.push(&format!("n{i}"), 1);
        }
        assert_eq!(m.refresh(), m.expected());
        let mut rng = crate::test_rng::Rng::new(2);
        let mut rand = move |n: usize| rng.below(n as u64) as usize;
        for round in 0..300 {
            match rand(4) {
                0 => {
                    let row = rand(m.values.len());
                    m.write(row, &format!("w{round}"));
                }
                1 if m.values.len() > 1 => {
                    let row = rand(m.values.len());
                    m.swap_remove(row);
                }
                // Rows moved in from another table keep their old ticks.
                2 => m.push(&format!("moved{round}"), 1),
                _ => {}
            }
            // Refresh only now and then, so that moves, writes and appends pile up.
            if rand(3) == 0 {
                assert_eq!(m.refresh(), m.expected(), "round {round}");
            }
        }
        // An append past the covered rows, then a removal that moves it into a covered row:
        // its head is unknown there until the refresh makes it, and stays unknown when that
        // row moves on again.
        m.refresh();
        let n = m.values.len();
        m.push("late", 1);
        m.push("later", 1);
        m.swap_remove(n - 1);
        m.swap_remove(3);
        m.swap_remove(5);
        assert_eq!(m.refresh(), m.expected());
        // A refresh too long after the last: every head is made again (the value below is
        // set without a tick, which no write path does, to show that no old head is kept).
        m.values[3] = "unseen".into();
        m.now += u64::from(crate::tick::MAX_CHANGE_AGE) + 10;
        assert_eq!(m.refresh(), m.expected());
    }
}
