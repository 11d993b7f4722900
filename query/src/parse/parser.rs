//! From text to [`ast`](super::ast): the pest grammar, the tree builder and syntax errors.
//!
//! pest recognises the text (`grammar/ecsdb.pest`); [`Builder`] turns the parse tree into
//! the typed AST, applying operator precedence to the grammar's flat expression sequences and
//! checking what the grammar cannot (number ranges, escapes, vector sizes, nesting depth).
//! A failed pest parse becomes an [`Error`] that names what was expected in words.

use std::borrow::Cow;

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::{Parser as _, Token};

use super::ast::*;
use super::number::number_literal;
use super::script::{Script, ScriptItem};
use super::{MAX_EXPR_DEPTH, MAX_NESTING};
use crate::error::{suggest, Error, ErrorKind};
use ecsdb_engine::{FieldType, OnDelete};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/ecsdb.pest"]
struct Grammar;

/// Words that cannot name a component, function, index or alias (kept in step with the
/// grammar's `reserved` rule; a test checks it).
pub(crate) const RESERVED: &[&str] = &[
    "select", "from", "where", "group", "order", "limit", "offset", "and", "or", "not", "in", "is", "null", "true",
    "false", "like", "between", "as", "entity", "explain", "spawn", "despawn", "add", "remove", "update", "set",
    "create", "drop", "show", "describe", "to", "on", "using",
];

/// Which grammar rule to parse the whole input as.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Entry {
    /// Exactly one statement (optional trailing `;`).
    Statement,
    /// `;`-separated statements.
    Script,
    /// A system's body: one statement or `BEGIN … END`.
    SystemBody,
}

/// Parses `src` as `entry` into statements (exactly one for [`Entry::Statement`]).
///
/// A script is given to pest in pieces of about [`SCRIPT_PIECE`] bytes that end just after a
/// `;` between statements: pest keeps every token of what it parses until the parse is
/// dropped (tens of bytes per token), which for a long script would be far more memory than
/// the text. Each piece is parsed with the same `script` rule; as nothing but `semicolon`
/// matches a `;` outside strings and comments, a piece fails exactly where the whole script
/// would, and the first piece that fails gives the error. As when the whole script was
/// parsed before any statement was built, a syntax error anywhere comes before an error found
/// while building (an integer out of range, …).
pub(crate) fn parse(src: &str, entry: Entry) -> Result<Vec<Statement>, Error> {
    parse_with(src, entry, true)
}

/// [`parse`], where scripts use the hand-written parser for the pieces it takes only if
/// `fast_scripts` (its tests compare both).
pub(crate) fn parse_with(src: &str, entry: Entry, fast_scripts: bool) -> Result<Vec<Statement>, Error> {
    Ok(parse_items(src, entry, fast_scripts)?.into_statements(src))
}

/// [`parse`], with the SPAWNs of literals that the hand-written parser read kept flat.
pub(crate) fn parse_items(src: &str, entry: Entry, fast_scripts: bool) -> Result<Script, Error> {
    let Prepared { text, cuts } = prepare(src)?;
    let mut builder = Builder::default();
    let mut script = Script::default();
    let (rule, cuts) = match entry {
        Entry::Statement => (Rule::single, &[][..]),
        Entry::Script => (Rule::script, &cuts[..]),
        Entry::SystemBody => (Rule::single_system_body, &[][..]),
    };
    let starts = std::iter::once(0).chain(cuts.iter().copied());
    let ends = cuts.iter().copied().chain(std::iter::once(text.len()));
    let mut built = Ok(());
    for piece in starts.zip(ends).map(|(start, end)| start..end) {
        // Scripts of the statements the hand-written parser takes (SPAWNs, SELECTs) skip pest.
        // (After a building error only syntax errors matter: what it reads is dropped.)
        if fast_scripts
            && matches!(entry, Entry::Script)
            && super::fast::parse_script_piece(&text, piece.clone(), &mut script)
        {
            continue;
        }
        let mut pairs =
            Grammar::parse(rule, &text[piece.clone()]).map_err(|e| syntax_error(src, shift_error(e, piece.start)))?;
        if built.is_ok() {
            let top = pairs.next().expect("grammar: a successful parse has its entry rule");
            builder.base = piece.start;
            built = top.into_inner().try_for_each(|pair| {
                match pair.as_rule() {
                    Rule::semicolon | Rule::EOI => {}
                    Rule::system_body => script
                        .items
                        .extend(builder.system_body(pair)?.1.into_iter().map(|s| ScriptItem::Statement(Box::new(s)))),
                    _ => script.items.push(ScriptItem::Statement(Box::new(builder.statement(pair)?))),
                }
                Ok(())
            });
        }
    }
    built.map(|()| script)
}

/// Parses `src` as one expression.
pub(crate) fn parse_expr(src: &str) -> Result<Expr, Error> {
    let text = prepare(src)?.text;
    let mut pairs = Grammar::parse(Rule::single_expr, &text).map_err(|e| syntax_error(src, e))?;
    let top = pairs.next().expect("grammar: a successful parse has its entry rule");
    let expr = first(top, Rule::expr);
    Builder::default().expr(expr)
}

/// About how long a piece of a script given to pest at once is (see [`parse`]).
const SCRIPT_PIECE: usize = 16 << 10;

/// A pest error in a piece of the text that starts at byte `by`, moved to the whole text.
fn shift_error(mut err: pest::error::Error<Rule>, by: usize) -> pest::error::Error<Rule> {
    err.location = match err.location {
        InputLocation::Pos(p) => InputLocation::Pos(p + by),
        InputLocation::Span((start, end)) => InputLocation::Span((start + by, end + by)),
    };
    err
}

/// The text pest parses, from [`prepare`].
struct Prepared<'s> {
    /// The text with comments blanked out.
    text: Cow<'s, str>,
    /// Where to cut the text into pieces of at least [`SCRIPT_PIECE`] bytes (but the last):
    /// just after a `;` outside strings and comments.
    cuts: Vec<usize>,
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
fn prepare(src: &str) -> Result<Prepared<'_>, Error> {
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

/// The source text of `pair`, without the whitespace and comments pest may have skipped
/// after its last token (a rule ending in an optional or repeated part keeps them): it ends
/// where its last leaf (last child, its last child, …) ends.
///
/// Positions are moved by `base`: where the text pest parsed starts in the whole text.
fn span_of(pair: &Pair<'_, Rule>, base: usize) -> Span {
    let start = pair.as_span().start();
    // Read backwards from the pair's own end, the `End` tokens just before the first `Start`
    // close the last child, its last child, …; the last of them closes the last leaf.
    let mut end = start;
    for token in pair.clone().tokens().rev() {
        match token {
            Token::End { pos, .. } => end = pos.pos(),
            Token::Start { .. } => break,
        }
    }
    Span::new(base + start, base + end)
}

fn ident(pair: &Pair<'_, Rule>, base: usize) -> Ident {
    Ident::new(pair.as_str(), span_of(pair, base))
}

/// The first child of `pair` with rule `rule`, which the grammar guarantees is there.
fn first<'s>(pair: Pair<'s, Rule>, rule: Rule) -> Pair<'s, Rule> {
    pair.into_inner().find(|p| p.as_rule() == rule).expect("grammar: the rule has this child")
}

/// The children of `pair` with rule `rule`.
fn all<'s>(pair: Pair<'s, Rule>, rule: Rule) -> impl Iterator<Item = Pair<'s, Rule>> {
    pair.into_inner().filter(move |p| p.as_rule() == rule)
}

/// An operator between two operands in an expression's flat sequence.
#[derive(Clone, Copy)]
pub(super) enum Infix {
    Binary(BinaryOp),
    Like { negated: bool },
}

impl Infix {
    fn of(token: &Pair<'_, Rule>) -> Option<Infix> {
        Some(Infix::Binary(match token.as_rule() {
            Rule::op_or => BinaryOp::Or,
            Rule::op_and => BinaryOp::And,
            Rule::op_compare | Rule::op_arith => match token.as_str() {
                "==" | "=" => BinaryOp::Eq,
                "!=" | "<>" => BinaryOp::NotEq,
                "<" => BinaryOp::Lt,
                "<=" => BinaryOp::LtEq,
                ">" => BinaryOp::Gt,
                ">=" => BinaryOp::GtEq,
                "||" => BinaryOp::Concat,
                "+" => BinaryOp::Add,
                "-" => BinaryOp::Sub,
                "*" => BinaryOp::Mul,
                "/" => BinaryOp::Div,
                "%" => BinaryOp::Mod,
                _ => return None,
            },
            Rule::op_like => return Some(Infix::Like { negated: false }),
            Rule::op_not_like => return Some(Infix::Like { negated: true }),
            _ => return None,
        }))
    }

    fn precedence(self) -> u8 {
        match self {
            Infix::Binary(op) => op.precedence(),
            Infix::Like { .. } => prec::COMPARE,
        }
    }
}

/// Recursion through nested expressions: one level per bracket (plus one per BETWEEN bound),
/// so [`prepare`] already bounds it; this is a second, independent guard.
const MAX_RECURSION: usize = 2 * MAX_NESTING + 8;

/// What a token that contains expressions builds (see [`OperatorStack::push_nested`]).
pub(super) enum Nested {
    /// `( expr )`.
    Paren,
    /// `[a, b]` or `[a, b, c]`.
    Vector,
    /// `name(args…)`.
    Call(Ident),
    /// `[NOT] IN (list…)` after an operand.
    InList { negated: bool },
    /// `[NOT] BETWEEN low AND high` after an operand.
    Between { negated: bool },
}

/// An operator waiting on the [`OperatorStack`] for its right operand.
#[derive(Clone, Copy)]
enum Pending {
    /// `-` (`not: false`) or `NOT`, starting at byte `start`.
    Prefix {
        not: bool,
        start: usize,
    },
    Infix(Infix),
}

impl Pending {
    fn precedence(self) -> u8 {
        match self {
            Pending::Prefix { not: true, .. } => prec::NOT,
            Pending::Prefix { not: false, .. } => prec::NEG,
            Pending::Infix(op) => op.precedence(),
        }
    }
}

/// The two stacks of the shunting-yard algorithm: built operands (with their heights) and
/// operators waiting for their right operand.
#[derive(Default)]
pub(super) struct OperatorStack {
    operands: Vec<(Expr, usize)>,
    operators: Vec<Pending>,
    /// Where the text pest parsed starts in the whole text (see [`span_of`]).
    base: usize,
}

impl OperatorStack {
    /// Applies waiting operators that bind at least as tightly as `precedence` (all binary
    /// operators are left-associative).
    fn reduce_while(&mut self, precedence: u8) -> Result<()> {
        while let Some(&top) = self.operators.last() {
            if top.precedence() < precedence {
                break;
            }
            self.operators.pop();
            let (rhs, rhs_height) = self.pop_operand()?;
            let built = match top {
                Pending::Prefix { not, start } => {
                    let span = Span::new(start, rhs.span.end);
                    let kind = if not {
                        ExprKind::Not(Box::new(rhs))
                    } else {
                        ExprKind::Unary { op: UnaryOp::Neg, expr: Box::new(rhs) }
                    };
                    (Expr::new(kind, span), rhs_height + 1)
                }
                Pending::Infix(op) => {
                    let (lhs, lhs_height) = self.pop_operand()?;
                    let span = lhs.span.to(rhs.span);
                    let (lhs, rhs) = (Box::new(lhs), Box::new(rhs));
                    let kind = match op {
                        Infix::Binary(op) => ExprKind::Binary { op, lhs, rhs },
                        Infix::Like { negated } => ExprKind::Like { expr: lhs, pattern: rhs, negated },
                    };
                    (Expr::new(kind, span), lhs_height.max(rhs_height) + 1)
                }
            };
            self.push_checked(built)?;
        }
        Ok(())
    }

    /// Takes a token that needs no recursion: a prefix or infix operator, `IS [NOT] NULL`,
    /// or a leaf operand (with a `-` directly before a number folded into the literal).
    fn token<'i>(
        &mut self,
        token: Pair<'i, Rule>,
        rest: &mut std::iter::Peekable<pest::iterators::Pairs<'i, Rule>>,
    ) -> Result<()> {
        let rule = token.as_rule();
        let start = self.base + token.as_span().start();
        match rule {
            Rule::op_neg => match rest.next_if(|t| {
                t.as_rule() == Rule::number && matches!(number_kind(t.as_str()), NumberKind::Int | NumberKind::Float)
            }) {
                // `-7`, `-0.25`, `-9223372036854775808`: one literal.
                Some(number) => {
                    let span = Span::new(start, self.base + number.as_span().end());
                    let int = number_kind(number.as_str()) == NumberKind::Int;
                    self.push_checked((number_literal(number.as_str(), int, true, span)?, 1))
                }
                None => {
                    self.prefix(false, start);
                    Ok(())
                }
            },
            Rule::op_not => {
                self.prefix(true, start);
                Ok(())
            }
            Rule::is_null => {
                let negated = token.clone().into_inner().any(|p| p.as_rule() == Rule::kw_not);
                self.is_null(negated, span_of(&token, self.base).end)
            }
            _ => match Infix::of(&token) {
                Some(op) => self.infix(op),
                None => self.push_checked((leaf(token, self.base)?, 1)),
            },
        }
    }

    /// Takes a prefix operator (`NOT` if `not`, else `-`) starting at byte `start`.
    pub(super) fn prefix(&mut self, not: bool, start: usize) {
        self.operators.push(Pending::Prefix { not, start });
    }

    /// Takes an infix operator: applies the waiting ones that bind at least as tightly.
    pub(super) fn infix(&mut self, op: Infix) -> Result<()> {
        self.reduce_while(op.precedence())?;
        self.operators.push(Pending::Infix(op));
        Ok(())
    }

    /// Applies `IS [NOT] NULL`, which ends at byte `end`, to the operand before it.
    pub(super) fn is_null(&mut self, negated: bool, end: usize) -> Result<()> {
        let (expr, height) = self.take_postfix_operand()?;
        let span = Span::new(expr.span.start, end);
        let kind = ExprKind::IsNull { expr: Box::new(expr), negated };
        self.push_checked((Expr::new(kind, span), height + 1))
    }

    /// Applies the waiting operators that bind tighter than a postfix operator and takes the
    /// operand it applies to.
    fn take_postfix_operand(&mut self) -> Result<(Expr, usize)> {
        self.reduce_while(prec::COMPARE)?;
        self.pop_operand()
    }

    /// Pushes a token built from the expressions in it (`parts`, with their heights): a
    /// parenthesised expression, a vector, a call, or BETWEEN / IN applied to the operand
    /// before it.
    fn nested(&mut self, token: Pair<'_, Rule>, parts: Vec<(Expr, usize)>) -> Result<()> {
        let span = span_of(&token, self.base);
        let negated = || token.clone().into_inner().any(|p| p.as_rule() == Rule::op_negate);
        let nested = match token.as_rule() {
            Rule::paren_expr => Nested::Paren,
            Rule::vector => Nested::Vector,
            Rule::name_ref => Nested::Call(ident(&first(token.clone(), Rule::ref_name), self.base)),
            Rule::in_list => Nested::InList { negated: negated() },
            _ => Nested::Between { negated: negated() },
        };
        self.push_nested(nested, span, parts)
    }

    /// Pushes `nested`, which spans `span` and holds the expressions `parts` (with their
    /// heights).
    pub(super) fn push_nested(&mut self, nested: Nested, span: Span, parts: Vec<(Expr, usize)>) -> Result<()> {
        let height = parts.iter().map(|&(_, h)| h).max().unwrap_or(0);
        let mut exprs: Vec<Expr> = parts.into_iter().map(|(e, _)| e).collect();
        let built = match nested {
            Nested::Paren => {
                let inner = exprs.pop().ok_or_else(|| internal("empty parentheses"))?;
                // The parenthesised expression spans its parentheses.
                (Expr::new(inner.kind, span), height)
            }
            Nested::Vector => (Expr::new(vector(exprs, span)?, span), height + 1),
            Nested::Call(name) => (Expr::new(ExprKind::Call { name, args: exprs }, span), height + 1),
            Nested::InList { negated } | Nested::Between { negated } => {
                let (lhs, lhs_height) = self.take_postfix_operand()?;
                let span = lhs.span.to(span);
                let expr = Box::new(lhs);
                let kind = if matches!(nested, Nested::InList { .. }) {
                    ExprKind::InList { expr, list: exprs, negated }
                } else {
                    let mut bounds = exprs.into_iter();
                    match (bounds.next(), bounds.next()) {
                        (Some(low), Some(high)) => {
                            ExprKind::Between { expr, low: Box::new(low), high: Box::new(high), negated }
                        }
                        _ => return Err(internal("BETWEEN without two bounds")),
                    }
                };
                (Expr::new(kind, span), lhs_height.max(height) + 1)
            }
        };
        self.push_checked(built)
    }

    /// Applies every waiting operator and pushes the one expression left onto `out`.
    pub(super) fn finish_into(&mut self, out: &mut Vec<(Expr, usize)>) -> Result<()> {
        self.reduce_while(0)?;
        match (self.operands.pop(), self.operands.is_empty()) {
            (Some(result), true) => {
                out.push(result);
                Ok(())
            }
            _ => Err(internal("an expression left operands over")),
        }
    }

    fn pop_operand(&mut self) -> Result<(Expr, usize)> {
        self.operands.pop().ok_or_else(|| internal("an operator without an operand"))
    }

    /// Pushes a built operand, rejecting it if the tree got too high.
    pub(super) fn push_checked(&mut self, (expr, height): (Expr, usize)) -> Result<()> {
        if height > MAX_EXPR_DEPTH {
            return Err(too_deep(expr.span));
        }
        self.operands.push((expr, height));
        Ok(())
    }
}

