//! The fast path against pest: whatever the fast path takes, pest must parse to the very
//! same tree (spans included). Statements are generated from a small grammar of the
//! language, then mutated (tokens dropped, repeated, swapped, replaced; bytes inserted and
//! deleted), so both well-formed and broken text near the fast path's edges is compared.

use super::super::parser::{Entry, parse, parse_with};
use super::{parse_script_piece, parse_statement as fast};
use crate::parse::ast::Statement;
use crate::parse::{Script, ScriptItem};
use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};

/// pest's parse of one statement (the fast path bypassed).
fn pest(src: &str) -> Result<Statement, crate::Error> {
    parse(src, Entry::Statement).map(|mut statements| statements.pop().expect("one statement"))
}

/// Compares both parsers on `src`; whether the fast path took it.
fn check(src: &str) -> bool {
    let Some(statement) = fast(src) else { return false };
    match pest(src) {
        Ok(expected) => assert_eq!(statement, expected, "fast path and pest differ on {src:?}"),
        Err(e) => panic!("the fast path took {src:?}, which pest rejects:\n{}", e.render(src)),
    }
    true
}

/// A deterministic random source, so that a failure reproduces.
struct Rng(TestRng);

impl Rng {
    fn new(seed: u8) -> Rng {
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]))
    }

    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.below(options.len())]
    }

    /// One of the first `usual` options most of the time, else any.
    fn usually<'a>(&mut self, usual: usize, options: &[&'a str]) -> &'a str {
        let n = if self.chance(85) { usual } else { options.len() };
        options[self.below(n)]
    }
}

const NAMES: &[&str] = &[
    "Health",
    "hp",
    "Team",
    "name",
    "count",
    "Count",
    "optional",
    "by",
    "asc",
    "desc",
    "x",
    "_a1",
    "Order",
    "island",
    "nothing",
    "Tom",
    "fromage",
    "Selection",
    "index",
];
const RESERVED_WORDS: &[&str] = &["select", "FROM", "Where", "or", "AND", "not", "in", "is", "like", "as", "set", "on"];
const NUMBERS: &[&str] = &[
    "0",
    "5",
    "50",
    "007",
    "2.5",
    "0.125",
    "523.74115",
    "0.000012345",
    "9007199254740993",
    "9007199254740993.5",
    "0.00000000000000000000001",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999",
    "1e3",
    ".5",
    "2.",
    "12v0",
    "1.5e-3",
    "3x",
    "4.5.6",
];
const STRINGS: &[&str] =
    &["'red'", "\"blue\"", "''", "'a\\'b'", "'a\\q'", "'--x'", "'a;b'", "'\\n\\t'", "'(['", "'tab\tnew\nline'", "'x\\"];
const PARAMS: &[&str] = &["$1", "$0", "$name", "$_x", "$99999999999", "$", "$1a", "$a.b"];
const LITERAL_WORDS: &[&str] = &["true", "FALSE", "Null", "entity", "ENTITY"];
const INFIX: &[&str] =
    &["=", "==", "!=", "<>", "<", "<=", ">", ">=", "||", "+", "-", "*", "/", "%", "OR", "and", "Or", "AND"];
/// Tokens that may replace or join any other in a mutation.
const ODD: &[&str] = &[
    "--", "-- c\n", "\u{b}", "é", "'é'", "[1, 2]", "|", "!", "?", ";", ",", ".", "(", ")", "*", "$", "\\", "=", "!=",
    "BETWEEN", "IN", "LIKE", "NOT", "IS", "NULL", "AS", "ASC", "DESC", "BY", "GROUP", "ORDER", "LIMIT", "OFFSET",
    "FROM", "WHERE", "SELECT", "SPAWN", "EXPLAIN", "1", "'s'", "x", "count(*)", "f()", "A.b", "\"",
];

