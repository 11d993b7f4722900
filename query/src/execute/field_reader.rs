//! The numeric field types the query engine's column kernels read, as i64 or f64.

use ecsdb_engine::storage::FieldScalar;

/// Numeric field types a kernel reads.
pub trait Num: FieldScalar + Copy {
    /// Whether the type is an integer.
    const INT: bool;
    /// The value as i64 (integers only; floats truncate).
    fn to_i64(self) -> i64;
    /// The value as f64.
    fn to_f64(self) -> f64;
}
macro_rules! num {
    ($($t:ty => $int:expr),*) => {$(
        impl Num for $t {
            const INT: bool = $int;
            #[inline(always)]
            fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
num!(i8 => true, i16 => true, i32 => true, i64 => true, u8 => true, u16 => true, u32 => true, f32 => false, f64 => false);
