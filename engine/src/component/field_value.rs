//! A field's value in its stored form: what a write puts at the field's offset, and what a
//! field's default is kept as.

use crate::component::FieldInfo;
use crate::entity::Entity;

/// A value converted to a field's type, ready to be written without further checks.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// Any plain field, as its little-endian bytes (at most 12).
    Plain([u8; 12], u8),
    /// A string field.
    Str(String),
}

impl FieldValue {
    pub(crate) fn plain(bytes: &[u8]) -> FieldValue {
        let mut b = [0u8; 12];
        b[..bytes.len()].copy_from_slice(bytes);
        FieldValue::Plain(b, bytes.len() as u8)
    }

    /// The value read as an entity handle: meaningful for a value converted for an `entity`
    /// field (the caller knows the field's type); `None` for strings and other widths.
    pub fn as_entity(&self) -> Option<Entity> {
        match self {
            FieldValue::Plain(b, 8) => {
                Some(Entity::from_bits(u64::from_le_bytes(b[..8].try_into().expect("eight bytes"))))
            }
            _ => None,
        }
    }

    /// Writes the value over the field, dropping the old string for string fields.
    ///
    /// # Safety
    /// `base` must point to a valid, initialised value of the component `field` belongs to,
    /// and `self` must have come from [`convert_value`](crate::convert_value) for that field.
    pub(crate) unsafe fn write(self, base: *mut u8, field: &FieldInfo) {
        // SAFETY: as for `read_field`; a string field holds an initialised String, which
        // assignment drops.
        unsafe {
            let p = base.add(field.offset);
            match self {
                FieldValue::Plain(bytes, n) => std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, n as usize),
                FieldValue::Str(s) => *(p as *mut String) = s,
            }
        }
    }
}
