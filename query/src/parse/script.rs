//! A parsed script whose SPAWNs of literal values are kept flat, without syntax trees.
//!
//! A script of many SPAWNs (a bulk load) would otherwise spend most of its time allocating,
//! binding and freeing one syntax tree per statement: a name and a boxed expression per
//! field. A [`LiteralSpawn`] instead keeps spans into the text and the values of its literals
//! in arrays shared by the whole script, and execution converts them straight to field
//! values ([`crate::execute::literal_spawn`]). [`Script::statement`] builds the syntax tree
//! the parser builds for the same text, for everything that needs one.

use std::ops::Range;

use super::ast::*;

/// The statements of a script, in order.
#[derive(Debug, Default)]
pub(crate) struct Script {
    /// The statements.
    pub items: Vec<ScriptItem>,
    /// The components of every [`LiteralSpawn`], one SPAWN after another.
    components: Vec<LiteralComponent>,
    /// The fields of every [`LiteralComponent`], one component after another.
    fields: Vec<LiteralField>,
}

/// One statement of a [`Script`].
#[derive(Debug)]
pub(crate) enum ScriptItem {
    /// Any statement, as a syntax tree (boxed: most items of a long script are SPAWNs).
    Statement(Box<Statement>),
    /// A SPAWN whose field values are all literals.
    Spawn(LiteralSpawn),
}

/// `SPAWN C {f: literal, …}, …`: its parts are in its [`Script`].
#[derive(Clone, Debug)]
pub(crate) struct LiteralSpawn {
    /// The whole statement.
    pub span: Span,
    components: Range<u32>,
}

/// One component value of a [`LiteralSpawn`].
#[derive(Clone, Debug)]
pub(crate) struct LiteralComponent {
    /// The component's name.
    name: TextRange,
    /// The component value, braces included.
    span: TextRange,
    fields: Range<u32>,
}

/// `field: literal` in a [`LiteralComponent`].
#[derive(Clone, Debug)]
pub(crate) struct LiteralField {
    /// The field's name.
    name: TextRange,
    /// The literal as written (a sign included; a string's quotes included).
    value_span: TextRange,
    /// The value.
    pub value: LiteralValue,
}

/// A [`Span`] in 32-bit offsets: a bulk load's arrays hold two a field and two a component,
/// and at half a span's size they make those arrays a third smaller (a field 48 bytes to 32,
/// a component 40 to 24), which is a third less fresh memory to touch for the first time, a
/// page fault every 4 KiB. Scripts past 4 GiB take the syntax tree's way
/// ([`Script::FLAT_LIMIT`]).
#[derive(Clone, Copy, Debug)]
struct TextRange {
    start: u32,
    end: u32,
}

impl TextRange {
    fn new(span: Span) -> TextRange {
        debug_assert!(span.end <= Script::FLAT_LIMIT, "a flat SPAWN past the limit");
        TextRange { start: span.start as u32, end: span.end as u32 }
    }

    fn span(self) -> Span {
        Span::new(self.start as usize, self.end as usize)
    }
}

/// The value of a literal in a [`LiteralField`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LiteralValue {
    /// An int.
    Int(i64),
    /// A float (finite).
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// A string without escapes: its value is the text between the quotes of `value_span`.
    Str,
}

impl LiteralValue {
    /// The flat value of a literal that is not a string; `None` for a string (whose flat
    /// form needs its text: see [`Script::flatten`]).
    pub fn of(literal: &Literal) -> Option<LiteralValue> {
        Some(match *literal {
            Literal::Int(i) => LiteralValue::Int(i),
            Literal::Float(f) => LiteralValue::Float(f),
            Literal::Bool(b) => LiteralValue::Bool(b),
            Literal::Null => LiteralValue::Null,
            Literal::Str(_) => return None,
        })
    }
}

/// Where a [`Script`]'s arrays ended, to drop what a declined statement pushed.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    components: usize,
    fields: usize,
}

impl Script {
    /// The longest text whose SPAWNs may be kept flat (offsets in 32 bits).
    pub const FLAT_LIMIT: usize = u32::MAX as usize;

    /// The components of `spawn`.
    pub fn components(&self, spawn: &LiteralSpawn) -> &[LiteralComponent] {
        &self.components[spawn.components.start as usize..spawn.components.end as usize]
    }

    /// The fields of `component`.
    pub fn fields(&self, component: &LiteralComponent) -> &[LiteralField] {
        &self.fields[component.fields.start as usize..component.fields.end as usize]
    }

    /// Where the arrays end now.
    pub fn mark(&self) -> Mark {
        Mark { components: self.components.len(), fields: self.fields.len() }
    }

    /// Drops what was pushed since `mark`.
    pub fn rewind(&mut self, mark: Mark) {
        self.components.truncate(mark.components);
        self.fields.truncate(mark.fields);
    }