#[cold]
fn internal(what: &str) -> Error {
    Error::internal(format!("parser: {what}"))
}

/// Turns pest's parse tree into the AST.
#[derive(Default)]
struct Builder {
    /// Where the text pest parsed starts in the whole text (see [`span_of`]).
    base: usize,
    /// Current recursion depth of [`Builder::expr_into`].
    depth: usize,
    /// Empty operator stacks to reuse, so that an expression allocates none.
    spare_stacks: Vec<OperatorStack>,
}

type Result<T, E = Error> = std::result::Result<T, E>;

fn too_deep(span: Span) -> Error {
    Error::syntax(format!("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)"), span)
}

impl Builder {
    // ----- statements --------------------------------------------------------------------

    fn statement(&mut self, pair: Pair<'_, Rule>) -> Result<Statement> {
        let span = span_of(&pair, self.base);
        Ok(match pair.as_rule() {
            Rule::select => Statement::Select(self.select(pair)?),
            Rule::term_list_query => Statement::Select(self.bare_select(pair)?),
            Rule::explain => {
                let inner = pair
                    .into_inner()
                    .find(|p| matches!(p.as_rule(), Rule::select | Rule::term_list_query))
                    .expect("grammar: EXPLAIN has a query");
                let select = match inner.as_rule() {
                    Rule::select => self.select(inner)?,
                    _ => self.bare_select(inner)?,
                };
                Statement::Explain(Explain { select: Box::new(select), span })
            }
            // (A SPAWN in a `BEGIN … END` block is the same statement.)
            Rule::spawn | Rule::block_spawn => {
                let components =
                    all(pair, Rule::component_value).map(|p| self.component_value(p)).collect::<Result<_>>()?;
                Statement::Spawn(Spawn { components, span })
            }
            Rule::despawn => Statement::Despawn(Despawn { target: self.target(pair)?, span }),
            Rule::add => {
                let components =
                    all(pair.clone(), Rule::component_value).map(|p| self.component_value(p)).collect::<Result<_>>()?;
                Statement::Add(Add { components, target: self.target(pair)?, span })
            }
            Rule::remove => {
                let components = all(pair.clone(), Rule::component_name).map(|p| ident(&p, self.base)).collect();
                Statement::Remove(Remove { components, target: self.target(pair)?, span })
            }
            Rule::update => {
                let component = ident(&first(pair.clone(), Rule::component_name), self.base);
                let mut assignments = Vec::new();
                for p in all(pair.clone(), Rule::assignment) {
                    let a_span = span_of(&p, self.base);
                    let mut inner = p.into_inner();
                    let field = ident(&inner.next().expect("grammar: assignment has a field"), self.base);
                    let value = self.expr(inner.find(|p| p.as_rule() == Rule::expr).expect("grammar: a value"))?;
                    assignments.push(Assignment { field, value, span: a_span });
                }
                Statement::Update(Update { component, assignments, target: self.target(pair)?, span })
            }
            Rule::create_component => {
                let name = ident(&first(pair.clone(), Rule::component_name), self.base);
                let fields = all(pair, Rule::field_decl).map(|p| field_decl(p, self.base)).collect::<Result<_>>()?;
                Statement::CreateComponent(CreateComponent { name, fields, span })
            }
            Rule::create_index => {
                let mut name = None;
                let mut component = None;
                let mut fields = Vec::new();
                let mut kind = None;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::index_name => name = Some(ident(&p, self.base)),
                        Rule::component_name => component = Some(ident(&p, self.base)),
                        Rule::field_name => fields.push(ident(&p, self.base)),
                        Rule::index_kind => kind = Some(ident(&p, self.base)),
                        _ => {}
                    }
                }
                Statement::CreateIndex(CreateIndex {
                    name,
                    component: component.expect("grammar: CREATE INDEX names a component"),
                    fields,
                    kind: kind.expect("grammar: CREATE INDEX has USING kind"),
                    span,
                })
            }
            Rule::drop_index => {
                Statement::DropIndex(DropIndex { name: ident(&first(pair, Rule::index_name), self.base), span })
            }
            Rule::show => {
                let what = pair
                    .into_inner()
                    .find_map(|p| match p.as_rule() {
                        Rule::kw_components => Some(ShowWhat::Components),
                        Rule::kw_tables => Some(ShowWhat::Tables),
                        Rule::kw_indexes => Some(ShowWhat::Indexes),
                        Rule::kw_systems => Some(ShowWhat::Systems),
                        _ => None,
                    })
                    .expect("grammar: SHOW names what to show");
                Statement::Show(Show { what, span })
            }
            Rule::describe => {
                Statement::Describe(Describe { component: ident(&first(pair, Rule::component_name), self.base), span })
            }
            Rule::create_system => Statement::CreateSystem(self.create_system(pair, span)?),
            Rule::drop_system => {
                let if_exists = pair.clone().into_inner().any(|p| p.as_rule() == Rule::if_exists);
                Statement::DropSystem(DropSystem {
                    name: ident(&first(pair, Rule::system_name), self.base),
                    if_exists,
                    span,
                })
            }
            Rule::explain_schedule => Statement::ExplainSchedule(span),
            Rule::set_setting => {
                let name = ident(&first(pair.clone(), Rule::setting_name), self.base);
                let value = self.expr(first(pair, Rule::expr))?;
                Statement::Set(SetSetting { name, value, span })
            }
            Rule::tick => {
                let mut tick = Tick { count: None, dt: None, span };
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::tick_count => tick.count = Some(self.expr(first(p, Rule::expr))?),
                        Rule::tick_dt => tick.dt = Some(self.expr(first(p, Rule::expr))?),
                        _ => {}
                    }
                }
                Statement::Tick(tick)
            }
            other => return Err(Error::internal(format!("parser: unexpected statement rule {other:?}"))),
        })
    }

    fn create_system(&mut self, pair: Pair<'_, Rule>, span: Span) -> Result<CreateSystem> {
        let mut system = CreateSystem {
            name: ident(&first(pair.clone(), Rule::system_name), self.base),
            phase: None,
            after: Vec::new(),
            before: Vec::new(),
            body: Vec::new(),
            body_text: String::new(),
            span,
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::in_phase => system.phase = Some(ident(&first(p, Rule::phase_name), self.base)),
                Rule::after_systems => system.after.extend(all(p, Rule::system_name).map(|n| ident(&n, self.base))),
                Rule::before_systems => system.before.extend(all(p, Rule::system_name).map(|n| ident(&n, self.base))),
                Rule::system_body => (system.body_text, system.body) = self.system_body(p)?,
                _ => {}
            }
        }
        Ok(system)
    }

    /// A system body's text (comments blanked) and statements.
    fn system_body(&mut self, pair: Pair<'_, Rule>) -> Result<(String, Vec<Statement>)> {
        let span = span_of(&pair, self.base);
        let text = pair.as_str()[..span.end - span.start].to_string();
        let inner = pair.into_inner().next().expect("grammar: a system body has content");
        let statements = if inner.as_rule() == Rule::system_block {
            inner
                .into_inner()
                .filter(|p| !matches!(p.as_rule(), Rule::kw_begin | Rule::kw_end | Rule::semicolon))
                .map(|p| self.statement(p))
                .collect::<Result<_>>()?
        } else {
            vec![self.statement(inner)?]
        };
        Ok((text, statements))
    }

    fn select(&mut self, pair: Pair<'_, Rule>) -> Result<Select> {
        let span = span_of(&pair, self.base);
        let mut select = Select {
            items: Vec::new(),
            from: Vec::new(),
            where_: None,
            group_by: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            bare: false,
            span,
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::select_item => select.items.push(self.select_item(p)?),
                Rule::from_clause => select.from = terms(first(p, Rule::terms), self.base),
                Rule::where_clause => select.where_ = Some(self.expr(first(p, Rule::expr))?),
                Rule::group_clause => {
                    select.group_by = all(p, Rule::expr).map(|e| self.expr(e)).collect::<Result<_>>()?
                }
                Rule::order_clause => {
                    for key in all(p, Rule::order_key) {
                        let key_span = span_of(&key, self.base);
                        let mut expr = None;
                        let mut desc = false;
                        for part in key.into_inner() {
                            match part.as_rule() {
                                Rule::expr => expr = Some(self.expr(part)?),
                                Rule::kw_desc => desc = true,
                                _ => {}
                            }
                        }
                        let expr = expr.expect("grammar: an ORDER BY key has an expression");
                        select.order_by.push(OrderKey { expr, desc, span: key_span });
                    }
                }
                Rule::limit_clause => select.limit = Some(self.expr(first(p, Rule::expr))?),
                Rule::offset_clause => select.offset = Some(self.expr(first(p, Rule::expr))?),
                _ => {}
            }
        }
        Ok(select)
    }

    fn bare_select(&mut self, pair: Pair<'_, Rule>) -> Result<Select> {
        let span = span_of(&pair, self.base);
        Ok(Select {
            items: vec![SelectItem::Star { span }],
            from: terms(first(pair, Rule::terms), self.base),
            where_: None,
            group_by: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            bare: true,
            span,
        })
    }

    fn select_item(&mut self, pair: Pair<'_, Rule>) -> Result<SelectItem> {
        let span = span_of(&pair, self.base);
        let mut expr = None;
        let mut alias = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::star => return Ok(SelectItem::Star { span }),
                Rule::expr => {
                    let text = collapse_whitespace(span_of(&p, 0).text(p.get_input()));
                    expr = Some((self.expr(p)?, text));
                }
                Rule::alias => alias = Some(ident(&p, self.base)),
                _ => {}
            }
        }
        let (expr, text) = expr.expect("grammar: a select item is `*` or an expression");
        Ok(SelectItem::Expr { expr, alias, text, span })
    }

    fn component_value(&mut self, pair: Pair<'_, Rule>) -> Result<ComponentValue> {
        let span = span_of(&pair, self.base);
        let mut component = None;
        let mut fields = Vec::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::component_name => component = Some(ident(&p, self.base)),
                Rule::field_init => {
                    let f_span = span_of(&p, self.base);
                    let mut field = None;
                    let mut value = None;
                    for part in p.into_inner() {
                        match part.as_rule() {
                            Rule::field_name => field = Some(ident(&part, self.base)),
                            Rule::expr => value = Some(self.expr(part)?),
                            // A lone literal or parameter (the grammar's `literal_value`).
                            Rule::number | Rule::string | Rule::param => value = Some(leaf(part, self.base)?),
                            _ => {}
                        }
                    }
                    fields.push(FieldInit {
                        field: field.expect("grammar: a field value names its field"),
                        value: value.expect("grammar: a field value has a value"),
                        span: f_span,
                    });
                }
                _ => {}
            }
        }
        Ok(ComponentValue { component: component.expect("grammar: a component value has a name"), fields, span })
    }

    /// The target of DESPAWN, ADD, REMOVE or UPDATE: its `entity_target` or `filter` child.
    fn target(&mut self, pair: Pair<'_, Rule>) -> Result<Target> {
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::entity_target => {
                    let inner = p.into_inner().next().expect("grammar: an entity target has a value");
                    let expr = leaf(inner, self.base)?;
                    return Ok(Target::Entity(expr));
                }
                Rule::filter => {
                    let span = span_of(&p, self.base);
                    let mut from = Vec::new();
                    let mut where_ = None;
                    for part in p.into_inner() {
                        match part.as_rule() {
                            Rule::from_clause => from = terms(first(part, Rule::terms), self.base),
                            Rule::where_clause => where_ = Some(self.expr(first(part, Rule::expr))?),
                            _ => {}
                        }
                    }
                    return Ok(Target::Filter(Filter { from, where_, span }));
                }
                _ => {}
            }
        }
        Err(Error::internal("parser: statement without a target"))
    }

    // ----- expressions -------------------------------------------------------------------

    /// Builds an `expr` (or `bound`) pair: its flat sequence of operands and operators, with
    /// precedence applied.
    fn expr(&mut self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let mut out = Vec::with_capacity(1);
        self.expr_into(pair, &mut out).map_err(|e| *e)?;
        out.pop().map(|(e, _)| e).ok_or_else(|| internal("an expression built nothing"))
    }

    // The next three functions are the only recursion of the builder (through brackets:
    // parentheses, vectors, calls, IN lists, BETWEEN bounds; [`prepare`] bounds it).
    // Their stack frames are what each bracket level costs, so they keep few locals, return
    // `Step` (a pointer-sized result) and leave all other work to non-recursive helpers.
    // Operator precedence is applied with an explicit operator stack (shunting-yard), not by
    // recursion, so long operator chains cost no stack at all.

    /// Builds an `expr` or `bound` pair and pushes it, with its height, onto `out`.
    fn expr_into(&mut self, pair: Pair<'_, Rule>, out: &mut Vec<(Expr, usize)>) -> Step {
        if self.depth >= MAX_RECURSION {
            return Err(Box::new(too_deep(span_of(&pair, self.base))));
        }
        self.depth += 1;
        let mut stack = self.spare_stacks.pop().unwrap_or_default();
        stack.base = self.base;
        let result = self.expr_tokens(pair, &mut stack);
        self.depth -= 1;
        result?;
        stack.finish_into(out).map_err(Box::new)?;
        // (Only a stack left empty is reused; one left behind by an error is dropped.)
        self.spare_stacks.push(stack);
        Ok(())
    }

    /// Feeds the tokens of an `expr` or `bound` pair to `stack`.
    fn expr_tokens(&mut self, pair: Pair<'_, Rule>, stack: &mut OperatorStack) -> Step {
        let mut tokens = pair.into_inner().peekable();
        while let Some(token) = tokens.next() {
            if matches!(token.as_rule(), Rule::paren_expr | Rule::vector | Rule::between | Rule::in_list)
                || (token.as_rule() == Rule::name_ref && is_call(&token))
            {
                self.nested_into(token, stack)?;
            } else {
                stack.token(token, &mut tokens).map_err(Box::new)?;
            }
        }
        Ok(())
    }

    /// Builds a token that contains expressions (a parenthesised expression, vector, call,
    /// BETWEEN or IN) and pushes it onto `stack`.
    fn nested_into(&mut self, token: Pair<'_, Rule>, stack: &mut OperatorStack) -> Step {
        let mut parts = Vec::new();
        for child in token.clone().into_inner() {
            match child.as_rule() {
                Rule::expr | Rule::bound => self.expr_into(child, &mut parts)?,
                // A call's arguments.
                Rule::call_args => {
                    for arg in child.into_inner() {
                        if arg.as_rule() == Rule::expr {
                            self.expr_into(arg, &mut parts)?;
                        }
                    }
                }
                _ => {}
            }
        }
        stack.nested(token, parts).map_err(Box::new)
    }
}

