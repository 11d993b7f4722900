//! No input makes bind, plan or execute panic: random statements built from the language's
//! pieces (mostly well-formed, often ill-typed) run against a populated world, and every one
//! returns a result or an error. No error is an `Internal` one (those are the engine's bugs,
//! not the text's), and every error's span lies inside the text, on character boundaries.

use ecsdb::query::{Database, Error, ErrorKind, Params};
use ecsdb::{ComponentDef, FieldType};
use proptest::prelude::*;

/// Checks what running `text` returned: a result, or an error that is not `Internal` and
/// points inside `text`.
fn check<T>(text: &str, result: &Result<T, Error>) -> Result<(), TestCaseError> {
    let Err(e) = result else { return Ok(()) };
    prop_assert!(e.kind != ErrorKind::Internal, "an internal error for {text:?}: {e:?}");
    if let Some(span) = e.span {
        prop_assert!(
            span.start <= span.end
                && span.end <= text.len()
                && text.is_char_boundary(span.start)
                && text.is_char_boundary(span.end),
            "span {span:?} is not inside the text {text:?} ({} bytes): {e:?}",
            text.len()
        );
    }
    Ok(())
}

fn world() -> Database {
    let mut db = Database::new();
    db.world_mut()
        .define_component(&ComponentDef::new(
            "Ints",
            &[("a", FieldType::I8), ("b", FieldType::U64), ("c", FieldType::I64), ("on", FieldType::Bool)],
        ))
        .unwrap();
    db.world_mut()
        .define_component(&ComponentDef::new("Sp", &[("k", FieldType::U32), ("e", FieldType::Entity)]).sparse())
        .unwrap();
    db.execute_script(
        "CREATE COMPONENT Position (x f32, y f32, z f32);
         CREATE COMPONENT Health (hp f32, max f64);
         CREATE COMPONENT Team (name string);
         CREATE COMPONENT V2 (v vec2, w vec3);
         CREATE COMPONENT Frozen;
         SPAWN Position {x: 1, y: 2}, Health {hp: 10, max: 100}, Team {name: 'red'}, Ints {a: -3, b: 9223372036854775807, c: -9223372036854775808};
         SPAWN Position {x: 5}, Health {hp: 0}, Frozen, Sp {k: 4}, V2 {v: [1, 2]};
         SPAWN Team {name: ''}, Ints {a: 127, b: 0, c: 9223372036854775807, on: true}, Sp {k: 4294967295, e: 0v0};
         SPAWN;",
    )
    .unwrap();
    db
}

const FIELDS: &[&str] = &[
    "Position.x",
    "Position.y",
    "Health.hp",
    "Health.max",
    "Team.name",
    "Ints.a",
    "Ints.b",
    "Ints.c",
    "Ints.on",
    "Sp.k",
    "Sp.e",
    "V2.v",
    "V2.w",
    "entity",
    "Position",
    "Health",
    "Team",
    "V2",
    "Frozen",
    "Sp",
];
const LITERALS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2.5",
    "-0.0",
    "1e308",
    "9223372036854775807",
    "-9223372036854775808",
    "'red'",
    "''",
    "'%'",
    "true",
    "false",
    "null",
    "0v0",
    "3v1",
    "[1, 2]",
    "[1, 2, 3]",
    "$1",
    "$x",
];
const BINARY: &[&str] = &["+", "-", "*", "/", "%", "||", "=", "!=", "<", "<=", ">", ">=", "AND", "OR"];
/// Every built-in function (the language's own table, so a new one is fuzzed as soon as it
/// exists) and one that does not exist.
fn functions() -> Vec<&'static str> {
    ecsdb::query::BUILTIN_FUNCTIONS.iter().map(|f| f.name).chain(["nope"]).collect()
}

fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        proptest::sample::select(FIELDS).prop_map(str::to_string),
        proptest::sample::select(LITERALS).prop_map(str::to_string),
        Just("count(*)".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), proptest::sample::select(BINARY), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("NOT ({a})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            inner.clone().prop_map(|a| format!("({a}) IS NULL")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("({a}) BETWEEN ({b}) AND ({c})")),
            (inner.clone(), proptest::collection::vec(inner.clone(), 0..3))
                .prop_map(|(a, l)| format!("({a}) NOT IN ({})", l.join(", "))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) LIKE ({b})")),
            (proptest::sample::select(functions()), proptest::collection::vec(inner.clone(), 0..4))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
        ]
    })
}

fn terms() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("Position"),
            Just("!Frozen"),
            Just("?Health"),
            Just("Team | Sp"),
            Just("?Ints"),
            Just("!Sp"),
            Just("V2 | Frozen"),
        ],
        0..3,
    )
    .prop_map(|ts| if ts.is_empty() { String::new() } else { format!(" FROM {}", ts.join(", ")) })
}

fn select() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(expr(), 1..3),
        terms(),
        proptest::option::of(expr()),
        proptest::option::of(expr()),
        proptest::option::of((expr(), any::<bool>())),
        proptest::option::of(prop_oneof![
            Just("LIMIT 2"),
            Just("LIMIT $1"),
            Just("LIMIT 1 OFFSET 1"),
            Just("LIMIT -1")
        ]),
    )
        .prop_map(|(items, from, filter, group, order, limit)| {
            let mut s = format!("SELECT {}{from}", items.join(", "));
            if let Some(w) = filter {
                s.push_str(&format!(" WHERE {w}"));
            }
            if let Some(g) = group {
                s.push_str(&format!(" GROUP BY {g}"));
            }
            if let Some((o, desc)) = order {
                s.push_str(&format!(" ORDER BY {o}{}", if desc { " DESC" } else { "" }));
            }
            if let Some(l) = limit {
                s.push(' ');
                s.push_str(l);
            }
            s
        })
}

fn mutation() -> impl Strategy<Value = String> {
    (expr(), expr(), terms()).prop_flat_map(|(a, b, from)| {
        prop_oneof![
            Just(format!("UPDATE Health SET hp = {a}{from} WHERE {b}")),
            Just(format!("UPDATE Ints SET a = {a}, b = {b}")),
            Just(format!("ADD Sp {{k: {a}}}{from} WHERE {b}")),
            Just(format!("ADD Team {{name: {a}}} TO 1v0")),
            Just(format!("REMOVE Frozen, Sp{from} WHERE {b}")),
            Just(format!("DESPAWN{from} WHERE {b}")),
            Just(format!("SPAWN Position {{x: {a}}}, Ints {{c: {b}}}")),
            Just(format!("EXPLAIN SELECT {a}{from} WHERE {b} ORDER BY {a} LIMIT 3")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn selects_never_panic(text in select()) {
        let db = world();
        let params = Params::positional([ecsdb::Value::Int(1)]).set("x", "red");
        check(&text, &db.query(&text, &params))?;
        check(&text, &db.query(&text, ()))?;
    }

    #[test]
    fn mutations_never_panic(texts in proptest::collection::vec(mutation(), 1..4)) {
        let mut db = world();
        let params = Params::positional([ecsdb::Value::Float(2.5)]).set("x", ecsdb::Value::Null);
        for t in &texts {
            check(t, &db.execute(t, &params))?;
        }
        // The world stays queryable.
        prop_assert!(db.query("SELECT count(*)", ()).is_ok());
    }

    #[test]
    fn token_soup_never_panics(tokens in proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(FIELDS).prop_map(str::to_string),
            proptest::sample::select(LITERALS).prop_map(str::to_string),
            proptest::sample::select(BINARY).prop_map(str::to_string),
            proptest::sample::select(functions()).prop_map(str::to_string),
            proptest::sample::select(&["SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "LIMIT", "(", ")", ",", "*", "!", "?", "|", "{", "}", ":", "SPAWN", "UPDATE", "SET", "TO", "ADD", "DESPAWN", ";"][..]).prop_map(str::to_string),
        ],
        0..14,
    )) {
        let mut db = world();
        let text = tokens.join(" ");
        check(&text, &db.execute(&text, ()))?;
        check(&text, &db.execute_script(&text))?;
    }
}
