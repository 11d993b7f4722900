//! The text pest is given: brackets checked for depth and comments blanked out.

use std::borrow::Cow;

use super::MAX_NESTING;
use super::ast::Span;
use crate::error::Error;
use crate::lex::{Lexer, TokenKind};

/// The text pest parses, from [`prepare`].
pub(super) struct Prepared<'s> {
    /// The text with comments blanked out.
    pub text: Cow<'s, str>,
    /// The deepest bracket nesting in it.
    pub depth: usize,
}

/// `src` checked for bracket nesting, with comments blanked out: the text pest parses.
///
/// Nesting deeper than [`MAX_NESTING`] is rejected before pest sees the text, so that pest's
/// recursive descent (and ours) stays far from the end of the stack.
///
/// Every `--` comment becomes as many spaces, so positions do not move and the grammar's
/// `WHITESPACE` needs no comment alternative (pest tries it at every gap between tokens: a
/// measurable cost). This is exact: the lexer finds comments where the grammar could have
/// skipped them (outside strings). Text the AST keeps (names, strings, numbers, select items'
/// text with whitespace collapsed) is the same in both; errors quote `src`.
pub(super) fn prepare(src: &str) -> Result<Prepared<'_>, Error> {
    let mut blanked: Option<Vec<u8>> = None;
    let mut depth = 0usize;
    let mut deepest = 0;
    let mut lexer = Lexer::new(src);
    while let Some(token) = lexer.next_raw() {
        match token.kind {
            TokenKind::Comment => {
                // (From `-` to before `\n` or the end: whole characters, so the copy stays UTF-8.)
                blanked.get_or_insert_with(|| src.as_bytes().to_vec())[token.span.start..token.span.end].fill(b' ');
            }
            TokenKind::Symbol => match src.as_bytes()[token.span.start] {
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                    if depth > MAX_NESTING {
                        return Err(Error::syntax(
                            format!("brackets nested too deeply (more than {MAX_NESTING} levels)"),
                            Span::new(token.span.start, token.span.start + 1),
                        ));
                    }
                }
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
            _ => {}
        }
    }
    let text = match blanked {
        Some(text) => Cow::Owned(String::from_utf8(text).expect("blanking whole characters keeps UTF-8")),
        None => Cow::Borrowed(src),
    };
    Ok(Prepared { text, depth: deepest })
}
