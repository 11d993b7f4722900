//! Field values from text (CSV cells, JSON scalars), checked against the field's type, and
//! the field types of columns that come without a schema.

use ecsdb_engine::snapshot::FieldValues;
use ecsdb_engine::{Entity, FieldType};

use crate::entity_text::parse_entity;
use crate::error::DataProblem;

/// One field's values being read.
pub(crate) enum Builder {
    Plain { ty: FieldType, bytes: Vec<u8> },
    Strings { lengths: Vec<u32>, text: Vec<u8> },
}

fn mismatch(ty: FieldType, found: &str) -> DataProblem {
    let found = if found.is_empty() { "an empty value".to_string() } else { format!("'{found}'") };
    DataProblem::TypeMismatch { expected: ty.name().to_string(), found }
}

/// Parses a vector written as `[x,y]` or `[x,y,z]` (spaces and JSON-quoted `"NaN"` allowed).
fn parse_vector<const N: usize>(s: &str) -> Option<[f32; N]> {
    let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut out = [0f32; N];
    let mut parts = inner.split(',');
    for o in out.iter_mut() {
        *o = parse_float::<f32>(parts.next()?.trim().trim_matches('"'))?;
    }
    parts.next().is_none().then_some(out)
}

/// Parses a float as Rust does (`1.5`, `1e3`, `NaN`, `inf`, `-inf`, `infinity`).
fn parse_float<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

