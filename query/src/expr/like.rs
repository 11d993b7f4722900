//! `LIKE`, compiled once per pattern: exact, prefix, suffix and substring patterns become
//! plain byte comparisons; anything else runs a wildcard matcher over the string's bytes with
//! the pattern's characters decoded once, allocating nothing per row.

use ecsdb_engine::Value;

use crate::expr::fallback;
use crate::expr::ops;
use crate::expr::vector::{Prim, Validity, Vector};

/// A compiled `LIKE` pattern (`%` any run, `_` one character, case-sensitive, no escape).
#[derive(Clone, Debug, PartialEq)]
pub enum LikeMatcher {
    /// No wildcard: equality.
    Exact(String),
    /// `abc%`.
    Prefix(String),
    /// `%abc`.
    Suffix(String),
    /// `%abc%`.
    Contains(String),
    /// Any other pattern, as characters.
    General(Vec<char>),
}

impl LikeMatcher {
    /// Compiles a pattern.
    pub fn new(pattern: &str) -> LikeMatcher {
        if pattern.contains('_') {
            return LikeMatcher::General(pattern.chars().collect());
        }
        let core = pattern.trim_matches('%');
        if core.contains('%') {
            return LikeMatcher::General(pattern.chars().collect());
        }
        if core.is_empty() && !pattern.is_empty() {
            // Only `%`s: every string matches.
            return LikeMatcher::Contains(String::new());
        }
        let (lead, trail) = (pattern.starts_with('%'), pattern.ends_with('%'));
        let core = core.to_string();
        match (lead, trail) {
            (false, false) => LikeMatcher::Exact(core),
            (false, true) => LikeMatcher::Prefix(core),
            (true, false) => LikeMatcher::Suffix(core),
            (true, true) => LikeMatcher::Contains(core),
        }
    }

    /// Whether `s` matches. Inlined into a scan's loop (the general matcher stays a call),
    /// so a prefix, suffix or exact test costs a few instructions a row.
    #[inline(always)]
    pub fn matches(&self, s: &str) -> bool {
        match self {
            LikeMatcher::Exact(p) => is_exact(s, p),
            LikeMatcher::Prefix(p) => has_prefix(s, p),
            LikeMatcher::Suffix(p) => has_suffix(s, p),
            LikeMatcher::Contains(p) => p.is_empty() || s.contains(p.as_str()),
            LikeMatcher::General(p) => wildcard_match(s, p),
        }
    }
}

/// A suffix or substring `LIKE` test on the head of a string of up to seven bytes, which
/// holds the string whole (see [`HeadTest`] for the layout): the pattern's bytes compared at
/// the string's end, or at each place it fits, without branches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShortTest {
    want: u64,
    mask: u64,
    /// The pattern's length in bytes (0 for `Never`).
    len: u64,
    kind: ShortKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ShortKind {
    Suffix,
    Contains,
    /// A pattern longer than seven bytes: no short string holds it.
    Never,
}

impl ShortTest {
    /// The short-string test of a suffix or substring pattern; `None` for other kinds (and the
    /// empty substring, which every string has).
    pub fn new(m: &LikeMatcher) -> Option<ShortTest> {
        let (p, kind) = match m {
            LikeMatcher::Suffix(p) => (p.as_bytes(), ShortKind::Suffix),
            LikeMatcher::Contains(p) if !p.is_empty() => (p.as_bytes(), ShortKind::Contains),
            _ => return None,
        };
        if p.len() > 7 {
            return Some(ShortTest { want: 0, mask: 0, len: 0, kind: ShortKind::Never });
        }
        let mut bytes = [0u8; 8];
        bytes[..p.len()].copy_from_slice(p);
        let mask = (1u64 << (8 * p.len())) - 1;
        Some(ShortTest { want: u64::from_le_bytes(bytes), mask, len: p.len() as u64, kind })
    }

    /// Whether the string whose head is `head` (of at most seven bytes) matches.
    #[inline(always)]
    pub fn test(&self, head: u64) -> bool {
        let len = head >> 56;
        match self.kind {
            ShortKind::Suffix => {
                let at = len.saturating_sub(self.len);
                (len >= self.len) & ((head >> (8 * at)) & self.mask == self.want)
            }
            ShortKind::Contains => (0..7u64).fold(false, |found, at| {
                found | ((at + self.len <= len) & ((head >> (8 * at)) & self.mask == self.want))
            }),
            ShortKind::Never => false,
        }
    }
}

