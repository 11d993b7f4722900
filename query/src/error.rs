//! The one error type of the query crate, shared by every stage (parse, bind, plan, execute).
//!
//! An [`Error`] has a [`kind`](ErrorKind) that tools match on (its snake_case name is part of the
//! language contract: `syntax`, `unknown_component`, …), a message for people, the [`Span`] of
//! the text it is about when there is one, and an optional "did you mean" suggestion.
//! [`Error::render`] shows it to a person with the offending line and a caret under it:
//!
//! ```
//! use ecsdb_query::error::{Error, Span};
//! let src = "SELECT Helth.hp";
//! let err = Error::new(ecsdb_query::error::ErrorKind::UnknownComponent, "unknown component 'Helth'")
//!     .with_span(Span::new(7, 12))
//!     .with_suggestion("Health");
//! assert_eq!(
//!     err.render(src),
//!     "unknown component error at line 1, column 8: unknown component 'Helth'\n\
//!      SELECT Helth.hp\n\
//!      \x20      ^~~~~\n\
//!      hint: did you mean 'Health'?"
//! );
//! ```

use std::fmt;

use ecsdb_engine::EngineError;

/// A byte range `start..end` of the source text an AST node or an error is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub const fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no bytes (a position between two characters).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The spanned text, or `""` when the span does not fit `src`.
    pub fn text<'s>(&self, src: &'s str) -> &'s str {
        src.get(self.start..self.end).unwrap_or("")
    }

    /// Line and column (both 1-based) of the span's start in `src`; the column counts
    /// characters, not bytes. A start past the end of `src` is clamped to the end.
    pub fn line_col(&self, src: &str) -> (usize, usize) {
        let start = floor_char_boundary(src, self.start);
        let before = &src[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }
}

impl From<std::ops::Range<usize>> for Span {
    fn from(range: std::ops::Range<usize>) -> Span {
        Span::new(range.start, range.end)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// The largest char boundary of `s` at or below `i` (clamped to `s.len()`).
fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// What kind of thing went wrong. [`ErrorKind::as_str`] is the name tools see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text is not in the language.
    Syntax,
    /// A component name that the world does not know.
    UnknownComponent,
    /// A field name that the component does not have.
    UnknownField,
    /// A function name that is neither built in nor registered.
    UnknownFunction,
    /// An index name that does not exist.
    UnknownIndex,
    /// A value of the wrong type (in an expression, a component value or a field type).
    Type,
    /// An entity handle that is no longer (or never was) alive.
    StaleEntity,
    /// The statement is well-formed but breaks a rule of the data or schema (a name taken
    /// twice, a field given twice, …).
    Constraint,
    /// Reading or writing a file failed.
    Io,
    /// Something the language describes but this build does not do.
    Unsupported,
    /// A parameter is missing, unused, or of the wrong kind.
    Parameter,
    /// A bug in ecsdb: an invariant did not hold.
    Internal,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::Syntax,
        ErrorKind::UnknownComponent,
        ErrorKind::UnknownField,
        ErrorKind::UnknownFunction,
        ErrorKind::UnknownIndex,
        ErrorKind::Type,
        ErrorKind::StaleEntity,
        ErrorKind::Constraint,
        ErrorKind::Io,
        ErrorKind::Unsupported,
        ErrorKind::Parameter,
        ErrorKind::Internal,
    ];

    /// The snake_case name of the kind, as the language contract and tools spell it
    /// (`syntax`, `unknown_component`, `stale_entity`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::UnknownComponent => "unknown_component",
            ErrorKind::UnknownField => "unknown_field",
            ErrorKind::UnknownFunction => "unknown_function",
            ErrorKind::UnknownIndex => "unknown_index",
            ErrorKind::Type => "type",
            ErrorKind::StaleEntity => "stale_entity",
            ErrorKind::Constraint => "constraint",
            ErrorKind::Io => "io",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Parameter => "parameter",
            ErrorKind::Internal => "internal",
        }
    }

    /// The kind in words for people (`unknown component`), used by [`Error::render`].
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::UnknownComponent => "unknown component",
            ErrorKind::UnknownField => "unknown field",
            ErrorKind::UnknownFunction => "unknown function",
            ErrorKind::UnknownIndex => "unknown index",
            ErrorKind::StaleEntity => "stale entity",
            other => other.as_str(),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of any stage of the query pipeline.
