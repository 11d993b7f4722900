//! Integer `/` and `%` over a chunk, with the fast paths a filter such as
//! `WHERE Unit.id % 10 = 0` needs.
//!
//! A 64-bit hardware division costs tens of cycles, many times a multiply, and a `%` by a
//! constant is the commonest arithmetic in a sampling filter. Two fast paths cover most
//! chunks: a divisor that is the same on every row (a literal or a parameter) and fits in 32
//! bits, over dividends that are non-negative and fit in 32 bits, is done with Lemire's
//! multiply-and-shift ("Faster Remainder by Direct Computation", 2019); divisors and dividends
//! that merely fit in 32 bits use the 32-bit instruction. Everything else takes the general
//! path, which still computes only the operation asked for. The answers are Rust's (truncated
//! toward zero), and rows that divide by zero drop out of `valid`, as in the evaluator.

use crate::expr::compiled::{Bail, mask1};

/// `xs[i] / ys[i]` (or `%` when `rem`) in place over a chunk; returns the rows that stay
/// valid (those of `valid` whose divisor is not zero). Gives up on `i64::MIN / -1` in a valid
/// row, which overflows; `i64::MIN % -1` is 0.
pub(crate) fn div_rem(rem: bool, xs: &mut [i64], ys: &[i64], valid: u64) -> Result<u64, Bail> {
    let n = xs.len();
    debug_assert_eq!(n, ys.len());
    if n == 0 {
        return Ok(valid);
    }
    // Or-reductions rather than `all`, which stops early and so is not vectorised.
    let small_dividends = xs.iter().fold(0u64, |acc, &x| acc | x as u64) >> 32 == 0;
    let d = ys[0];
    let constant = ys.iter().fold(0u64, |acc, &y| acc | (y ^ d) as u64) == 0;
    if small_dividends && constant && (1..=u32::MAX as i64).contains(&d) {
        by_constant_u32(rem, xs, d as u32);
        return Ok(valid);
    }
    let zero = mask1(ys, n, |y| y == 0);
    let valid = valid & !zero;
    if small_dividends && ys.iter().fold(0u64, |acc, &y| acc | y as u64) >> 32 == 0 {
        for (x, &y) in xs.iter_mut().zip(ys) {
            let (a, b) = (*x as u32, y as u32);
            *x = match (rem, b) {
                (_, 0) => 0,
                (false, _) => (a / b) as i64,
                (true, _) => (a % b) as i64,
            };
        }
        return Ok(valid);
    }
    for (j, (x, &y)) in xs.iter_mut().zip(ys).enumerate() {
        *x = if y == 0 { 0 } else { one_row(rem, *x, y, valid >> j & 1 == 1)? };
    }
    Ok(valid)
}

/// `x / y` (or `%` when `rem`) for a divisor that is not zero, by Rust's rules; gives up on
/// `i64::MIN / -1` in a `live` row (in a null row it is 0), and `i64::MIN % -1` is 0.
#[inline(always)]
fn one_row(rem: bool, x: i64, y: i64, live: bool) -> Result<i64, Bail> {
    Ok(if rem {
        x.checked_rem(y).unwrap_or(0)
    } else {
        match x.checked_div(y) {
            Some(q) => q,
            None if live => return Err(Bail),
            None => 0,
        }
    })
}

/// `xs[i] / d` (or `%` when `rem`) in place over a chunk, for a divisor `d` that is the same
/// on every row (a literal or a parameter): [`div_rem`] without a chunk of divisors to read
/// and compare. The same answers and the same rows valid.
pub(crate) fn div_rem_by(rem: bool, xs: &mut [i64], d: i64, valid: u64) -> Result<u64, Bail> {
    if d == 0 {
        xs.fill(0);
        return Ok(0);
    }
    let small_dividends = xs.iter().fold(0u64, |acc, &x| acc | x as u64) >> 32 == 0;
    if small_dividends && (1..=u32::MAX as i64).contains(&d) {
        by_constant_u32(rem, xs, d as u32);
        return Ok(valid);
    }
    for (j, x) in xs.iter_mut().enumerate() {
        *x = one_row(rem, *x, d, valid >> j & 1 == 1)?;
    }
    Ok(valid)
}

