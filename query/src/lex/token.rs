//! Tokens: the language's lexical rules, mirrored from the grammar.
//!
//! The grammar (`grammar/ecsdb.pest`) decides what is a statement; this module only cuts text
//! into the same atoms the grammar reads (its `number`, `string`, `param`, `entity_lit` and
//! name rules, its `WHITESPACE`, and `--` comments), so that tools can highlight, complete
//! and split text without parsing it. It never fails: every byte belongs to one token, and
//! text it does not understand becomes [`TokenKind::Unknown`]. A test checks each atom
//! against the grammar's own rule on generated text.

use super::keywords::keyword;
use crate::error::Span;

/// What a [`Token`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenKind {
    /// Spaces, tabs, line feeds, form feeds and carriage returns.
    Whitespace,
    /// `--` to the end of the line.
    Comment,
    /// A word of the keyword table ([`crate::lex::KEYWORDS`]), in any case. A contextual
    /// keyword is still a name where the grammar expects one.
    Keyword,
    /// Any other word (`[A-Za-z_][A-Za-z0-9_]*`): a component, field, function or alias.
    Name,
    /// A number as the grammar reads one: `12`, `2.5`, `.5`, `2e3`; also the malformed `2.`
    /// and `2.x`, which the parser reports.
    Number,
    /// An entity literal: `12v0`.
    Entity,
    /// A quoted string, `'…'` or `"…"`, backslash escapes included.
    String,
    /// A quote that is never closed: the rest of the text.
    UnterminatedString,
    /// A parameter: `$1`, `$name`.
    Param,
    /// An operator or punctuation: `<= >= <> != == || ( ) [ ] { } , ; . : * ! ? | = < > + - / %`.
    Symbol,
    /// A character the language has no use for.
    Unknown,
}

impl TokenKind {
    /// Whitespace or a comment: what the grammar skips between tokens.
    pub fn is_trivia(self) -> bool {
        matches!(self, TokenKind::Whitespace | TokenKind::Comment)
    }

    /// A literal value: a number, an entity or a string.
    pub fn is_literal(self) -> bool {
        matches!(self, TokenKind::Number | TokenKind::Entity | TokenKind::String)
    }
}

/// One token: its kind and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Its bytes in the text.
    pub span: Span,
}

impl Token {
    /// Its text in `src`.
    pub fn text<'s>(&self, src: &'s str) -> &'s str {
        &src[self.span.start..self.span.end]
    }
}

/// Cuts `src` into tokens that cover it, in order.
///
/// ```
/// use ecsdb_query::lex::{lex, TokenKind};
/// let src = "SELECT Health.hp -- low\nWHERE hp < .5";
/// let kinds: Vec<TokenKind> = lex(src).iter().filter(|t| !t.kind.is_trivia()).map(|t| t.kind).collect();
/// use TokenKind::{Keyword, Name, Number, Symbol};
/// assert_eq!(kinds, [Keyword, Name, Symbol, Name, Keyword, Name, Symbol, Number]);
/// assert_eq!(lex(src).iter().map(|t| t.text(src)).collect::<String>(), src);
/// ```
pub fn lex(src: &str) -> Vec<Token> {
    Lexer::new(src).collect()
}

/// The tokens of a text, one at a time (what [`lex`] collects).
#[derive(Clone, Debug)]
pub struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

