//! A hand-written parser for the common shape of SELECT, tried before pest.
//!
//! pest pays a rule call (about a hundred instructions) for every rule, sequence, repetition
//! and lookahead it enters: a short `SELECT count(*) WHERE …` costs tens of thousands of
//! instructions, most of the cost of preparing a statement. This module reads the same
//! statements in a single pass over the bytes and builds the same AST, with the same spans,
//! through the same [`OperatorStack`] the pest builder uses (so precedence, spans and height
//! limits cannot drift apart).
//!
//! It only ever *accepts or declines*: it takes a subset of the language and returns `None`
//! for anything else, and for any input that is wrong in any way, so that pest parses it
//! and reports every error exactly as before. `grammar/ecsdb.pest` stays the definition of
//! the language; the tests in `fast/tests.rs` compare both parsers on many generated and
//! mutated statements.
//!
//! Taken: `SPAWN` with component values (`C`, `C {f: expr, …}`), alone or in scripts
//! ([`parse_script_piece`]); `SELECT` with `*` or expression items (`AS` aliases), `FROM` terms (`A`, `!A`,
//! `NOT A`, `?A`, `OPTIONAL A`, `A | B`), `WHERE`, `GROUP BY`, `ORDER BY … ASC/DESC`, `LIMIT`,
//! `OFFSET`, an optional `;`. In expressions: names, fields `C.f`, calls, `count(*)`, `true`,
//! `false`, `null`, `entity`, plain integers and decimals, strings, parameters, parentheses,
//! prefix `NOT` and `-`, `IS [NOT] NULL`, and the binary operators
//! `OR AND = == != <> < <= > >= || + - * / %`.
//! Declined: every other statement; non-ASCII text; comments; `BETWEEN`, `IN`, `LIKE`,
//! vectors, entity literals, exponents and `.5`; brackets nested more than [`MAX_DEPTH`] deep.

use super::ast::*;
use super::number::{Decimal, read_decimal};
use super::parser::{RESERVED, collapse_whitespace, parameter, unescape};
use super::precedence::{Infix, Nested, OperatorStack};
use super::script::{LiteralField, LiteralSpawn, LiteralValue, Script, ScriptItem};

/// The deepest bracket nesting taken: common statements nest few brackets, and deeper ones
/// go to pest, whose depth limits (and errors) then apply. Kept small so that even a debug
/// build's frames (some kilobytes per level) fit in a small thread stack (a test checks
/// 192 KiB).
const MAX_DEPTH: usize = 8;

/// The statement `src` is, when it is in the subset this parser takes; `None` otherwise
/// (pest then parses it, and reports any error).
pub(crate) fn parse_statement(src: &str) -> Option<Statement> {
    // (Non-ASCII text is rare in statements, and declining it keeps every byte a character.)
    if !src.is_ascii() {
        return None;
    }
    let mut p = Fast { src, pos: 0, last_end: 0, depth: 0, spare_stacks: Vec::new() };
    let statement = p.statement()?;
    p.eat_byte(b';');
    p.skip_whitespace();
    (p.pos == src.len()).then_some(statement)
}

/// Reads the statements of `text[piece]`, a part of a script that starts and ends between
/// statements (comments already blanked), into `script`, with spans in `text`; `false`
/// (leaving `script` as it was) unless every statement in it is in the subset this parser
/// takes. SPAWNs of literal values are kept flat ([`LiteralSpawn`]).
// (Not inlined: its frame would sit under pest's deep recursion in every parse.)
#[inline(never)]
pub(crate) fn parse_script_piece(text: &str, piece: std::ops::Range<usize>, script: &mut Script) -> bool {
    let (items, mark) = (script.items.len(), script.mark());
    let read = read_script_piece(text, piece, script);
    if read.is_none() {
        script.items.truncate(items);
        script.rewind(mark);
    }
    read.is_some()
}

