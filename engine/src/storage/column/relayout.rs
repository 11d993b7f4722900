//! A column copied into a component's new layout (`ALTER COMPONENT`).
//!
//! The copy is a new column, and the old one keeps its bytes, so that a change its caller
//! refuses after all can be taken back ([`Column::take_back`]). Kept strings are moved, not
//! cloned: their bytes are in both columns, and only the new one drops them (the old one's
//! drop then covers only the strings of fields that went) until they are taken back. A
//! million strings cloned and the old ones freed cost twice a load's allocations.
//!
//! Plain bytes move a piece at a time over all rows (a piece is a run of kept fields that
//! lie side by side in both layouts, or a new field's fill), each in a loop whose copy has a
//! size known at compile time: a migration of a million rows costs about what loading them
//! does, where a `memcpy` call per field and row cost three times that.

use super::Column;
use crate::component::{ComponentInfo, DropFn, FieldMove, FieldType};
use crate::entity::Entity;

/// `drop` without the strings at `offsets`.
fn strings_except(drop: Option<DropFn>, offsets: impl Iterator<Item = usize> + Clone) -> Option<DropFn> {
    match drop {
        Some(DropFn::Strings(list)) => {
            let left: Box<[usize]> = list.iter().copied().filter(|o| offsets.clone().all(|x| x != *o)).collect();
            (!left.is_empty()).then_some(DropFn::Strings(left))
        }
        other => other,
    }
}

/// Bytes that go to the same place in every row.
enum Piece {
    /// `len` bytes from offset `from` of an old row to offset `to` of the new one.
    Copy { from: usize, to: usize, len: usize },
    /// The first `len` bytes of `bytes` at offset `to` of every new row.
    Fill { to: usize, bytes: [u8; 12], len: usize },
    /// A string field kept: moved from `from` to `to`.
    MoveString { from: usize, to: usize },
    /// A new string field: `value` at `to`.
    NewString { to: usize, value: String },
}

/// The pieces that make a new row from an old one, kept fields merged into runs.
fn pieces(new: &ComponentInfo, moves: &[FieldMove]) -> Vec<Piece> {
    let mut sorted: Vec<&FieldMove> = moves.iter().filter(|m| m.ty != FieldType::String).collect();
    sorted.sort_by_key(|m| m.from);
    let mut out: Vec<Piece> = Vec::new();
    for m in sorted {
        let len = m.ty.layout().size();
        if let Some(Piece::Copy { from, to, len: run }) = out.last_mut()
            && *from + *run == m.from
            && *to + *run == m.to
        {
            *run += len;
            continue;
        }
        out.push(Piece::Copy { from: m.from, to: m.to, len });
    }
    for m in moves.iter().filter(|m| m.ty == FieldType::String) {
        out.push(Piece::MoveString { from: m.from, to: m.to });
    }
    for (i, f) in new.fields().iter().enumerate() {
        if moves.iter().any(|m| m.to == f.offset) {
            continue;
        }
        let default = new.field_default(i);
        match (f.ty, default) {
            (FieldType::String, Some(crate::component::FieldValue::Str(s))) => {
                out.push(Piece::NewString { to: f.offset, value: s.clone() })
            }
            (FieldType::String, _) => out.push(Piece::NewString { to: f.offset, value: String::new() }),
            (_, Some(crate::component::FieldValue::Plain(bytes, n))) => {
                out.push(Piece::Fill { to: f.offset, bytes: *bytes, len: *n as usize })
            }
            (FieldType::Entity, _) => {
                let mut bytes = [0u8; 12];
                bytes[..8].copy_from_slice(&Entity::NULL.to_bits().to_le_bytes());
                out.push(Piece::Fill { to: f.offset, bytes, len: 8 });
            }
            // Plain zeros: the new rows start zeroed.
            _ => {}
        }
    }
    out
}

/// Copies `S` bytes at `src + row * src_stride` to `dst + row * dst_stride` for each of `n`
/// rows.
///
/// # Safety
/// Every such source range is readable, every destination range writable, and they do not
/// overlap.
#[inline(always)]
unsafe fn copy_rows<const S: usize>(src: *const u8, dst: *mut u8, n: usize, src_stride: usize, dst_stride: usize) {
    for row in 0..n {
        // SAFETY: the caller's contract, for this row.
        unsafe { std::ptr::copy_nonoverlapping(src.add(row * src_stride), dst.add(row * dst_stride), S) };
    }
}