///
/// `Display` prints the message and the suggestion (`unknown component 'Helth'; did you mean
/// 'Health'?`); [`Error::render`] adds the position and the quoted source line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", suggestion_suffix(.suggestion))]
pub struct Error {
    /// What kind of error it is.
    pub kind: ErrorKind,
    /// What went wrong, for a person; no position (that is in `span`).
    pub message: String,
    /// The text the error is about, when it comes from text.
    pub span: Option<Span>,
    /// The closest known name, for "did you mean".
    pub suggestion: Option<String>,
}

fn suggestion_suffix(suggestion: &Option<String>) -> String {
    suggestion.as_ref().map(|s| format!("; did you mean '{s}'?")).unwrap_or_default()
}

impl Error {
    /// An error of `kind` with no position.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), span: None, suggestion: None }
    }

    /// A syntax error at `span`.
    pub fn syntax(message: impl Into<String>, span: Span) -> Error {
        Error::new(ErrorKind::Syntax, message).with_span(span)
    }

    /// An internal error: a bug in ecsdb, not in the query.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }

    /// The same error, about text `by` bytes further on (an error in a piece of a longer text,
    /// moved to the whole).
    pub(crate) fn shifted(mut self, by: usize) -> Error {
        self.span = self.span.map(|s| Span::new(s.start + by, s.end + by));
        self
    }

    /// The same error, about the text at `span`.
    pub fn with_span(mut self, span: Span) -> Error {
        self.span = Some(span);
        self
    }

    /// The same error, suggesting `suggestion` ("did you mean 'suggestion'?").
    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Error {
        self.suggestion = Some(suggestion.into());
        self
    }

    /// Line and column (1-based, column in characters) of the error in `src`, if it has a span.
    pub fn line_col(&self, src: &str) -> Option<(usize, usize)> {
        self.span.map(|span| span.line_col(src))
    }

    /// The error for a person: a headline with the kind and position, the source line, a caret
    /// line under the span (`^` at its start, `~` under the rest of it on that line), and a
    /// `hint:` line when there is a suggestion. Without a span, just the headline (and hint).
    pub fn render(&self, src: &str) -> String {
        let mut out = String::new();
        match self.span {
            Some(span) => {
                let (line, column) = span.line_col(src);
                out.push_str(&format!("{} error at line {line}, column {column}: {}", self.kind.label(), self.message));
                let start = floor_char_boundary(src, span.start);
                let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
                let line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
                let text = src[line_start..line_end].trim_end_matches('\r');
                out.push('\n');
                out.push_str(text);
                out.push('\n');
                // Keep tabs so the caret lines up under tab-indented text.
                for c in src[line_start..start].chars() {
                    out.push(if c == '\t' { '\t' } else { ' ' });
                }
                out.push('^');
                let end = floor_char_boundary(src, span.end).min(line_start + text.len()).max(start);
                let tildes = src[start..end].chars().count().saturating_sub(1);
                out.extend(std::iter::repeat_n('~', tildes));
            }
            None => out.push_str(&format!("{} error: {}", self.kind.label(), self.message)),
        }
        if let Some(suggestion) = &self.suggestion {
            out.push_str(&format!("\nhint: did you mean '{suggestion}'?"));
        }
        out
    }
}

impl From<EngineError> for Error {
    /// Engine errors keep their message and get the matching kind.
    fn from(err: EngineError) -> Error {
        let kind = match &err {
            EngineError::StaleEntity(_) => ErrorKind::StaleEntity,
            EngineError::UnknownComponent(_) => ErrorKind::UnknownComponent,
            EngineError::UnknownField { .. } => ErrorKind::UnknownField,
            EngineError::TypeMismatch { .. } | EngineError::OutOfRange { .. } | EngineError::WrongType(_) => {
                ErrorKind::Type
            }
            EngineError::Opaque(_) => ErrorKind::Unsupported,
            EngineError::AliasedAccess(_) => ErrorKind::Internal,
            _ => ErrorKind::Constraint,
        };
        Error::new(kind, err.to_string())
    }
}

