//! The keyword table, generated from the grammar by `query/build.rs`.

/// A keyword of the language.
///
/// ```
/// use ecsdb_query::lex::{keyword, KEYWORDS};
/// let select = keyword("select").unwrap();
/// assert_eq!(select.word, "SELECT");
/// assert!(select.reserved && select.starts_statement);
/// assert!(!keyword("Phase").unwrap().reserved); // contextual: `Phase` may name a component
/// assert!(keyword("Health").is_none());
/// assert!(KEYWORDS.windows(2).all(|w| w[0].word < w[1].word));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Keyword {
    /// The word, upper case (keywords are case-insensitive).
    pub word: &'static str,
    /// Reserved: it cannot name a component, function, index, system or alias. A contextual
    /// keyword is a keyword only where the grammar expects it and a name elsewhere.
    pub reserved: bool,
    /// Some statement starts with it.
    pub starts_statement: bool,
}

include!(concat!(env!("OUT_DIR"), "/keywords.rs"));

/// The keyword `word` is (case-insensitive), if it is one.
pub fn keyword(word: &str) -> Option<&'static Keyword> {
    // (Upper-cased on the stack: every keyword is short ASCII.)
    let mut upper = [0u8; 16];
    if word.len() > upper.len() || !word.is_ascii() {
        return None;
    }
    for (u, b) in upper.iter_mut().zip(word.bytes()) {
        *u = b.to_ascii_uppercase();
    }
    let upper = std::str::from_utf8(&upper[..word.len()]).ok()?;
    KEYWORDS.binary_search_by(|k| k.word.cmp(upper)).ok().map(|i| &KEYWORDS[i])
}

/// Whether `word` is a reserved word (case-insensitive): one that cannot be a name.
pub fn is_reserved(word: &str) -> bool {
    keyword(word).is_some_and(|k| k.reserved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_grammars() {
        let grammar = include_str!("../../../grammar/ecsdb.pest");
        // Every reserved word is one of the grammar's words, and the grammar rejects it as a name.
        for k in KEYWORDS {
            assert!(grammar.contains(&format!("^\"{}\"", k.word.to_ascii_lowercase())), "{}", k.word);
        }
        let reserved: Vec<&str> = KEYWORDS.iter().filter(|k| k.reserved).map(|k| k.word).collect();
        for word in ["SELECT", "FROM", "WHERE", "AND", "NULL", "USING", "ON", "TO"] {
            assert!(reserved.contains(&word), "{word} is reserved");
        }
        for word in
            ["BY", "ASC", "COMPONENT", "INDEX", "TABLES", "COUNT", "SYSTEM", "PHASE", "BEGIN", "END", "ALTER", "FIELD"]
        {
            assert!(keyword(word).is_some_and(|k| !k.reserved), "{word} is contextual");
        }
        let starts: Vec<&str> = KEYWORDS.iter().filter(|k| k.starts_statement).map(|k| k.word).collect();
        assert_eq!(
            starts,
            [
                "ADD", "ALTER", "CREATE", "DESCRIBE", "DESPAWN", "DROP", "EXPLAIN", "REMOVE", "RENAME", "SELECT",
                "SET", "SHOW", "SPAWN", "TICK", "UPDATE"
            ]
        );
    }

    #[test]
    fn lookup_is_case_insensitive_and_total() {
        assert_eq!(keyword("sElEcT").map(|k| k.word), Some("SELECT"));
        assert_eq!(keyword(""), None);
        assert_eq!(keyword("a_very_long_word_that_is_no_keyword"), None);
        assert_eq!(keyword("sélect"), None);
        assert!(is_reserved("where") && !is_reserved("tick") && !is_reserved("Health"));
    }
}
