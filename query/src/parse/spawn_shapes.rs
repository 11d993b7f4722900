//! Bulk loads without a parse per statement: SPAWNs of literals written alike.
//!
//! A script that loads a world is thousands of SPAWNs that differ only in their literal
//! values, written by a program the same way each time:
//! `SPAWN Position {x: 1.5, y: -2}, Team {name: 'red'};` again and again. pest parses the
//! first of each *shape*; this module remembers that statement's text with its number and
//! string field values cut out (the verbatim pieces between them), and where its names and
//! values sit. A later statement whose text is the same pieces, with a number or string
//! token in each gap, is read from the text directly.
//!
//! This cannot accept what the grammar rejects, nor read a statement differently: pest's
//! parse depends on a literal only through its kind, and every other byte of the statement
//! is the same as in one pest accepted. Each gap is cut by the lexer, which reads the
//! grammar's atoms (`lex/token.rs`, tested against the grammar's rules), and must hold
//! exactly one token of the expected kind; the bytes after the last piece must end the
//! statement. A new value is converted as the parser converts it ([`number_value`]); one the
//! flat form cannot hold (a string with escapes, a number out of range, the malformed `2.`)
//! sends its statement to pest, which builds or reports it. Statements written differently
//! (other spacing, comments) are simply parsed.

use super::number::{NumberKind, number_kind, number_value};
use super::script::{LiteralField, LiteralSpawn, LiteralValue, Script};
use crate::error::Span;
use crate::lex::{Lexer, Token, TokenKind};

/// At most this many shapes are remembered per script (later new shapes go to pest).
const MAX_SHAPES: usize = 16;

/// The shapes of the SPAWNs read so far in one script, most recently used first.
#[derive(Default)]
pub(super) struct SpawnShapes {
    shapes: Vec<Shape>,
    /// Each gap's value, for the statement being read (reused).
    gap_tokens: Vec<Span>,
}

/// A SPAWN's text with its values cut out, and where its parts sit.
struct Shape {
    /// The verbatim pieces: `pieces[i]` comes before gap `i`; the last one after the last gap.
    pieces: Vec<Box<[u8]>>,
    /// What each gap holds.
    gaps: Vec<Gap>,
    components: Vec<ShapeComponent>,
    fields: Vec<ShapeField>,
}

/// A place in a statement of a shape: `delta` bytes after its start (`after == 0`) or after
/// the end of gap `after - 1`.
#[derive(Clone, Copy)]
struct Place {
    after: u32,
    delta: u32,
}

struct ShapeComponent {
    name: (Place, Place),
    /// The end of the component value (its name, or its closing brace).
    end: Place,
    fields: std::ops::Range<u32>,
}

struct ShapeField {
    name: (Place, Place),
    value: (Place, Place),
    kind: ValueShape,
}

/// What a gap of a shape holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gap {
    /// A number token, right after a `-` or not.
    Number,
    /// A string token.
    Str,
}

#[derive(Clone, Copy)]
enum ValueShape {
    /// The number in gap `gap` (after a `-`, it is negated).
    Number { gap: u32 },
    /// The string in gap `gap`.
    Str,
    /// `true`, `false` or `null`: part of the text.
    Fixed(LiteralValue),
}

impl SpawnShapes {
    /// The SPAWN at `start` (its first token) of `src`, read from a shape seen before, and
    /// where its statement ends (after its `;`, or at the end of the text); `None` (with
    /// `script` as it was) unless one fits.
    pub(super) fn read(&mut self, src: &str, start: usize, script: &mut Script) -> Option<(LiteralSpawn, usize)> {
        // Shapes often share their first pieces (they differ in a tag at the end): what one
        // shape matched before it failed is not matched again for the next.
        let mut matched = 0;
        for i in 0..self.shapes.len() {
            if i > 0 {
                matched = matched.min(self.shapes[i - 1].common_prefix(&self.shapes[i]));
            }
            let end = match self.shapes[i].fit(src, start, matched, &mut self.gap_tokens) {
                Ok(end) => end,
                Err(gaps) => {
                    matched = gaps;
                    continue;
                }
            };
            let mark = script.mark();
            return match self.shapes[i].read(src, start, &self.gap_tokens, script) {
                Some(spawn) => {
                    // (Scripts alternate among a few shapes: keep the latest first.)
                    self.shapes[..=i].rotate_right(1);
                    Some((spawn, end))
                }
                None => {
                    script.rewind(mark);
                    None
                }
            };
        }
        None
    }

