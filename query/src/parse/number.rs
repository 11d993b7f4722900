//! The values of number literals, from their digits.
//!
//! Bulk loads are mostly numbers, and `str::parse::<f64>` is general (any length, exponents,
//! slow-path big-number arithmetic): the plain decimals that scripts hold (`123.25`, `0.5`)
//! take the classic exact fast path instead — when the digits, point removed, are an integer
//! `m ≤ 2^53` and `k ≤ 22` digits follow the point, `m` and `10^k` are exact doubles and one
//! IEEE division rounds `m / 10^k` correctly, so the result is bit for bit what `str::parse`
//! gives. Everything else goes to `str::parse`.

use super::ast::*;
use crate::error::Error;

type Result<T, E = Error> = std::result::Result<T, E>;

/// An int or float literal, negated when it followed a unary minus.
pub(super) fn number_literal(digits: &str, int: bool, negative: bool, span: Span) -> Result<Expr> {
    let literal = number_value(digits, int, negative).ok_or_else(|| {
        let text = if negative { format!("-{digits}") } else { digits.to_string() };
        let message = if int {
            format!("integer {text} is out of range (int is 64-bit: {} to {})", i64::MIN, i64::MAX)
        } else {
            format!("float {text} is out of range")
        };
        Error::syntax(message, span)
    })?;
    Ok(Expr::new(ExprKind::Literal(literal), span))
}

/// The value of a number literal (an int if `int`), negated if `negative`; `None` if out of
/// range (an int outside i64, a float that is not finite).
pub(super) fn number_value(digits: &str, int: bool, negative: bool) -> Option<Literal> {
    if int {
        // (The magnitude as u64: i64::MIN's is one more than i64::MAX.)
        let magnitude = parse_u64(digits)?;
        let value = if negative { 0i64.checked_sub_unsigned(magnitude) } else { i64::try_from(magnitude).ok() };
        value.map(Literal::Int)
    } else {
        // (Negating after rounding is exact: rounding is symmetric.)
        let value = parse_f64(digits).filter(|v| v.is_finite())?;
        Some(Literal::Float(if negative { -value } else { value }))
    }
}

/// The forms of the grammar's `number` rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NumberKind {
    /// `12v0`.
    Entity,
    /// `2.` or `2.x`: reported as an error.
    BadFloat,
    /// `2.5`, `.5`, `2e3`, `2.5e-3`.
    Float,
    /// `2`.
    Int,
}

/// Which form a `number` token's text has (the grammar matched exactly one).
pub(super) fn number_kind(text: &str) -> NumberKind {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    match bytes.get(digits) {
        None => NumberKind::Int,
        Some(b'v') => NumberKind::Entity,
        Some(b'.') if bytes.get(digits + 1).is_some_and(u8::is_ascii_digit) => NumberKind::Float,
        Some(b'.') => NumberKind::BadFloat,
        // An exponent.
        Some(_) => NumberKind::Float,
    }
}

/// A plain decimal read from the start of some bytes: digits, then at most one `.` and
/// digits (`12`, `2.5`; also `2.`, `.5` and `.`, which the caller may refuse).
#[derive(Clone, Copy, Debug)]
struct Decimal {
    /// Bytes read.
    len: usize,
    /// Digits after the point; `None` without a point.
    fraction_digits: Option<usize>,
    /// Number of digits.
    digits: usize,
    /// The digits, point removed, as an integer, when it is at most [`MAX_EXACT_MANTISSA`].
    mantissa: Option<u64>,
}

/// The largest integer below which every integer is an exact double.
const MAX_EXACT_MANTISSA: u64 = 1 << 53;

/// `10^k` for every `k` whose power is an exact double.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// Reads the plain decimal at the start of `bytes` (possibly empty: no digit, no point).
fn read_decimal(bytes: &[u8]) -> Decimal {
    let mut mantissa: u64 = 0;
    // (Wraps only past 19 digits, where the mantissa is not used.)
    let mut digits_from = |at: usize| {
        let mut end = at;
        while let Some(digit) = bytes.get(end).map(|b| b.wrapping_sub(b'0')).filter(|&d| d < 10) {
            mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(digit));
            end += 1;
        }
        end
    };
    let mut len = digits_from(0);
    let mut digits = len;
    let mut fraction_digits = None;
    if bytes.get(len) == Some(&b'.') {
        let end = digits_from(len + 1);
        fraction_digits = Some(end - len - 1);
        digits += end - len - 1;
        len = end;
    }
    let exact = digits <= 19 && mantissa <= MAX_EXACT_MANTISSA;
    Decimal { len, fraction_digits, digits, mantissa: exact.then_some(mantissa) }
}

impl Decimal {
    /// The value, when the exact fast path computes it (see the module documentation).
    fn exact_f64(&self) -> Option<f64> {
        let power = EXACT_POWERS_OF_TEN.get(self.fraction_digits.unwrap_or(0))?;
        let mantissa = self.mantissa.filter(|_| self.digits > 0)?;
        Some(mantissa as f64 / power)
    }
}

/// `text.parse::<u64>().ok()`, with plain digits read directly.
fn parse_u64(text: &str) -> Option<u64> {
    let mut value: u64 = 0;
    for &b in text.as_bytes() {
        if !b.is_ascii_digit() {
            return text.parse().ok();
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    if text.is_empty() {
        return None;
    }
    Some(value)
}

/// `text.parse::<f64>().ok()`, bit for bit, with plain decimals computed exactly (see the
/// module documentation).
fn parse_f64(text: &str) -> Option<f64> {
    let decimal = read_decimal(text.as_bytes());
    decimal.exact_f64().filter(|_| decimal.len == text.len()).or_else(|| text.parse().ok())
}

#[cfg(test)]
mod tests;