/// A `LIKE` test on string heads (each string's first seven bytes and its length capped at
/// 255, packed as [`ecsdb_engine::storage::string_head`] does): a prefix or exact pattern of up
/// to seven bytes is decided by the head alone; a longer one is ruled out by it for most rows,
/// and the others are matched on the string.
///
/// Most tests are one masked compare: an exact pattern compares the length byte too, and a
/// prefix without a zero byte needs no length test (the head holds zeros past a string's end,
/// so a string shorter than the prefix differs from it there).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadTest {
    mask: u64,
    /// The head's bits under `mask` that a match has.
    want: u64,
    /// The smallest length byte a match has; 0 when the compare alone tells.
    min_len: u64,
    /// Whether the head decides (the pattern fits in it); otherwise it only rules rows out.
    decides: bool,
}

impl HeadTest {
    /// The head test of a prefix or exact pattern; `None` for other kinds and for an empty
    /// prefix (which every string has).
    pub fn new(m: &LikeMatcher) -> Option<HeadTest> {
        let (p, exact) = match m {
            LikeMatcher::Exact(p) => (p.as_bytes(), true),
            LikeMatcher::Prefix(p) if !p.is_empty() => (p.as_bytes(), false),
            _ => return None,
        };
        let n = p.len().min(7);
        let mut bytes = [0u8; 8];
        bytes[..n].copy_from_slice(&p[..n]);
        let len = p.len().min(255) as u64;
        let (mut want, mut mask) = (u64::from_le_bytes(bytes), (1u64 << (8 * n)) - 1);
        let mut min_len = 0;
        if exact {
            want |= len << 56;
            mask |= 0xff << 56;
        } else if p[..n].contains(&0) {
            min_len = len;
        }
        Some(HeadTest { mask, want, min_len, decides: p.len() <= 7 })
    }

    /// Whether a string with head `head` may match (does match, when [`HeadTest::decides`]).
    #[inline(always)]
    pub fn test(&self, head: u64) -> bool {
        (head & self.mask == self.want) & (head >> 56 >= self.min_len)
    }

    /// [`HeadTest::test`] when it is one masked compare: `(mask, want)`.
    pub fn masked_compare(&self) -> Option<(u64, u64)> {
        (self.min_len == 0).then_some((self.mask, self.want))
    }

    /// Whether [`HeadTest::test`] is the whole answer.
    pub fn decides(&self) -> bool {
        self.decides
    }
}

/// `s LIKE 'p'` for a `p` without wildcards.
#[inline(always)]
pub(crate) fn is_exact(s: &str, p: &str) -> bool {
    s.len() == p.len() && same_bytes(Some(s.as_bytes()), p.as_bytes())
}

/// `s LIKE 'p%'` for a `p` without wildcards.
#[inline(always)]
pub(crate) fn has_prefix(s: &str, p: &str) -> bool {
    same_bytes(s.as_bytes().get(..p.len()), p.as_bytes())
}

/// `s LIKE '%p'` for a `p` without wildcards.
#[inline(always)]
pub(crate) fn has_suffix(s: &str, p: &str) -> bool {
    same_bytes(s.len().checked_sub(p.len()).and_then(|at| s.as_bytes().get(at..)), p.as_bytes())
}

/// Whether `part` is there and equals `p`. Patterns are short: an inlined byte loop that
/// stops at the first difference is cheaper than the call to `memcmp` that slice equality
/// makes, once per row.
#[inline(always)]
fn same_bytes(part: Option<&[u8]>, p: &[u8]) -> bool {
    part.is_some_and(|part| part.iter().zip(p).all(|(a, b)| a == b))
}

/// The greedy wildcard match of [`ops::like`], over `s`'s bytes (advancing a character at a
/// time) instead of a collected `Vec<char>`.
#[inline(never)]
fn wildcard_match(s: &str, p: &[char]) -> bool {
    let next_char = |i: usize| s[i..].chars().next();
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        let c = next_char(i).unwrap_or('\0');
        if j < p.len() && (p[j] == '_' || (p[j] != '%' && p[j] == c)) {
            i += c.len_utf8();
            j += 1;
        } else if j < p.len() && p[j] == '%' {
            star = Some((j, i));
            j += 1;
        } else if let Some((sj, si)) = star {
            j = sj + 1;
            i = si + next_char(si).map_or(1, char::len_utf8);
            star = Some((sj, i));
        } else {
            return false;
        }
    }
    p[j..].iter().all(|&c| c == '%')
}