impl<'s> Lexer<'s> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'s str) -> Lexer<'s> {
        Lexer { src, pos: 0 }
    }

    /// A lexer at byte `pos` of `src` (a token boundary).
    pub(crate) fn at(src: &'s str, pos: usize) -> Lexer<'s> {
        Lexer { src, pos }
    }

    /// The next token that is not whitespace or a comment, words not looked up (see
    /// [`Lexer::next_raw`]).
    pub(crate) fn next_significant(&mut self) -> Option<Token> {
        loop {
            let bytes = self.src.as_bytes();
            // (Single spaces between tokens are most of the whitespace: skipped here.)
            while bytes.get(self.pos).is_some_and(|&b| is_space(b)) {
                self.pos += 1;
            }
            let t = self.next_raw()?;
            if t.kind != TokenKind::Comment {
                return Some(t);
            }
        }
    }

    /// The next token with words not looked up: every word is a [`TokenKind::Name`]. (The
    /// parser's hot path, which compares words itself.)
    pub(crate) fn next_raw(&mut self) -> Option<Token> {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let &first = bytes.get(start)?;
        let (kind, end) = match first {
            b' ' | b'\t' | b'\n' | b'\x0C' | b'\r' => {
                (TokenKind::Whitespace, start + 1 + bytes[start + 1..].iter().take_while(|&&b| is_space(b)).count())
            }
            b'-' if bytes.get(start + 1) == Some(&b'-') => {
                (TokenKind::Comment, bytes[start..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| start + n))
            }
            b'\'' | b'"' => string(bytes, start),
            b'0'..=b'9' => number(bytes, start),
            b'.' if bytes.get(start + 1).is_some_and(u8::is_ascii_digit) => number(bytes, start),
            b'$' => match bytes.get(start + 1) {
                Some(b) if b.is_ascii_digit() => {
                    (TokenKind::Param, start + 1 + bytes[start + 1..].iter().take_while(|b| b.is_ascii_digit()).count())
                }
                Some(b) if b.is_ascii_alphabetic() || *b == b'_' => (TokenKind::Param, word_end(bytes, start + 1)),
                _ => (TokenKind::Unknown, start + 1),
            },
            b if b.is_ascii_alphabetic() || b == b'_' => (TokenKind::Name, word_end(bytes, start)),
            b'<' => (TokenKind::Symbol, start + if matches!(bytes.get(start + 1), Some(b'=' | b'>')) { 2 } else { 1 }),
            b'>' | b'!' | b'=' => (TokenKind::Symbol, start + if bytes.get(start + 1) == Some(&b'=') { 2 } else { 1 }),
            b'|' => (TokenKind::Symbol, start + if bytes.get(start + 1) == Some(&b'|') { 2 } else { 1 }),
            b'(' | b')' | b'[' | b']' | b'{' | b'}' | b',' | b';' | b'.' | b':' | b'*' | b'?' | b'+' | b'-' | b'/'
            | b'%' => (TokenKind::Symbol, start + 1),
            _ => (TokenKind::Unknown, start + self.src[start..].chars().next().map_or(1, char::len_utf8)),
        };
        self.pos = end;
        Some(Token { kind, span: Span::new(start, end) })
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let mut token = self.next_raw()?;
        if token.kind == TokenKind::Name && keyword(token.text(self.src)).is_some() {
            token.kind = TokenKind::Keyword;
        }
        Some(token)
    }
}

/// The grammar's `WHITESPACE`: space, tab, line feed, form feed, carriage return.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0C' | b'\r')
}

/// A byte of a word: an ASCII letter or digit, or `_`.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn word_end(bytes: &[u8], start: usize) -> usize {
    start + bytes[start..].iter().take_while(|&&b| is_word_byte(b)).count()
}

fn digits_end(bytes: &[u8], start: usize) -> usize {
    start + bytes[start..].iter().take_while(|b| b.is_ascii_digit()).count()
}

