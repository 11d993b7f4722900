//! `DEFAULT` on component fields: what SPAWN and ADD write for fields they leave out, on every
//! write path (one statement, scripts of spawns, ADD over many entities), what DESCRIBE and
//! SHOW COMPONENTS say, and the errors of a default that does not fit (nothing defined).

use ecsdb::Value;
use ecsdb::query::{Database, ErrorKind};

mod common;
use common::db::{db_with, rows, run};
use common::values::{f, i, s};

const SCHEMA: &str = "
    CREATE COMPONENT Unit (hp f32 DEFAULT 100, name string DEFAULT 'grunt', lvl u8 DEFAULT 1 + 2,
        pos vec2 DEFAULT [1, -1], boss entity DEFAULT null REFERENCES ON DELETE SET NULL, kills i32);
    CREATE COMPONENT Link (to entity REFERENCES ON DELETE SET NULL DEFAULT null)";

#[test]
fn fields_left_out_take_their_defaults_on_every_write_path() {
    let mut db = db_with(SCHEMA);
    run(&mut db, "SPAWN Unit {kills: 3}");
    run(&mut db, "SPAWN Unit {name: 'chief', hp: 7.5}");
    // A script of spawns takes the bulk path.
    let script: String = (0..50).map(|k| format!("SPAWN Unit {{kills: {k}}};")).collect();
    db.execute_script(&script).unwrap();
    run(&mut db, "SPAWN Link {}");
    run(&mut db, "ADD Unit {kills: 9} WHERE has(Link)");
    let all = rows(&db, "SELECT Unit.hp, Unit.name, Unit.lvl, Unit.pos, Unit.boss, Unit.kills ORDER BY entity");
    assert_eq!(all.len(), 53);
    assert_eq!(all[0], vec![f(100.0), s("grunt"), i(3), Value::Vec2([1.0, -1.0]), Value::Null, i(3)]);
    assert_eq!(all[1][..3], [f(7.5), s("chief"), i(3)]);
    for row in &all[2..] {
        assert_eq!(row[..4], [f(100.0), s("grunt"), i(3), Value::Vec2([1.0, -1.0])]);
    }
    assert_eq!(all[52][5], i(9), "ADD wrote its field and the defaults");
    // Zeros where no default is declared: the chief's kills, and the script's first spawn's.
    assert_eq!(rows(&db, "SELECT count(*) FROM Unit WHERE Unit.kills = 0")[0][0], i(2));
}

#[test]
fn describe_and_show_components_give_the_defaults() {
    let db = db_with(SCHEMA);
    let d = rows(&db, "DESCRIBE Unit");
    assert_eq!(d[0], vec![s("hp"), s("f32"), f(100.0), s("table")]);
    assert_eq!(d[1], vec![s("name"), s("string"), s("grunt"), s("table")]);
    assert_eq!(d[2], vec![s("lvl"), s("u8"), i(3), s("table")]);
    assert_eq!(d[5], vec![s("kills"), s("i32"), Value::Null, s("table")]);
    let shown = rows(&db, "SHOW COMPONENTS");
    let unit = shown.iter().find(|r| r[0] == s("Unit")).unwrap();
    assert_eq!(
        unit[1],
        s("hp f32 DEFAULT 100.0, name string DEFAULT 'grunt', lvl u8 DEFAULT 3, pos vec2 DEFAULT [1.0, -1.0], \
           boss entity DEFAULT null, kills i32")
    );
    // The text SHOW COMPONENTS gives defines the same component again.
    let Value::Str(fields) = &unit[1] else { unreachable!() };
    let copy = db_with(&format!("CREATE COMPONENT Unit ({fields})"));
    assert_eq!(rows(&copy, "DESCRIBE Unit"), d);
}

#[test]
fn a_default_that_does_not_fit_is_an_error_at_its_text_and_defines_nothing() {
    for (text, needle, at) in [
        ("CREATE COMPONENT C (v u8 DEFAULT 300)", "cannot use int 300 as the default of 'C.v' of type u8", "300"),
        ("CREATE COMPONENT C (v f32 DEFAULT 'x')", "of type f32", "'x'"),
        ("CREATE COMPONENT C (v i32 DEFAULT null)", "of type i32", "null"),
        ("CREATE COMPONENT C (v f32 DEFAULT Unit.hp)", "must be a constant", "Unit.hp"),
        ("CREATE COMPONENT C (v f32 DEFAULT $1)", "must be a constant", "$1"),
    ] {
        let mut db = db_with(SCHEMA);
        let err = db.execute(text, ()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Type, "{text}: {err}");
        assert!(err.message.contains(needle), "{text}: {}", err.message);
        let span = err.span.unwrap_or_else(|| panic!("{text}: no position"));
        assert_eq!(&text[span.start..span.end], at, "{text}");
        assert!(db.query("DESCRIBE C", ()).is_err(), "{text}: C was defined");
    }
    let mut db = Database::new();
    let err = db.execute("CREATE COMPONENT C (v f32 DEFAULT)", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Syntax, "{err}");
}