/// `word` in upper, lower or mixed case.
fn keyword(rng: &mut Rng, word: &str) -> String {
    match rng.below(4) {
        0 => word.to_ascii_lowercase(),
        1 => word.chars().enumerate().map(|(i, c)| if i % 2 == 0 { c.to_ascii_lowercase() } else { c }).collect(),
        _ => word.to_string(),
    }
}

fn push_keyword(rng: &mut Rng, out: &mut Vec<String>, word: &str) {
    out.push(keyword(rng, word));
}

fn operand(rng: &mut Rng, depth: usize, out: &mut Vec<String>) {
    match rng.below(if depth == 0 { 7 } else { 10 }) {
        0 => out.push(rng.pick(NAMES).into()),
        1 | 2 => out.extend([rng.pick(NAMES).into(), ".".into(), rng.pick(NAMES).into()]),
        3 => out.push(rng.usually(6, NUMBERS).into()),
        4 => out.push(rng.usually(8, STRINGS).into()),
        5 if rng.chance(50) => out.push(rng.usually(4, PARAMS).into()),
        5 => out.push(rng.pick(LITERAL_WORDS).into()),
        6 => {
            if rng.chance(90) {
                push_keyword(rng, out, "count");
                out.extend(["(".into(), "*".into(), ")".into()]);
            } else {
                out.push(rng.pick(RESERVED_WORDS).into());
            }
        }
        7 => {
            out.push("(".into());
            expr(rng, depth - 1, out);
            out.push(")".into());
        }
        8 => {
            out.extend([rng.pick(NAMES).into(), "(".into()]);
            for i in 0..rng.below(3) {
                if i > 0 {
                    out.push(",".into());
                }
                expr(rng, depth - 1, out);
            }
            out.push(")".into());
        }
        _ if rng.chance(70) => out.push(rng.pick(NAMES).into()),
        _ => {
            out.push("[".into());
            for i in 0..2 + rng.below(2) {
                if i > 0 {
                    out.push(",".into());
                }
                expr(rng, depth - 1, out);
            }
            out.push("]".into());
        }
    }
}

fn expr(rng: &mut Rng, depth: usize, out: &mut Vec<String>) {
    loop {
        while rng.chance(15) {
            if rng.chance(50) {
                push_keyword(rng, out, "NOT");
            } else {
                out.push("-".into());
            }
        }
        operand(rng, depth, out);
        match rng.below(60) {
            0 | 1 => {
                push_keyword(rng, out, "IS");
                if rng.chance(50) {
                    push_keyword(rng, out, "NOT");
                }
                push_keyword(rng, out, "NULL");
            }
            2 => {
                push_keyword(rng, out, "BETWEEN");
                operand(rng, 0, out);
                push_keyword(rng, out, "AND");
                operand(rng, 0, out);
            }
            3 => {
                push_keyword(rng, out, "IN");
                out.push("(".into());
                operand(rng, 0, out);
                out.push(")".into());
            }
            4 => {
                push_keyword(rng, out, "LIKE");
                out.push("'r%'".into());
            }
            _ => {}
        }
        if !rng.chance(45) {
            return;
        }
        let op = rng.pick(INFIX);
        push_keyword(rng, out, op);
    }
}

fn list(rng: &mut Rng, out: &mut Vec<String>, max: usize, mut item: impl FnMut(&mut Rng, &mut Vec<String>)) {
    for i in 0..1 + rng.below(max) {
        if i > 0 {
            out.push(",".into());
        }
        item(rng, out);
    }
}

fn term(rng: &mut Rng, out: &mut Vec<String>) {
    match rng.below(6) {
        0 => out.push(if rng.chance(50) { "!".into() } else { keyword(rng, "NOT") }),
        1 => out.push(if rng.chance(50) { "?".into() } else { keyword(rng, "OPTIONAL") }),
        _ => {}
    }
    out.push(rng.pick(NAMES).into());
    while rng.chance(15) {
        out.extend(["|".into(), rng.pick(NAMES).into()]);
    }
}

