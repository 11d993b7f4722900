//! Golden tests of error messages as a person sees them: kind, line, column, the quoted line,
//! the caret under the offending text, and the "did you mean" hint.

mod common;

use common::db::run;

use ecsdb::Value;
use ecsdb::query::{Database, ErrorKind, Params};

fn world() -> Database {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT Position (x f32, y f32, z f32);
         CREATE COMPONENT Health (hp f32, max f32);
         CREATE COMPONENT Team (name string);
         CREATE COMPONENT Frozen;
         SPAWN Position {x: 1}, Health {hp: 5}, Team {name: 'red'};",
    )
    .unwrap();
    db
}

fn rendered(db: &mut Database, text: &str) -> String {
    match db.execute(text, ()) {
        Ok(rs) => panic!("{text} should fail, gave {rs:?}"),
        Err(e) => e.render(text),
    }
}

#[test]
fn unknown_names_suggest() {
    let mut db = world();
    let cases: &[(&str, &str)] = &[
        (
            "SELECT Helth.hp",
            "unknown component error at line 1, column 8: unknown component 'Helth'\n\
             SELECT Helth.hp\n       ^~~~~\nhint: did you mean 'Health'?",
        ),
        (
            "SELECT Health.hq FROM Health",
            "unknown field error at line 1, column 15: component 'Health' has no field 'hq'\n\
             SELECT Health.hq FROM Health\n              ^~\nhint: did you mean 'hp'?",
        ),
        (
            "SELECT entity\nFROM Positon, !Frozen",
            "unknown component error at line 2, column 6: unknown component 'Positon'\n\
             FROM Positon, !Frozen\n     ^~~~~~~\nhint: did you mean 'Position'?",
        ),
        (
            "SELECT entity WHERE sqr(Health.hp) > 1",
            "unknown function error at line 1, column 21: unknown function 'sqr'\n\
             SELECT entity WHERE sqr(Health.hp) > 1\n                    ^~~\nhint: did you mean 'sqrt'?",
        ),
        (
            "SELECT Xyzzy.a",
            "unknown component error at line 1, column 8: unknown component 'Xyzzy'\nSELECT Xyzzy.a\n       ^~~~~",
        ),
        (
            "UPDATE Health SET hpp = 1",
            "unknown field error at line 1, column 19: component 'Health' has no field 'hpp'\n\
             UPDATE Health SET hpp = 1\n                  ^~~\nhint: did you mean 'hp'?",
        ),
        (
            "SPAWN Team {nam: 'x'}",
            "unknown field error at line 1, column 13: component 'Team' has no field 'nam'\n\
             SPAWN Team {nam: 'x'}\n            ^~~\nhint: did you mean 'name'?",
        ),
        (
            "DESCRIBE Froze",
            "unknown component error at line 1, column 10: unknown component 'Froze'\n\
             DESCRIBE Froze\n         ^~~~~\nhint: did you mean 'Frozen'?",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(rendered(&mut db, text), *want, "\n{text}");
    }
}

#[test]
fn type_errors_point_at_the_expression() {
    let mut db = world();
    let cases: &[(&str, &str)] = &[
        (
            "SELECT Health.hp + Team.name",
            "type error at line 1, column 8: cannot apply '+' to float and string\n\
             SELECT Health.hp + Team.name\n       ^~~~~~~~~~~~~~~~~~~~~",
        ),
        (
            "SELECT entity WHERE Health.hp",
            "type error at line 1, column 21: WHERE needs a condition (bool), found float\n\
             SELECT entity WHERE Health.hp\n                    ^~~~~~~~~",
        ),
        (
            "SELECT entity WHERE Team.name = 3",
            "type error at line 1, column 21: cannot compare string with int\n\
             SELECT entity WHERE Team.name = 3\n                    ^~~~~~~~~~~~~",
        ),
        (
            "UPDATE Health SET hp = 'lots'",
            "type error at line 1, column 24: cannot store string in field 'Health.hp' of type f32\n\
             UPDATE Health SET hp = 'lots'\n                       ^~~~~~",
        ),
        (
            "SELECT Team.name, Health.hp GROUP BY Team.name",
            "type error at line 1, column 19: 'Health.hp' must appear in GROUP BY or be used in an aggregate function\n\
             SELECT Team.name, Health.hp GROUP BY Team.name\n                  ^~~~~~~~~",
        ),
        (
            "SELECT distance(Team, [1, 2])",
            "type error at line 1, column 17: component 'Team' is not a vector: only components with 2 or 3 numeric \
             fields read as vectors (use a field, like Team.<field>)\n\
             SELECT distance(Team, [1, 2])\n                ^~~~",
        ),
        (
            "SPAWN Health {hp: 2.5e300 * 10, max: Health.hp}",
            "type error at line 1, column 38: a constant is needed here: components and the entity cannot be read\n\
             SPAWN Health {hp: 2.5e300 * 10, max: Health.hp}\n                                     ^~~~~~~~~",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(rendered(&mut db, text), *want, "\n{text}");
    }
}

#[test]
fn runtime_and_target_errors() {
    let mut db = world();
    assert_eq!(
        rendered(&mut db, "DESPAWN 42v0"),
        "stale entity error at line 1, column 9: stale entity 42v0\nDESPAWN 42v0\n        ^~~~"
    );
    assert_eq!(
        rendered(&mut db, "SPAWN Health {hp: 1, hp: 2}"),
        "constraint error at line 1, column 22: field 'Health.hp' given twice\nSPAWN Health {hp: 1, hp: 2}\n                     ^~"
    );
    assert_eq!(
        rendered(&mut db, "SPAWN Team {name: 'a'}, Team"),
        "constraint error at line 1, column 25: component 'Team' given twice\nSPAWN Team {name: 'a'}, Team\n                        ^~~~"
    );
    let text = "SELECT entity WHERE Health.hp > $limit";
    let e = db.execute(text, ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Parameter);
    assert_eq!(
        e.render(text),
        "parameter error at line 1, column 33: no value bound for parameter $limit\n\
         SELECT entity WHERE Health.hp > $limit\n                                ^~~~~~"
    );
    // A parameter of the wrong type is found when it is bound, and points at the comparison.
    let e = db.execute(text, Params::new().set("limit", "high")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    assert_eq!(e.line_col(text), Some((1, 21)));
    // Conversions found at run time point at the value.
    let text = "UPDATE Position SET x = 1e300";
    let e = db.execute(text, ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    let text = "CREATE COMPONENT Tiny (v i8); SPAWN Tiny {v: 300}";
    let e = db.execute_script(text).unwrap_err();
    assert_eq!(
        e.render(text),
        "type error at line 1, column 46: cannot store int 300 in field 'Tiny.v' of type i8\n\
         CREATE COMPONENT Tiny (v i8); SPAWN Tiny {v: 300}\n                                             ^~~"
    );
}

#[test]
fn script_errors_are_relative_to_the_script() {
    let mut db = world();
    let text = "SELECT count(*);\nSELECT Helth.hp;\nSELECT 1";
    let e = db.execute_script(text).unwrap_err();
    assert_eq!(e.line_col(text), Some((2, 8)));
    assert_eq!(e.suggestion.as_deref(), Some("Health"));
    assert_eq!(e.to_string(), "unknown component 'Helth'; did you mean 'Health'?");
}

#[test]
fn index_statements() {
    let mut db = world();
    let rs = db.execute("CREATE INDEX ON Health (hp) USING btree", ()).unwrap();
    assert_eq!(rs.rows, vec![vec![Value::Str("Health_hp_btree".into())]]);
    let shown = db.execute("SHOW INDEXES", ()).unwrap();
    assert_eq!(shown.columns, ["name", "kind", "component", "fields", "entries", "memory_bytes"]);
    assert_eq!(
        shown.rows[0][..4],
        [
            Value::Str("Health_hp_btree".into()),
            Value::Str("btree".into()),
            Value::Str("Health".into()),
            Value::Str("hp".into()),
        ]
    );
    // a second index of the same name is refused, nothing changes
    assert!(db.execute("CREATE INDEX Health_hp_btree ON Health (hp) USING bitmap", ()).is_err());
    let e = db.execute("DROP INDEX Health_hp_btre", ()).unwrap_err();
    assert_eq!((e.kind, e.suggestion.as_deref()), (ErrorKind::UnknownIndex, Some("Health_hp_btree")));
    db.execute("DROP INDEX Health_hp_btree", ()).unwrap();
    assert!(run(&mut db, "SHOW INDEXES").is_empty());
}

#[test]
fn error_kinds_for_statements() {
    let mut db = world();
    let kind = |db: &mut Database, t: &str| db.execute(t, ()).unwrap_err().kind;
    assert_eq!(kind(&mut db, "SELEC 1"), ErrorKind::Syntax);
    assert_eq!(kind(&mut db, "DROP INDEX nope"), ErrorKind::UnknownIndex);
    assert_eq!(kind(&mut db, "CREATE INDEX ON Health (hp) USING octree"), ErrorKind::Unsupported);
    assert_eq!(kind(&mut db, "CREATE INDEX ON Health (hq) USING btree"), ErrorKind::UnknownField);
    assert_eq!(kind(&mut db, "SELECT $0"), ErrorKind::Parameter);
    assert_eq!(kind(&mut db, "SELECT has(Health.hp)"), ErrorKind::Type);
    assert_eq!(kind(&mut db, "SELECT count(1, 2)"), ErrorKind::Type);
    assert_eq!(kind(&mut db, "SELECT abs('x')"), ErrorKind::Type);
    assert_eq!(kind(&mut db, "SELECT [1, 'a']"), ErrorKind::Type);
    assert_eq!(kind(&mut db, "SELECT Position < [1, 2, 3]"), ErrorKind::Type);
    assert_eq!(kind(&mut db, "SELECT entity ORDER BY Position"), ErrorKind::Type);
    assert_eq!(kind(&mut db, "SELECT 'a' LIKE 3"), ErrorKind::Type);
    let e = db.query("DESPAWN 0v0", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Constraint);
    assert!(e.message.contains("mutates"), "{}", e.message);
}