    /// Pushes a field of the component being read.
    pub fn push_field(&mut self, field: LiteralField) {
        self.fields.push(field);
    }

    /// Pushes a component whose fields are the ones pushed since `mark`.
    pub fn push_component(&mut self, name: Span, span: Span, mark: Mark) {
        let fields = mark.fields as u32..self.fields.len() as u32;
        self.components.push(LiteralComponent { name: TextRange::new(name), span: TextRange::new(span), fields });
    }

    /// The SPAWN of the components pushed since `mark`.
    pub fn spawn(&self, span: Span, mark: Mark) -> LiteralSpawn {
        LiteralSpawn { span, components: mark.components as u32..self.components.len() as u32 }
    }

    /// `statement` kept flat, when it is a SPAWN whose every field value is a literal (a
    /// string without escapes: its value is the text between its quotes). Nothing is pushed
    /// otherwise.
    pub fn flatten(&mut self, statement: &Statement, src: &str) -> Option<LiteralSpawn> {
        let Statement::Spawn(spawn) = statement else { return None };
        let mark = self.mark();
        let flat = self.flatten_spawn(spawn, src);
        if flat.is_none() {
            self.rewind(mark);
        }
        flat
    }

    fn flatten_spawn(&mut self, spawn: &Spawn, src: &str) -> Option<LiteralSpawn> {
        let spawn_mark = self.mark();
        for c in &spawn.components {
            let field_mark = self.mark();
            for f in &c.fields {
                let ExprKind::Literal(literal) = &f.value.kind else { return None };
                let value = match literal {
                    Literal::Str(s)
                        if f.value.span.len() == s.len() + 2 && f.value.span.text(src).get(1..=s.len())? == s =>
                    {
                        LiteralValue::Str
                    }
                    other => LiteralValue::of(other)?,
                };
                self.push_field(LiteralField::new(f.field.span, value, f.value.span));
            }
            self.push_component(c.component.span, c.span, field_mark);
        }
        Some(self.spawn(spawn.span, spawn_mark))
    }

    /// The syntax tree of `spawn`, as the parser builds it from `src` (the script's text).
    pub fn statement(&self, spawn: &LiteralSpawn, src: &str) -> Statement {
        let ident = |span: Span| Ident::new(&src[span.start..span.end], span);
        let components = self
            .components(spawn)
            .iter()
            .map(|c| ComponentValue {
                component: ident(c.name()),
                fields: self
                    .fields(c)
                    .iter()
                    .map(|f| FieldInit {
                        field: ident(f.name()),
                        value: Expr::new(ExprKind::Literal(f.literal(src)), f.value_span()),
                        span: f.span(),
                    })
                    .collect(),
                span: c.span(),
            })
            .collect();
        Statement::Spawn(Spawn { components, span: spawn.span })
    }

    /// Every statement as a syntax tree.
    pub fn into_statements(mut self, src: &str) -> Vec<Statement> {
        let items = std::mem::take(&mut self.items);
        items
            .into_iter()
            .map(|item| match item {
                ScriptItem::Statement(s) => *s,
                ScriptItem::Spawn(s) => self.statement(&s, src),
            })
            .collect()
    }
}

impl LiteralComponent {
    /// The component's name.
    pub fn name(&self) -> Span {
        self.name.span()
    }

    /// The component value, braces included.
    pub fn span(&self) -> Span {
        self.span.span()
    }
}

impl LiteralField {
    /// `field: literal`, for a field read at offsets below [`Script::FLAT_LIMIT`].
    pub fn new(name: Span, value: LiteralValue, value_span: Span) -> LiteralField {
        LiteralField { name: TextRange::new(name), value_span: TextRange::new(value_span), value }
    }

    /// The field's name.
    pub fn name(&self) -> Span {
        self.name.span()
    }

    /// The literal as written (a sign included; a string's quotes included).
    pub fn value_span(&self) -> Span {
        self.value_span.span()
    }

    /// `field: literal`.
    pub fn span(&self) -> Span {
        Span::new(self.name.start as usize, self.value_span.end as usize)
    }

    /// A string's value: the text between its quotes.
    pub fn str<'s>(&self, src: &'s str) -> &'s str {
        &src[self.value_span.start as usize + 1..self.value_span.end as usize - 1]
    }

    /// The value as a syntax tree's literal.
    pub fn literal(&self, src: &str) -> Literal {
        match self.value {
            LiteralValue::Int(i) => Literal::Int(i),
            LiteralValue::Float(f) => Literal::Float(f),
            LiteralValue::Bool(b) => Literal::Bool(b),
            LiteralValue::Null => Literal::Null,
            LiteralValue::Str => Literal::Str(self.str(src).to_string()),
        }
    }
}
