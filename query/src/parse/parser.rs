//! From text to [`ast`](super::ast): the pest grammar, the tree builder and syntax errors.
//!
//! pest recognises the text (`grammar/ecsdb.pest`); [`Builder`] turns the parse tree into
//! the typed AST, applying operator precedence to the grammar's flat expression sequences and
//! checking what the grammar cannot (number ranges, escapes, vector sizes, nesting depth).
//! A failed pest parse becomes an [`Error`] that names what was expected in words.

mod expr;

use pest::error::InputLocation;
use pest::iterators::Pair;
use pest::{Parser as _, Token};

use super::MAX_NESTING;
use super::ast::*;
use super::grammar::{Grammar, Rule};
use super::precedence::OperatorStack;
use super::prepare::prepare;
use super::script::{Script, ScriptItem};
use super::spawn_shapes::SpawnShapes;
use super::syntax_error::syntax_error;
use crate::error::{Error, ErrorKind, suggest};
use crate::lex::{Lexer, Splitter};
use ecsdb_engine::{FieldType, OnDelete, StorageKind};
use expr::leaf;

/// Which grammar rule to parse the whole input as.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Entry {
    /// Exactly one statement (optional trailing `;`).
    Statement,
    /// A system's body: one statement or `BEGIN … END`.
    SystemBody,
}

/// Parses `src` as `entry` into statements (exactly one for [`Entry::Statement`]).
pub(crate) fn parse(src: &str, entry: Entry) -> Result<Vec<Statement>, Error> {
    let prepared = prepare(src)?;
    on_parse_stack(prepared.depth, || parse_prepared(src, &prepared.text, entry))
}

fn parse_prepared(src: &str, text: &str, entry: Entry) -> Result<Vec<Statement>, Error> {
    let rule = match entry {
        Entry::Statement => Rule::single,
        Entry::SystemBody => Rule::single_system_body,
    };
    let mut pairs = parse_rule(rule, text).map_err(|e| syntax_error(src, *e))?;
    let top = pairs.next().expect("grammar: a successful parse has its entry rule");
    let mut builder = Builder::default();
    let mut statements = Vec::new();
    for pair in top.into_inner() {
        match pair.as_rule() {
            Rule::semicolon | Rule::EOI => {}
            Rule::system_body => statements.extend(builder.system_body(pair)?.1),
            _ => statements.push(builder.statement(pair)?),
        }
    }
    Ok(statements)
}

/// Parses a script: its statements one at a time, as [`split_statements`](crate::lex::split_statements)
/// cuts it, with the SPAWNs of literals kept flat ([`Script`]).
///
/// Statements are parsed one by one rather than the whole script at once: pest keeps every
/// token of what it parses until the parse is dropped (tens of bytes per token), which for a
/// long script would be far more memory than the text, and a SPAWN of a shape seen before
/// needs no parse at all ([`SpawnShapes`]). As nothing but the grammar's `semicolon` matches
/// a `;` that ends a statement, each statement fails exactly where the whole script would,
/// and the first that fails gives the error. As when the whole script was parsed before any
/// statement was built, a syntax error anywhere comes before an error found while building
/// (an integer out of range, …).
pub(crate) fn parse_script(src: &str) -> Result<Script, Error> {
    parse_script_with(src, true)
}