/// The result of the builder's recursive functions: small, so their frames stay small.
type Step = std::result::Result<(), Box<Error>>;

/// The vector of `items`, which must be 2 or 3.
fn vector(items: Vec<Expr>, span: Span) -> Result<ExprKind> {
    if !(2..=3).contains(&items.len()) {
        return Err(Error::syntax(format!("a vector has 2 or 3 elements, this one has {}", items.len()), span));
    }
    Ok(ExprKind::Vector(items))
}

/// An operand that contains no expression: a literal, parameter, name or `count(*)`.
fn leaf(pair: Pair<'_, Rule>, base: usize) -> Result<Expr> {
    let span = span_of(&pair, base);
    let kind = match pair.as_rule() {
        Rule::count_star => ExprKind::CountStar,
        Rule::entity_lit => entity_literal(pair.as_str(), span)?,
        Rule::number => {
            let text = pair.as_str();
            match number_kind(text) {
                NumberKind::Entity => entity_literal(text, span)?,
                NumberKind::BadFloat => {
                    let int = text.split('.').next().unwrap_or(text);
                    return Err(Error::syntax(
                        format!(
                            "'{text}' is not a number: a float needs digits after the point ('{int}.0', not '{int}.')"
                        ),
                        span,
                    ));
                }
                kind => return number_literal(text, kind == NumberKind::Int, false, span),
            }
        }
        Rule::string => ExprKind::Literal(Literal::Str(unescape(pair.as_str(), span.start)?)),
        Rule::unterminated_string => {
            return Err(Error::syntax(
                "unterminated string: this quote is never closed",
                Span::new(span.start, span.start + 1),
            ))
        }
        Rule::param => ExprKind::Param(parameter(pair.as_str(), span)?),
        Rule::lit_true => ExprKind::Literal(Literal::Bool(true)),
        Rule::lit_false => ExprKind::Literal(Literal::Bool(false)),
        Rule::lit_null => ExprKind::Literal(Literal::Null),
        Rule::entity_id => ExprKind::EntityId,
        // `C.f` or `C` (a call is built by the caller).
        Rule::name_ref => {
            let mut names = pair.into_inner().filter(|p| p.as_rule() != Rule::dot);
            let component = ident(&names.next().expect("grammar: a name operand has a name"), base);
            match names.next() {
                Some(field) => {
                    let field = ident(&field, base);
                    let steps: Vec<PathStep> = names
                        .map(|step| {
                            let mut parts = step.into_inner().filter(|p| p.as_rule() != Rule::dot);
                            let component = ident(&parts.next().expect("grammar: a path step has a component"), base);
                            PathStep { component, field: parts.next().map(|f| ident(&f, base)) }
                        })
                        .collect();
                    if steps.is_empty() {
                        ExprKind::Field { component, field }
                    } else {
                        let first = Span::new(component.span.start, field.span.end);
                        ExprKind::Path { base: Box::new(Expr::new(ExprKind::Field { component, field }, first)), steps }
                    }
                }
                None => ExprKind::Component(component),
            }
        }
        other => return Err(internal(&format!("unexpected operand {other:?}"))),
    };
    Ok(Expr::new(kind, span))
}

/// Whether a `name_ref` is a call (has arguments).
fn is_call(pair: &Pair<'_, Rule>) -> bool {
    pair.clone().into_inner().any(|p| p.as_rule() == Rule::call_args)
}

/// The forms of the grammar's `number` rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NumberKind {
    /// `12v0`.
    Entity,
    /// `2.` or `2.x`: reported as an error.
    BadFloat,
    /// `2.5`, `.5`, `2e3`, `2.5e-3`.
    Float,
    /// `2`.
    Int,
}

/// Which form a `number` token's text has (the grammar matched exactly one).
fn number_kind(text: &str) -> NumberKind {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    match bytes.get(digits) {
        None => NumberKind::Int,
        Some(b'v') => NumberKind::Entity,
        Some(b'.') if bytes.get(digits + 1).is_some_and(u8::is_ascii_digit) => NumberKind::Float,
        Some(b'.') => NumberKind::BadFloat,
        // An exponent.
        Some(_) => NumberKind::Float,
    }
}

fn terms(pair: Pair<'_, Rule>, base: usize) -> Vec<Term> {
    pair.into_inner()
        .filter(|p| p.as_rule() != Rule::comma)
        .map(|p| {
            let span = span_of(&p, base);
            let rule = p.as_rule();
            let mut names: Vec<Ident> = all(p, Rule::component_name).map(|n| ident(&n, base)).collect();
            let kind = match rule {
                Rule::term_any_of => TermKind::AnyOf(names),
                _ => {
                    let name = names.pop().expect("grammar: a term names a component");
                    match rule {
                        Rule::term_not => TermKind::Not(name),
                        Rule::term_optional => TermKind::Optional(name),
                        _ => TermKind::Required(name),
                    }
                }
            };
            Term { kind, span }
        })
        .collect()
}

fn field_decl(pair: Pair<'_, Rule>, base: usize) -> Result<FieldDecl> {
    let span = span_of(&pair, base);
    let pair_of_decl = pair.clone();
    let name = ident(&first(pair.clone(), Rule::field_name), base);
    let ty_pair = first(pair, Rule::type_name);
    let ty_span = span_of(&ty_pair, base);
    let ty = FieldType::from_name(ty_pair.as_str()).ok_or_else(|| {
        let known = FieldType::ALL.map(FieldType::name);
        let mut err = Error::new(
            ErrorKind::Type,
            format!("unknown field type '{}' (known: {})", ty_pair.as_str(), known.join(", ")),
        )
        .with_span(ty_span);
        if let Some(s) = suggest(ty_pair.as_str(), known) {
            err = err.with_suggestion(s);
        }
        err
    })?;
    let reference = pair_reference(&pair_of_decl, base);
    Ok(FieldDecl { name, ty, ty_span, reference, span })
}

/// The `REFERENCES …` clause of a field declaration, if any.
fn pair_reference(decl: &Pair<'_, Rule>, base: usize) -> Option<ReferenceClause> {
    let r = decl.clone().into_inner().find(|p| p.as_rule() == Rule::reference)?;
    let span = span_of(&r, base);
    let mut on_delete = OnDelete::NoAction;
    let mut acyclic = false;
    for p in r.into_inner() {
        match p.as_rule() {
            Rule::delete_action => {
                let words: Vec<Rule> = p.into_inner().map(|w| w.as_rule()).collect();
                on_delete = match words.first() {
                    Some(Rule::kw_cascade) => OnDelete::Cascade,
                    Some(Rule::kw_set) => OnDelete::SetNull,
                    Some(Rule::kw_remove) => OnDelete::Remove,
                    Some(Rule::kw_restrict) => OnDelete::Restrict,
                    _ => OnDelete::NoAction,
                };
            }
            Rule::kw_acyclic => acyclic = true,
            _ => {}
        }
    }
    Some(ReferenceClause { on_delete, acyclic, span })
}

/// `12v0` → index 12, generation 0.
fn entity_literal(text: &str, span: Span) -> Result<ExprKind> {
    let (index, generation) = text.split_once('v').expect("grammar: an entity literal has a 'v'");
    let out_of_range = || {
        Error::syntax(
            format!("entity {text} is out of range (index at most {}, generation at most {})", u32::MAX - 1, u32::MAX),
            span,
        )
    };
    let index: u32 = index.parse().map_err(|_| out_of_range())?;
    let generation: u32 = generation.parse().map_err(|_| out_of_range())?;
    if index == u32::MAX {
        return Err(out_of_range());
    }
    Ok(ExprKind::EntityLit { index, generation })
}

/// `$3` or `$name`.
pub(super) fn parameter(text: &str, span: Span) -> Result<Param> {
    let name = &text[1..];
    if !name.starts_with(|c: char| c.is_ascii_digit()) {
        return Ok(Param::Named(name.to_string()));
    }
    match name.parse::<u32>() {
        Ok(0) => Err(Error::new(ErrorKind::Parameter, "parameters are numbered from $1").with_span(span)),
        Ok(n) => Ok(Param::Positional(n)),
        Err(_) => {
            Err(Error::new(ErrorKind::Parameter, format!("parameter number {text} is too large")).with_span(span))
        }
    }
}

/// The value of a quoted string literal (quotes included in `raw`, which starts at byte
/// `offset` of the source).
pub(super) fn unescape(raw: &str, offset: usize) -> Result<String> {
    let inner = &raw[1..raw.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let start = offset + 1 + i;
        match chars.next() {
            Some((_, '\\')) => out.push('\\'),
            Some((_, '\'')) => out.push('\''),
            Some((_, '"')) => out.push('"'),
            Some((_, 'n')) => out.push('\n'),
            Some((_, 't')) => out.push('\t'),
            Some((_, other)) => {
                return Err(Error::syntax(
                    format!("unknown escape '\\{other}' in a string (known: \\\\ \\' \\\" \\n \\t)"),
                    Span::new(start, start + 1 + other.len_utf8()),
                ))
            }
            None => return Err(Error::syntax("a string cannot end with '\\'", Span::new(start, start + 1))),
        }
    }
    Ok(out)
}

/// An expression's source text with every run of whitespace and comments made one space,
/// except inside string literals: the column name of an unaliased select item.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut pending_space = false;
    while let Some(c) = chars.next() {
        if c.is_whitespace() || (c == '-' && chars.peek() == Some(&'-')) {
            if c == '-' {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            pending_space = true;
            continue;
        }
        if pending_space && !out.is_empty() {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
        if c == '\'' || c == '"' {
            while let Some(s) = chars.next() {
                out.push(s);
                if s == '\\' {
                    if let Some(escaped) = chars.next() {
                        out.push(escaped);
                    }
                } else if s == c {
                    break;
                }
            }
        }
    }
    out
}

// ----- syntax errors -------------------------------------------------------------------------

/// Rank of the statement-start keywords in [`expected_label`].
const STATEMENT_RANK: u8 = 0;

/// How a rule is named in "expected …" messages, and the rank that orders the names (and
/// groups statement-start keywords, rank [`STATEMENT_RANK`]).
fn expected_label(rule: Rule) -> Option<(u8, &'static str)> {
    use Rule::*;
    Some(match rule {
        kw_explain => (STATEMENT_RANK, "`EXPLAIN`"),
        kw_select | select => (STATEMENT_RANK, "`SELECT`"),
        kw_spawn => (STATEMENT_RANK, "`SPAWN`"),
        kw_despawn => (STATEMENT_RANK, "`DESPAWN`"),
        kw_add => (STATEMENT_RANK, "`ADD`"),
        kw_remove => (STATEMENT_RANK, "`REMOVE`"),
        kw_update => (STATEMENT_RANK, "`UPDATE`"),
        kw_create => (STATEMENT_RANK, "`CREATE`"),
        kw_drop => (STATEMENT_RANK, "`DROP`"),
        kw_show => (STATEMENT_RANK, "`SHOW`"),
        kw_describe => (STATEMENT_RANK, "`DESCRIBE`"),
        single | script => (1, "a statement"),

        expr | bound | order_key | paren_expr | vector | count_star | name_ref | call_args | entity_lit | number
        | string | unterminated_string | param | lit_true | lit_false | lit_null | entity_id | ref_name
        | paren_open | vector_open | op_neg | op_not | kw_count | single_expr => (10, "an expression"),
        select_item => (11, "an expression or `*`"),

        component_name | terms | term_not | term_optional | term_any_of | term_required | term_list_query
        | component_value => (20, "a component name"),
        field_name | field_init | assignment | field_decl => (21, "a field name"),
        delete_action => (27, "an ON DELETE action (CASCADE, SET NULL, REMOVE, RESTRICT, NO ACTION)"),
        type_name => (22, "a type name"),
        index_name => (23, "an index name"),
        index_kind => (24, "an index kind"),
        alias => (25, "an alias"),
        entity_target => (26, "an entity (`12v0` or a parameter)"),

        op_or | op_and | op_compare | op_arith | op_like | op_not_like | is_null | between | in_list | kw_between
        | kw_in | kw_is | kw_like | op_negate => (30, "an operator"),

        // Clause keywords in clause order, then the others.
        kw_as => (40, "`AS`"),
        kw_from | from_clause => (41, "`FROM`"),
        kw_where | where_clause => (42, "`WHERE`"),
        kw_group | group_clause => (43, "`GROUP BY`"),
        kw_order | order_clause => (44, "`ORDER BY`"),
        kw_asc => (45, "`ASC`"),
        kw_desc => (46, "`DESC`"),
        kw_limit | limit_clause => (47, "`LIMIT`"),
        kw_offset | offset_clause => (48, "`OFFSET`"),
        kw_and => (50, "`AND`"),
        kw_by => (51, "`BY`"),
        kw_component => (52, "`COMPONENT`"),
        kw_components => (53, "`COMPONENTS`"),
        kw_index => (54, "`INDEX`"),
        kw_indexes => (55, "`INDEXES`"),
        kw_not => (56, "`NOT`"),
        kw_null => (57, "`NULL`"),
        kw_true => (57, "`TRUE`"),
        kw_false => (57, "`FALSE`"),
        kw_entity => (57, "`ENTITY`"),
        kw_on => (58, "`ON`"),
        kw_optional => (59, "`OPTIONAL`"),
        kw_or => (60, "`OR`"),
        kw_set => (61, "`SET`"),
        kw_tables => (62, "`TABLES`"),
        kw_to => (63, "`TO`"),
        kw_using => (64, "`USING`"),
        kw_references | reference => (65, "`REFERENCES`"),
        kw_acyclic => (66, "`ACYCLIC`"),
        kw_delete => (67, "`DELETE`"),
        kw_cascade => (68, "`CASCADE`"),
        kw_restrict => (68, "`RESTRICT`"),
        kw_no => (68, "`NO`"),
        kw_action => (69, "`ACTION`"),
        kw_system => (65, "`SYSTEM`"),
        kw_systems => (66, "`SYSTEMS`"),
        kw_schedule => (67, "`SCHEDULE`"),
        kw_phase => (68, "`PHASE`"),
        kw_after | after_systems => (69, "`AFTER`"),
        kw_before | before_systems => (69, "`BEFORE`"),
        in_phase => (69, "`IN PHASE`"),
        kw_begin => (69, "`BEGIN`"),
        kw_end => (69, "`END`"),
        kw_dt => (69, "`DT`"),
        kw_if | if_exists => (69, "`IF EXISTS`"),
        kw_exists => (69, "`EXISTS`"),
        system_name => (27, "a system name"),
        phase_name => (28, "a phase name"),
        setting_name => (29, "a setting name"),
        kw_tick | tick => (STATEMENT_RANK, "`TICK`"),
        kw_set_statement => (STATEMENT_RANK, "`SET`"),
        create_system | drop_system | set_setting | system_body | system_block | single_system_body => {
            (1, "a statement")
        }
        explain_schedule => (STATEMENT_RANK, "`EXPLAIN`"),
        tick_count => (10, "an expression"),
        tick_dt => (10, "an expression"),

        comma => (70, "`,`"),
        dot | path_step => (71, "`.`"),
        colon => (72, "`:`"),
        eq_sign => (73, "`=`"),
        star => (74, "`*`"),
        bang => (75, "`!`"),
        question => (76, "`?`"),
        pipe => (77, "`|`"),
        lparen => (78, "`(`"),
        rparen => (79, "`)`"),
        lbracket => (80, "`[`"),
        rbracket => (81, "`]`"),
        lbrace => (82, "`{`"),
        rbrace => (83, "`}`"),

        semicolon => (90, "`;`"),
        EOI => (99, "end of input"),
        _ => return None,
    })
}

/// Joins names as "a, b or c".
fn join_or(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// What is at `pos`, for "found …", and its span.
fn found_at(src: &str, pos: usize) -> (String, Span) {
    let rest = src.get(pos..).unwrap_or("");
    let Some(c) = rest.chars().next() else {
        // Point just after the last token rather than at trailing whitespace.
        let end = src.trim_end().len().min(pos);
        return ("end of input".to_string(), Span::new(end, end));
    };
    let len = if c.is_ascii_alphanumeric() || c == '_' {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(rest.len())
    } else if c == '\'' || c == '"' {
        return ("a string".to_string(), Span::new(pos, pos + 1));
    } else if ["==", "!=", "<>", "<=", ">=", "||"].iter().any(|op| rest.starts_with(op)) {
        2
    } else {
        c.len_utf8()
    };
    let word = &rest[..len];
    let described = if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word)) {
        format!("`{word}` (a reserved word)")
    } else if c.is_control() || c.is_whitespace() {
        format!("character {:?}", c)
    } else {
        format!("`{word}`")
    };
    (described, Span::new(pos, pos + len))
}