/// `s [NOT] LIKE pattern`.
pub fn like<'a>(s: &Vector<'_>, pattern: &Vector<'_>, n: usize, negated: bool) -> Result<Vector<'a>, String> {
    match (s, pattern) {
        (_, Vector::Scalar(Value::Null, _)) => Ok(Vector::nulls(n)),
        (Vector::Str(strs), Vector::Scalar(Value::Str(p), _)) => {
            let m = LikeMatcher::new(p);
            let mut values = Vec::with_capacity(n);
            let valid: Validity = strs.validity().clone();
            for i in 0..n {
                values.push(strs.get(i).is_some_and(|x| m.matches(x)) != negated);
            }
            Ok(Vector::Bool(Prim { values, valid }))
        }
        _ => fallback::map2(s, pattern, n, |a, b| {
            Ok(ops::like_values(a, b)?.map(|m| m != negated).map_or(Value::Null, Value::Bool))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_patterns_agree_with_the_reference_matcher() {
        let patterns = [
            "zi%", "%zi", "%zi%", "zi", "", "%", "%%", "z%i", "_i%", "%_", "a%%", "%%a", "%a%b%", "héllo", "h_llo",
            "%é%",
        ];
        let strings = ["zi", "zig", "gzi", "azib", "", "z", "héllo", "hello", "a", "ab", "ba", "aab", "é"];
        for p in patterns {
            let m = LikeMatcher::new(p);
            for s in strings {
                assert_eq!(m.matches(s), ops::like(s, p), "{s:?} LIKE {p:?} ({m:?})");
            }
        }
        assert_eq!(LikeMatcher::new("zi%"), LikeMatcher::Prefix("zi".into()));
        assert_eq!(LikeMatcher::new("%zi"), LikeMatcher::Suffix("zi".into()));
        assert_eq!(LikeMatcher::new("%zi%"), LikeMatcher::Contains("zi".into()));
    }

    #[test]
    fn head_tests_agree_with_the_matcher() {
        use ecsdb_engine::storage::string_head;
        let long = "z".repeat(300);
        let patterns =
            ["zi%", "zi", "", "z%", "zigzag%", "zigzagz%", "zigzagzag%", "zigzagz", "zigzagzag", "é%", "éé", "\0%"];
        let mut strings =
            vec!["zi", "zig", "zigzag", "zigzagz", "zigzagzag", "zigzagzagzag", "", "z", "é", "éé", "\0", "\0a"];
        strings.push(&long);
        let mut patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        patterns.push(long.clone());
        patterns.push(format!("{}%", &long[..260]));
        for p in &patterns {
            let m = LikeMatcher::new(p);
            let Some(t) = HeadTest::new(&m) else {
                assert!(!matches!(m, LikeMatcher::Exact(_)), "{p:?}: an exact pattern always has a head test");
                continue;
            };
            for s in &strings {
                let (head, full) = (t.test(string_head(s)), m.matches(s));
                if t.decides() {
                    assert_eq!(head, full, "{p:?} on {s:?}");
                } else {
                    assert!(head || !full, "{p:?} on {s:?}: the head rules out a match");
                }
            }
        }
        assert!(HeadTest::new(&LikeMatcher::new("%zi")).is_none());
        assert!(HeadTest::new(&LikeMatcher::new("%")).is_none());
    }

    #[test]
    fn short_tests_agree_with_the_matcher_on_strings_of_up_to_seven_bytes() {
        use ecsdb_engine::storage::string_head;
        let patterns =
            ["%zi", "%zi%", "%i", "%z%", "%é", "%é%", "%zigzag", "%zigzag%", "%zigzagz", "%zigzagz%", "%\0%"];
        let strings =
            ["zi", "zig", "gzi", "azib", "", "z", "é", "xé", "aéb", "zigzag", "zigzagz", "izigza", "\0", "a\0"];
        for p in patterns {
            let m = LikeMatcher::new(p);
            let t = ShortTest::new(&m).unwrap_or_else(|| panic!("{p:?} has a short test"));
            for s in strings {
                assert_eq!(t.test(string_head(s)), m.matches(s), "{p:?} on {s:?}");
            }
        }
        assert!(ShortTest::new(&LikeMatcher::new("%")).is_none());
        assert!(ShortTest::new(&LikeMatcher::new("z_g%")).is_none());
    }
}
