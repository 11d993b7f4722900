//! The text pest is given: brackets checked for depth, comments blanked out, and the places
//! a long script may be cut into pieces.

use std::borrow::Cow;

use super::MAX_NESTING;
use super::ast::Span;
use crate::error::Error;

/// About how long a piece of a script given to pest at once is (see [`parse`](super::parser::parse)).
pub(super) const SCRIPT_PIECE: usize = 16 << 10;

/// The text pest parses, from [`prepare`].
pub(super) struct Prepared<'s> {
    /// The text with comments blanked out.
    pub(super) text: Cow<'s, str>,
    /// Where to cut the text into pieces of at least [`SCRIPT_PIECE`] bytes (but the last):
    /// just after a `;` outside strings and comments.
    pub(super) cuts: Vec<usize>,
}

/// The text pest parses: `src` checked for bracket nesting, with comments blanked out, and
/// where a script may be cut into pieces.
///
/// Nesting deeper than [`MAX_NESTING`] is rejected before pest sees the text, so that pest's
/// recursive descent (and ours) stays far from the end of the stack.
///
/// Every `--` comment (outside strings, up to the end of its line) becomes as many spaces, so
/// positions do not move and the grammar's `WHITESPACE` needs no comment alternative (pest
/// tries it at every gap between tokens: a measurable cost). This is exact: pest skips
/// whitespace before every token, so a `--` outside a string always starts a comment. Text
/// the AST keeps (names, strings, numbers, select items' text with whitespace collapsed) is
/// the same in both; errors quote `src`.
pub(super) fn prepare(src: &str) -> Result<Prepared<'_>, Error> {
    let bytes = src.as_bytes();
    let mut blanked: Option<Vec<u8>> = None;
    let mut cuts = Vec::new();
    let mut piece_start = 0;
    let mut depth = 0usize;
    // A `;` inside a system's `BEGIN … END` does not end a statement: a script that may hold
    // one is parsed whole (rare; only memory is at stake).
    let mut may_hold_begin = false;
    let mut i = 0;
    while i < bytes.len() {
        // (Most bytes are none of the ones looked at below: skip them a table lookup each.)
        if !PREPARE_LOOKS_AT[bytes[i] as usize] {
            i += 1;
            continue;
        }
        match bytes[i] {
            b';' if i + 1 - piece_start >= SCRIPT_PIECE => {
                piece_start = i + 1;
                cuts.push(piece_start);
            }
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                let start = i;
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                // (From `-` to before `\n` or the end: whole characters, so the copy stays UTF-8.)
                blanked.get_or_insert_with(|| bytes.to_vec())[start..i].fill(b' ');
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Error::syntax(
                        format!("brackets nested too deeply (more than {MAX_NESTING} levels)"),
                        Span::new(i, i + 1),
                    ));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'b' | b'B' => {
                may_hold_begin |= bytes.get(i..i + 5).is_some_and(|w| w.eq_ignore_ascii_case(b"begin"));
            }
            _ => {}
        }
        i += 1;
    }
    if may_hold_begin {
        cuts.clear();
    }
    let text = match blanked {
        Some(text) => Cow::Owned(String::from_utf8(text).expect("blanking whole characters keeps UTF-8")),
        None => Cow::Borrowed(src),
    };
    Ok(Prepared { text, cuts })
}

/// The bytes [`prepare`] acts on (outside strings and comments).
const PREPARE_LOOKS_AT: [bool; 256] = {
    let mut table = [false; 256];
    let looked_at = b";'\"-([{)]}bB";
    let mut i = 0;
    while i < looked_at.len() {
        table[looked_at[i] as usize] = true;
        i += 1;
    }
    table
};