    /// Remembers the shape of `spawn`, which pest read from the statement of `tokens` (its
    /// significant tokens, `;` left out).
    pub(super) fn remember(&mut self, src: &str, tokens: &[Token], spawn: &LiteralSpawn, script: &Script) {
        if self.shapes.len() < MAX_SHAPES
            && let Some(shape) = Shape::of(src, tokens, spawn, script)
        {
            self.shapes.insert(0, shape);
        }
    }
}

impl Shape {
    fn of(src: &str, tokens: &[Token], spawn: &LiteralSpawn, script: &Script) -> Option<Shape> {
        let start = tokens.first()?.span.start;
        if spawn.span != Span::new(start, tokens.last()?.span.end) {
            return None;
        }
        let token_ending = |pos: usize| tokens.binary_search_by_key(&pos, |t| t.span.end).ok().map(|i| tokens[i]);
        // The gaps: the number (with its `-`) and string values of fields, in order.
        let mut gaps: Vec<(Gap, Span)> = Vec::new();
        let mut kinds = Vec::new();
        for c in script.components(spawn) {
            for f in script.fields(c) {
                let value = f.value_span();
                let kind = match f.value {
                    LiteralValue::Int(_) | LiteralValue::Float(_) => {
                        let number = token_ending(value.end).filter(|t| t.kind == TokenKind::Number)?;
                        // (`- 5` is left to the parser: the sign must touch the number.)
                        if !(number.span == value || value.text(src).strip_prefix('-') == Some(number.text(src))) {
                            return None;
                        }
                        gaps.push((Gap::Number, value));
                        ValueShape::Number { gap: gaps.len() as u32 - 1 }
                    }
                    LiteralValue::Str => {
                        token_ending(value.end).filter(|t| t.kind == TokenKind::String && t.span == value)?;
                        gaps.push((Gap::Str, value));
                        ValueShape::Str
                    }
                    fixed @ (LiteralValue::Bool(_) | LiteralValue::Null) => ValueShape::Fixed(fixed),
                };
                kinds.push(kind);
            }
        }
        if gaps.windows(2).any(|w| w[0].1.end > w[1].1.start) {
            return None;
        }
        let place = |pos: usize| {
            let after = gaps.partition_point(|g| g.1.end <= pos);
            let from = if after == 0 { start } else { gaps[after - 1].1.end };
            Place { after: after as u32, delta: (pos - from) as u32 }
        };
        let places = |span: Span| (place(span.start), place(span.end));
        let mut components = Vec::new();
        let mut fields = Vec::new();
        let mut kinds = kinds.into_iter();
        for c in script.components(spawn) {
            let first = fields.len() as u32;
            for f in script.fields(c) {
                fields.push(ShapeField { name: places(f.name()), value: places(f.value_span()), kind: kinds.next()? });
            }
            components.push(ShapeComponent {
                name: places(c.name()),
                end: place(c.span().end),
                fields: first..fields.len() as u32,
            });
        }
        let bytes = src.as_bytes();
        let mut pieces = Vec::with_capacity(gaps.len() + 1);
        let mut from = start;
        for (_, g) in &gaps {
            pieces.push(bytes[from..g.start].into());
            from = g.end;
        }
        pieces.push(bytes[from..spawn.span.end].into());
        Some(Shape { pieces, gaps: gaps.iter().map(|g| g.0).collect(), components, fields })
    }

