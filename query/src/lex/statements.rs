//! Where statements end: `;` outside strings, comments and a system's `BEGIN … END`.
//!
//! This is what a shell asks before it runs what was typed (SQLite's shell asks
//! `sqlite3_complete` the same), and how a script is cut into statements. Brackets do not
//! matter (`SELECT (1;` is complete, and the parser then reports the missing `)`), but a
//! block does: in `CREATE SYSTEM s AS BEGIN a; b; END;` only the last `;` ends the statement.
//!
//! The block's `END` is told from a component named `End` as the grammar does in the cases
//! that occur: it closes the block when the next token is `;` or the end of the text and the
//! token before it is not one after which a name must come (`FROM End;`, `UPDATE End SET …`
//! and `a, End;` name a component).

use super::token::{Lexer, Token, TokenKind};
use crate::error::Span;

/// How far a text is from being a statement that can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatementState {
    /// Only whitespace and comments.
    Empty,
    /// More is needed: no `;` ends the last statement yet, or a string or a `BEGIN … END`
    /// block is still open.
    Incomplete,
    /// The text ends with a `;` that ends a statement (whitespace and comments may follow).
    Complete,
}

/// Whether `text` is ready to run: it ends with a `;` that ends a statement.
///
/// ```
/// use ecsdb_query::lex::{statement_state, StatementState::*};
/// assert_eq!(statement_state("  -- nothing yet"), Empty);
/// assert_eq!(statement_state("SELECT 1"), Incomplete);
/// assert_eq!(statement_state("SELECT 'a;"), Incomplete);
/// assert_eq!(statement_state("SELECT 1; -- done"), Complete);
/// assert_eq!(statement_state("CREATE SYSTEM s AS BEGIN UPDATE A SET x = 1;"), Incomplete);
/// assert_eq!(statement_state("CREATE SYSTEM s AS BEGIN UPDATE A SET x = 1; END;"), Complete);
/// ```
pub fn statement_state(text: &str) -> StatementState {
    let mut splitter = Splitter::new(text);
    let mut state = StatementState::Empty;
    while let Some(event) = splitter.next_event() {
        state = match event {
            Event::Token(t) if t.kind == TokenKind::UnterminatedString => return StatementState::Incomplete,
            Event::Token(_) => StatementState::Incomplete,
            Event::End(_) => StatementState::Complete,
        };
    }
    if splitter.in_block() { StatementState::Incomplete } else { state }
}

/// The statements of a script: the span of each, from its first token to its `;` (included;
/// the last one may have none). Pieces with only whitespace and comments are left out.
///
/// ```
/// use ecsdb_query::lex::split_statements;
/// let src = "SELECT 'a;b'; -- one\n CREATE SYSTEM s AS BEGIN DESPAWN WHERE has(A); END; SHOW TABLES";
/// let pieces: Vec<&str> = split_statements(src).iter().map(|s| s.text(src)).collect();
/// assert_eq!(pieces, ["SELECT 'a;b';", "CREATE SYSTEM s AS BEGIN DESPAWN WHERE has(A); END;", "SHOW TABLES"]);
/// ```
pub fn split_statements(text: &str) -> Vec<Span> {
    let mut splitter = Splitter::new(text);
    let mut pieces = Vec::new();
    let mut start = None;
    let mut last_end = 0;
    while let Some(event) = splitter.next_event() {
        match event {
            Event::Token(t) => {
                start.get_or_insert(t.span.start);
                last_end = t.span.end;
            }
            Event::End(semicolon) => {
                if let Some(start) = start.take() {
                    pieces.push(Span::new(start, semicolon.end));
                }
            }
        }
    }
    if let Some(start) = start {
        pieces.push(Span::new(start, last_end));
    }
    pieces
}

/// What [`Splitter`] sees next.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// A token of a statement (not trivia, not a `;` that ends it).
    Token(Token),
    /// The `;` that ends a statement (or an empty one).
    End(Span),
}

/// The significant tokens of a text, with the `;`s that end statements told apart.
pub(crate) struct Splitter<'s> {
    src: &'s str,
    lexer: Lexer<'s>,
    /// A token read ahead (to tell a block's `END` from a name).
    peeked: Option<Token>,
    /// The token before, inside a block.
    previous: Option<Token>,
    block: Block,
}

/// Where the current statement is, as far as blocks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// Before its first token.
    Start,
    /// After a first `CREATE`.
    AfterCreate,
    /// In a statement with no block (or after its block).
    Plain,
    /// In `CREATE SYSTEM …`, before its `AS`.
    Owner,
    /// After the owner's `AS`: a `BEGIN` opens the block.
    AfterAs,
    /// Inside `BEGIN … END`.
    Open,
}

/// The words after `CREATE` that make a statement whose body may be a `BEGIN … END` block.
const BLOCK_OWNERS: &[&str] = &["system"];

/// Words after which `END` is a name, not the end of a block.
const NAME_FOLLOWS_WORD: &[&str] = &[
    "from", "update", "add", "remove", "describe", "not", "optional", "and", "or", "in", "is", "like", "between", "to",
    "on", "select", "where", "by", "set",
];