/// A SELECT in the tokens of the language (most well formed; some not, through the odd
/// operands and operators the generator mixes in).
fn select(rng: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    push_keyword(rng, &mut out, "SELECT");
    list(rng, &mut out, 3, |rng, out| {
        if rng.chance(15) {
            out.push("*".into());
            return;
        }
        expr(rng, 2, out);
        if rng.chance(20) {
            push_keyword(rng, out, "AS");
            out.push(rng.pick(NAMES).into());
        }
    });
    if rng.chance(50) {
        push_keyword(rng, &mut out, "FROM");
        list(rng, &mut out, 3, term);
    }
    if rng.chance(60) {
        push_keyword(rng, &mut out, "WHERE");
        expr(rng, 3, &mut out);
    }
    if rng.chance(15) {
        push_keyword(rng, &mut out, "GROUP");
        push_keyword(rng, &mut out, "BY");
        list(rng, &mut out, 2, |rng, out| expr(rng, 1, out));
    }
    if rng.chance(20) {
        push_keyword(rng, &mut out, "ORDER");
        push_keyword(rng, &mut out, "BY");
        list(rng, &mut out, 2, |rng, out| {
            expr(rng, 1, out);
            if rng.chance(50) {
                let direction = rng.pick(&["ASC", "DESC"]);
                push_keyword(rng, out, direction);
            }
        });
    }
    for clause in ["LIMIT", "OFFSET"] {
        if rng.chance(15) {
            push_keyword(rng, &mut out, clause);
            operand(rng, 0, &mut out);
        }
    }
    if rng.chance(20) {
        out.push(";".into());
    }
    out
}

/// `SPAWN` with component values whose fields are generated expressions.
fn spawn(rng: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    push_keyword(rng, &mut out, "SPAWN");
    if rng.chance(90) {
        list(rng, &mut out, 3, |rng, out| {
            out.push(rng.pick(NAMES).into());
            if rng.chance(70) {
                out.push("{".into());
                if rng.chance(85) {
                    list(rng, out, 3, |rng, out| {
                        out.push(rng.pick(NAMES).into());
                        out.push(":".into());
                        // (Literals alone are kept flat in scripts: often enough to test them.)
                        if rng.chance(50) {
                            if rng.chance(20) {
                                out.push("-".into());
                            }
                            operand(rng, 0, out);
                        } else {
                            expr(rng, 1, out);
                        }
                    });
                }
                out.push("}".into());
            }
        });
    }
    if rng.chance(20) {
        out.push(";".into());
    }
    out
}

/// `tokens` joined by whitespace of every kind, or none (most often where that does not
/// glue two words or numbers into one).
fn join(rng: &mut Rng, tokens: &[String]) -> String {
    let word_end = |t: &str| t.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    let word_start = |t: &str| t.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    let mut text = String::new();
    if rng.chance(10) {
        text.push_str(" \n");
    }
    for (i, token) in tokens.iter().enumerate() {
        if i > 0 {
            let glues = word_end(&tokens[i - 1]) && word_start(token);
            text.push_str(match rng.below(if glues { 400 } else { 40 }) {
                0..=5 => "",
                6 => "\n",
                7 => "\t",
                8 => "  ",
                9 => "\r\n",
                10 => "\u{c}",
                _ => " ",
            });
        }
        text.push_str(token);
    }
    if rng.chance(10) {
        text.push_str("\n ");
    }
    text
}

/// `tokens` with one random change.
fn mutate(rng: &mut Rng, tokens: &mut Vec<String>) {
    let at = rng.below(tokens.len());
    // A token of the same kind, which often keeps the statement well formed.
    let kin = [INFIX, NAMES, NUMBERS, STRINGS, PARAMS, LITERAL_WORDS]
        .into_iter()
        .find(|kind| kind.iter().any(|t| t.eq_ignore_ascii_case(&tokens[at])));
    if let Some(kind) = kin.filter(|_| rng.chance(50)) {
        tokens[at] = rng.pick(kind).into();
        return;
    }
    match rng.below(5) {
        0 => {
            tokens.remove(at);
        }
        1 => tokens.insert(at, tokens[at].clone()),
        2 if at + 1 < tokens.len() => tokens.swap(at, at + 1),
        3 => tokens[at] = rng.pick(ODD).into(),
        _ => tokens.insert(at, rng.pick(ODD).into()),
    }
}