    /// How many leading (piece, gap) pairs this shape and `other` have alike.
    fn common_prefix(&self, other: &Shape) -> usize {
        self.pieces
            .iter()
            .zip(&other.pieces)
            .zip(self.gaps.iter().zip(&other.gaps))
            .take_while(|(p, g)| p.0 == p.1 && g.0 == g.1)
            .count()
    }

    /// Whether the statement at `start` has this shape: its pieces, a token of the right kind
    /// in each gap (their values' spans into `gap_tokens`), then only whitespace, comments and
    /// a `;` or the end of the text. Gives where the statement ends, or how many gaps matched.
    ///
    /// The first `known` pieces and gaps are taken as matched already (`gap_tokens` holds
    /// their values).
    fn fit(&self, src: &str, start: usize, known: usize, gap_tokens: &mut Vec<Span>) -> Result<usize, usize> {
        let bytes = src.as_bytes();
        gap_tokens.truncate(known);
        let mut at = gap_tokens.last().map_or(start, |g| g.end);
        for (i, piece) in self.pieces.iter().enumerate().skip(known) {
            if bytes.get(at..at + piece.len()) != Some(&piece[..]) {
                return Err(gap_tokens.len());
            }
            at += piece.len();
            if let Some(&gap) = self.gaps.get(i) {
                let value_start = at;
                if gap == Gap::Number && bytes.get(at) == Some(&b'-') {
                    at += 1;
                }
                let kind = match gap {
                    Gap::Number => TokenKind::Number,
                    Gap::Str => TokenKind::String,
                };
                match Lexer::at(src, at).next_raw() {
                    Some(token) if token.kind == kind => at = token.span.end,
                    _ => return Err(gap_tokens.len()),
                }
                gap_tokens.push(Span::new(value_start, at));
            }
        }
        // The statement ends here: nothing may continue its last token.
        match Lexer::at(src, at).next_significant() {
            None => Ok(src.len()),
            Some(t) if t.kind == TokenKind::Symbol && bytes[t.span.start] == b';' => Ok(t.span.end),
            Some(_) => Err(gap_tokens.len()),
        }
    }

    /// The statement at `start`, which [`Shape::fit`] found to have this shape.
    fn read(&self, src: &str, start: usize, gap_tokens: &[Span], script: &mut Script) -> Option<LiteralSpawn> {
        let at = |p: Place| if p.after == 0 { start } else { gap_tokens[p.after as usize - 1].end } + p.delta as usize;
        let span = |(from, to): (Place, Place)| Span::new(at(from), at(to));
        let spawn_mark = script.mark();
        for c in &self.components {
            let field_mark = script.mark();
            for f in &self.fields[c.fields.start as usize..c.fields.end as usize] {
                let value_span = span(f.value);
                let value = match f.kind {
                    ValueShape::Number { gap } => {
                        let text = gap_tokens[gap as usize].text(src);
                        match text.strip_prefix('-') {
                            Some(digits) => number(digits, true)?,
                            None => number(text, false)?,
                        }
                    }
                    ValueShape::Str if !value_span.text(src).contains('\\') => LiteralValue::Str,
                    ValueShape::Str => return None,
                    ValueShape::Fixed(value) => value,
                };
                script.push_field(LiteralField::new(span(f.name), value, value_span));
            }
            script.push_component(span(c.name), Span::new(at(c.name.0), at(c.end)), field_mark);
        }
        let last = self.pieces.last().map_or(0, |p| p.len());
        let from = gap_tokens.last().map_or(start, |g| g.end);
        Some(script.spawn(Span::new(start, from + last), spawn_mark))
    }
}

/// The value of a number token, as the parser reads it; `None` for what it would not take
/// as a plain literal (the malformed `2.`, a value out of range).
fn number(text: &str, negative: bool) -> Option<LiteralValue> {
    let int = match number_kind(text) {
        NumberKind::Int => true,
        NumberKind::Float => false,
        NumberKind::Entity | NumberKind::BadFloat => return None,
    };
    LiteralValue::of(&number_value(text, int, negative)?)
}

#[cfg(test)]
mod tests;