/// [`copy_rows`] for any `len`, in pieces of 16, 8, 4, 2 and 1 bytes.
///
/// # Safety
/// As [`copy_rows`], for `len` bytes a row.
unsafe fn copy_strided(src: *const u8, dst: *mut u8, n: usize, strides: (usize, usize), len: usize) {
    let (ss, ds) = strides;
    let mut at = 0;
    while at < len {
        let (s, d) = (src.wrapping_add(at), dst.wrapping_add(at));
        let step = match len - at {
            16.. => 16,
            8.. => 8,
            4.. => 4,
            2.. => 2,
            _ => 1,
        };
        // SAFETY: `at + step <= len`, so each piece lies inside the caller's ranges.
        unsafe {
            match step {
                16 => copy_rows::<16>(s, d, n, ss, ds),
                8 => copy_rows::<8>(s, d, n, ss, ds),
                4 => copy_rows::<4>(s, d, n, ss, ds),
                2 => copy_rows::<2>(s, d, n, ss, ds),
                _ => copy_rows::<1>(s, d, n, ss, ds),
            }
        }
        at += step;
    }
}

impl Column {
    /// A column of `new`'s values, one per row here: each kept field of `moves` taken from
    /// this row, each new field holding its default (else its type's zero). It has no ticks
    /// yet: [`Column::swap_ticks`] hands it this column's (the kept fields did not change).
    /// Kept strings move: from here on this column drops only the strings of fields that
    /// are not kept, and must be dropped or given them back with [`Column::take_back`].
    pub(crate) fn relaid(&mut self, new: &ComponentInfo, moves: &[FieldMove]) -> Column {
        let mut out = Column::new(new);
        let n = self.len;
        let size = new.layout().size();
        if n != 0 && size != 0 {
            out.grow(n);
            let (src, dst) = (self.data.as_ptr() as *const u8, out.data.as_ptr());
            let old_size = self.item.size();
            // SAFETY: `grow` made room for `n` values of `new`'s layout at `dst`, which
            // nothing holds yet: zeroed, they are plain bytes (padding included) that the
            // pieces below complete into values.
            unsafe { std::ptr::write_bytes(dst, 0, n * size) };
            for piece in pieces(new, moves) {
                // SAFETY: (every arm) rows below `n` lie inside both columns (`len` rows
                // here, room for `n` there); the offsets are fields of the same type in the
                // old and new layouts (`Components::redefine`), aligned for it, and a copy
                // run covers only fields that lie side by side in both.
                unsafe {
                    match piece {
                        Piece::Copy { from, to, len } => {
                            copy_strided(src.add(from), dst.add(to), n, (old_size, size), len);
                        }
                        Piece::Fill { to, bytes, len } => {
                            copy_strided(bytes.as_ptr(), dst.add(to), n, (0, size), len);
                        }
                        Piece::MoveString { from, to } => {
                            // The old column stops dropping these below: they are the new one's.
                            for row in 0..n {
                                std::ptr::copy_nonoverlapping(
                                    src.add(row * old_size + from),
                                    dst.add(row * size + to),
                                    std::mem::size_of::<String>(),
                                );
                            }
                        }
                        Piece::NewString { to, value } => {
                            for row in 0..n {
                                std::ptr::write(dst.add(row * size + to) as *mut String, value.clone());
                            }
                        }
                    }
                }
            }
        }
        out.len = n;
        self.drop = strings_except(self.drop.take(), moves.iter().map(|m| m.from));
        out
    }

    /// Takes back a [`Column::relaid`] of this column (`info`'s, as it was): the kept strings
    /// move back from `new`, which then drops only what it made (strings of added fields).
    /// `new` must have as many rows as this column, and its kept strings must be the ones it
    /// was made with or what was written over them since.
    pub(crate) fn take_back(&mut self, info: &ComponentInfo, mut new: Column, moves: &[FieldMove]) {
        assert_eq!(self.len, new.len, "a relayout is taken back before rows come or go");
        let (old_size, size) = (self.item.size(), new.item.size());
        for m in moves.iter().filter(|m| m.ty == FieldType::String) {
            for row in 0..self.len {
                // SAFETY: row `row` lies in both columns (equal lengths); `m.to` in the new
                // and `m.from` in the old layout hold the same string field. The bytes here
                // are this string's old copy, which this column does not drop (`relaid`), so
                // overwriting them loses nothing; the new column stops dropping it below.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        new.data.as_ptr().add(row * size + m.to),
                        self.data.as_ptr().add(row * old_size + m.from),
                        std::mem::size_of::<String>(),
                    );
                }
            }
        }
        self.drop = info.drop_fn().cloned();
        new.drop = strings_except(new.drop.take(), moves.iter().map(|m| m.to));
    }

    /// Exchanges the rows' ticks with `other`, a column of as many rows: a relaid column
    /// takes its old column's without copying them, and gives them back if the change is
    /// taken back. The column left without ticks must only be dropped or given them back.
    pub(crate) fn swap_ticks(&mut self, other: &mut Column) {
        debug_assert_eq!(self.len, other.len);
        std::mem::swap(&mut self.added, &mut other.added);
        std::mem::swap(&mut self.changed, &mut other.changed);
        for c in [&mut *self, other] {
            c.room = c.cap.min(c.changed.capacity());
        }
    }
}