/// `text` with one byte (or character) inserted or deleted.
fn mutate_bytes(rng: &mut Rng, text: &mut String) {
    let mut at = rng.below(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    if rng.chance(50) && at < text.len() {
        text.remove(at);
    } else {
        text.insert_str(at, rng.pick(&[" ", "(", ")", ",", "'", "-", "|", "!", ".", "a", "1", ";", "\\", "é", "\""]));
    }
}

/// How many generated statements to compare (`ECSDB_FASTPATH_CASES` for a longer run).
fn cases() -> usize {
    std::env::var("ECSDB_FASTPATH_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(4_000)
}

#[test]
fn generated_statements_parse_alike() {
    let mut rng = Rng::new(1);
    let (mut taken, mut pest_ok) = (0, 0);
    let cases = cases();
    for _ in 0..cases {
        let tokens = select(&mut rng);
        let text = join(&mut rng, &tokens);
        if check(&text) {
            taken += 1;
        }
        if pest(&text).is_ok() {
            pest_ok += 1;
        }
    }
    // The generator must exercise the fast path, not only its refusals.
    assert!(taken * 4 > cases, "the fast path took only {taken} of {cases} statements ({pest_ok} valid)");
}

#[test]
fn mutated_statements_parse_alike() {
    let mut rng = Rng::new(2);
    let mut taken = 0;
    let cases = cases();
    for _ in 0..cases {
        let mut tokens = select(&mut rng);
        mutate(&mut rng, &mut tokens);
        let mut text = join(&mut rng, &tokens);
        if check(&text) {
            taken += 1;
        }
        mutate_bytes(&mut rng, &mut text);
        if check(&text) {
            taken += 1;
        }
    }
    assert!(taken > cases / 25, "the fast path took only {taken} mutated statements of {}", 2 * cases);
}

#[test]
fn generated_spawns_parse_alike() {
    let mut rng = Rng::new(4);
    let mut taken = 0;
    let cases = cases() / 2;
    for _ in 0..cases {
        let mut tokens = spawn(&mut rng);
        taken += usize::from(check(&join(&mut rng, &tokens)));
        mutate(&mut rng, &mut tokens);
        let mut text = join(&mut rng, &tokens);
        check(&text);
        mutate_bytes(&mut rng, &mut text);
        check(&text);
    }
    assert!(taken * 4 > cases, "the fast path took only {taken} of {cases} SPAWNs");
}

/// Scripts of SPAWNs and SELECTs (some mutated): whatever the fast path takes, pest parses
/// to the same statements.
#[test]
fn scripts_parse_alike() {
    let mut rng = Rng::new(3);
    let (mut taken, mut literal) = (0, 0);
    let cases = cases() / 8;
    for case in 0..cases {
        let mut text = String::new();
        for _ in 0..1 + rng.below(5) {
            let mut tokens = if rng.chance(70) { spawn(&mut rng) } else { select(&mut rng) };
            if case % 2 == 1 {
                mutate(&mut rng, &mut tokens);
            }
            text.push_str(&join(&mut rng, &tokens));
            text.push_str(";\n");
        }
        let mut script = Script::default();
        if !parse_script_piece(&text, 0..text.len(), &mut script) {
            continue;
        }
        taken += 1;
        literal += script.items.iter().filter(|i| matches!(i, ScriptItem::Spawn(_))).count();
        let statements = script.into_statements(&text);
        match parse_with(&text, Entry::Script, false) {
            Ok(expected) => assert_eq!(statements, expected, "fast path and pest differ on {text:?}"),
            Err(e) => panic!("the fast path took the script {text:?}, which pest rejects:\n{}", e.render(&text)),
        }
    }
    assert!(taken * 20 > cases, "the fast path took only {taken} of {cases} scripts");
    assert!(literal * 20 > cases, "only {literal} SPAWNs of literals in {cases} scripts");
}

#[test]
fn common_statements_take_the_fast_path() {
    for src in [
        "SELECT count(*) WHERE Health.hp < 50 AND Team.name = 'red'",
        "SELECT * FROM Position, Velocity, !Frozen",
        "  select Name.value AS n, Level.value FROM Player WHERE Level.value >= $lvl ORDER BY n DESC, 2 LIMIT 3 OFFSET 1;  ",
        "SELECT Team.name, avg(Health.hp) FROM Team, Health GROUP BY Team.name",
        "SELECT entity, -5, - 2.5, -x, NOT a IS NOT NULL, (1 + 2) * 3 || 'x' FROM ?A, OPTIONAL B, NOT C, D|E | F",
        "SELECT a FROM Optional, OPTIONAL Optional, optional | x",
        "SELECT Health . hp, count ( * ), count(x), f(), g(1, (2), h(3)) FROM Health",
        "SELECT 'a\\'b\\n', \"q\" as x",
        "SPAWN",
        "SPAWN A;",
        "SPAWN Position {x: 1, y: -2.5, z: $z}, Velocity {}, Player, Name {value: 'z' || \"ig\"}",
    ] {
        assert!(check(src), "{src:?}");
    }
}

#[test]
fn the_rest_goes_to_pest() {
    for src in [
        "",
        "SELECT",
        "SELECT a -- comment",
        "SELECT 'é'",
        "SELECT a\u{b}FROM A",
        "SELECT a BETWEEN 1 AND 2",
        "SELECT a IN (1)",
        "SELECT a LIKE 'x'",
        "SELECT a NOT LIKE 'x'",
        "SELECT [1, 2]",
        "SELECT 12v0",
        "SELECT 1e3",
        "SELECT .5",
        "SELECT 2.",
        "SELECT 1as x",
        "SELECT 1from A",
        "SELECT 99999999999999999999",
        "SELECT 'a\\q'",
        "SELECT $0",
        "SELECT a FROM A || B",
        "SELECT a FROM A | | B",
        "SELECT a FROM ! = A",
        "SELECT a FROM NOT",
        "SELECT a;;",
        "SELECT a AS select",
        "SELECT count(*",
        "SELECT f(a,)",
        "SPAWN A {x: [1, 2]}",
        "SPAWN A {x: 1,}",
        "SPAWN A B",
        "SPAWN select",
        "EXPLAIN SELECT a",
        "A, B",
    ] {
        assert!(fast(src).is_none(), "{src:?}");
    }
    let deep = format!("SELECT {}1{}", "(".repeat(40), ")".repeat(40));
    assert!(fast(&deep).is_none());
    assert!(pest(&deep).is_ok());
}

#[test]
fn reserved_words_are_found_by_shape_then_word() {
    use super::super::parser::RESERVED;
    use super::is_reserved;
    let naive = |w: &str| RESERVED.iter().any(|r| r.eq_ignore_ascii_case(w));
    for word in RESERVED {
        for w in [word.to_string(), word.to_uppercase(), format!("{}{}", &word[..1].to_uppercase(), &word[1..])] {
            assert!(is_reserved(&w), "{w}");
        }
    }
    let mut rng = Rng::new(5);
    let letters = b"abcdefghijklmnopqrstuvwxyzSELCTFROMWHE_0123456789";
    for _ in 0..20_000 {
        let len = rng.below(9);
        let w: String = (0..len).map(|_| letters[rng.below(letters.len())] as char).collect();
        assert_eq!(is_reserved(&w), naive(&w), "{w:?}");
    }
    for w in ["Team", "Name", "Level", "Position", "trues", "nul", "x", "_", ""] {
        assert_eq!(is_reserved(w), naive(w), "{w:?}");
    }
}