/// Every keyword of the language (upper case): for "did you mean" on a misspelt one, and
/// for tools that complete or highlight keywords.
pub const KEYWORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "ORDER",
    "BY",
    "ASC",
    "DESC",
    "LIMIT",
    "OFFSET",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "LIKE",
    "BETWEEN",
    "OPTIONAL",
    "EXPLAIN",
    "SPAWN",
    "DESPAWN",
    "ADD",
    "TO",
    "REMOVE",
    "UPDATE",
    "SET",
    "CREATE",
    "COMPONENT",
    "INDEX",
    "ON",
    "USING",
    "DROP",
    "SHOW",
    "COMPONENTS",
    "TABLES",
    "INDEXES",
    "DESCRIBE",
];

/// Statement-start keywords, for "did you mean" on the first word of a statement.
const STATEMENT_KEYWORDS: &[&str] =
    &["SELECT", "EXPLAIN", "SPAWN", "DESPAWN", "ADD", "REMOVE", "UPDATE", "CREATE", "DROP", "SHOW", "DESCRIBE"];

/// A keyword the user may have misspelt at the error: the found word, if it is close to an
/// expected keyword; or the first word of the statement, if it is close to a statement keyword
/// (a misspelt `SELEC x` parses as the start of a bare term list `SELEC`).
fn keyword_suggestion(src: &str, span: Span, expected: &[&str]) -> Option<String> {
    let found = span.text(src);
    let expected_keywords: Vec<&str> = expected
        .iter()
        .filter_map(|label| label.strip_prefix('`')?.strip_suffix('`'))
        .flat_map(|kw| kw.split(' ').next())
        .filter(|kw| KEYWORDS.contains(kw))
        .collect();
    if !found.is_empty() && found.bytes().all(|b| b.is_ascii_alphabetic()) {
        if let Some(s) = suggest(found, expected_keywords.iter().copied()) {
            return Some(s);
        }
    }
    // The word before the error, when it starts the statement.
    let before = src[..span.start.min(src.len())].trim_end();
    let word_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &before[word_start..];
    let prefix = before[..word_start].trim_end();
    let starts_statement = prefix.is_empty() || prefix.ends_with(';');
    if starts_statement && !word.is_empty() && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)) {
        return suggest(word, STATEMENT_KEYWORDS.iter().copied());
    }
    None
}

