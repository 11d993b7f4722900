//! Which rows of a column were written since the index refresh last asked, so that a refresh
//! after a few point writes visits those rows instead of scanning every row's change tick.
//!
//! A column's log starts *off*: nobody asked, and writers record nothing. The first time the
//! index refresh drains it, the refresh scans the ticks and the log becomes *armed*: from then
//! on point writes ([`Column::changed_tick_logged`](super::Column::changed_tick_logged),
//! appends, replacements) note their row. Any write the log cannot follow row by row (a query
//! handing out `&mut` ticks, a run of rows filled at once, a column emptied) turns it
//! *whole*, and so does a log grown past an eighth of the column: the next drain then scans
//! the ticks, as it would without a log, and arms it again.
//!
//! Writers append rows to a list, in write order: the cheapest note (a bitset of the rows
//! was tried: its mark is a write to a random line of a column-sized set, which a write
//! path already busy with the entity's row misses in cache). The drain hands the rows back
//! sorted and distinct (the order the indexes want: ordered inserts into their sets cost far
//! less than random ones) through a two-level bitset kept with the log.
//!
//! The log is a superset: a noted row may hold a value written and then moved away (the
//! index re-reads it, which changes nothing), and rows at or past the column's end are
//! dropped when it is drained. It never misses a row: a swap-remove notes the row the last
//! one moved into, since that row's value is new to the place.

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) enum WriteLog {
    /// Nobody drains this column's log: writers record nothing.
    #[default]
    Off,
    /// Every row written since the last drain is noted here.
    Rows(Noted),
    /// Too many rows, or writes the log cannot follow: the drain must scan the ticks.
    Whole,
}

/// An armed log's rows, and the bitset its drain sorts them with.
#[derive(Debug, Default)]
pub(crate) struct Noted {
    /// Every row written since the last drain is among these (in write order, maybe twice).
    rows: Vec<u32>,
    /// All clear between drains.
    marks: RowMarks,
}

/// One bit a row, and one bit a word of them that says the word holds marks, so that
/// reading them back visits only the words with marks.
#[derive(Debug, Default)]
struct RowMarks {
    words: Vec<u64>,
    /// Bit `w % 64` of `summary[w / 64]`: word `w` holds marks.
    summary: Vec<u64>,
}

/// What a drain found.
#[derive(Debug, PartialEq)]
pub enum WrittenRows {
    /// Every row written since the last drain is among these (sorted, distinct, below the
    /// column's length).
    Rows(Vec<u32>),
    /// The log cannot tell: scan the change ticks.
    Scan,
}

impl WriteLog {
    /// An armed log with nothing noted.
    pub(crate) fn armed() -> WriteLog {
        WriteLog::Rows(Noted::default())
    }

    /// Notes one written row of a column of `len` rows (a repeat of the row noted last is
    /// dropped: an entity written several times in a row is noted once).
    #[inline]
    pub(crate) fn note(&mut self, row: usize, len: usize) {
        if let WriteLog::Rows(noted) = self {
            if noted.rows.last() == Some(&(row as u32)) {
                return;
            }
            if noted.rows.len() > limit(len) {
                *self = WriteLog::Whole;
            } else {
                noted.rows.push(row as u32);
            }
        }
    }

    /// Notes a run of written rows.
    pub(crate) fn note_range(&mut self, range: std::ops::Range<usize>, len: usize) {
        if let WriteLog::Rows(noted) = self {
            if noted.rows.len() + range.len() > limit(len) {
                *self = WriteLog::Whole;
            } else {
                noted.rows.extend(range.map(|r| r as u32));
            }
        }
    }

    /// The log can no longer tell which rows were written (unless nobody reads it).
    #[inline]
    pub(crate) fn lose_track(&mut self) {
        if !matches!(self, WriteLog::Off) {
            *self = WriteLog::Whole;
        }
    }

    /// Takes what was noted since the last drain and arms the log for the next one.
    pub(crate) fn drain(&mut self, len: usize) -> WrittenRows {
        match self {
            WriteLog::Rows(noted) => {
                // The next window likely writes about as many rows as this one: room for
                // them now spares the log a dozen doublings (and copies) while the writes go
                // on.
                let expected = noted.rows.len();
                let mut rows = std::mem::replace(&mut noted.rows, Vec::with_capacity(expected));
                noted.marks.sort_distinct(&mut rows, len);
                WrittenRows::Rows(rows)
            }
            WriteLog::Off | WriteLog::Whole => {
                *self = WriteLog::armed();
                WrittenRows::Scan
            }
        }
    }
}

/// Notes a log keeps before a scan is as cheap: an eighth of the rows.
#[inline]
fn limit(len: usize) -> usize {
    len / 8 + 64
}