fn parse_bool(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

impl Builder {
    pub(crate) fn new(ty: FieldType, rows: usize) -> Builder {
        match ty {
            FieldType::String => Builder::Strings { lengths: Vec::with_capacity(rows), text: Vec::new() },
            ty => Builder::Plain { ty, bytes: Vec::with_capacity(rows * plain_size(ty)) },
        }
    }

    /// Appends a value given as text. An empty cell is an empty string, a null entity, and
    /// an error for every other type.
    pub(crate) fn push_text(&mut self, s: &str) -> Result<(), DataProblem> {
        match self {
            Builder::Strings { lengths, text } => {
                let len =
                    u32::try_from(s.len()).map_err(|_| DataProblem::Malformed("a string over 4 GiB".to_string()))?;
                lengths.push(len);
                text.extend_from_slice(s.as_bytes());
            }
            Builder::Plain { ty, bytes } => {
                let ty = *ty;
                let bad = || mismatch(ty, s);
                macro_rules! num {
                    ($t:ty) => {
                        bytes.extend_from_slice(&s.parse::<$t>().map_err(|_| bad())?.to_le_bytes())
                    };
                }
                match ty {
                    FieldType::Bool => bytes.push(parse_bool(s).ok_or_else(bad)? as u8),
                    FieldType::I8 => num!(i8),
                    FieldType::I16 => num!(i16),
                    FieldType::I32 => num!(i32),
                    FieldType::I64 => num!(i64),
                    FieldType::U8 => num!(u8),
                    FieldType::U16 => num!(u16),
                    FieldType::U32 => num!(u32),
                    FieldType::U64 => num!(u64),
                    FieldType::F32 => {
                        let x: f32 = parse_float(s).ok_or_else(bad)?;
                        // A finite decimal beyond f32's range would become infinity.
                        if x.is_infinite() && !s.to_ascii_lowercase().contains("inf") {
                            return Err(bad());
                        }
                        bytes.extend_from_slice(&x.to_le_bytes())
                    }
                    FieldType::F64 => bytes.extend_from_slice(&parse_float::<f64>(s).ok_or_else(bad)?.to_le_bytes()),
                    FieldType::Entity => {
                        let e = if s.is_empty() {
                            Entity::NULL
                        } else {
                            parse_entity(s).ok_or_else(|| DataProblem::BadEntity(s.to_string()))?
                        };
                        bytes.extend_from_slice(&e.index().to_le_bytes());
                        bytes.extend_from_slice(&e.generation().to_le_bytes());
                    }
                    FieldType::Vec2 => {
                        for x in parse_vector::<2>(s).ok_or_else(bad)? {
                            bytes.extend_from_slice(&x.to_le_bytes());
                        }
                    }
                    FieldType::Vec3 => {
                        for x in parse_vector::<3>(s).ok_or_else(bad)? {
                            bytes.extend_from_slice(&x.to_le_bytes());
                        }
                    }
                    FieldType::String => unreachable!("strings have their own builder"),
                }
            }
        }
        Ok(())
    }

    /// Appends the zero value (JSON `null` or a missing key): 0, false, empty, the null
    /// entity.
    pub(crate) fn push_zero(&mut self) {
        match self {
            Builder::Strings { lengths, .. } => lengths.push(0),
            Builder::Plain { ty: FieldType::Entity, bytes } => {
                bytes.extend_from_slice(&u32::MAX.to_le_bytes());
                bytes.extend_from_slice(&u32::MAX.to_le_bytes());
            }
            Builder::Plain { ty, bytes } => bytes.resize(bytes.len() + plain_size(*ty), 0),
        }
    }

    pub(crate) fn finish(self) -> FieldValues {
        match self {
            Builder::Plain { bytes, .. } => FieldValues::Plain(bytes),
            Builder::Strings { lengths, text } => FieldValues::Strings { lengths, text },
        }
    }
}

/// Bytes of one value of a non-string field type in [`FieldValues::Plain`].
pub(crate) fn plain_size(ty: FieldType) -> usize {
    match ty {
        FieldType::String => 0,
        FieldType::Entity => 8,
        other => other.layout().size(),
    }
}

/// Guesses a column's field type from its text values (`None` for a missing value): the
/// narrowest of bool, i64, f64, entity, vec2, vec3 that every present value parses as,
/// else string. A column with empty cells (CSV) is a string or entity column.
#[derive(Clone, Debug)]
pub(crate) struct Guess {
    bool: bool,
    int: bool,
    float: bool,
    entity: bool,
    vec2: bool,
    vec3: bool,
    any: bool,
}

impl Default for Guess {
    fn default() -> Self {
        Guess { bool: true, int: true, float: true, entity: true, vec2: true, vec3: true, any: false }
    }
}

impl Guess {
    pub(crate) fn see(&mut self, s: &str) {
        if s.is_empty() {
            // Only strings and entities have an empty form.
            (self.bool, self.int, self.float, self.vec2, self.vec3) = (false, false, false, false, false);
            return;
        }
        self.any = true;
        self.bool &= parse_bool(s).is_some();
        self.int &= s.parse::<i64>().is_ok();
        self.float &= s.parse::<f64>().is_ok();
        self.entity &= parse_entity(s).is_some();
        self.vec2 &= parse_vector::<2>(s).is_some();
        self.vec3 &= parse_vector::<3>(s).is_some();
    }

    pub(crate) fn field_type(&self) -> FieldType {
        if !self.any {
            FieldType::String
        } else if self.bool {
            FieldType::Bool
        } else if self.int {
            FieldType::I64
        } else if self.float {
            FieldType::F64
        } else if self.entity {
            FieldType::Entity
        } else if self.vec2 {
            FieldType::Vec2
        } else if self.vec3 {
            FieldType::Vec3
        } else {
            FieldType::String
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(ty: FieldType, s: &str) -> Result<FieldValues, DataProblem> {
        let mut b = Builder::new(ty, 1);
        b.push_text(s)?;
        Ok(b.finish())
    }

    #[test]
    fn text_values_fit_or_fail() {
        assert_eq!(one(FieldType::F32, "0.1").unwrap(), FieldValues::Plain(0.1f32.to_le_bytes().to_vec()));
        assert_eq!(one(FieldType::U8, "255").unwrap(), FieldValues::Plain(vec![255]));
        assert!(matches!(one(FieldType::U8, "256"), Err(DataProblem::TypeMismatch { .. })));
        assert!(matches!(one(FieldType::I32, "1.5"), Err(DataProblem::TypeMismatch { .. })));
        assert!(matches!(one(FieldType::F32, "1e39"), Err(DataProblem::TypeMismatch { .. })));
        assert!(one(FieldType::F32, "-inf").is_ok());
        assert!(matches!(one(FieldType::Entity, "12x"), Err(DataProblem::BadEntity(_))));
        assert_eq!(one(FieldType::Entity, "").unwrap(), FieldValues::Plain(vec![255; 8]));
        assert!(one(FieldType::Vec3, "[1, 2.5,\"NaN\"]").is_ok());
        assert!(one(FieldType::Vec2, "[1,2,3]").is_err());
        assert!(matches!(one(FieldType::Bool, ""), Err(DataProblem::TypeMismatch { .. })));
    }

    #[test]
    fn guesses() {
        let guess = |vals: &[&str]| {
            let mut g = Guess::default();
            vals.iter().for_each(|v| g.see(v));
            g.field_type()
        };
        assert_eq!(guess(&["1", "-2"]), FieldType::I64);
        assert_eq!(guess(&["1", "2.5", "NaN"]), FieldType::F64);
        assert_eq!(guess(&["true", "FALSE"]), FieldType::Bool);
        assert_eq!(guess(&["3v0", ""]), FieldType::Entity);
        assert_eq!(guess(&["[1,2]"]), FieldType::Vec2);
        assert_eq!(guess(&["1", ""]), FieldType::String);
        assert_eq!(guess(&[]), FieldType::String);
    }
}