/// Every `xs[i]` (each in `0..=u32::MAX`) divided by `d` (≥ 1), without a division per row.
fn by_constant_u32(rem: bool, xs: &mut [i64], d: u32) {
    if d == 1 {
        // The multiplier below would be 2^64; x / 1 = x and x % 1 = 0.
        if rem {
            xs.fill(0);
        }
        return;
    }
    // M = ceil(2^64 / d): x * M keeps x / d in its high word and x % d's fraction in its low.
    let m = u64::MAX / d as u64 + 1;
    for x in xs.iter_mut() {
        let a = *x as u64;
        *x = if rem {
            let low = m.wrapping_mul(a);
            ((low as u128 * d as u128) >> 64) as i64
        } else {
            ((m as u128 * a as u128) >> 64) as i64
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::compiled::low_bits;
    use proptest::prelude::*;

    /// The reference: Rust's own operators, row by row.
    fn reference(rem: bool, xs: &[i64], ys: &[i64], valid: u64) -> Result<(Vec<i64>, u64), Bail> {
        let mut out = Vec::new();
        let mut keep = valid;
        for (j, (&x, &y)) in xs.iter().zip(ys).enumerate() {
            let live = valid >> j & 1 == 1;
            if y == 0 {
                keep &= !(1 << j);
                out.push(0);
                continue;
            }
            match if rem { x.checked_rem(y).or(Some(0)) } else { x.checked_div(y) } {
                Some(v) => out.push(v),
                None if live => return Err(Bail),
                None => out.push(0),
            }
        }
        Ok((out, keep))
    }

    fn check(rem: bool, xs: &[i64], ys: &[i64], valid: u64) {
        check_with(rem, xs, ys, valid, |xs| div_rem(rem, xs, ys, valid));
        // A divisor the same on every row: also through the constant's own entry.
        if ys.iter().all(|&y| y == ys[0]) {
            check_with(rem, xs, ys, valid, |xs| div_rem_by(rem, xs, ys[0], valid));
        }
    }

    fn check_with(rem: bool, xs: &[i64], ys: &[i64], valid: u64, run: impl FnOnce(&mut [i64]) -> Result<u64, Bail>) {
        let mut got = xs.to_vec();
        let answer = run(&mut got);
        match reference(rem, xs, ys, valid) {
            Ok((want, keep)) => {
                let keep_got = answer.expect("the reference did not give up");
                assert_eq!(keep_got, keep, "valid rows of {xs:?} / {ys:?}");
                for j in 0..xs.len() {
                    if keep >> j & 1 == 1 {
                        assert_eq!(got[j], want[j], "row {j}: {} {} {}", xs[j], if rem { '%' } else { '/' }, ys[j]);
                    }
                }
            }
            Err(Bail) => assert!(answer.is_err(), "should give up on {xs:?} / {ys:?}"),
        }
    }

    #[test]
    fn constant_divisor_edges() {
        let xs: Vec<i64> = vec![0, 1, 2, 9, 10, 11, 99, 1 << 31, u32::MAX as i64, u32::MAX as i64 - 1];
        for d in [1, 2, 3, 7, 10, 64, 1000, (1 << 31) + 1, u32::MAX as i64 - 1, u32::MAX as i64] {
            let ys = vec![d; xs.len()];
            for rem in [false, true] {
                check(rem, &xs, &ys, low_bits(xs.len()));
            }
        }
    }

    #[test]
    fn negative_zero_and_overflow_take_the_general_rules() {
        let xs = [i64::MIN, -7, 7, -7, 5, i64::MIN];
        let ys = [-1, 2, -2, -2, 0, 3];
        check(true, &xs, &ys, low_bits(6));
        // i64::MIN / -1 in a valid row gives up; in a null row it does not.
        check(false, &xs, &ys, low_bits(6));
        check(false, &xs, &ys, low_bits(6) & !1);
        // A zero divisor on an otherwise constant chunk, and on every row.
        check(true, &[4, 5, 6], &[3, 0, 3], 0b111);
        check(false, &[4, 5, 6], &[0, 0, 0], 0b111);
        check(false, &[i64::MIN, 5], &[-1, -1], 0b10);
    }

    proptest! {
        #[test]
        fn matches_rust_operators(
            rem in any::<bool>(),
            rows in prop::collection::vec(
                (prop_oneof![0..100i64, 0..=u32::MAX as i64, any::<i64>()],
                 prop_oneof![Just(10i64), 0..5i64, -3..3i64, 1..=u32::MAX as i64, any::<i64>()]),
                1..=64),
            constant in any::<bool>(),
            valid in any::<u64>(),
        ) {
            let xs: Vec<i64> = rows.iter().map(|r| r.0).collect();
            let ys: Vec<i64> = if constant { vec![rows[0].1; rows.len()] } else { rows.iter().map(|r| r.1).collect() };
            check(rem, &xs, &ys, valid & low_bits(xs.len()));
        }
    }
}