/// The grammar's `string` (or `unterminated_string`) at `start`, a quote.
fn string(bytes: &[u8], start: usize) -> (TokenKind, usize) {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b if b == quote => return (TokenKind::String, i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    (TokenKind::UnterminatedString, bytes.len())
}

/// The grammar's `number` at `start` (a digit, or `.` before a digit), in its order of
/// preference: `12v0`; `2.` or `2.x` (malformed, matched to be reported); `2.5`, `2.5e3`,
/// `2e3`; `2`; or `.5`, `.5e3`.
fn number(bytes: &[u8], start: usize) -> (TokenKind, usize) {
    if bytes[start] == b'.' {
        let end = digits_end(bytes, start + 1);
        return (TokenKind::Number, exponent_end(bytes, end).unwrap_or(end));
    }
    let digits = digits_end(bytes, start);
    match bytes.get(digits) {
        Some(b'v') => {
            let generation = digits_end(bytes, digits + 1);
            if generation > digits + 1 && !bytes.get(generation).is_some_and(|&b| is_word_byte(b)) {
                return (TokenKind::Entity, generation);
            }
        }
        Some(b'.') => {
            let fraction = digits_end(bytes, digits + 1);
            if fraction == digits + 1 {
                return (TokenKind::Number, word_end(bytes, digits + 1));
            }
            return (TokenKind::Number, exponent_end(bytes, fraction).unwrap_or(fraction));
        }
        Some(b'e' | b'E') => {
            if let Some(end) = exponent_end(bytes, digits) {
                return (TokenKind::Number, end);
            }
        }
        _ => {}
    }
    (TokenKind::Number, digits)
}

/// The end of an exponent (`e`, an optional sign, digits) at `at`, if one is there.
fn exponent_end(bytes: &[u8], at: usize) -> Option<usize> {
    if !matches!(bytes.get(at), Some(b'e' | b'E')) {
        return None;
    }
    let digits = at + 1 + usize::from(matches!(bytes.get(at + 1), Some(b'+' | b'-')));
    let end = digits_end(bytes, digits);
    (end > digits).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, &str)> {
        lex(src).into_iter().filter(|t| !t.kind.is_trivia()).map(|t| (t.kind, t.text(src))).collect()
    }

    #[test]
    fn atoms() {
        use TokenKind::*;
        assert_eq!(
            kinds("12v0 12v 12vx 2. 2.x 2.5 2.5e3 2e3 2e 2E-4 .5 .5e+1 7"),
            [
                (Entity, "12v0"),
                (Number, "12"),
                (Name, "v"),
                (Number, "12"),
                (Name, "vx"),
                (Number, "2."),
                (Number, "2.x"),
                (Number, "2.5"),
                (Number, "2.5e3"),
                (Number, "2e3"),
                (Number, "2"),
                (Name, "e"),
                (Number, "2E-4"),
                (Number, ".5"),
                (Number, ".5e+1"),
                (Number, "7"),
            ]
        );
        assert_eq!(
            kinds(r#"'it''s' 'a\'b' "q" $1 $name $ 'open"#),
            [
                (String, "'it'"),
                (String, "'s'"),
                (String, r"'a\'b'"),
                (String, "\"q\""),
                (Param, "$1"),
                (Param, "$name"),
                (Unknown, "$"),
                (UnterminatedString, "'open"),
            ]
        );
        assert_eq!(
            kinds("a<=b<>c!=d==e||f|g<h>=i -- c\n;é"),
            [
                (Name, "a"),
                (Symbol, "<="),
                (Name, "b"),
                (Symbol, "<>"),
                (Name, "c"),
                (Symbol, "!="),
                (Name, "d"),
                (Symbol, "=="),
                (Name, "e"),
                (Symbol, "||"),
                (Name, "f"),
                (Symbol, "|"),
                (Name, "g"),
                (Symbol, "<"),
                (Name, "h"),
                (Symbol, ">="),
                (Name, "i"),
                (Symbol, ";"),
                (Unknown, "é"),
            ]
        );
        assert_eq!(kinds("select Select _x"), [(Keyword, "select"), (Keyword, "Select"), (Name, "_x")]);
        // A vertical tab is not whitespace to the grammar.
        assert_eq!(kinds("\x0B"), [(Unknown, "\x0B")]);
    }

    #[test]
    fn tokens_cover_any_text() {
        for src in ["", "'", "--", "-", "1.", "$", "a\u{2603}b", "'\\", "\"a\\\"", "1e+", "\u{0}"] {
            let tokens = lex(src);
            assert_eq!(tokens.iter().map(|t| t.text(src)).collect::<String>(), src, "{src:?}");
            assert!(tokens.windows(2).all(|w| w[0].span.end == w[1].span.start));
        }
    }
}