impl RowMarks {
    /// `rows` below `len`, sorted and each once. A few are sorted; many go through the
    /// bitset: marking thousands of rows and reading the marks back costs less than sorting
    /// them, and the bitset stays allocated (and clear) from one drain to the next.
    fn sort_distinct(&mut self, rows: &mut Vec<u32>, len: usize) {
        rows.retain(|&r| (r as usize) < len);
        if rows.len() <= 64 {
            rows.sort_unstable();
            rows.dedup();
            return;
        }
        let words = len.div_ceil(64);
        if self.words.len() < words {
            self.words.resize(words, 0);
            self.summary.resize(words.div_ceil(64), 0);
        }
        for &r in rows.iter() {
            let w = r as usize / 64;
            self.words[w] |= 1 << (r % 64);
            self.summary[w / 64] |= 1 << (w % 64);
        }
        rows.clear();
        for (s, summary) in self.summary.iter_mut().enumerate() {
            let mut marked_words = std::mem::take(summary);
            while marked_words != 0 {
                let w = s * 64 + marked_words.trailing_zeros() as usize;
                marked_words &= marked_words - 1;
                let mut bits = std::mem::take(&mut self.words[w]);
                while bits != 0 {
                    rows.push((w * 64) as u32 + bits.trailing_zeros());
                    bits &= bits - 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unarmed_log_notes_nothing_and_asks_for_a_scan() {
        let mut log = WriteLog::default();
        log.note(3, 10);
        log.lose_track();
        assert!(matches!(log, WriteLog::Off));
        assert_eq!(log.drain(10), WrittenRows::Scan);
        log.note(3, 10);
        log.note(1, 10);
        log.note(3, 10);
        log.note(12, 10);
        assert_eq!(log.drain(10), WrittenRows::Rows(vec![1, 3]), "sorted, once each, past the end dropped");
        assert_eq!(log.drain(10), WrittenRows::Rows(vec![]));
    }

    #[test]
    fn a_row_noted_again_right_after_itself_is_kept_once() {
        let mut log = WriteLog::armed();
        for r in [5, 5, 5, 6, 5, 5] {
            log.note(r, 10);
        }
        let WriteLog::Rows(noted) = &log else { panic!("armed") };
        assert_eq!(noted.rows, [5, 6, 5], "only back-to-back repeats are dropped at note time");
        assert_eq!(log.drain(10), WrittenRows::Rows(vec![5, 6]));
    }

    /// Notes of rows and runs, in any order and at any density, come back as the sorted set
    /// of the rows below the length (or as a scan past the limit), and the next drain
    /// starts empty, whatever the column's length did in between.
    #[test]
    fn notes_come_back_sorted_and_distinct_at_any_density() {
        let mut rng = crate::test_rng::Rng::new(3);
        let mut next = move |n: u64| rng.below(n);
        let mut log = WriteLog::armed();
        // (Smaller under Miri, which runs this a thousand times slower; the same shapes: few
        // rows, many, past the limit, a short column, a longer one after it.)
        let cases: &[(usize, usize)] = if cfg!(miri) {
            &[(2_000, 5), (2_000, 150), (2_000, 300), (64, 30), (1, 3), (130, 40), (4_000, 400)]
        } else {
            &[(10_000, 5), (10_000, 500), (10_000, 1_200), (64, 30), (1, 3), (130, 40), (20_000, 2_000)]
        };
        for &(len, notes) in cases {
            let (mut expected, mut noted) = (std::collections::BTreeSet::new(), 0);
            for _ in 0..notes {
                if next(8) == 0 {
                    let start = next(len as u64 + 70) as usize;
                    let end = start + next(20) as usize;
                    log.note_range(start..end, len);
                    noted += end - start;
                    expected.extend((start..end).filter(|&r| r < len).map(|r| r as u32));
                } else {
                    let row = next(len as u64 + 5) as usize;
                    log.note(row, len);
                    noted += 1;
                    if row < len {
                        expected.insert(row as u32);
                    }
                }
            }
            match log.drain(len) {
                WrittenRows::Rows(rows) => {
                    assert_eq!(rows, expected.into_iter().collect::<Vec<_>>(), "len {len}, {notes} notes")
                }
                WrittenRows::Scan => {
                    assert!(noted > limit(len), "len {len}: {noted} rows noted asked for a scan");
                    continue;
                }
            }
            assert_eq!(log.drain(len), WrittenRows::Rows(vec![]), "len {len}: marks cleared");
        }
    }

    #[test]
    fn a_log_past_its_limit_or_losing_track_asks_for_a_scan_once() {
        let mut log = WriteLog::armed();
        for r in 0..=limit(100) + 1 {
            log.note(r % 100, 100);
        }
        assert_eq!(log.drain(100), WrittenRows::Scan);
        log.note_range(0..10, 100);
        assert_eq!(log.drain(100), WrittenRows::Rows((0..10).collect()));
        log.note(5, 100);
        log.lose_track();
        assert_eq!(log.drain(100), WrittenRows::Scan);
        assert_eq!(log.drain(100), WrittenRows::Rows(vec![]));
    }
}
