//! Entity ids as text (`12v0`), written and parsed (by the engine's parser): one place below
//! both export and import
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

/// Parses `12v0`: the engine's one parser of entity text.
pub(crate) fn parse_entity(s: &str) -> Option<Entity> {
    Entity::parse_ascii(s.as_bytes())
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
}
