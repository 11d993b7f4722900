//! The crate's one seeded random source for tests: generated statements, values and worlds
//! that reproduce from their seed.

/// xorshift64* (Vigna): small, fast and good enough for test data.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is moved off the fixed point).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True `percent`% of the time.
    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `options`.
    pub(crate) fn pick<T: Copy>(&mut self, options: &[T]) -> T {
        options[self.below(options.len())]
    }

    /// One of the first `usual` options 85% of the time, else any.
    pub(crate) fn usually<T: Copy>(&mut self, usual: usize, options: &[T]) -> T {
        let n = if self.chance(85) { usual.min(options.len()) } else { options.len() };
        options[self.below(n)]
    }
}
