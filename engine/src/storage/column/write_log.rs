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
    /// Every row written since the last drain is among these (in write order, maybe twice).
    Rows(Vec<u32>),
    /// Too many rows, or writes the log cannot follow: the drain must scan the ticks.
    Whole,
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
    /// Notes one written row of a column of `len` rows.
    #[inline]
    pub(crate) fn note(&mut self, row: usize, len: usize) {
        if let WriteLog::Rows(rows) = self {
            if rows.len() > limit(len) {
                *self = WriteLog::Whole;
            } else {
                rows.push(row as u32);
            }
        }
    }

    /// Notes a run of written rows.
    pub(crate) fn note_range(&mut self, range: std::ops::Range<usize>, len: usize) {
        if let WriteLog::Rows(rows) = self {
            if rows.len() + range.len() > limit(len) {
                *self = WriteLog::Whole;
            } else {
                rows.extend(range.map(|r| r as u32));
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
        // The next window likely writes about as many rows as this one: room for them now
        // spares the log a dozen doublings (and copies) while the writes go on.
        let expected = match self {
            WriteLog::Rows(rows) => rows.len(),
            WriteLog::Off | WriteLog::Whole => 0,
        };
        match std::mem::replace(self, WriteLog::Rows(Vec::with_capacity(expected))) {
            // In row order the indexes see entities about in id order, and ordered inserts
            // into their sets cost far less than random ones (half, for a bitmap index).
            WriteLog::Rows(rows) => WrittenRows::Rows(sorted_distinct(rows, len)),
            WriteLog::Off | WriteLog::Whole => WrittenRows::Scan,
        }
    }
}

/// `rows` below `len`, sorted and each once. Many rows go through a bitset over the column:
/// marking thousands of rows and reading the marks back costs less than sorting them.
fn sorted_distinct(mut rows: Vec<u32>, len: usize) -> Vec<u32> {
    rows.retain(|&r| (r as usize) < len);
    if rows.len() <= 64 {
        rows.sort_unstable();
        rows.dedup();
        return rows;
    }
    let mut marks = vec![0u64; len.div_ceil(64)];
    for &r in &rows {
        marks[r as usize / 64] |= 1 << (r % 64);
    }
    rows.clear();
    for (w, &word) in marks.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            rows.push((w * 64) as u32 + bits.trailing_zeros());
            bits &= bits - 1;
        }
    }
    rows
}

/// Notes a log keeps before a scan is as cheap: an eighth of the rows.
#[inline]
fn limit(len: usize) -> usize {
    len / 8 + 64
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
    fn many_notes_come_back_sorted_and_distinct() {
        let mut log = WriteLog::Rows(Vec::new());
        let rows: Vec<usize> = (0..500).map(|i| (i * 7919) % 997).collect();
        for &r in &rows {
            log.note(r, 10_000);
        }
        log.note(12_000, 10_000);
        let mut expected: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(log.drain(10_000), WrittenRows::Rows(expected));
    }

    #[test]
    fn a_log_past_its_limit_or_losing_track_asks_for_a_scan_once() {
        let mut log = WriteLog::Rows(Vec::new());
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
