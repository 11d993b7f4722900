//! Converted field values of many component values, in one flat list.

use super::FieldValue;

/// The converted fields (see [`convert_value`](crate::convert_value)) of many component
/// values, one after another: what [`World::spawn_mixed`](crate::World::spawn_mixed) writes.
///
/// A bulk load builds thousands of component values of a few fields each: kept flat, they
/// cost no allocation each. Fields are pushed with [`ComponentValues::push_field`] and
/// [`ComponentValues::end_component`] ends the component value they belong to.
///
/// ```
/// use ecsdb_engine::{ComponentValues, FieldValue};
/// let mut values = ComponentValues::default();
/// values.push_field(0, FieldValue::Str("red".into()));
/// values.end_component();
/// values.end_component(); // a component value without fields
/// assert_eq!(values.len(), 2);
/// assert_eq!(values.get(0).map(<[_]>::len), Some(1));
/// assert_eq!(values.get(1).map(<[_]>::len), Some(0));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ComponentValues {
    /// Every field, as (field index, value), one component value after another.
    fields: Vec<(usize, FieldValue)>,
    /// Where each ended component value's fields end in `fields`.
    ends: Vec<usize>,
}

impl ComponentValues {
    /// Adds a field to the component value being built.
    pub fn push_field(&mut self, field: usize, value: FieldValue) {
        self.fields.push((field, value));
    }

    /// Ends the component value being built: its fields are the ones pushed since the last
    /// one ended.
    pub fn end_component(&mut self) {
        self.ends.push(self.fields.len());
    }

    /// Adds a whole component value.
    pub fn push_component(&mut self, fields: impl IntoIterator<Item = (usize, FieldValue)>) {
        self.fields.extend(fields);
        self.end_component();
    }

    /// Number of component values ended.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no component value was ended.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Whether fields were pushed after the last component value ended.
    pub fn has_unended_fields(&self) -> bool {
        self.fields.len() != self.ends.last().copied().unwrap_or(0)
    }

    /// The fields of the `i`-th component value.
    pub fn get(&self, i: usize) -> Option<&[(usize, FieldValue)]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.fields[start..end])
    }

    /// The fields of each component value, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[(usize, FieldValue)]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(start, &end)| &self.fields[start..end])
    }

    /// Keeps the first `len` component values, dropping the others and any field pushed
    /// after them.
    pub fn truncate(&mut self, len: usize) {
        self.ends.truncate(len);
        self.fields.truncate(self.ends.last().copied().unwrap_or(0));
    }

    /// Moves the fields out, one component value at a time (`take(n)` of the iterator for a
    /// component value of `n` fields), with the number of fields of each; empty afterwards,
    /// its memory kept for the next values.
    pub(crate) fn drain(&mut self) -> (std::vec::Drain<'_, (usize, FieldValue)>, Vec<usize>) {
        let mut start = 0;
        let counts = self
            .ends
            .iter()
            .map(|&end| {
                let n = end - start;
                start = end;
                n
            })
            .collect();
        self.ends.clear();
        (self.fields.drain(..), counts)
    }
}

impl From<Vec<Vec<(usize, FieldValue)>>> for ComponentValues {
    fn from(values: Vec<Vec<(usize, FieldValue)>>) -> ComponentValues {
        let mut flat = ComponentValues::default();
        for fields in values {
            flat.push_component(fields);
        }
        flat
    }
}