impl<'s> Splitter<'s> {
    pub(crate) fn new(src: &'s str) -> Splitter<'s> {
        Splitter::at(src, 0)
    }

    /// A splitter from byte `pos` of `src`, the start of a statement.
    pub(crate) fn at(src: &'s str, pos: usize) -> Splitter<'s> {
        Splitter { src, lexer: Lexer::at(src, pos), peeked: None, previous: None, block: Block::Start }
    }

    /// Whether a `BEGIN … END` block is open.
    pub(crate) fn in_block(&self) -> bool {
        self.block == Block::Open
    }

    fn significant(&mut self) -> Option<Token> {
        if let Some(t) = self.peeked.take() {
            return Some(t);
        }
        self.lexer.next_significant()
    }

    fn peek(&mut self) -> Option<Token> {
        if self.peeked.is_none() {
            self.peeked = self.significant();
        }
        self.peeked
    }

    fn is_word(&self, t: Token, word: &str) -> bool {
        t.kind == TokenKind::Name && t.text(self.src).eq_ignore_ascii_case(word)
    }

    /// The next statement: its span (first token to its `;`, included when there is one),
    /// with its significant tokens, the `;` left out, in `tokens`. Empty statements are
    /// skipped.
    pub(crate) fn next_statement(&mut self, tokens: &mut Vec<Token>) -> Option<Span> {
        tokens.clear();
        loop {
            match self.next_event() {
                Some(Event::Token(t)) => tokens.push(t),
                Some(Event::End(semicolon)) if !tokens.is_empty() => {
                    return Some(Span::new(tokens[0].span.start, semicolon.end));
                }
                Some(Event::End(_)) => {}
                None => return Some(Span::new(tokens.first()?.span.start, tokens.last()?.span.end)),
            }
        }
    }

    pub(crate) fn next_event(&mut self) -> Option<Event> {
        let t = self.significant()?;
        let is_semicolon = self.src.as_bytes()[t.span.start] == b';' && t.kind == TokenKind::Symbol;
        match self.block {
            Block::Open => {}
            _ if is_semicolon => {
                self.block = Block::Start;
                return Some(Event::End(t.span));
            }
            // (Most tokens: nothing to follow.)
            Block::Plain => return Some(Event::Token(t)),
            Block::Start => self.block = if self.is_word(t, "create") { Block::AfterCreate } else { Block::Plain },
            Block::AfterCreate => {
                self.block = if BLOCK_OWNERS.iter().any(|w| self.is_word(t, w)) { Block::Owner } else { Block::Plain }
            }
            Block::Owner => {
                if self.is_word(t, "as") {
                    self.block = Block::AfterAs;
                }
            }
            Block::AfterAs => {
                self.block = if self.is_word(t, "begin") { Block::Open } else { Block::Plain };
                self.previous = Some(t);
                return Some(Event::Token(t));
            }
        }
        if self.block == Block::Open {
            if self.is_word(t, "end") && self.ends_block() {
                self.block = Block::Plain;
            }
            self.previous = Some(t);
        }
        Some(Event::Token(t))
    }

    /// Whether the `END` just read closes the open block.
    fn ends_block(&mut self) -> bool {
        let next_ends = match self.peek() {
            None => true,
            Some(n) => n.kind == TokenKind::Symbol && n.text(self.src) == ";",
        };
        let name_wanted = self.previous.is_some_and(|p| match p.kind {
            TokenKind::Symbol => !matches!(p.text(self.src), ";" | ")" | "]" | "}" | "*"),
            TokenKind::Name => NAME_FOLLOWS_WORD.iter().any(|w| self.is_word(p, w)),
            _ => false,
        });
        next_ends && !name_wanted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StatementState::*;

    fn pieces(src: &str) -> Vec<&str> {
        split_statements(src).iter().map(|s| s.text(src)).collect()
    }

    #[test]
    fn states() {
        assert_eq!(statement_state(""), Empty);
        assert_eq!(statement_state(";"), Complete);
        assert_eq!(statement_state("SELECT 1;\nSELECT"), Incomplete);
        assert_eq!(statement_state("SELECT '--';"), Complete);
        assert_eq!(statement_state("SELECT 1 -- ;"), Incomplete);
        assert_eq!(statement_state("SELECT \"a\\\";"), Incomplete);
        assert_eq!(statement_state("SELECT (1;"), Complete);
        assert_eq!(statement_state("create system s in phase p after a as begin\n spawn A;\n"), Incomplete);
        assert_eq!(statement_state("create system s in phase p after a as begin\n spawn A;\nend;"), Complete);
        assert_eq!(statement_state("CREATE SYSTEM s AS UPDATE A SET x = 1;"), Complete);
        // A component named Begin or End is a name where the grammar wants one.
        assert_eq!(statement_state("SELECT Begin.x FROM Begin;"), Complete);
        assert_eq!(statement_state("CREATE SYSTEM s AS BEGIN SELECT * FROM End;"), Incomplete);
        assert_eq!(statement_state("CREATE SYSTEM s AS BEGIN UPDATE End SET v = 1; END;"), Complete);
        assert_eq!(statement_state("CREATE SYSTEM s AS BEGIN SPAWN END;"), Complete);
        assert_eq!(statement_state("CREATE SYSTEM s AS BEGIN DESPAWN WHERE has(A) END;"), Complete);
    }

    #[test]
    fn splits() {
        assert_eq!(pieces("a; ;; b"), ["a;", "b"]);
        assert_eq!(pieces("-- only a comment\n"), Vec::<&str>::new());
        assert_eq!(pieces("SELECT 1 -- c\n; SELECT 2"), ["SELECT 1 -- c\n;", "SELECT 2"]);
        assert_eq!(
            pieces("CREATE SYSTEM a AS BEGIN SPAWN A; SPAWN B; END; CREATE SYSTEM b AS SPAWN C; TICK;"),
            ["CREATE SYSTEM a AS BEGIN SPAWN A; SPAWN B; END;", "CREATE SYSTEM b AS SPAWN C;", "TICK;"]
        );
        // An unterminated block takes the rest of the text.
        assert_eq!(pieces("CREATE SYSTEM a AS BEGIN SPAWN A; TICK;"), ["CREATE SYSTEM a AS BEGIN SPAWN A; TICK;"]);
    }
}