/// [`parse_script`], SPAWNs read from their shape only if `shapes` (tests compare both).
pub(crate) fn parse_script_with(src: &str, use_shapes: bool) -> Result<Script, Error> {
    let mut script = Script::default();
    let mut shapes = SpawnShapes::default();
    let mut builder = Builder::default();
    let mut tokens = Vec::new();
    let mut built = Ok(());
    let flat = src.len() <= Script::FLAT_LIMIT;
    let mut pos = 0;
    while let Some(first) = Lexer::at(src, pos).next_significant() {
        if src.as_bytes()[first.span.start] == b';' {
            pos = first.span.end; // an empty statement
            continue;
        }
        if flat
            && use_shapes
            && let Some((read, end)) = shapes.read(src, first.span.start, &mut script)
        {
            script.items.push(ScriptItem::Spawn(read));
            pos = end;
            continue;
        }
        let piece = Splitter::at(src, first.span.start).next_statement(&mut tokens).expect("a statement starts here");
        pos = piece.end;
        let prepared = prepare(piece.text(src)).map_err(|e| e.shifted(piece.start))?;
        let parsed = on_parse_stack(prepared.depth, || {
            let mut pairs = parse_rule(Rule::single, &prepared.text)
                .map_err(|e| syntax_error(src, shift_error(*e, piece.start)))?;
            if built.is_err() {
                return Ok::<_, Error>(None); // (After a building error only syntax errors matter.)
            }
            let top = pairs.next().expect("grammar: a successful parse has its entry rule");
            let pair = top.into_inner().next().expect("grammar: a statement");
            builder.base = piece.start;
            Ok(Some(builder.statement(pair)))
        })?;
        let Some(statement) = parsed else { continue };
        built = statement.map(|statement| match flat.then(|| script.flatten(&statement, src)).flatten() {
            Some(read) => {
                shapes.remember(src, &tokens, &read, &script);
                script.items.push(ScriptItem::Spawn(read));
            }
            None => script.items.push(ScriptItem::Statement(Box::new(statement))),
        });
    }
    built.map(|()| script)
}

/// Parses `src` as one expression.
pub(crate) fn parse_expr(src: &str) -> Result<Expr, Error> {
    let prepared = prepare(src)?;
    on_parse_stack(prepared.depth, || {
        let mut pairs = parse_rule(Rule::single_expr, &prepared.text).map_err(|e| syntax_error(src, *e))?;
        let top = pairs.next().expect("grammar: a successful parse has its entry rule");
        let expr = first(top, Rule::expr);
        Builder::default().expr(expr)
    })
}

/// Runs a parse (pest's, then the builder's) of text nested `depth` brackets deep on a stack
/// with room for it.
///
/// pest recurses a few frames per bracket level, and so does the builder: [`MAX_NESTING`]
/// bounds the depth, not the frames' size. Rather than pest's own guard (a stack probe at
/// every rule it enters: a fifth of a statement's parse), one probe per parse here moves the
/// parse to a fresh stack segment when the thread's has less left than the depth may need.
fn on_parse_stack<T>(depth: usize, parse: impl FnOnce() -> T) -> T {
    let needed = PARSE_STACK_BASE + depth * PARSE_STACK_PER_LEVEL;
    stacker::maybe_grow(needed, 2 * needed, parse)
}

/// pest's parse of `text` as `rule`.
fn parse_rule(rule: Rule, text: &str) -> Result<pest::iterators::Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    Grammar::parse(rule, text).map_err(Box::new)
}

/// The stack a parse needs at bracket depth 0, and per level: a debug build's frames, with
/// room to spare (at [`MAX_NESTING`] levels a debug build uses under 2 MiB;
/// `deep_nesting_fits_in_a_small_stack` runs every bracketed form in 192 KiB threads).
const PARSE_STACK_BASE: usize = 128 << 10;
const PARSE_STACK_PER_LEVEL: usize = 12 << 10;

/// A pest error in a piece of the text that starts at byte `by`, moved to the whole text.
fn shift_error(mut err: pest::error::Error<Rule>, by: usize) -> pest::error::Error<Rule> {
    err.location = match err.location {
        InputLocation::Pos(p) => InputLocation::Pos(p + by),
        InputLocation::Span((start, end)) => InputLocation::Span((start + by, end + by)),
    };
    err
}

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

