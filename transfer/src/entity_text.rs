//! Entity ids as text (`12v0`), written and parsed: one place below both export and import
//! (and the schema file, which lists ids), so neither direction imports the other.

use ecsdb_engine::Entity;

/// Two ASCII digits for each value below 100: one table lookup per pair of digits.
const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// How many decimal digits `v` has.
fn decimal_len(v: u32) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Writes `v` in decimal into `out`, which is exactly [`decimal_len`]`(v)` bytes long.
fn write_decimal(mut v: u32, out: &mut [u8]) {
    let mut end = out.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        end -= 2;
        out[end..end + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        out[..2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        out[0] = b'0' + v as u8;
    }
}

/// Appends an entity as `12v0` to `out`, in place (no formatter, no intermediate copy:
/// millions of entity cells are written per export).
pub(crate) fn push_entity_text(e: Entity, out: &mut Vec<u8>) {
    let (index, generation) = (decimal_len(e.index()), decimal_len(e.generation()));
    let start = out.len();
    out.resize(start + index + 1 + generation, b'v');
    let text = &mut out[start..];
    write_decimal(e.index(), &mut text[..index]);
    write_decimal(e.generation(), &mut text[index + 1..]);
}

/// Parses `12v0` without the standard library's general integer parser (ids are most of
/// what an import parses); same answers as `Entity::from_str`.
pub(crate) fn parse_entity(s: &str) -> Option<Entity> {
    parse_entity_bytes(s.as_bytes())
}

/// [`parse_entity`] on the text's bytes: one pass, digits then `v` then digits.
pub(crate) fn parse_entity_bytes(b: &[u8]) -> Option<Entity> {
    /// The number at the start of `b` (at most 10 digits, at least one) and the bytes after it.
    fn number(b: &[u8]) -> Option<(u32, &[u8])> {
        let mut v: u64 = 0;
        let mut n = 0;
        while let Some(d) = b.get(n).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
            v = v * 10 + d as u64;
            n += 1;
            if n > 10 {
                return None;
            }
        }
        (n > 0).then_some(())?;
        Some((u32::try_from(v).ok()?, &b[n..]))
    }
    let (index, rest) = number(b)?;
    let (generation, rest) = number(rest.strip_prefix(b"v")?)?;
    (rest.is_empty() && index != u32::MAX).then(|| Entity::from_parts(index, generation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_text_is_display_appended() {
        let mut text = b"prefix:".to_vec();
        let parts = [(0, 0), (12, 3), (9, 10), (99, 100), (100, 99), (1_000_001, 7), (u32::MAX - 1, u32::MAX)];
        for e in parts.map(|(i, g)| Entity::from_parts(i, g)) {
            text.truncate(7);
            push_entity_text(e, &mut text);
            assert_eq!(&text[7..], e.to_string().as_bytes());
        }
    }

    #[test]
    fn entity_parser_agrees_with_from_str() {
        for s in [
            "0v0",
            "12v3",
            "4294967294v4294967295",
            "4294967295v0",
            "4294967296v0",
            "v1",
            "1v",
            "1v2v3",
            "+1v0",
            "01v00",
            "",
            "1 v0",
            "99999999999v0",
            "1v-1",
        ] {
            assert_eq!(parse_entity(s), s.parse::<Entity>().ok(), "{s:?}");
        }
    }
}
