//! A column copied into a component's new layout (`ALTER COMPONENT`).
//!
//! The copy is a new column: the old one stays whole, so a change its caller refuses after
//! all can put it back. Strings are cloned rather than moved for that reason; an ALTER is
//! rare, and a load from a snapshot allocates them too.

use super::Column;
use crate::component::{ComponentInfo, FieldMove, FieldType};

impl Column {
    /// A column of `new`'s values, one per row here: each row starts as `new`'s initial value
    /// (its defaults, else zeros) and takes each kept field of `moves` from this row. Ticks
    /// are kept: the kept fields did not change.
    pub(crate) fn relaid(&self, new: &ComponentInfo, moves: &[FieldMove]) -> Column {
        let mut out = Column::new(new);
        let n = self.len;
        let size = new.layout().size();
        if n != 0 && size != 0 {
            out.grow(n);
            let (src, dst) = (self.data.as_ptr(), out.data.as_ptr());
            // SAFETY: `grow` made room for `n` values of `new`'s layout at `dst`, which
            // nothing holds yet.
            unsafe { new.write_zeros(dst, n) };
            let old_size = self.item.size();
            for row in 0..n {
                for m in moves {
                    // SAFETY: row `row` is initialised here (row < len) and there (written
                    // above); `m.from` and `m.to` are offsets of the same field type in the
                    // old and new layouts (`Components::redefine`), aligned for it.
                    unsafe {
                        let from = src.add(row * old_size + m.from);
                        let to = dst.add(row * size + m.to);
                        if m.ty == FieldType::String {
                            // The old value keeps its string: clone it over the new, empty one.
                            (*(to as *mut String)).clone_from(&*(from as *const String));
                        } else {
                            std::ptr::copy_nonoverlapping(from, to, m.ty.layout().size());
                        }
                    }
                }
            }
        }
        out.added.extend(0, self.added.view(n));
        out.changed.extend_from_slice(&self.changed);
        out.len = n;
        out.room = out.cap.min(out.changed.capacity());
        out
    }
}