/// Recursion through nested expressions: one level per bracket (plus one per BETWEEN bound),
/// so [`prepare`] already bounds it; this is a second, independent guard.
const MAX_RECURSION: usize = 2 * MAX_NESTING + 8;

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
                let mut fields = Vec::new();
                for p in all(pair.clone(), Rule::field_decl) {
                    fields.push(self.field_decl_with_default(p)?);
                }
                let storage = all(pair, Rule::storage_clause).next().map_or(StorageKind::Table, |c| storage_kind(&c));
                Statement::CreateComponent(CreateComponent { name, fields, storage, span })
            }
            Rule::alter_component => {
                let component = ident(&first(pair.clone(), Rule::component_name), self.base);
                let action = pair.into_inner().last().expect("grammar: ALTER COMPONENT has a change");
                let rule = action.as_rule();
                let names: Vec<Ident> = all(action.clone(), Rule::field_name).map(|p| ident(&p, self.base)).collect();
                let change = match rule {
                    Rule::add_field => FieldChange::Add(self.field_decl_with_default(first(action, Rule::field_decl))?),
                    Rule::drop_field => FieldChange::Drop(names[0].clone()),
                    Rule::rename_field => FieldChange::Rename { from: names[0].clone(), to: names[1].clone() },
                    Rule::set_storage => FieldChange::SetStorage(storage_kind(&first(action, Rule::storage_clause))),
                    _ if action.clone().into_inner().any(|q| q.as_rule() == Rule::type_name) => {
                        let (ty, ty_span) = field_type(&first(action.clone(), Rule::type_name), self.base)?;
                        let using = match action.into_inner().find(|q| q.as_rule() == Rule::field_using) {
                            Some(u) => Some(self.clause_expr(u)?),
                            None => None,
                        };
                        FieldChange::Retype { field: names[0].clone(), ty, ty_span, using }
                    }
                    _ => {
                        let default = match action.into_inner().find(|q| q.as_rule() == Rule::field_default) {
                            Some(d) => Some(self.clause_expr(d)?),
                            None => None,
                        };
                        FieldChange::SetDefault { field: names[0].clone(), default }
                    }
                };
                Statement::AlterComponent(AlterComponent { component, change, span })
            }
            Rule::rename_component => {
                let mut names = all(pair, Rule::component_name).map(|p| ident(&p, self.base));
                let from = names.next().expect("grammar: RENAME COMPONENT names it");
                let to = names.next().expect("grammar: RENAME COMPONENT names the new name");
                Statement::RenameComponent(RenameComponent { from, to, span })
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

    /// A field declaration with its `DEFAULT` expression.
    fn field_decl_with_default(&mut self, pair: Pair<'_, Rule>) -> Result<FieldDecl> {
        let mut decl = field_decl(pair.clone(), self.base)?;
        if let Some(d) = pair.into_inner().find(|q| q.as_rule() == Rule::field_default) {
            decl.default = Some(self.clause_expr(d)?);
        }
        Ok(decl)
    }

    /// The expression of a `DEFAULT expr` or `USING expr` clause.
    fn clause_expr(&mut self, clause: Pair<'_, Rule>) -> Result<Expr> {
        let e = clause.into_inner().find(|q| q.as_rule() == Rule::expr).expect("grammar: the clause has a value");
        self.expr(e)
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
        let mut select = Select::new(Vec::new(), Vec::new(), span);
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
    let (ty, ty_span) = field_type(&first(pair, Rule::type_name), base)?;
    let reference = pair_reference(&pair_of_decl, base);
    Ok(FieldDecl { name, ty, ty_span, reference, default: None, span })
}

/// A type name and where it is written.
fn field_type(ty_pair: &Pair<'_, Rule>, base: usize) -> Result<(FieldType, Span)> {
    let ty_span = span_of(ty_pair, base);
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
    Ok((ty, ty_span))
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
                ));
            }
            None => return Err(Error::syntax("a string cannot end with '\\'", Span::new(start, start + 1))),
        }
    }
    Ok(out)
}

/// An expression's source text with every run of whitespace and comments made one space
/// (strings kept as written): the column name of an unaliased select item.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    let mut lexer = Lexer::new(text);
    while let Some(token) = lexer.next_raw() {
        if token.kind.is_trivia() {
            pending_space = true;
            continue;
        }
        if pending_space && !out.is_empty() {
            out.push(' ');
        }
        pending_space = false;
        out.push_str(token.text(text));
    }
    out
}

#[cfg(test)]
mod tests;

/// The kind a `storage_clause` names.
fn storage_kind(clause: &Pair<'_, Rule>) -> StorageKind {
    match clause.clone().into_inner().nth(1).map(|p| p.as_rule()) {
        Some(Rule::kw_sparse) => StorageKind::Sparse,
        _ => StorageKind::Table,
    }
}