/// A pest failure as a syntax error that says, in words, what was expected and what was found.
fn syntax_error(src: &str, err: pest::error::Error<Rule>) -> Error {
    let pos = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((start, _)) => start,
    };
    let (found, span) = found_at(src, pos);
    match err.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let mut labels: Vec<(u8, &str)> = positives.into_iter().filter_map(expected_label).collect();
            labels.sort_by_key(|&(rank, _)| rank);
            labels.dedup_by_key(|&mut (_, label)| label);
            // At the start of a statement, say "a statement" rather than every keyword (and
            // rather than "a component name", the start of a bare term list).
            let statement_starts = labels.iter().filter(|(rank, _)| *rank == STATEMENT_RANK).count();
            if statement_starts > 2 {
                labels.retain(|&(rank, label)| rank != STATEMENT_RANK && label != "a component name");
                labels.insert(0, (1, "a statement"));
                labels.dedup_by_key(|&mut (_, label)| label);
            }
            let mut names: Vec<&str> = labels.iter().map(|&(_, label)| label).collect();
            // After an operand, `.` (of `C.f`) and `(` (of a call) are possible too, but
            // naming them beside "an operator" only distracts.
            if names.contains(&"an operator") {
                names.retain(|n| *n != "`.`" && *n != "`(`");
            }
            let message = if names.is_empty() {
                format!("unexpected {found}")
            } else {
                format!("expected {}, found {found}", join_or(&names))
            };
            let error = Error::syntax(message, span);
            match keyword_suggestion(src, span, &names) {
                Some(s) => error.with_suggestion(s),
                None => error,
            }
        }
        ErrorVariant::CustomError { message } => {
            Error::syntax(format!("the text is too deeply nested to parse ({message})"), span)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_expression, parse_script, parse_statement, parse_system_body};
    use super::*;
    use proptest::prelude::*;

    // ----- helpers -----------------------------------------------------------------------

    fn stmt(src: &str) -> Statement {
        parse_statement(src).unwrap_or_else(|e| panic!("{src:?} failed:\n{}", e.render(src)))
    }

    fn select(src: &str) -> Select {
        match stmt(src) {
            Statement::Select(s) => s,
            other => panic!("not a SELECT: {other:?}"),
        }
    }

    fn expr(src: &str) -> Expr {
        parse_expression(src).unwrap_or_else(|e| panic!("{src:?} failed:\n{}", e.render(src)))
    }

    /// The expression as an s-expression: shows the tree's shape unambiguously.
    fn sx(e: &Expr) -> String {
        let list = |items: &[Expr]| items.iter().map(sx).collect::<Vec<_>>().join(" ");
        let neg = |negated: bool, name: &str| if negated { format!("not-{name}") } else { name.to_string() };
        match &e.kind {
            ExprKind::Literal(Literal::Str(s)) => format!("{s:?}"),
            ExprKind::Literal(Literal::Float(x)) => format!("{x:?}"),
            ExprKind::Literal(lit) => lit.to_string(),
            ExprKind::EntityLit { index, generation } => format!("{index}v{generation}"),
            ExprKind::Param(p) => p.to_string(),
            ExprKind::Vector(items) => format!("[{}]", list(items)),
            ExprKind::Field { component, field } => format!("{component}.{field}"),
            ExprKind::Path { .. } => format!("(path {e})"),
            ExprKind::Component(c) => c.name.clone(),
            ExprKind::EntityId => "entity".into(),
            ExprKind::Unary { expr, .. } => format!("(neg {})", sx(expr)),
            ExprKind::Binary { op, lhs, rhs } => format!("({op} {} {})", sx(lhs), sx(rhs)),
            ExprKind::Not(x) => format!("(not {})", sx(x)),
            ExprKind::Between { expr, low, high, negated } => {
                format!("({} {} {} {})", neg(*negated, "between"), sx(expr), sx(low), sx(high))
            }
            ExprKind::InList { expr, list: items, negated } => {
                format!("({} {} [{}])", neg(*negated, "in"), sx(expr), list(items))
            }
            ExprKind::Like { expr, pattern, negated } => {
                format!("({} {} {})", neg(*negated, "like"), sx(expr), sx(pattern))
            }
            ExprKind::IsNull { expr, negated } => format!("({} {})", neg(*negated, "is-null"), sx(expr)),
            ExprKind::Call { name, args } => format!("({name} {})", list(args)),
            ExprKind::CountStar => "count(*)".into(),
        }
    }

    fn sx_of(src: &str) -> String {
        sx(&expr(src))
    }

    fn err(src: &str) -> Error {
        match parse_statement(src) {
            Ok(s) => panic!("{src:?} parsed: {s:?}"),
            Err(e) => e,
        }
    }

    fn rendered(src: &str) -> String {
        err(src).render(src)
    }

    fn names(idents: &[Ident]) -> Vec<&str> {
        idents.iter().map(|i| i.name.as_str()).collect()
    }

    fn term_sx(terms: &[Term]) -> Vec<String> {
        terms
            .iter()
            .map(|t| match &t.kind {
                TermKind::Required(c) => c.name.clone(),
                TermKind::Not(c) => format!("!{c}"),
                TermKind::Optional(c) => format!("?{c}"),
                TermKind::AnyOf(cs) => names(cs).join("|"),
            })
            .collect()
    }

    fn filter(target: &Target) -> (&[Term], Option<&Expr>) {
        match target {
            Target::Filter(f) => (&f.from, f.where_.as_ref()),
            Target::Entity(e) => panic!("not a filter: {e:?}"),
        }
    }

    fn entity_target(target: &Target) -> String {
        match target {
            Target::Entity(e) => e.to_string(),
            Target::Filter(f) => panic!("not an entity: {f:?}"),
        }
    }

    fn values(components: &[ComponentValue]) -> Vec<String> {
        components
            .iter()
            .map(|c| {
                let fields: Vec<String> = c.fields.iter().map(|f| format!("{}: {}", f.field, sx(&f.value))).collect();
                format!("{} {{{}}}", c.component, fields.join(", "))
            })
            .collect()
    }

    /// Every expression in a statement, for span checks.
    fn statement_exprs(s: &Statement) -> Vec<&Expr> {
        fn terms_where<'a>(out: &mut Vec<&'a Expr>, target: &'a Target) {
            match target {
                Target::Entity(e) => out.push(e),
                Target::Filter(f) => out.extend(f.where_.iter()),
            }
        }
        fn of_select<'a>(out: &mut Vec<&'a Expr>, s: &'a Select) {
            for item in &s.items {
                if let SelectItem::Expr { expr, .. } = item {
                    out.push(expr);
                }
            }
            out.extend(s.where_.iter().chain(&s.group_by).chain(s.order_by.iter().map(|k| &k.expr)));
            out.extend(s.limit.iter().chain(s.offset.iter()));
        }
        let mut out = Vec::new();
        match s {
            Statement::Select(sel) => of_select(&mut out, sel),
            Statement::Explain(e) => of_select(&mut out, &e.select),
            Statement::Spawn(sp) => out.extend(sp.components.iter().flat_map(|c| c.fields.iter().map(|f| &f.value))),
            Statement::Despawn(d) => terms_where(&mut out, &d.target),
            Statement::Add(a) => {
                out.extend(a.components.iter().flat_map(|c| c.fields.iter().map(|f| &f.value)));
                terms_where(&mut out, &a.target);
            }
            Statement::Remove(r) => terms_where(&mut out, &r.target),
            Statement::Update(u) => {
                out.extend(u.assignments.iter().map(|a| &a.value));
                terms_where(&mut out, &u.target);
            }
            _ => {}
        }
        out
    }

    // ----- statements --------------------------------------------------------------------

    #[test]
    fn select_with_every_clause() {
        let s = select(
            "SELECT entity, Name.value AS n, Health FROM Health, !Frozen, ?Name, A | B | C \
             WHERE Health.hp < 5 GROUP BY Team.name, entity ORDER BY n DESC, Health.hp ASC, 1 \
             LIMIT 10 OFFSET $skip",
        );
        assert!(!s.bare);
        let items: Vec<_> = s.items.iter().map(|i| i.column_name().unwrap()).collect();
        assert_eq!(items, ["entity", "n", "Health"]);
        match &s.items[0] {
            SelectItem::Expr { expr, alias: None, .. } => assert_eq!(expr.kind, ExprKind::EntityId),
            other => panic!("{other:?}"),
        }
        match &s.items[2] {
            SelectItem::Expr { expr, .. } => assert_eq!(sx(expr), "Health"),
            other => panic!("{other:?}"),
        }
        assert_eq!(term_sx(&s.from), ["Health", "!Frozen", "?Name", "A|B|C"]);
        assert_eq!(sx(s.where_.as_ref().unwrap()), "(< Health.hp 5)");
        assert_eq!(s.group_by.iter().map(sx).collect::<Vec<_>>(), ["Team.name", "entity"]);
        let order: Vec<_> = s.order_by.iter().map(|k| (sx(&k.expr), k.desc)).collect();
        assert_eq!(order, [("n".into(), true), ("Health.hp".into(), false), ("1".into(), false)]);
        assert_eq!(sx(s.limit.as_ref().unwrap()), "10");
        assert_eq!(sx(s.offset.as_ref().unwrap()), "$skip");
    }

    #[test]
    fn select_minimal_forms() {
        let s = select("SELECT *");
        assert_eq!(s.items, [SelectItem::Star { span: Span::new(7, 8) }]);
        assert!(s.from.is_empty() && s.where_.is_none() && s.limit.is_none() && s.order_by.is_empty());
        let s = select("SELECT *, Position.x FROM Position");
        assert_eq!(s.items.len(), 2);
        let s = select("SELECT Name.value WHERE Health.hp < 5");
        assert!(s.from.is_empty());
        assert_eq!(s.items[0].column_name(), Some("Name.value"));
    }

    #[test]
    fn bare_term_lists() {
        let src = "Position, Velocity, !Frozen";
        let s = select(src);
        assert!(s.bare);
        assert_eq!(s.items, [SelectItem::Star { span: Span::new(0, src.len()) }]);
        assert_eq!(term_sx(&s.from), ["Position", "Velocity", "!Frozen"]);
        assert_eq!(term_sx(&select("Player").from), ["Player"]);
        assert_eq!(term_sx(&select("NOT A, OPTIONAL B, ? C, ! D, E|F").from), ["!A", "?B", "?C", "!D", "E|F"]);
    }

    #[test]
    fn contextual_keywords_are_names_elsewhere() {
        // OPTIONAL, COUNT, DESC, INDEX, … are keywords only where expected.
        assert_eq!(term_sx(&select("Optional, Index").from), ["Optional", "Index"]);
        assert_eq!(term_sx(&select("OPTIONAL Optional").from), ["?Optional"]);
        assert_eq!(term_sx(&select("SELECT * FROM Optional").from), ["Optional"]);
        let s = select("SELECT count, desc FROM Tables ORDER BY desc DESC");
        assert_eq!(s.items[1].column_name(), Some("desc"));
        assert_eq!((sx(&s.order_by[0].expr), s.order_by[0].desc), ("desc".into(), true));
        // Field names may be any word, reserved ones included.
        let s = select("SELECT C.from, C.select, C.entity FROM C");
        assert_eq!(
            s.items.iter().map(|i| i.column_name().unwrap()).collect::<Vec<_>>(),
            ["C.from", "C.select", "C.entity"]
        );
        match stmt("CREATE COMPONENT Link (entity entity, index i32, set bool)") {
            Statement::CreateComponent(c) => {
                assert_eq!(c.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["entity", "index", "set"])
            }
            other => panic!("{other:?}"),
        }
        match stmt("UPDATE C SET set = 1, from = 2") {
            Statement::Update(u) => assert_eq!(u.assignments[1].field.name, "from"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reserved_words_are_not_names() {
        for word in RESERVED {
            let mut sources = vec![format!("DESCRIBE {word}"), format!("SELECT a AS {word}")];
            // (`FROM not …` is the start of the term `NOT C`.)
            if *word != "not" {
                sources.push(format!("SELECT a FROM {word}"));
            }
            for src in sources {
                let e = err(&src);
                assert_eq!(e.kind, ErrorKind::Syntax, "{src}");
                assert!(e.message.contains("reserved word"), "{src}: {}", e.message);
            }
        }
        for word in ["by", "asc", "desc", "optional", "component", "components", "index", "indexes", "tables", "count"]
        {
            stmt(&format!("DESCRIBE {word}"));
            stmt(&format!("SELECT {word}.x AS {word} FROM {word}"));
        }
    }

    #[test]
    fn reserved_list_matches_the_grammar() {
        let grammar = include_str!("../../../grammar/ecsdb.pest");
        let start = grammar.find("reserved = _{").expect("the grammar has a reserved rule");
        let end = start + grammar[start..].find("~ !ident_char").expect("the rule ends");
        let mut in_grammar: Vec<&str> = grammar[start..end].split('"').skip(1).step_by(2).collect();
        let mut listed = RESERVED.to_vec();
        in_grammar.sort_unstable();
        listed.sort_unstable();
        assert_eq!(in_grammar, listed);
        // Words that merely start with a reserved word are names.
        for word in
            ["ordering", "Orders", "island", "Tom", "index", "settings", "fromage", "Selection", "Nothing", "asc"]
        {
            stmt(&format!("DESCRIBE {word}"));
        }
    }

    #[test]
    fn explain() {
        match stmt("EXPLAIN SELECT * FROM A WHERE A.x > 1") {
            Statement::Explain(e) => {
                assert!(!e.select.bare);
                assert_eq!(term_sx(&e.select.from), ["A"]);
                assert_eq!(e.span, Span::new(0, 37));
                assert_eq!(e.select.span, Span::new(8, 37));
            }
            other => panic!("{other:?}"),
        }
        match stmt("explain A, !B") {
            Statement::Explain(e) => assert!(e.select.bare),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn spawn() {
        match stmt(
            "SPAWN Position {x: 1, y: 2, z: 0}, Velocity {x: 0, y: -1.5, z: 0}, Player, Name {value: 'z' || \"ig\"}",
        ) {
            Statement::Spawn(s) => assert_eq!(
                values(&s.components),
                [
                    "Position {x: 1, y: 2, z: 0}",
                    "Velocity {x: 0, y: -1.5, z: 0}",
                    "Player {}",
                    "Name {value: (|| \"z\" \"ig\")}"
                ]
            ),
            other => panic!("{other:?}"),
        }
        match stmt("SPAWN") {
            Statement::Spawn(s) => assert!(s.components.is_empty()),
            other => panic!("{other:?}"),
        }
        match stmt("spawn Health {}, Pos {p: [1, 2]}") {
            Statement::Spawn(s) => assert_eq!(values(&s.components), ["Health {}", "Pos {p: [1 2]}"]),
            other => panic!("{other:?}"),
        }
    }

    /// The statements of a system body, each as its SPAWN's components (`-` for others).
    fn body_spawns(statements: &[Statement]) -> Vec<String> {
        statements
            .iter()
            .map(|s| match s {
                Statement::Spawn(s) => values(&s.components).join(", "),
                _ => "-".into(),
            })
            .collect()
    }

    /// `END` right after a bare SPAWN ends its block; `End` stays a component name elsewhere,
    /// and in a block after SPAWN where `{` or `,` follows it.
    #[test]
    fn a_bare_spawn_may_end_a_block() {
        let system = |src: &str| match stmt(src) {
            Statement::CreateSystem(c) => (c.body_text.clone(), body_spawns(&c.body)),
            other => panic!("{other:?}"),
        };
        assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN END"), ("BEGIN SPAWN END".into(), vec!["".into()]));
        assert_eq!(system("CREATE SYSTEM a AS BEGIN DESPAWN; spawn end").1, ["-", ""]);
        assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN; END").1, [""]);
        assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN End {} END").1, ["End {}"]);
        assert_eq!(
            system("CREATE SYSTEM a AS BEGIN SPAWN End, X; SPAWN X, End END").1,
            ["End {}, X {}", "X {}, End {}"]
        );
        assert_eq!(system("CREATE SYSTEM a AS SPAWN End").1, ["End {}"]);
        assert_eq!(body_spawns(&parse_system_body("BEGIN SPAWN END").unwrap()), [""]);
        let script = parse_script("CREATE SYSTEM a AS BEGIN SPAWN END; SPAWN End").unwrap();
        assert_eq!(body_spawns(&script[1..]), ["End {}"]);
        // Outside blocks `End` is a component: pest and the hand-written parser agree.
        for statements in [parse("SPAWN End", Entry::Statement).unwrap(), vec![stmt("SPAWN End")]] {
            assert_eq!(body_spawns(&statements), ["End {}"]);
        }
        // In a block, a bare `End` after SPAWN is the block's END: what follows is an error.
        for (src, message, at) in [
            ("CREATE SYSTEM a AS BEGIN SPAWN End END", "expected `;` or end of input, found `END`", (1, 36)),
            ("CREATE SYSTEM a AS BEGIN SPAWN End; END", "expected end of input, found `END`", (1, 37)),
        ] {
            let e = err(src);
            assert_eq!(
                (e.kind, e.message.as_str(), e.line_col(src)),
                (ErrorKind::Syntax, message, Some(at)),
                "\n{src}"
            );
        }
    }

    /// A field's value that is a lone literal or parameter takes the grammar's short path
    /// (`literal_value`); it must build exactly what the expression path builds.
    #[test]
    fn lone_literal_values_build_like_expressions() {
        let values = [
            "5",
            "-5",
            "2.5e3",
            ".5",
            "12v0",
            "-12v0",
            "'a;b'",
            "\"q\"",
            "$1",
            "$name",
            "true",
            "null",
            "x",
            "1 + 2",
            "(3)",
            "[1, 2]",
            "'a' || 'b'",
            "5 -- note\n",
        ];
        for value in values {
            let src = format!("SPAWN A {{v: {value} }}, B {{v: {value}, w: 0}}");
            let Statement::Spawn(spawn) = stmt(&src) else { panic!("{src}") };
            for component in &spawn.components {
                let field = &component.fields[0];
                let at = field.value.span.start;
                let alone = parse_expression(&src[at..at + value.trim_end().len()])
                    .unwrap_or_else(|e| panic!("{value}: {}", e.render(value)));
                assert_eq!(sx(&field.value), sx(&alone), "{src}");
                assert_eq!(field.value.span, Span::new(at + alone.span.start, at + alone.span.end), "{src}");
            }
        }
        // Errors found while building the value are the same too.
        for (value, message) in [
            ("2.", "'2.' is not a number"),
            ("99999999999999999999", "out of range"),
            ("'a\\q'", "unknown escape"),
            ("$0", "numbered from $1"),
        ] {
            let e = err(&format!("SPAWN A {{v: {value}}}"));
            assert!(e.message.contains(message), "{value}: {}", e.message);
            assert_eq!(e, err(&format!("SPAWN A {{v: {value} + 0}}")), "{value}");
        }
    }

    #[test]
    fn despawn() {
        let target = |src: &str| match stmt(src) {
            Statement::Despawn(d) => d.target,
            other => panic!("{other:?}"),
        };
        assert_eq!(entity_target(&target("DESPAWN 12v0")), "12v0");
        assert_eq!(entity_target(&target("DESPAWN $e")), "$e");
        let t = target("DESPAWN WHERE Health.hp <= 0");
        let (from, cond) = filter(&t);
        assert!(from.is_empty());
        assert_eq!(sx(cond.unwrap()), "(<= Health.hp 0)");
        let t = target("DESPAWN FROM A, !B WHERE A.x = 1");
        assert_eq!(term_sx(filter(&t).0), ["A", "!B"]);
        let t = target("DESPAWN FROM A");
        assert!(filter(&t).1.is_none());
        // No filter at all: every entity (the binder decides what that means).
        match target("DESPAWN") {
            Target::Filter(f) => assert_eq!((f.from.len(), f.where_.is_none(), f.span), (0, true, Span::new(7, 7))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn add() {
        match stmt("ADD Frozen, Health {hp: 10} TO 12v0") {
            Statement::Add(a) => {
                assert_eq!(values(&a.components), ["Frozen {}", "Health {hp: 10}"]);
                assert_eq!(entity_target(&a.target), "12v0");
            }
            other => panic!("{other:?}"),
        }
        match stmt("ADD Frozen WHERE Position.y < 0") {
            Statement::Add(a) => assert_eq!(sx(filter(&a.target).1.unwrap()), "(< Position.y 0)"),
            other => panic!("{other:?}"),
        }
        match stmt("ADD Frozen TO $1") {
            Statement::Add(a) => assert_eq!(entity_target(&a.target), "$1"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn remove() {
        match stmt("REMOVE Frozen FROM 12v0") {
            Statement::Remove(r) => {
                assert_eq!(names(&r.components), ["Frozen"]);
                assert_eq!(entity_target(&r.target), "12v0");
            }
            other => panic!("{other:?}"),
        }
        match stmt("REMOVE Frozen, Velocity WHERE Health.hp <= 0") {
            Statement::Remove(r) => {
                assert_eq!(names(&r.components), ["Frozen", "Velocity"]);
                assert_eq!(sx(filter(&r.target).1.unwrap()), "(<= Health.hp 0)");
            }
            other => panic!("{other:?}"),
        }
        match stmt("REMOVE Frozen FROM Frozen, !Player WHERE entity != 1v0") {
            Statement::Remove(r) => assert_eq!(term_sx(filter(&r.target).0), ["Frozen", "!Player"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn update() {
        match stmt("UPDATE Health SET hp = Health.hp + 10, max = 200 WHERE Team.name = 'red'") {
            Statement::Update(u) => {
                assert_eq!(u.component.name, "Health");
                let a: Vec<_> = u.assignments.iter().map(|a| format!("{} = {}", a.field, sx(&a.value))).collect();
                assert_eq!(a, ["hp = (+ Health.hp 10)", "max = 200"]);
                assert_eq!(sx(filter(&u.target).1.unwrap()), "(= Team.name \"red\")");
            }
            other => panic!("{other:?}"),
        }
        match stmt("UPDATE Position SET x = Position.x + Velocity.x FROM Position, Velocity, !Frozen") {
            Statement::Update(u) => assert_eq!(term_sx(filter(&u.target).0), ["Position", "Velocity", "!Frozen"]),
            other => panic!("{other:?}"),
        }
        match stmt("UPDATE Health SET hp = 1 FROM 3v1") {
            Statement::Update(u) => assert_eq!(entity_target(&u.target), "3v1"),
            other => panic!("{other:?}"),
        }
        match stmt("UPDATE Health SET hp = 1") {
            Statement::Update(u) => assert_eq!(filter(&u.target), (&[][..], None)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn references_and_paths() {
        let Statement::CreateComponent(c) =
            parse_statement("CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE SET NULL ACYCLIC, n i32)")
                .unwrap()
        else {
            panic!()
        };
        let r = c.fields[0].reference.as_ref().unwrap();
        assert_eq!((r.on_delete, r.acyclic), (OnDelete::SetNull, true));
        assert!(c.fields[1].reference.is_none());
        for (text, policy) in [
            ("REFERENCES", OnDelete::NoAction),
            ("references on delete cascade", OnDelete::Cascade),
            ("REFERENCES ON DELETE REMOVE", OnDelete::Remove),
            ("REFERENCES ON DELETE RESTRICT", OnDelete::Restrict),
            ("REFERENCES ON DELETE NO ACTION", OnDelete::NoAction),
        ] {
            let Statement::CreateComponent(c) =
                parse_statement(&format!("CREATE COMPONENT A (p entity {text})")).unwrap()
            else {
                panic!()
            };
            assert_eq!(c.fields[0].reference.as_ref().unwrap().on_delete, policy, "{text}");
        }
        assert!(parse_statement("CREATE COMPONENT A (p entity REFERENCES ON DELETE)").is_err());
        assert_eq!(
            sx_of("ChildOf.parent.ChildOf.parent.Name.value = 'x'"),
            "(= (path ChildOf.parent.ChildOf.parent.Name.value) \"x\")"
        );
        assert_eq!(sx_of("ChildOf.parent.Name"), "(path ChildOf.parent.Name)");
        let e = expr("a.b.C.d + 1");
        let ExprKind::Binary { lhs, .. } = &e.kind else { panic!() };
        assert!(matches!(&lhs.kind, ExprKind::Path { steps, .. } if steps.len() == 1));
    }

    #[test]
    fn create_component() {
        match stmt("CREATE COMPONENT Health (hp f32, max F32)") {
            Statement::CreateComponent(c) => {
                assert_eq!(c.name.name, "Health");
                let fields: Vec<_> = c.fields.iter().map(|f| (f.name.as_str(), f.ty)).collect();
                assert_eq!(fields, [("hp", FieldType::F32), ("max", FieldType::F32)]);
                assert_eq!(c.fields[1].ty_span, Span::new(37, 40));
                assert_eq!(c.fields[1].span, Span::new(33, 40));
            }
            other => panic!("{other:?}"),
        }
        for src in ["CREATE COMPONENT Frozen", "create component Frozen ()"] {
            match stmt(src) {
                Statement::CreateComponent(c) => assert!(c.fields.is_empty() && c.name.name == "Frozen"),
                other => panic!("{other:?}"),
            }
        }
        let all: Vec<String> = FieldType::ALL.iter().enumerate().map(|(i, t)| format!("f{i} {}", t.name())).collect();
        match stmt(&format!("CREATE COMPONENT Everything ({})", all.join(", "))) {
            Statement::CreateComponent(c) => {
                assert_eq!(c.fields.iter().map(|f| f.ty).collect::<Vec<_>>(), FieldType::ALL)
            }
            other => panic!("{other:?}"),
        }
        let e = err("CREATE COMPONENT X (a f23, b strnig)");
        assert_eq!((e.kind, e.span, e.suggestion.as_deref()), (ErrorKind::Type, Some(Span::new(22, 25)), Some("f32")));
    }

    #[test]
    fn create_index() {
        let index = |src: &str| match stmt(src) {
            Statement::CreateIndex(c) => (
                c.name.map(|n| n.name),
                c.component.name,
                c.fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
                c.kind.name,
            ),
            other => panic!("{other:?}"),
        };
        assert_eq!(index("CREATE INDEX ON Position USING rtree"), (None, "Position".into(), vec![], "rtree".into()));
        assert_eq!(
            index("CREATE INDEX team_idx ON Team (name) USING bitmap"),
            (Some("team_idx".into()), "Team".into(), vec!["name".into()], "bitmap".into())
        );
        assert_eq!(
            index("create index on Health (hp, max) using BTREE"),
            (None, "Health".into(), vec!["hp".into(), "max".into()], "BTREE".into())
        );
    }

    #[test]
    fn drop_show_describe() {
        match stmt("DROP INDEX team_idx") {
            Statement::DropIndex(d) => assert_eq!((d.name.name.as_str(), d.name.span), ("team_idx", Span::new(11, 19))),
            other => panic!("{other:?}"),
        }
        for (src, what) in [
            ("SHOW COMPONENTS", ShowWhat::Components),
            ("show tables", ShowWhat::Tables),
            ("Show Indexes", ShowWhat::Indexes),
        ] {
            match stmt(src) {
                Statement::Show(s) => assert_eq!((s.what, s.span), (what, Span::new(0, src.len()))),
                other => panic!("{other:?}"),
            }
        }
        match stmt("DESCRIBE Health;") {
            Statement::Describe(d) => assert_eq!((d.component.name.as_str(), d.span), ("Health", Span::new(0, 15))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keywords_are_case_insensitive_and_names_are_not() {
        let s = select(
            "sElEcT health.HP aS Hp FrOm Health wHeRe health.HP iS nOt NuLl AnD TRUE oR False OrDeR bY Hp DeSc LiMiT 1",
        );
        assert_eq!(s.items[0].column_name(), Some("Hp"));
        assert_eq!(sx(s.where_.as_ref().unwrap()), "(OR (AND (not-is-null health.HP) true) false)");
        assert!(s.order_by[0].desc);
        assert_eq!(sx_of("NULL"), "null");
        assert_eq!(sx_of("Entity"), "entity");
        assert_eq!(sx_of("a NoT bEtWeEn 1 AnD 2"), "(not-between a 1 2)");
        assert_eq!(sx_of("a not in (1) or b not like 'x%'"), "(OR (not-in a [1]) (not-like b \"x%\"))");
        assert_eq!(sx_of("COUNT(*) + Count(*)"), "(+ count(*) count(*))");
    }

    // ----- expressions -------------------------------------------------------------------

    #[test]
    fn every_binary_operator() {
        let cases = [
            ("a = b", "(= a b)"),
            ("a == b", "(= a b)"),
            ("a != b", "(!= a b)"),
            ("a <> b", "(!= a b)"),
            ("a < b", "(< a b)"),
            ("a <= b", "(<= a b)"),
            ("a > b", "(> a b)"),
            ("a >= b", "(>= a b)"),
            ("a AND b", "(AND a b)"),
            ("a OR b", "(OR a b)"),
            ("a + b", "(+ a b)"),
            ("a - b", "(- a b)"),
            ("a * b", "(* a b)"),
            ("a / b", "(/ a b)"),
            ("a % b", "(% a b)"),
            ("a || b", "(|| a b)"),
            ("a<=b", "(<= a b)"),
            ("a<-b", "(< a (neg b))"),
            ("a-1", "(- a 1)"),
            ("a- -1", "(- a -1)"),
        ];
        for (src, want) in cases {
            assert_eq!(sx_of(src), want, "{src}");
        }
    }

    #[test]
    fn prefix_and_postfix_forms() {
        let cases = [
            ("NOT a", "(not a)"),
            ("NOT NOT a", "(not (not a))"),
            ("-a", "(neg a)"),
            ("- - a", "(neg (neg a))"),
            ("-(5)", "(neg 5)"),
            ("- -5", "(neg -5)"),
            ("a BETWEEN 1 AND 2", "(between a 1 2)"),
            ("a NOT BETWEEN -1 AND b + 1", "(not-between a -1 (+ b 1))"),
            ("a IN (1, 'x', b.c)", "(in a [1 \"x\" b.c])"),
            ("a NOT IN (1)", "(not-in a [1])"),
            ("a IN ()", "(in a [])"),
            ("a LIKE 'zig%'", "(like a \"zig%\")"),
            ("a NOT LIKE '_'", "(not-like a \"_\")"),
            ("a IS NULL", "(is-null a)"),
            ("a IS NOT NULL", "(not-is-null a)"),
            ("count(*)", "count(*)"),
            ("count(x)", "(count x)"),
            ("abs(-x)", "(abs (neg x))"),
            ("max(a, b)", "(max a b)"),
            ("now()", "(now )"),
            ("has(Frozen)", "(has Frozen)"),
            ("distance(Position, [1, 2, 3])", "(distance Position [1 2 3])"),
            ("within(P, [0, 0], 5.5)", "(within P [0 0] 5.5)"),
            ("[1.5, 2, -3]", "[1.5 2 -3]"),
            ("[a.x * 2, 1]", "[(* a.x 2) 1]"),
            ("entity = 3v0", "(= entity 3v0)"),
            ("Position", "Position"),
            ("Position.x", "Position.x"),
            ("$1 + $name", "(+ $1 $name)"),
            ("abs (x)", "(abs x)"),
        ];
        for (src, want) in cases {
            assert_eq!(sx_of(src), want, "{src}");
        }
    }

    #[test]
    fn precedence_like_sqlite() {
        let cases = [
            ("a OR b AND c", "(OR a (AND b c))"),
            ("a AND b OR c", "(OR (AND a b) c)"),
            ("NOT a AND b", "(AND (not a) b)"),
            ("NOT a = b", "(not (= a b))"),
            ("NOT a IS NULL", "(not (is-null a))"),
            ("a = NOT b AND c", "(AND (= a (not b)) c)"),
            ("a = b || c", "(= a (|| b c))"),
            ("a || b + c", "(|| a (+ b c))"),
            ("a + b * c", "(+ a (* b c))"),
            ("a * b + c", "(+ (* a b) c)"),
            ("-a * b", "(* (neg a) b)"),
            ("-a IS NULL", "(is-null (neg a))"),
            ("a - b - c", "(- (- a b) c)"),
            ("a / b * c", "(* (/ a b) c)"),
            ("a || b || c", "(|| (|| a b) c)"),
            ("a < b = c", "(= (< a b) c)"),
            ("a + b IS NULL", "(is-null (+ a b))"),
            ("a = b IS NULL", "(is-null (= a b))"),
            ("a AND b IS NULL", "(AND a (is-null b))"),
            ("a LIKE b || c", "(like a (|| b c))"),
            ("a IN (1, 2) = true", "(= (in a [1 2]) true)"),
            ("x BETWEEN 1 + 1 AND 2 * 3 AND y", "(AND (between x (+ 1 1) (* 2 3)) y)"),
            ("x BETWEEN a || b AND -c OR y", "(OR (between x (|| a b) (neg c)) y)"),
            ("(a OR b) AND c", "(AND (OR a b) c)"),
            ("a * (b + c)", "(* a (+ b c))"),
            ("NOT (a AND b)", "(not (AND a b))"),
            ("a * NOT b + c", "(* a (not (+ b c)))"),
            ("-2 * 3", "(* -2 3)"),
            ("2 - 3 - -4", "(- (- 2 3) -4)"),
        ];
        for (src, want) in cases {
            assert_eq!(sx_of(src), want, "{src}");
        }
    }

    #[test]
    fn integer_literals() {
        assert_eq!(sx_of("0"), "0");
        assert_eq!(sx_of("42"), "42");
        assert_eq!(sx_of("-7"), "-7");
        assert_eq!(expr("9223372036854775807").kind, ExprKind::Literal(Literal::Int(i64::MAX)));
        assert_eq!(expr("-9223372036854775808").kind, ExprKind::Literal(Literal::Int(i64::MIN)));
        assert_eq!(expr("- 9223372036854775808").kind, ExprKind::Literal(Literal::Int(i64::MIN)));
        assert_eq!(expr("007").kind, ExprKind::Literal(Literal::Int(7)));
        for src in ["9223372036854775808", "-9223372036854775809", "99999999999999999999999999999999999999999"] {
            let e = parse_expression(src).unwrap_err();
            assert_eq!((e.kind, e.span), (ErrorKind::Syntax, Some(Span::new(0, src.len()))), "{src}");
            assert!(e.message.contains("out of range"));
        }
    }

    #[test]
    fn float_literals() {
        let float = |src: &str| match expr(src).kind {
            ExprKind::Literal(Literal::Float(x)) => x,
            other => panic!("{src}: {other:?}"),
        };
        assert_eq!(float("3.5"), 3.5);
        assert_eq!(float("-0.25"), -0.25);
        assert_eq!(float("1e-3"), 0.001);
        assert_eq!(float("1E3"), 1000.0);
        assert_eq!(float("2.5e+2"), 250.0);
        assert_eq!(float(".5"), 0.5);
        assert_eq!(float("-1.5"), -1.5);
        assert!(float("-0.0").is_sign_negative());
        assert_eq!(float("1e-400"), 0.0);
        for (src, end) in [("SELECT 2.", 9), ("SELECT 2.e5", 11), ("SELECT 2. + 1", 9), ("SELECT 12.x", 11)] {
            let e = err(src);
            assert_eq!(e.span, Some(Span::new(7, end)), "{src}");
            assert!(e.message.contains("not a number"), "{src}: {}", e.message);
        }
        assert!(err("SELECT 1e999").message.contains("out of range"));
        assert!(err("SELECT -1e999").message.contains("out of range"));
    }

    #[test]
    fn strings_and_escapes() {
        let string = |src: &str| match expr(src).kind {
            ExprKind::Literal(Literal::Str(s)) => s,
            other => panic!("{src}: {other:?}"),
        };
        assert_eq!(string("'red'"), "red");
        assert_eq!(string("\"red\""), "red");
        assert_eq!(string("''"), "");
        assert_eq!(string(r"'it\'s'"), "it's");
        assert_eq!(string(r#""say \"hi\"""#), "say \"hi\"");
        assert_eq!(string(r#""it's""#), "it's");
        assert_eq!(string(r#"'say "hi"'"#), "say \"hi\"");
        assert_eq!(string(r"'a\\b'"), "a\\b");
        assert_eq!(string(r"'\n\t'"), "\n\t");
        assert_eq!(string(r#"'\"'"#), "\"");
        assert_eq!(string(r#""\'""#), "'");
        assert_eq!(string("'two\nlines -- not a comment'"), "two\nlines -- not a comment");
        assert_eq!(string("'日本語 ✓'"), "日本語 ✓");
        let e = err(r"SELECT 'a\qb'");
        assert_eq!((e.kind, e.span), (ErrorKind::Syntax, Some(Span::new(9, 11))));
        let e = err("SELECT 'é\\é'");
        assert_eq!(e.span, Some(Span::new(10, 13)));
        let e = err("SELECT 'abc");
        assert_eq!(
            (e.span, e.message.as_str()),
            (Some(Span::new(7, 8)), "unterminated string: this quote is never closed")
        );
        assert_eq!(err("SELECT \"abc\\\"").span, Some(Span::new(7, 8)));
        assert_eq!(err("SELECT 'abc\\").span, Some(Span::new(7, 8)));
    }

    #[test]
    fn booleans_null_entities_and_parameters() {
        assert_eq!(sx_of("true"), "true");
        assert_eq!(sx_of("FALSE"), "false");
        assert_eq!(sx_of("Null"), "null");
        assert_eq!(expr("12v3").kind, ExprKind::EntityLit { index: 12, generation: 3 });
        assert_eq!(expr("0v0").kind, ExprKind::EntityLit { index: 0, generation: 0 });
        assert_eq!(
            expr("4294967294v4294967295").kind,
            ExprKind::EntityLit { index: u32::MAX - 1, generation: u32::MAX }
        );
        for src in ["SELECT 4294967295v0", "SELECT 1v4294967296", "SELECT 99999999999999999999v0"] {
            let e = err(src);
            assert_eq!((e.kind, e.span), (ErrorKind::Syntax, Some(Span::new(7, src.len()))), "{src}");
        }
        assert_eq!(expr("$1").kind, ExprKind::Param(Param::Positional(1)));
        assert_eq!(expr("$42").kind, ExprKind::Param(Param::Positional(42)));
        assert_eq!(expr("$name").kind, ExprKind::Param(Param::Named("name".into())));
        assert_eq!(expr("$_x1").kind, ExprKind::Param(Param::Named("_x1".into())));
        let e = err("SELECT $0");
        assert_eq!((e.kind, e.span), (ErrorKind::Parameter, Some(Span::new(7, 9))));
        assert_eq!(err("SELECT $99999999999").kind, ErrorKind::Parameter);
        assert_eq!(err("SELECT $").kind, ErrorKind::Syntax);
    }

    #[test]
    fn vectors_have_two_or_three_elements() {
        assert_eq!(sx_of("[1, 2]"), "[1 2]");
        assert_eq!(sx_of("[a, b, c]"), "[a b c]");
        let e = err("SELECT [1]");
        assert_eq!(
            (e.message.as_str(), e.span),
            ("a vector has 2 or 3 elements, this one has 1", Some(Span::new(7, 10)))
        );
        assert!(err("SELECT [1, 2, 3, 4]").message.contains("has 4"));
        assert_eq!(err("SELECT []").span, Some(Span::new(8, 9)));
    }

    // ----- spans and item text -----------------------------------------------------------

    #[test]
    fn expression_spans_cover_their_text() {
        let src = "a + b * c";
        let e = expr(src);
        assert_eq!(e.span, Span::new(0, 9));
        let ExprKind::Binary { lhs, rhs, .. } = &e.kind else { panic!() };
        assert_eq!((lhs.span, rhs.span), (Span::new(0, 1), Span::new(4, 9)));

        let src = "(a + b) * -c";
        let e = expr(src);
        let ExprKind::Binary { lhs, rhs, .. } = &e.kind else { panic!() };
        assert_eq!(lhs.span.text(src), "(a + b)");
        assert_eq!(rhs.span.text(src), "-c");
        assert_eq!(e.span.text(src), src);

        let src = "  Health.hp  IS NOT NULL";
        let e = expr(src);
        assert_eq!(e.span.text(src), "Health.hp  IS NOT NULL");
        let ExprKind::IsNull { expr: inner, .. } = &e.kind else { panic!() };
        let ExprKind::Field { component, field } = &inner.kind else { panic!() };
        assert_eq!((component.span, field.span), (Span::new(2, 8), Span::new(9, 11)));

        let cases = [
            ("- 5", "- 5"),
            ("NOT a", "NOT a"),
            ("x NOT BETWEEN 1 AND 2", "x NOT BETWEEN 1 AND 2"),
            ("x IN (1, 2)", "x IN (1, 2)"),
            ("f(1, g(2))", "f(1, g(2))"),
            ("count( * )", "count( * )"),
            ("[1, 2]", "[1, 2]"),
            ("'a' LIKE 'b'", "'a' LIKE 'b'"),
            ("((1))", "((1))"),
        ];
        for (src, text) in cases {
            assert_eq!(expr(src).span.text(src), text);
        }
        let src = "f(1, g(2))";
        let ExprKind::Call { name, args } = expr(src).kind else { panic!() };
        assert_eq!(name.span.text(src), "f");
        assert_eq!(args[1].span.text(src), "g(2)");
    }

    #[test]
    fn statement_item_and_term_spans() {
        let src = "SELECT Health.hp + 1 AS h, * FROM Health, !Frozen, A | B WHERE x ORDER BY h DESC;";
        let s = select(src);
        assert_eq!(s.span.text(src), &src[..src.len() - 1]);
        assert_eq!(s.items[0].span().text(src), "Health.hp + 1 AS h");
        let SelectItem::Expr { expr, alias, text, .. } = &s.items[0] else { panic!() };
        assert_eq!(expr.span.text(src), "Health.hp + 1");
        assert_eq!(alias.as_ref().unwrap().span.text(src), "h");
        assert_eq!(text, "Health.hp + 1");
        assert_eq!(s.items[1].span().text(src), "*");
        let terms: Vec<_> = s.from.iter().map(|t| t.span.text(src)).collect();
        assert_eq!(terms, ["Health", "!Frozen", "A | B"]);
        assert_eq!(s.from[1].components()[0].span.text(src), "Frozen");
        assert_eq!(s.order_by[0].span.text(src), "h DESC");

        let src = "SPAWN Health {hp: 10}, Frozen";
        let Statement::Spawn(sp) = stmt(src) else { panic!() };
        assert_eq!(sp.components[0].span.text(src), "Health {hp: 10}");
        assert_eq!(sp.components[0].fields[0].span.text(src), "hp: 10");
        assert_eq!(sp.components[1].span.text(src), "Frozen");

        let src = "UPDATE H SET hp = 1 FROM A WHERE b";
        let Statement::Update(u) = stmt(src) else { panic!() };
        assert_eq!(u.assignments[0].span.text(src), "hp = 1");
        let Target::Filter(f) = &u.target else { panic!() };
        assert_eq!(f.span.text(src), "FROM A WHERE b");
    }

    #[test]
    fn item_text_collapses_whitespace_and_comments() {
        let s = select(
            "SELECT  Health.hp   +\n\t1 ,count( * ) , 'a   b' ||  x, a -- note\n + b, max(a,b), \"q  -- \" || y FROM A",
        );
        let texts: Vec<_> = s.items.iter().map(|i| i.column_name().unwrap()).collect();
        assert_eq!(texts, ["Health.hp + 1", "count( * )", "'a   b' || x", "a + b", "max(a,b)", "\"q  -- \" || y"]);
        assert_eq!(collapse_whitespace("  a  \n b  "), "a b");
        assert_eq!(collapse_whitespace("'it\\'s  x'  y"), "'it\\'s  x' y");
        assert_eq!(collapse_whitespace("a--x"), "a");
        assert_eq!(collapse_whitespace("'unterminated  x"), "'unterminated  x");
    }

    // ----- scripts -----------------------------------------------------------------------

    #[test]
    fn scripts() {
        assert_eq!(parse_script("").unwrap(), []);
        assert_eq!(parse_script("  \n -- only a comment\n").unwrap(), []);
        assert_eq!(parse_script(";;  ; ").unwrap(), []);
        let src = "SHOW TABLES; ;DESCRIBE Health;\n-- done\nSELECT 1 -- trailing";
        let script = parse_script(src).unwrap();
        assert_eq!(script.len(), 3);
        let spans: Vec<_> = script.iter().map(|s| s.span().text(src)).collect();
        assert_eq!(spans, ["SHOW TABLES", "DESCRIBE Health", "SELECT 1"]);
        assert_eq!(parse_script("SELECT 1;").unwrap().len(), 1);

        let src = "SELECT 1;\nSELECT 2;\nSELEC 3";
        let e = parse_script(src).unwrap_err();
        assert_eq!(e.line_col(src), Some((3, 7)));
        assert_eq!(e.suggestion.as_deref(), Some("SELECT"));
    }

    /// Long scripts are given to pest in pieces cut after a `;` (see [`parse`]); nothing of
    /// that shows: spans are in the whole script, errors point into it, a `;` in a string or
    /// a comment does not cut, and a syntax error anywhere wins over an error found while
    /// building an earlier statement, as when the whole script was parsed at once.
    #[test]
    fn long_scripts_are_parsed_in_pieces() {
        let statement = |i: usize| match i % 4 {
            0 => format!("SPAWN Position {{x: {i}, y: -1.5}}, Team {{name: 'a;b -- c'}}"),
            1 => format!("SELECT count(*) WHERE Health.hp < {i} -- not; a cut\n"),
            2 => format!("UPDATE Health SET hp = {i} WHERE Team.name = \"x;y\""),
            _ => String::new(),
        };
        let mut src = String::new();
        let mut starts = Vec::new();
        let mut i = 0;
        while src.len() < 5 * SCRIPT_PIECE {
            starts.push(src.len());
            src.push_str(&statement(i));
            src.push_str(if i % 7 == 0 { ";\n" } else { "; " });
            i += 1;
        }
        let script = parse_script(&src).unwrap();
        let expected: Vec<usize> = (0..i).filter(|i| i % 4 != 3).collect();
        assert_eq!(script.len(), expected.len());
        assert!(prepare(&src).unwrap().cuts.len() >= 4);
        for (statement, &n) in script.iter().zip(&expected) {
            assert_eq!(statement.span().text(&src), statement_text(n).trim_end(), "statement {n}");
            assert_eq!(statement.span().start, starts[n]);
        }
        // The script parsed piece by piece is the script parsed at once.
        let mut builder = Builder::default();
        let text = prepare(&src).unwrap().text;
        let whole = Grammar::parse(Rule::script, &text).unwrap().next().unwrap();
        let at_once: Vec<String> = whole
            .into_inner()
            .filter(|p| !matches!(p.as_rule(), Rule::semicolon | Rule::EOI))
            .map(|p| format!("{:?}", builder.statement(p).unwrap()))
            .collect();
        assert_eq!(at_once, script.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>());

        // A syntax error near the end points into the whole script.
        let bad = format!("{src}SELECT 1;\nSELECT Health.hp +");
        let e = parse_script(&bad).unwrap_err();
        assert_eq!(e.message, "expected an expression, found end of input");
        assert_eq!(e.span, Some(Span::new(bad.len(), bad.len())));
        let lines = bad.lines().count();
        assert_eq!(e.line_col(&bad), Some((lines, "SELECT Health.hp +".len() + 1)));
        // It wins over an error found while building an earlier statement.
        let both = format!("SELECT 99999999999999999999; {bad}");
        assert_eq!(parse_script(&both).unwrap_err().message, "expected an expression, found end of input");
        let built_only = format!("SELECT 99999999999999999999; {src}");
        assert!(parse_script(&built_only).unwrap_err().message.contains("out of range"));
        // A build error in a later piece is found too, at its place.
        let late = format!("{src}SELECT 99999999999999999999");
        assert_eq!(parse_script(&late).unwrap_err().span, Some(Span::new(src.len() + 7, late.len())));

        fn statement_text(i: usize) -> String {
            match i % 4 {
                0 => format!("SPAWN Position {{x: {i}, y: -1.5}}, Team {{name: 'a;b -- c'}}"),
                1 => format!("SELECT count(*) WHERE Health.hp < {i}"),
                _ => format!("UPDATE Health SET hp = {i} WHERE Team.name = \"x;y\""),
            }
        }
    }

    /// Comments are blanked out before pest sees the text; nothing of that shows either.
    #[test]
    fn comments_are_whitespace_everywhere() {
        let src = "-- head\nSELECT--a\n x--b\n+--c\n-- d\n1, 'no -- comment', \"nor -- this\" -- e\nFROM--f\nA--g";
        let s = select(src);
        let texts: Vec<_> = s.items.iter().map(|i| i.column_name().unwrap()).collect();
        assert_eq!(texts, ["x + 1", "'no -- comment'", "\"nor -- this\""]);
        assert_eq!(s.items[0].span().text(src), "x--b\n+--c\n-- d\n1");
        assert_eq!(s.span.text(src), &src[8..src.len() - 3]);
        assert_eq!(term_sx(&s.from), ["A"]);
        // Errors quote the text as written, comments and all.
        let src = "SELECT x -- fine\nFROM -- still fine\n)";
        assert_eq!(rendered(src), "syntax error at line 3, column 1: expected a component name, found `)`\n)\n^");
        assert!(err("SELECT 'open -- not a comment").message.contains("unterminated string"));
        stmt("SELECT 1 -- é 日本 \u{0}");
    }

    #[test]
    fn single_statements() {
        stmt("SELECT 1;");
        stmt("  SELECT 1  ;  -- fine");
        assert_eq!(err("SELECT 1;;").span, Some(Span::new(9, 10)));
        assert_eq!(err("SELECT 1; SELECT 2").message, "expected end of input, found `SELECT` (a reserved word)");
        assert_eq!(err("").message, "expected a statement, found end of input");
        assert_eq!(err(" -- nothing").message, "expected a statement, found end of input");
        assert_eq!(err(";").message, "expected a statement, found `;`");
    }

    // ----- errors ------------------------------------------------------------------------

    #[test]
    fn rendered_syntax_errors() {
        let cases: [(&str, &str); 14] = [
            (
                "SELECT a\nFROM Health\nWHERE Health.hp <",
                "syntax error at line 3, column 18: expected an expression, found end of input\n\
                 WHERE Health.hp <\n                 ^",
            ),
            (
                "SELECT a FORM b",
                "syntax error at line 1, column 10: expected an operator, `AS`, `FROM`, `WHERE`, `GROUP BY`, \
                 `ORDER BY`, `LIMIT`, `OFFSET`, `,`, `;` or end of input, found `FORM`\n\
                 SELECT a FORM b\n         ^~~~\nhint: did you mean 'FROM'?",
            ),
            (
                "SELEC x FROM y",
                "syntax error at line 1, column 7: expected `,`, `|`, `;` or end of input, found `x`\n\
                 SELEC x FROM y\n      ^\nhint: did you mean 'SELECT'?",
            ),
            (
                "SELECT x FROM A WHERE x = 1 ORDER x",
                "syntax error at line 1, column 35: expected `BY`, found `x`\n\
                 SELECT x FROM A WHERE x = 1 ORDER x\n                                  ^",
            ),
            (
                "SELECT 'abc",
                "syntax error at line 1, column 8: unterminated string: this quote is never closed\n\
                 SELECT 'abc\n       ^",
            ),
            (
                "SELECT 2.",
                "syntax error at line 1, column 8: '2.' is not a number: a float needs digits after the point \
                 ('2.0', not '2.')\n\
                 SELECT 2.\n       ^~",
            ),
            (
                "\tSELECT a\n\tFROM  é, 5",
                "syntax error at line 2, column 8: expected a component name, found `é`\n\
                 \tFROM  é, 5\n\t      ^",
            ),
            (
                "CREATE COMPONENT X (hp flaot32)",
                "type error at line 1, column 24: unknown field type 'flaot32' (known: bool, i8, i16, i32, i64, u8, \
                 u16, u32, u64, f32, f64, string, entity, vec2, vec3)\n\
                 CREATE COMPONENT X (hp flaot32)\n                       ^~~~~~~",
            ),
            (
                "CREATE INDEX ON Health (hp)",
                "syntax error at line 1, column 28: expected `USING`, found end of input\n\
                 CREATE INDEX ON Health (hp)\n                           ^",
            ),
            (
                "SHOW ME",
                "syntax error at line 1, column 6: expected `COMPONENTS`, `INDEXES`, `TABLES` or `SYSTEMS`, found `ME`\n\
                 SHOW ME\n     ^~",
            ),
            (
                "DESPAWN 5",
                "syntax error at line 1, column 9: expected an entity (`12v0` or a parameter), `FROM`, `WHERE`, \
                 `;` or end of input, found `5`\nDESPAWN 5\n        ^",
            ),
            (
                "SELECT a IS 5",
                "syntax error at line 1, column 13: expected `NOT` or `NULL`, found `5`\nSELECT a IS 5\n            ^",
            ),
            (
                "SPAWN A {x 1}",
                "syntax error at line 1, column 12: expected `:`, found `1`\nSPAWN A {x 1}\n           ^",
            ),
            (
                "SELECT a FROM b WHERE c >= = 2",
                "syntax error at line 1, column 28: expected an expression, found `=`\n\
                 SELECT a FROM b WHERE c >= = 2\n                           ^",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(rendered(src), want, "\n{src}");
        }
    }

    #[test]
    fn error_positions_and_found_tokens() {
        let cases = [
            ("SELECT a FROM select", "expected a component name, found `select` (a reserved word)", (1, 15)),
            ("SELECT (1", "expected `)`, found end of input", (1, 10)),
            ("SELECT (1 x", "expected an operator or `)`, found `x`", (1, 11)),
            ("SELECT a BETWEEN 1", "expected an operator or `AND`, found end of input", (1, 19)),
            ("SELECT a IN 5", "expected `(`, found `5`", (1, 13)),
            ("SELECT *x", "expected `FROM`, `WHERE`, `GROUP BY`, `ORDER BY`, `LIMIT`, `OFFSET`, `,`, `;` or end of input, found `x`", (1, 9)),
            ("SELECT a AS", "expected an alias, found end of input", (1, 12)),
            ("SELECT a NOT b", "expected an operator, found `b`", (1, 14)),
            ("SELECT \u{a0}", "expected an expression or `*`, found character '\\u{a0}'", (1, 8)),
            ("SELECT é", "expected an expression or `*`, found `é`", (1, 8)),
            ("SELECT a ||| b", "expected an expression, found `|`", (1, 12)),
            ("SELECT a FROM A B", "expected `WHERE`, `GROUP BY`, `ORDER BY`, `LIMIT`, `OFFSET`, `,`, `|`, `;` or end of input, found `B`", (1, 17)),
            ("SELECT 1 +\n\n", "expected an expression, found end of input", (1, 11)),
            ("CREATE FOO", "expected `COMPONENT`, `INDEX` or `SYSTEM`, found `FOO`", (1, 8)),
            ("EXPLAIN 5", "expected `SELECT`, a component name or `SCHEDULE`, found `5`", (1, 9)),
            ("UPDATE X SET", "expected a field name, found end of input", (1, 13)),
            ("REMOVE Frozen FROM 5", "expected a component name or an entity (`12v0` or a parameter), found `5`", (1, 20)),
            ("DROP INDEX ON", "expected an index name, found `ON` (a reserved word)", (1, 12)),
            ("SELECT 1 == == 2", "expected an expression, found `==`", (1, 13)),
            ("5", "expected a statement, found `5`", (1, 1)),
            ("SELECT x GROUP a", "expected `BY`, found `a`", (1, 16)),
            ("SELECT a FROM A WHERE b ORDER BY c LIMIT", "expected an expression, found end of input", (1, 41)),
        ];
        for (src, message, at) in cases {
            let e = err(src);
            assert_eq!(
                (e.kind, e.message.as_str(), e.line_col(src)),
                (ErrorKind::Syntax, message, Some(at)),
                "\n{src}"
            );
        }
    }

    #[test]
    fn every_rule_has_a_name_for_people() {
        // Rules that never show up in "expected …": entry points' insides, whole statements
        // (which start with a keyword that is named instead) and containers.
        let unnamed = [
            "explain",
            "spawn",
            "despawn",
            "add",
            "remove",
            "update",
            "create_component",
            "create_index",
            "drop_index",
            "show",
            "describe",
            "filter",
            "statement",
            "term",
            "prefix",
            "postfix",
            "infix",
            "operand",
            "exponent",
            "ident_char",
            "ident_raw",
            "reserved",
            "operator_char",
            "operator_word",
            "literal_value",
            "system_clause",
            "system_statement",
            "block_statement",
            "block_spawn",
            "block_end",
            "WHITESPACE",
        ];
        for rule in Rule::all_rules() {
            let name = format!("{rule:?}");
            let labelled = expected_label(*rule).is_some();
            assert!(labelled || unnamed.contains(&name.as_str()), "rule {name} has no label");
            if let Some((_, label)) = expected_label(*rule) {
                assert!(!label.contains('_') || label.contains('`'), "{name}: {label}");
            }
        }
    }

    // ----- limits ------------------------------------------------------------------------

    #[test]
    fn nesting_limits() {
        let nested = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(
            sx(&select(&nested(MAX_NESTING))
                .items
                .iter()
                .find_map(|i| match i {
                    SelectItem::Expr { expr, .. } => Some(expr.clone()),
                    _ => None,
                })
                .unwrap()),
            "1"
        );
        let e = err(&nested(MAX_NESTING + 1));
        assert_eq!(e.message, "brackets nested too deeply (more than 200 levels)");
        assert_eq!(e.span, Some(Span::new(7 + MAX_NESTING, 8 + MAX_NESTING)));
        // Brackets in strings and comments do not count.
        stmt(&format!("SELECT '{}'", "(".repeat(1000)));
        stmt(&format!("SELECT 1 -- {}\n", "[".repeat(1000)));
        stmt(&format!("SELECT \"{}\\\"\"", "{".repeat(1000)));
        // Every kind of bracket counts.
        assert_eq!(err(&format!("SELECT {}1", "[".repeat(201))).span, Some(Span::new(207, 208)));
        assert!(err(&format!("SPAWN A {{x: {}1{}}}", "(".repeat(200), ")".repeat(200))).message.contains("nested"));
    }

    #[test]
    fn expression_height_limit() {
        let chain = |n: usize| format!("SELECT 1{}", " + 1".repeat(n));
        select(&chain(MAX_EXPR_DEPTH - 1));
        let e = err(&chain(MAX_EXPR_DEPTH));
        assert_eq!(e.message, "expression nested too deeply (more than 256 levels)");
        assert_eq!(e.line_col(&chain(MAX_EXPR_DEPTH)), Some((1, 8)));
        // Long prefix chains and long operator chains are rejected without recursion.
        for src in [
            format!("SELECT {}x", "NOT ".repeat(20_000)),
            format!("SELECT {}x", "- ".repeat(20_000)),
            format!("SELECT 1{}", " OR 1".repeat(20_000)),
            format!("SELECT x{}", " IS NULL".repeat(20_000)),
            format!("SELECT x{}", " BETWEEN 1 AND 2".repeat(20_000)),
        ] {
            let result = std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || parse_statement(&src).map(|_| ()).map_err(|e| e.message))
                .expect("spawn")
                .join()
                .expect("no panic");
            assert_eq!(result, Err("expression nested too deeply (more than 256 levels)".into()));
        }
        // Long flat lists are fine.
        assert_eq!(select(&format!("Position{}", ", A".repeat(20_000))).from.len(), 20_001);
        let list = format!("SELECT x IN ({})", vec!["1"; 20_000].join(", "));
        match &select(&list).items[0] {
            SelectItem::Expr { expr: Expr { kind: ExprKind::InList { list, .. }, .. }, .. } => {
                assert_eq!(list.len(), 20_000)
            }
            other => panic!("{other:?}"),
        }
    }

    /// Maximal nesting of every bracketed form parses in 2 MiB of stack (a test thread's or
    /// a tokio worker's), in debug builds too; most forms in 512 KiB. With less, pest's stack
    /// guard turns it into an error, never a stack overflow.
    #[test]
    fn deep_nesting_fits_in_a_small_stack() {
        let n = MAX_NESTING;
        let cases = [
            (format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)), true),
            (format!("SELECT {}1{}", "(-1 + ".repeat(n), ")".repeat(n)), true),
            (format!("SELECT {}1{}", "[1, ".repeat(n), "]".repeat(n)), true),
            (format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n)), true),
            (format!("SELECT {}1{}", "a BETWEEN (".repeat(n), ") AND 3".repeat(n)), true),
            (format!("SELECT {}1{}", "a IN (1, ".repeat(n), ")".repeat(n)), true),
            (format!("SELECT {}1{}", "NOT (".repeat(n), ")".repeat(n)), true),
            (format!("SELECT {}1{}", "max(0, -(".repeat(n / 2), "))".repeat(n / 2)), true),
            (format!("SPAWN A {{x: {}1{}}}", "(".repeat(n - 1), ")".repeat(n - 1)), true),
            (format!("SELECT {}1{} x", "(".repeat(n), ")".repeat(n)), false),
            (format!("SELECT {}1 +{}", "(".repeat(n), ")".repeat(n)), false),
            (format!("SELECT {}", "(".repeat(n)), false),
            (format!("SELECT {}", "[".repeat(n)), false),
        ];
        let run = |src: &str, stack: usize| {
            let src = src.to_string();
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn(move || parse_statement(&src).map(|_| ()).map_err(|e| e.message))
                .expect("spawn")
                .join()
                .expect("no panic")
        };
        for (i, (src, ok)) in cases.iter().enumerate() {
            let result = run(src, 2 << 20);
            assert_eq!(result.is_ok(), *ok, "case {i}: {result:?}");
            // Reaching the end of the test at all means no stack overflow.
            let _ = run(src, 1 << 20);
            let _ = run(src, 192 << 10);
        }
    }

    // ----- printing back -----------------------------------------------------------------

    #[test]
    fn display_reads_back_as_the_same_tree() {
        let cases = [
            "a OR b AND c",
            "(a OR b) AND c",
            "NOT (a AND b) = c",
            "a = (NOT b)",
            "-(5)",
            "-(-5)",
            "- -x",
            "a - (b - c)",
            "a || (b || c)",
            "x NOT BETWEEN (a OR b) AND c + 1",
            "x IN (1, 2.5, 'a', null, true, 3v1, $1, $n)",
            "(a = b) IS NOT NULL",
            "a LIKE (b LIKE c)",
            "count(*) + count(x)",
            "[1, -2.5, Position.x]",
            "distance(Position, [0, 0, 0]) < 5",
            "C.from = 'it\\'s\\n'",
            "-9223372036854775808",
            "1e300 * 1e-300",
        ];
        for src in cases {
            let first = expr(src);
            let printed = first.to_string();
            let second = expr(&printed);
            assert_eq!(sx(&first), sx(&second), "{src} printed as {printed}");
        }
        assert_eq!(expr("a   OR b and   c").to_string(), "a OR b AND c");
        assert_eq!(expr("((a + b)) * c").to_string(), "(a + b) * c");
        assert_eq!(expr("\"x\"").to_string(), "'x'");
    }

    // ----- never panics ------------------------------------------------------------------

    const TOKENS: &[&str] = &[
        "SELECT",
        "select",
        "FROM",
        "WHERE",
        "GROUP",
        "BY",
        "ORDER",
        "ASC",
        "DESC",
        "LIMIT",
        "OFFSET",
        "AS",
        "AND",
        "OR",
        "NOT",
        "IN",
        "IS",
        "NULL",
        "LIKE",
        "BETWEEN",
        "TRUE",
        "false",
        "entity",
        "EXPLAIN",
        "SPAWN",
        "DESPAWN",
        "ADD",
        "TO",
        "REMOVE",
        "UPDATE",
        "SET",
        "CREATE",
        "COMPONENT",
        "INDEX",
        "ON",
        "USING",
        "DROP",
        "SHOW",
        "COMPONENTS",
        "TABLES",
        "INDEXES",
        "DESCRIBE",
        "OPTIONAL",
        "count",
        "Position",
        "Health",
        "hp",
        "x",
        "Health.hp",
        "Position.x",
        "abs",
        "has",
        "1",
        "-7",
        "3.5",
        ".5",
        "1e-3",
        "2.",
        "9223372036854775808",
        "'str'",
        "\"dq\"",
        "'bad\\q'",
        "'open",
        "\"",
        "12v0",
        "4294967295v0",
        "$1",
        "$name",
        "$0",
        "$",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ";",
        ":",
        ".",
        "*",
        "+",
        "-",
        "/",
        "%",
        "||",
        "|",
        "=",
        "==",
        "!=",
        "<>",
        "<",
        "<=",
        ">",
        ">=",
        "!",
        "?",
        "-- comment\n",
        "\n",
        "\t",
        "é",
        "日本",
        "\u{0}",
        "\\",
    ];

    fn check_no_panic(src: &str) {
        for result in [parse_statement(src).map(|s| vec![s]), parse_script(src)] {
            match result {
                Ok(statements) => {
                    for s in &statements {
                        let span = s.span();
                        assert!(span.start <= span.end && span.end <= src.len());
                        for e in statement_exprs(s) {
                            let mut ok = true;
                            e.walk(&mut |x| ok &= x.span.start < x.span.end && x.span.end <= src.len());
                            assert!(ok, "bad span in {src:?}");
                            let printed = e.to_string();
                            let again = parse_expression(&printed)
                                .unwrap_or_else(|err| panic!("{printed:?} (from {src:?}): {}", err.render(&printed)));
                            assert_eq!(sx(e), sx(&again), "{src:?} printed as {printed:?}");
                        }
                    }
                }
                Err(e) => {
                    let _ = e.render(src);
                    if let Some(span) = e.span {
                        assert!(span.start <= span.end && span.end <= src.len(), "{src:?}: {e:?}");
                    }
                }
            }
        }
        let _ = parse_expression(src).map(|e| e.to_string()).map_err(|e| e.render(src));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_text_never_panics(src in "\\PC{0,80}") {
            check_no_panic(&src);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            check_no_panic(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn token_soup_never_panics(
            tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..40),
            spaced in proptest::collection::vec(any::<bool>(), 40),
        ) {
            let mut src = String::new();
            for (token, space) in tokens.iter().zip(&spaced) {
                src.push_str(token);
                if *space {
                    src.push(' ');
                }
            }
            check_no_panic(&src);
        }

        #[test]
        fn statement_shaped_soup_never_panics(
            head in proptest::sample::select(&["SELECT ", "SELECT * FROM ", "UPDATE H SET x = ", "SPAWN A {x: ",
                "DESPAWN WHERE ", "ADD A TO ", "REMOVE A FROM ", "CREATE INDEX ON ", "EXPLAIN ", "SELECT x WHERE "][..]),
            tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..25),
        ) {
            check_no_panic(&format!("{head}{}", tokens.join(" ")));
        }

        #[test]
        fn printed_expressions_read_back(e in arb_expr()) {
            let printed = e.to_string();
            let parsed = parse_expression(&printed)
                .unwrap_or_else(|err| panic!("{printed:?}: {}", err.render(&printed)));
            prop_assert_eq!(sx(&parsed), sx(&e), "printed as {}", printed);
        }
    }

    /// Random expression trees (spans left empty), for the print → parse round trip.
    fn arb_expr() -> impl Strategy<Value = Expr> {
        let at = Span::default();
        let name = proptest::sample::select(&["a", "Health", "P_2", "_x"][..]).prop_map(move |n| Ident::new(n, at));
        let field = proptest::sample::select(&["x", "hp", "from", "entity"][..]).prop_map(move |n| Ident::new(n, at));
        let leaf = prop_oneof![
            any::<i64>().prop_map(|i| ExprKind::Literal(Literal::Int(i))),
            (-1e10f64..1e10).prop_map(|x| ExprKind::Literal(Literal::Float(x))),
            "[a-z '\"\\\\\n\té]{0,6}".prop_map(|s| ExprKind::Literal(Literal::Str(s))),
            any::<bool>().prop_map(|b| ExprKind::Literal(Literal::Bool(b))),
            Just(ExprKind::Literal(Literal::Null)),
            (0..u32::MAX, any::<u32>()).prop_map(|(index, generation)| ExprKind::EntityLit { index, generation }),
            (1..100u32).prop_map(|n| ExprKind::Param(Param::Positional(n))),
            Just(ExprKind::Param(Param::Named("who".into()))),
            (name.clone(), field).prop_map(|(component, field)| ExprKind::Field { component, field }),
            name.clone().prop_map(ExprKind::Component),
            Just(ExprKind::EntityId),
            Just(ExprKind::CountStar),
        ]
        .prop_map(move |kind| Expr::new(kind, at));
        let ops = [
            BinaryOp::Eq,
            BinaryOp::NotEq,
            BinaryOp::Lt,
            BinaryOp::LtEq,
            BinaryOp::Gt,
            BinaryOp::GtEq,
            BinaryOp::And,
            BinaryOp::Or,
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Mod,
            BinaryOp::Concat,
        ];
        leaf.prop_recursive(5, 40, 4, move |inner| {
            let b = |e: Expr| Box::new(e);
            prop_oneof![
                (proptest::sample::select(ops.to_vec()), inner.clone(), inner.clone())
                    .prop_map(move |(op, l, r)| ExprKind::Binary { op, lhs: b(l), rhs: b(r) }),
                inner.clone().prop_map(move |e| ExprKind::Not(b(e))),
                inner.clone().prop_map(move |e| ExprKind::Unary { op: UnaryOp::Neg, expr: b(e) }),
                (inner.clone(), inner.clone(), inner.clone(), any::<bool>()).prop_map(move |(e, l, h, negated)| {
                    ExprKind::Between { expr: b(e), low: b(l), high: b(h), negated }
                }),
                (inner.clone(), proptest::collection::vec(inner.clone(), 0..3), any::<bool>())
                    .prop_map(move |(e, list, negated)| ExprKind::InList { expr: b(e), list, negated }),
                (inner.clone(), inner.clone(), any::<bool>()).prop_map(move |(e, p, negated)| ExprKind::Like {
                    expr: b(e),
                    pattern: b(p),
                    negated
                }),
                (inner.clone(), any::<bool>()).prop_map(move |(e, negated)| ExprKind::IsNull { expr: b(e), negated }),
                (
                    proptest::sample::select(&["abs", "max", "count"][..]),
                    proptest::collection::vec(inner.clone(), 0..3)
                )
                    .prop_map(move |(n, args)| ExprKind::Call { name: Ident::new(n, Span::default()), args }),
                proptest::collection::vec(inner, 2..=3).prop_map(ExprKind::Vector),
            ]
            .prop_map(move |kind| Expr::new(kind, Span::default()))
        })
    }
}