fn read_script_piece(text: &str, piece: std::ops::Range<usize>, script: &mut Script) -> Option<()> {
    let src = &text[..piece.end];
    if !src[piece.start..].is_ascii() {
        return None;
    }
    let mut p = Fast { src, pos: piece.start, last_end: piece.start, depth: 0, spare_stacks: Vec::new() };
    loop {
        match p.peek() {
            None => return Some(()),
            Some(b';') => {
                p.pos += 1;
            }
            Some(_) => {
                let (pos, last_end) = (p.pos, p.last_end);
                let flat = if text.len() <= Script::FLAT_LIMIT { p.literal_spawn(script) } else { None };
                let item = match flat {
                    Some(spawn) => ScriptItem::Spawn(spawn),
                    None => {
                        (p.pos, p.last_end) = (pos, last_end);
                        ScriptItem::Statement(Box::new(p.statement()?))
                    }
                };
                script.items.push(item);
                match p.peek() {
                    None => return Some(()),
                    Some(b';') => p.pos += 1,
                    Some(_) => return None,
                }
            }
        }
    }
}

/// Whether `word` is reserved: it cannot name a component, function or alias.
fn is_reserved(word: &str) -> bool {
    // (Most names share no first letter, length and last letter with a reserved word: one
    // bit test.)
    let bytes = word.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else { return false };
    let (first, last) = (first.to_ascii_lowercase(), last.to_ascii_lowercase());
    first.is_ascii_lowercase()
        && last.is_ascii_lowercase()
        && bytes.len() < 32
        && RESERVED_SHAPES[usize::from(first - b'a')][bytes.len()] & (1 << (last - b'a')) != 0
        && RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// Per first letter (`a` to `z`) and length, bit `i` set: a reserved word of that first
/// letter and length ends with the `i`-th letter (they are all lower case letters, shorter
/// than 32).
const RESERVED_SHAPES: [[u32; 32]; 26] = {
    let mut shapes = [[0; 32]; 26];
    let mut i = 0;
    while i < RESERVED.len() {
        let word = RESERVED[i].as_bytes();
        let (first, last) = (word[0], word[word.len() - 1]);
        assert!(word.len() < 32 && first.is_ascii_lowercase() && last.is_ascii_lowercase());
        shapes[(first - b'a') as usize][word.len()] |= 1 << (last - b'a');
        i += 1;
    }
    shapes
};

fn is_ident_char(b: u8) -> bool {
    // (A table lookup: names are most of a script's bytes.)
    IDENT_CHARS[usize::from(b)]
}

/// Whether a byte may be part of a word: an ASCII letter or digit, or `_`.
const IDENT_CHARS: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    table
};

/// What follows an operand in an expression.
enum Next {
    /// An infix operator, taken: an operand must follow.
    Operand,
    /// A postfix operator, applied: more operators may follow.
    Operator,
    /// Not an operator: the expression ends before it.
    End,
}

/// The parser's state: a position in the text.
struct Fast<'s> {
    src: &'s str,
    /// The next byte to read.
    pos: usize,
    /// Where the last token taken ends (spans end there, before any whitespace).
    last_end: usize,
    /// Brackets open around the current expression.
    depth: usize,
    /// Empty operator stacks to reuse, so that a nested expression allocates none.
    spare_stacks: Vec<OperatorStack>,
}

impl<'s> Fast<'s> {
    // ----- tokens --------------------------------------------------------------------------

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    /// How many bytes from `at` on are `in_run`.
    fn run(&self, at: usize, in_run: impl Fn(u8) -> bool) -> usize {
        // (A plain loop: the iterator chain it replaces cost several times more per byte.)
        let bytes = self.src.as_bytes();
        let mut end = at;
        while end < bytes.len() && in_run(bytes[end]) {
            end += 1;
        }
        end.saturating_sub(at)
    }

