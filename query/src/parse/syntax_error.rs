//! Syntax errors: a failed pest parse turned into an [`Error`] that names, in words, what
//! was expected where, what was found instead, and the keyword probably meant.

use pest::error::{ErrorVariant, InputLocation};

use super::ast::Span;
use super::grammar::Rule;
use crate::error::{Error, suggest};
use crate::lex::{KEYWORDS, is_reserved, keyword};

/// Rank of the statement-start keywords in [`expected_label`].
const STATEMENT_RANK: u8 = 0;

/// How a rule is named in "expected …" messages, and the rank that orders the names (and
/// groups statement-start keywords, rank [`STATEMENT_RANK`]).
pub(super) fn expected_label(rule: Rule) -> Option<(u8, &'static str)> {
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
        kw_alter => (STATEMENT_RANK, "`ALTER`"),
        kw_rename => (STATEMENT_RANK, "`RENAME`"),
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
        kw_field => (53, "`FIELD`"),
        kw_type => (53, "`TYPE`"),
        field_using => (64, "`USING`"),
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
        kw_default | field_default => (65, "`DEFAULT`"),
        kw_storage | storage_clause => (65, "`STORAGE`"),
        kw_sparse => (64, "`SPARSE`"),
        kw_table => (64, "`TABLE`"),
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
        alter_component | rename_component | add_field | drop_field | rename_field | alter_field | set_storage => {
            (1, "a statement")
        }
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
    let described = if is_reserved(word) {
        format!("`{word}` (a reserved word)")
    } else if c.is_control() || c.is_whitespace() {
        format!("character {:?}", c)
    } else {
        format!("`{word}`")
    };
    (described, Span::new(pos, pos + len))
}

/// A keyword the user may have misspelt at the error: the found word, if it is close to an
/// expected keyword; or the first word of the statement, if it is close to a statement keyword
/// (a misspelt `SELEC x` parses as the start of a bare term list `SELEC`).
fn keyword_suggestion(src: &str, span: Span, expected: &[&str]) -> Option<String> {
    let found = span.text(src);
    let expected_keywords: Vec<&str> = expected
        .iter()
        .filter_map(|label| label.strip_prefix('`')?.strip_suffix('`'))
        .flat_map(|kw| kw.split(' ').next())
        .filter(|kw| keyword(kw).is_some())
        .collect();
    if !found.is_empty()
        && found.bytes().all(|b| b.is_ascii_alphabetic())
        && let Some(s) = suggest(found, expected_keywords.iter().copied())
    {
        return Some(s);
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
    if starts_statement && !word.is_empty() && keyword(word).is_none() {
        return suggest(word, KEYWORDS.iter().filter(|k| k.starts_statement).map(|k| k.word));
    }
    None
}

/// A pest failure as a syntax error that says, in words, what was expected and what was found.
pub(super) fn syntax_error(src: &str, err: pest::error::Error<Rule>) -> Error {
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