/// The candidate closest to `name` by edit distance (compared case-insensitively), if it is
/// close enough to be what was meant: at most `max(1, len / 3)` edits for a name of `len`
/// characters. Ties go to the earliest candidate; a candidate equal to `name` is skipped.
///
/// ```
/// use ecsdb_query::error::suggest;
/// assert_eq!(suggest("Helth", ["Position", "Health"]), Some("Health".to_string()));
/// assert_eq!(suggest("health", ["Health"]), Some("Health".to_string()));
/// assert_eq!(suggest("Xyz", ["Health"]), None);
/// ```
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let wanted: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
    let limit = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let lowered: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
        let distance = edit_distance(&wanted, &lowered);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate.to_string())
}

/// Edit distance between two char slices: insertions, deletions, substitutions and swaps of
/// two adjacent characters (`FORM` → `FROM`) each cost one (optimal string alignment).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    // Three rows of the dynamic programme: i-2, i-1 and i.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 0..a.len() {
        current[0] = i + 1;
        for j in 0..b.len() {
            let substitution = previous[j] + usize::from(a[i] != b[j]);
            let mut best = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                best = best.min(before[j - 1] + 1);
            }
            current[j + 1] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_contract_names() {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "syntax",
                "unknown_component",
                "unknown_field",
                "unknown_function",
                "unknown_index",
                "type",
                "stale_entity",
                "constraint",
                "io",
                "unsupported",
                "parameter",
                "internal"
            ]
        );
        assert_eq!(ErrorKind::StaleEntity.to_string(), "stale_entity");
        assert_eq!(ErrorKind::StaleEntity.label(), "stale entity");
        assert_eq!(ErrorKind::Type.label(), "type");
    }

    #[test]
    fn line_col_is_one_based_and_counts_chars() {
        let src = "ab\ncdé fg\n";
        assert_eq!(Span::new(0, 1).line_col(src), (1, 1));
        assert_eq!(Span::new(3, 4).line_col(src), (2, 1));
        // 'é' is two bytes: "f" starts at byte 8, which is the 5th character of line 2.
        assert_eq!(Span::new(8, 9).line_col(src), (2, 5));
        assert_eq!(Span::new(src.len(), src.len()).line_col(src), (3, 1));
        // Out of range and mid-character offsets are clamped, not a panic.
        assert_eq!(Span::new(100, 200).line_col(src), (3, 1));
        assert_eq!(Span::new(6, 7).line_col(src), (2, 3));
        assert_eq!(Span::new(0, 0).line_col(""), (1, 1));
    }

    #[test]
    fn span_helpers() {
        let a = Span::new(3, 5);
        assert_eq!(a.to(Span::new(1, 4)), Span::new(1, 5));
        assert_eq!(a.len(), 2);
        assert!(!a.is_empty());
        assert!(Span::new(4, 4).is_empty());
        assert_eq!(a.text("0123456"), "34");
        assert_eq!(Span::new(5, 99).text("0123"), "");
        assert_eq!(Span::from(1..2), Span::new(1, 2));
        assert_eq!(a.to_string(), "3..5");
    }

    #[test]
    fn display_has_message_and_suggestion() {
        let e = Error::new(ErrorKind::UnknownComponent, "unknown component 'Helth'").with_suggestion("Health");
        assert_eq!(e.to_string(), "unknown component 'Helth'; did you mean 'Health'?");
        let e = Error::syntax("expected an expression", Span::new(0, 1));
        assert_eq!(e.to_string(), "expected an expression");
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert_eq!(e.span, Some(Span::new(0, 1)));
        assert_eq!(Error::internal("x").kind, ErrorKind::Internal);
        // It is a std error.
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert_eq!(boxed.to_string(), "expected an expression");
    }

    #[test]
    fn render_points_at_the_span() {
        let src = "SELECT a\nFROM Helth\nWHERE x";
        let e = Error::new(ErrorKind::UnknownComponent, "unknown component 'Helth'")
            .with_span(Span::new(14, 19))
            .with_suggestion("Health");
        assert_eq!(
            e.render(src),
            "unknown component error at line 2, column 6: unknown component 'Helth'\n\
             FROM Helth\n     ^~~~~\n\
             hint: did you mean 'Health'?"
        );
    }

    #[test]
    fn render_edge_cases() {
        // No span: the headline only.
        assert_eq!(Error::new(ErrorKind::Io, "disk full").render("x"), "io error: disk full");
        // An empty span is one caret; a span running past its line stops at the line end.
        let src = "ab\r\ncd";
        assert_eq!(Error::syntax("m", Span::new(2, 2)).render(src), "syntax error at line 1, column 3: m\nab\n  ^");
        assert_eq!(Error::syntax("m", Span::new(1, 6)).render(src), "syntax error at line 1, column 2: m\nab\n ^");
        // At the very end of input after a newline: an empty source line.
        assert_eq!(Error::syntax("m", Span::new(3, 3)).render("ab\n"), "syntax error at line 2, column 1: m\n\n^");
        // Tabs are kept so the caret lines up; multi-byte characters count as one column.
        assert_eq!(
            Error::syntax("m", Span::new(1, 5)).render("\té x"),
            "syntax error at line 1, column 2: m\n\té x\n\t^~~"
        );
        // A span on a line ending's `\r`, or outside the text, does not panic.
        assert_eq!(
            Error::syntax("m", Span::new(3, 9)).render("ab\r\ncd"),
            "syntax error at line 1, column 4: m\nab\n   ^"
        );
        assert_eq!(
            Error::syntax("m", Span::new(50, 40)).render("abc"),
            "syntax error at line 1, column 4: m\nabc\n   ^"
        );
    }

    #[test]
    fn suggestions() {
        let names = ["Position", "Velocity", "Health", "Frozen"];
        assert_eq!(suggest("Helth", names), Some("Health".into()));
        assert_eq!(suggest("positon", names), Some("Position".into()));
        assert_eq!(suggest("VELOCITY", names), Some("Velocity".into()));
        assert_eq!(suggest("Frozen", names), None, "an exact match is not a suggestion");
        assert_eq!(suggest("Foo", names), None);
        assert_eq!(suggest("", names), None);
        // Short names allow one edit.
        assert_eq!(suggest("hq", ["hp", "max"]), Some("hp".into()));
        assert_eq!(suggest("x", ["y", "z"]), Some("y".into()));
        assert_eq!(suggest("ab", ["xy"]), None);
        // The closest wins over the first close one.
        assert_eq!(suggest("Positon", ["Poison", "Position"]), Some("Position".into()));
        // Ties go to the first.
        assert_eq!(suggest("Healt", ["Heal", "Health"]), Some("Heal".into()));
        let chars = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(edit_distance(&chars("abc"), &chars("yabd")), 2);
        assert_eq!(edit_distance(&chars("form"), &chars("from")), 1);
        assert_eq!(edit_distance(&chars(""), &chars("abc")), 3);
        assert_eq!(edit_distance(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(suggest("FORM", ["FROM", "WHERE"]), Some("FROM".into()));
        assert_eq!(suggest("héalth", ["Health"]), Some("Health".into()));
    }

    #[test]
    fn engine_errors_convert_with_kinds() {
        let e: Error = EngineError::UnknownComponent("Helth".into()).into();
        assert_eq!(e.kind, ErrorKind::UnknownComponent);
        assert_eq!(e.message, "unknown component 'Helth'");
        let e: Error = EngineError::StaleEntity(ecsdb_engine::Entity::from_parts(1, 0)).into();
        assert_eq!(e.kind, ErrorKind::StaleEntity);
        let e: Error = EngineError::DuplicateComponent("A".into()).into();
        assert_eq!(e.kind, ErrorKind::Constraint);
    }
}