    fn text(&self, span: Span) -> &'s str {
        &self.src[span.start..span.end]
    }

    /// Skips the grammar's `WHITESPACE` (space, `\t`, `\n`, form feed, `\r`; not `\v`).
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\x0C' | b'\r') = self.byte(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte after whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.byte(self.pos)
    }

    /// Takes the token `start..end`.
    fn take(&mut self, start: usize, end: usize) -> Span {
        self.pos = end;
        self.last_end = end;
        Span::new(start, end)
    }

    /// Takes byte `b` if it comes next.
    fn eat_byte(&mut self, b: u8) -> Option<Span> {
        if self.peek()? != b {
            return None;
        }
        Some(self.take(self.pos, self.pos + 1))
    }

    /// The next word (letters, digits, `_`; not starting with a digit), not taken.
    fn peek_word(&mut self) -> Option<Span> {
        self.skip_whitespace();
        let start = self.pos;
        let first = self.byte(start)?;
        if !(first.is_ascii_alphabetic() || first == b'_') {
            return None;
        }
        Some(Span::new(start, start + self.run(start, is_ident_char)))
    }

    /// Takes keyword `keyword` (lower case; matched in any case) if it is the next word.
    fn eat_keyword(&mut self, keyword: &str) -> Option<Span> {
        let word = self.peek_word()?;
        if !self.text(word).eq_ignore_ascii_case(keyword) {
            return None;
        }
        Some(self.take(word.start, word.end))
    }

    /// Takes the next word, which may be reserved (a field name).
    fn any_name(&mut self) -> Option<Ident> {
        let word = self.peek_word()?;
        let span = self.take(word.start, word.end);
        Some(Ident::new(self.text(span), span))
    }

    /// Takes the next word if it is not reserved (a component, function or alias name).
    fn name(&mut self) -> Option<Ident> {
        let span = self.name_span()?;
        Some(Ident::new(self.text(span), span))
    }

    /// [`Fast::name`]'s span.
    fn name_span(&mut self) -> Option<Span> {
        let word = self.peek_word()?;
        if is_reserved(self.text(word)) {
            return None;
        }
        Some(self.take(word.start, word.end))
    }

    // ----- statements ----------------------------------------------------------------------

    fn statement(&mut self) -> Option<Statement> {
        let word = self.peek_word()?;
        if self.text(word).eq_ignore_ascii_case("spawn") {
            self.spawn().map(Statement::Spawn)
        } else {
            self.select().map(Statement::Select)
        }
    }

    fn spawn(&mut self) -> Option<Spawn> {
        let start = self.eat_keyword("spawn")?.start;
        let components = match self.peek() {
            None | Some(b';') => Vec::new(),
            Some(_) => self.list(Self::component_value)?,
        };
        Some(Spawn { components, span: Span::new(start, self.last_end) })
    }

    /// `SPAWN` with only literal field values, read into `script`'s arrays; `None` (with
    /// `script`'s arrays as they were) for any other statement: [`Fast::statement`] then
    /// reads it from the same place.
    fn literal_spawn(&mut self, script: &mut Script) -> Option<LiteralSpawn> {
        let mark = script.mark();
        let spawn = self.literal_spawn_parts(script);
        if spawn.is_none() {
            script.rewind(mark);
        }
        spawn
    }

    fn literal_spawn_parts(&mut self, script: &mut Script) -> Option<LiteralSpawn> {
        let start = self.eat_keyword("spawn")?.start;
        let mark = script.mark();
        if !matches!(self.peek(), None | Some(b';')) {
            loop {
                let name = self.name_span()?;
                let fields = script.mark();
                if self.eat_byte(b'{').is_some() && self.eat_byte(b'}').is_none() {
                    loop {
                        let field = self.literal_field()?;
                        script.push_field(field);
                        if self.eat_byte(b',').is_none() {
                            break;
                        }
                    }
                    self.eat_byte(b'}')?;
                }
                script.push_component(name, Span::new(name.start, self.last_end), fields);
                if self.eat_byte(b',').is_none() {
                    break;
                }
            }
        }
        Some(script.spawn(Span::new(start, self.last_end), mark))
    }

    /// `field: literal`, the literal followed by `,` or `}`.
    fn literal_field(&mut self) -> Option<LiteralField> {
        let name = self.peek_word()?;
        self.take(name.start, name.end);
        self.eat_byte(b':')?;
        self.skip_whitespace();
        let start = self.pos;
        let value = match self.byte(start)? {
            b'-' => match self.minus(start)? {
                true => self.number_value(true)?,
                false => return None,
            },
            b'0'..=b'9' => self.number_value(false)?,
            quote @ (b'\'' | b'"') => {
                let mut at = start + 1;
                loop {
                    match self.byte(at)? {
                        b'\\' => return None, // escapes: the syntax tree's string is built
                        b if b == quote => break,
                        _ => at += 1,
                    }
                }
                self.take(start, at + 1);
                LiteralValue::Str
            }
            _ => {
                let word = self.peek_word()?;
                let text = self.text(word);
                let value = if text.eq_ignore_ascii_case("true") {
                    LiteralValue::Bool(true)
                } else if text.eq_ignore_ascii_case("false") {
                    LiteralValue::Bool(false)
                } else if text.eq_ignore_ascii_case("null") {
                    LiteralValue::Null
                } else {
                    return None;
                };
                self.take(word.start, word.end);
                value
            }
        };
        let value_span = Span::new(start, self.last_end);
        if !matches!(self.peek(), Some(b',' | b'}')) {
            return None;
        }
        Some(LiteralField::new(name, value, value_span))
    }

    /// `C` or `C {field: value, …}`.
    fn component_value(&mut self) -> Option<ComponentValue> {
        let component = self.name()?;
        let start = component.span.start;
        let mut fields = Vec::new();
        if self.eat_byte(b'{').is_some() && self.eat_byte(b'}').is_none() {
            fields = self.list(Self::field_init)?;
            self.eat_byte(b'}')?;
        }
        Some(ComponentValue { component, fields, span: Span::new(start, self.last_end) })
    }

    fn field_init(&mut self) -> Option<FieldInit> {
        let field = self.any_name()?;
        let start = field.span.start;
        self.eat_byte(b':')?;
        let value = self.expr()?;
        Some(FieldInit { field, value, span: Span::new(start, self.last_end) })
    }

    fn select(&mut self) -> Option<Select> {
        let start = self.eat_keyword("select")?.start;
        let items = self.list(Self::select_item)?;
        let from = if self.eat_keyword("from").is_some() { self.list(Self::term)? } else { Vec::new() };
        let where_ = self.clause("where", Self::expr)?;
        let mut group_by = Vec::new();
        if self.eat_keyword("group").is_some() {
            self.eat_keyword("by")?;
            group_by = self.list(Self::expr)?;
        }
        let mut order_by = Vec::new();
        if self.eat_keyword("order").is_some() {
            self.eat_keyword("by")?;
            order_by = self.list(Self::order_key)?;
        }
        let limit = self.clause("limit", Self::expr)?;
        let offset = self.clause("offset", Self::expr)?;
        let span = Span::new(start, self.last_end);
        Some(Select { items, from, where_, group_by, order_by, limit, offset, bare: false, span })
    }

    /// `Some(None)` if `keyword` does not come next, `Some(Some(x))` if it does and `item`
    /// reads `x` after it, `None` if it does and `item` fails.
    fn clause<T>(&mut self, keyword: &str, item: fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.eat_keyword(keyword) {
            Some(_) => item(self).map(Some),
            None => Some(None),
        }
    }

    /// One or more `item`s separated by commas.
    fn list<T>(&mut self, item: fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat_byte(b',').is_some() {
            items.push(item(self)?);
        }
        Some(items)
    }

    fn select_item(&mut self) -> Option<SelectItem> {
        if let Some(span) = self.eat_byte(b'*') {
            return Some(SelectItem::Star { span });
        }
        let start = self.pos;
        let expr = self.expr()?;
        let text = collapse_whitespace(&self.src[start..self.last_end]);
        let alias = self.clause("as", Self::name)?;
        Some(SelectItem::Expr { expr, alias, text, span: Span::new(start, self.last_end) })
    }

    fn order_key(&mut self) -> Option<OrderKey> {
        self.skip_whitespace();
        let start = self.pos;
        let expr = self.expr()?;
        let desc = self.eat_keyword("desc").is_some();
        if !desc {
            self.eat_keyword("asc");
        }
        Some(OrderKey { expr, desc, span: Span::new(start, self.last_end) })
    }

    fn term(&mut self) -> Option<Term> {
        let start = match self.peek()? {
            b'!' | b'?' => self.pos,
            _ => return self.word_term(),
        };
        let not = self.byte(start) == Some(b'!');
        self.take(start, start + 1);
        // (`!=` is not `!`.)
        if not && self.peek() == Some(b'=') {
            return None;
        }
        let name = self.name()?;
        let kind = if not { TermKind::Not(name) } else { TermKind::Optional(name) };
        Some(Term { kind, span: Span::new(start, self.last_end) })
    }

    /// A term that starts with a word: `NOT A`, `OPTIONAL A`, `A | B | …` or `A`.
    fn word_term(&mut self) -> Option<Term> {
        let word = self.peek_word()?;
        let start = word.start;
        let text = self.text(word);
        if text.eq_ignore_ascii_case("not") {
            self.take(word.start, word.end);
            let name = self.name()?;
            return Some(Term { kind: TermKind::Not(name), span: Span::new(start, self.last_end) });
        }
        if text.eq_ignore_ascii_case("optional") {
            // OPTIONAL is not reserved: without a name after it, it is the name.
            let (pos, last_end) = (self.pos, self.last_end);
            self.take(word.start, word.end);
            if let Some(name) = self.name() {
                return Some(Term { kind: TermKind::Optional(name), span: Span::new(start, self.last_end) });
            }
            (self.pos, self.last_end) = (pos, last_end);
        }
        let first = self.name()?;
        if self.peek() != Some(b'|') {
            let span = first.span;
            return Some(Term { kind: TermKind::Required(first), span });
        }
        let mut names = vec![first];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            // (`||` is not a `|` between terms.)
            if self.peek() == Some(b'|') {
                return None;
            }
            names.push(self.name()?);
        }
        Some(Term { kind: TermKind::AnyOf(names), span: Span::new(start, self.last_end) })
    }

    // ----- expressions ---------------------------------------------------------------------

    fn expr(&mut self) -> Option<Expr> {
        let mut out = Vec::with_capacity(1);
        self.expr_into(&mut out)?;
        out.pop().map(|(expr, _)| expr)
    }

    /// Reads an expression and pushes it, with its height, onto `out`.
    fn expr_into(&mut self, out: &mut Vec<(Expr, usize)>) -> Option<()> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let mut stack = self.spare_stacks.pop().unwrap_or_default();
        let read = self.expr_tokens(&mut stack);
        self.depth -= 1;
        read?;
        stack.finish_into(out).ok()?;
        // (Only a stack left empty is reused.)
        self.spare_stacks.push(stack);
        Some(())
    }

    /// Feeds an expression's operands and operators to `stack`.
    fn expr_tokens(&mut self, stack: &mut OperatorStack) -> Option<()> {
        loop {
            self.operand(stack)?;
            loop {
                match self.operator(stack)? {
                    Next::Operand => break,
                    Next::Operator => {}
                    Next::End => return Some(()),
                }
            }
        }
    }

    /// Reads prefix operators and the operand after them.
    fn operand(&mut self, stack: &mut OperatorStack) -> Option<()> {
        loop {
            self.skip_whitespace();
            let start = self.pos;
            let leaf = match self.byte(start)? {
                b'-' => {
                    if !self.minus(start)? {
                        stack.prefix(false, start);
                        continue;
                    }
                    self.number_at(start, true)?
                }
                b'0'..=b'9' => self.number_at(start, false)?,
                b'\'' | b'"' => self.string()?,
                b'$' => self.param()?,
                b'(' => {
                    self.take(start, start + 1);
                    let mut parts = Vec::with_capacity(1);
                    self.expr_into(&mut parts)?;
                    self.eat_byte(b')')?;
                    return stack.push_nested(Nested::Paren, Span::new(start, self.last_end), parts).ok();
                }
                _ => {
                    let word = self.peek_word()?;
                    if self.text(word).eq_ignore_ascii_case("not") {
                        self.take(word.start, word.end);
                        stack.prefix(true, start);
                        continue;
                    }
                    return self.word_operand(word, stack);
                }
            };
            return stack.push_checked((leaf, 1)).ok();
        }
    }

    /// An operand that starts with the word `word`: a keyword literal, `count(*)`, a call, a
    /// field or a component.
    fn word_operand(&mut self, word: Span, stack: &mut OperatorStack) -> Option<()> {
        let text = self.text(word);
        self.take(word.start, word.end);
        if is_reserved(text) {
            let kind = if text.eq_ignore_ascii_case("true") {
                ExprKind::Literal(Literal::Bool(true))
            } else if text.eq_ignore_ascii_case("false") {
                ExprKind::Literal(Literal::Bool(false))
            } else if text.eq_ignore_ascii_case("null") {
                ExprKind::Literal(Literal::Null)
            } else if text.eq_ignore_ascii_case("entity") {
                ExprKind::EntityId
            } else {
                return None;
            };
            return stack.push_checked((Expr::new(kind, word), 1)).ok();
        }
        let name = Ident::new(text, word);
        let kind = match self.peek() {
            Some(b'(') => {
                self.take(self.pos, self.pos + 1);
                if text.eq_ignore_ascii_case("count") && self.peek() == Some(b'*') {
                    self.take(self.pos, self.pos + 1);
                    self.eat_byte(b')')?;
                    ExprKind::CountStar
                } else {
                    let args = self.call_args()?;
                    return stack.push_nested(Nested::Call(name), Span::new(word.start, self.last_end), args).ok();
                }
            }
            Some(b'.') => {
                self.take(self.pos, self.pos + 1);
                let field = self.any_name()?;
                // Paths (`C.f.D.g`) are left to pest.
                if self.peek() == Some(b'.') {
                    return None;
                }
                ExprKind::Field { component: name, field }
            }
            _ => ExprKind::Component(name),
        };
        stack.push_checked((Expr::new(kind, Span::new(word.start, self.last_end)), 1)).ok()
    }

    /// A call's arguments after its `(`, up to and with its `)`.
    fn call_args(&mut self) -> Option<Vec<(Expr, usize)>> {
        let mut args = Vec::new();
        if self.eat_byte(b')').is_none() {
            self.expr_into(&mut args)?;
            while self.eat_byte(b',').is_some() {
                self.expr_into(&mut args)?;
            }
            self.eat_byte(b')')?;
        }
        Some(args)
    }

    /// Reads what follows an operand: an infix operator (taken), `IS [NOT] NULL` (applied),
    /// or the end of the expression (not taken). `None` for what this parser declines.
    fn operator(&mut self, stack: &mut OperatorStack) -> Option<Next> {
        let Some(first) = self.peek() else { return Some(Next::End) };
        let at = self.pos;
        let second = self.byte(at + 1);
        let (op, len) = match (first, second) {
            (b'=', Some(b'=')) => (BinaryOp::Eq, 2),
            (b'=', _) => (BinaryOp::Eq, 1),
            (b'!', Some(b'=')) | (b'<', Some(b'>')) => (BinaryOp::NotEq, 2),
            (b'<', Some(b'=')) => (BinaryOp::LtEq, 2),
            (b'<', _) => (BinaryOp::Lt, 1),
            (b'>', Some(b'=')) => (BinaryOp::GtEq, 2),
            (b'>', _) => (BinaryOp::Gt, 1),
            (b'|', Some(b'|')) => (BinaryOp::Concat, 2),
            (b'+', _) => (BinaryOp::Add, 1),
            (b'-', Some(b'-')) => return None, // a comment
            (b'-', _) => (BinaryOp::Sub, 1),
            (b'*', _) => (BinaryOp::Mul, 1),
            (b'/', _) => (BinaryOp::Div, 1),
            (b'%', _) => (BinaryOp::Mod, 1),
            (b'!' | b'|', _) => return None,
            (b, _) if b.is_ascii_alphabetic() => {
                let word = self.peek_word()?;
                let text = self.text(word);
                let op = if text.eq_ignore_ascii_case("or") {
                    BinaryOp::Or
                } else if text.eq_ignore_ascii_case("and") {
                    BinaryOp::And
                } else if text.eq_ignore_ascii_case("is") {
                    self.take(word.start, word.end);
                    let negated = self.eat_keyword("not").is_some();
                    let end = self.eat_keyword("null")?.end;
                    stack.is_null(negated, end).ok()?;
                    return Some(Next::Operator);
                } else if ["not", "like", "in", "between"].iter().any(|w| text.eq_ignore_ascii_case(w)) {
                    return None;
                } else {
                    return Some(Next::End);
                };
                self.take(word.start, word.end);
                stack.infix(Infix::Binary(op)).ok()?;
                return Some(Next::Operand);
            }
            _ => return Some(Next::End),
        };
        self.take(at, at + len);
        stack.infix(Infix::Binary(op)).ok()?;
        Some(Next::Operand)
    }

    /// Takes the `-` at `start`; whether digits follow (a negative number). `None` for `--`,
    /// a comment.
    fn minus(&mut self, start: usize) -> Option<bool> {
        if self.byte(start + 1) == Some(b'-') {
            return None;
        }
        self.take(start, start + 1);
        Some(matches!(self.peek(), Some(b'0'..=b'9')))
    }

    /// The number literal at the current byte, written from `start` on (`-` there if
    /// `negative`): `-7`, `-0.25` are one literal, as the pest builder folds them. Declined
    /// if out of range (pest then reports it).
    fn number_at(&mut self, start: usize, negative: bool) -> Option<Expr> {
        let (digits, decimal) = self.number()?;
        let literal = decimal.literal(self.text(digits), negative)?;
        Some(Expr::new(ExprKind::Literal(literal), Span::new(start, digits.end)))
    }

    /// [`Fast::number_at`]'s value, without a syntax tree (a SPAWN's literal field).
    fn number_value(&mut self, negative: bool) -> Option<LiteralValue> {
        let (digits, decimal) = self.number()?;
        match decimal.literal(self.text(digits), negative)? {
            Literal::Int(i) => Some(LiteralValue::Int(i)),
            Literal::Float(f) => Some(LiteralValue::Float(f)),
            _ => None,
        }
    }

    /// A plain integer (`12`) or decimal (`2.5`) at the current byte (a digit), read in one
    /// pass with its digits' value. Other number forms (`12v0`, `2e3`, `2.`) and a number run
    /// into a word (`1as`) are declined.
    fn number(&mut self) -> Option<(Span, Decimal)> {
        let start = self.pos;
        let decimal = read_decimal(self.src.as_bytes().get(start..)?);
        let end = start + decimal.len;
        if decimal.fraction_digits == Some(0) || self.byte(end).is_some_and(|b| is_ident_char(b) || b == b'.') {
            return None;
        }
        Some((self.take(start, end), decimal))
    }

    /// A quoted string at the current byte.
    fn string(&mut self) -> Option<Expr> {
        let start = self.pos;
        let quote = self.byte(start)?;
        let mut at = start + 1;
        loop {
            match self.byte(at)? {
                b'\\' => at += 2,
                b if b == quote => break,
                _ => at += 1,
            }
        }
        let span = self.take(start, at + 1);
        let value = unescape(self.text(span), start).ok()?;
        Some(Expr::new(ExprKind::Literal(Literal::Str(value)), span))
    }

    /// A parameter `$3` or `$name` at the current byte.
    fn param(&mut self) -> Option<Expr> {
        let start = self.pos;
        let first = self.byte(start + 1)?;
        let len = if first.is_ascii_digit() {
            self.run(start + 1, |b| b.is_ascii_digit())
        } else if first.is_ascii_alphabetic() || first == b'_' {
            self.run(start + 1, is_ident_char)
        } else {
            return None;
        };
        let end = start + 1 + len;
        if self.byte(end).is_some_and(|b| is_ident_char(b) || b == b'.') {
            return None;
        }
        let span = self.take(start, end);
        let param = parameter(self.text(span), span).ok()?;
        Some(Expr::new(ExprKind::Param(param), span))
    }
}

#[cfg(test)]
mod tests;
