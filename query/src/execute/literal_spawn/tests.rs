//! A script of SPAWNs changes the world and fails exactly as its statements run one by one
//! through [`Database::execute`] (the general path: syntax tree, binder, plan), whether or
//! not the literal path takes them.

use proptest::prelude::*;

use crate::{Database, Error, ResultSet};

const SCHEMA: &str = "CREATE COMPONENT A (x f32, n i8, s string, b bool, e entity); CREATE COMPONENT T; \
     CREATE COMPONENT R (to entity REFERENCES)";

/// Field values: plain literals (the literal path) and others (escapes, expressions,
/// exponents, parameters: the general path), of the right type and not.
const VALUES: &[&str] =
    &["1", "-3", "- 7", "300", "2.5", "-0.0", "1e3", "'red'", "\"x\"", "'a\\'b'", "true", "null", "1 + 1", "$1", "0v0"];
const FIELDS: &[&str] = &["x", "n", "s", "b", "e", "to", "zz"];
const COMPONENTS: &[&str] = &["A", "T", "R", "Nope", "a", "select"];

fn component() -> impl Strategy<Value = String> {
    let field = (prop::sample::select(FIELDS), prop::sample::select(VALUES)).prop_map(|(f, v)| format!("{f}: {v}"));
    (prop::sample::select(COMPONENTS), prop::option::of(prop::collection::vec(field, 0..4))).prop_map(|(c, fields)| {
        match fields {
            Some(fields) => format!("{c} {{{}}}", fields.join(", ")),
            None => c.to_string(),
        }
    })
}

fn spawn() -> impl Strategy<Value = String> {
    prop::collection::vec(component(), 0..4).prop_map(|cs| format!("SPAWN {}", cs.join(", ")))
}

/// What the world holds, as answers.
fn dump(db: &Database) -> Vec<ResultSet> {
    [
        "SELECT entity, A.x, A.n, A.s, A.b, A.e FROM A",
        "SELECT entity FROM T",
        "SELECT entity, R.to FROM R",
        "SHOW TABLES",
    ]
    .iter()
    .map(|q| db.query(q, ()).unwrap())
    .collect()
}

fn same_error(a: &Error, b: &Error) {
    assert_eq!((a.kind, &a.message, a.span, &a.suggestion), (b.kind, &b.message, b.span, &b.suggestion));
}

/// Runs `statements` as one script and one by one; both must agree.
fn compare(statements: &[String]) {
    let mut script = String::new();
    let mut starts = Vec::new();
    for s in statements {
        starts.push(script.len());
        script.push_str(s);
        script.push_str(";\n");
    }
    let mut whole = Database::new();
    whole.execute_script(SCHEMA).unwrap();
    let mut each = Database::new();
    each.execute_script(SCHEMA).unwrap();
    let got = whole.execute_script(&script);
    if let Err(syntax) = crate::parse::parse_script(&script) {
        // A script that does not parse runs nothing.
        same_error(&got.expect_err("a syntax error"), &syntax);
        assert_eq!(dump(&whole), dump(&each), "script {script:?}");
        return;
    }
    let mut results = Vec::new();
    let mut failed = None;
    for (s, &start) in statements.iter().zip(&starts) {
        match each.execute(s, ()) {
            Ok(rs) => results.push(rs),
            Err(mut e) => {
                e.span = e.span.map(|sp| crate::Span::new(sp.start + start, sp.end + start));
                failed = Some(e);
                break;
            }
        }
    }
    match (got, failed) {
        (Ok(got), None) => assert_eq!(got, results),
        (Err(got), Some(expected)) => same_error(&got, &expected),
        (got, expected) => panic!("script {script:?}: {got:?}, one by one {expected:?}"),
    }
    assert_eq!(dump(&whole), dump(&each), "script {script:?}");
}

#[test]
fn mixed_components_and_errors_agree() {
    let ok = |s: &str| s.to_string();
    compare(&[ok("SPAWN A {x: 1.5, n: -3, s: 'red', b: true, e: null}, T"), ok("SPAWN T"), ok("SPAWN A {n: 7}, T")]);
    for bad in
        ["SPAWN A {n: 300}", "SPAWN A {zz: 1}", "SPAWN Nope", "SPAWN A {n: 1, n: 2}", "SPAWN A, A", "SPAWN A {n: 'x'}"]
    {
        compare(&[ok("SPAWN T"), ok("SPAWN A {x: 2}"), ok(bad), ok("SPAWN T")]);
    }
    compare(&[ok("SPAWN R {to: null}"), ok("SPAWN R {to: 0v0}"), ok("SPAWN R {to: 5v0}")]);
}

#[test]
fn long_scripts_written_in_runs_agree() {
    // More SPAWNs than one run writes at once, with an error after the first runs.
    let valid = |i: usize| match i % 3 {
        0 => format!("SPAWN A {{x: {i}.25, n: {}, s: 'e{i}'}}, T", i % 100),
        1 => "SPAWN T".to_string(),
        _ => format!("SPAWN A {{n: -{}, x: 1 + {i}}}", i % 100),
    };
    let statements: Vec<String> = (0..2500).map(valid).collect();
    compare(&statements);
    let mut failing = statements;
    failing[2200] = "SPAWN A {n: 1000}".to_string();
    compare(&failing);
}

proptest! {
    #[test]
    fn scripts_of_spawns_run_as_their_statements(statements in prop::collection::vec(spawn(), 1..8)) {
        compare(&statements);
    }
}
