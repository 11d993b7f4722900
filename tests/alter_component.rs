//! `ALTER COMPONENT` and `RENAME COMPONENT` on a world with data, indexes, references and
//! systems: stored values follow the change, what depends on a field refuses it with its
//! name, a refused change leaves everything as it was, and the changed world saves and loads.

use ecsdb::query::{Database, ErrorKind};
use ecsdb::{SaveOptions, Value, World};

mod common;
use common::db::{db_with, int, rows, run};
use common::values::{f, i, s};

const SCHEMA: &str = "
    CREATE COMPONENT Unit (hp f32, name string DEFAULT 'grunt', lvl u8, boss entity REFERENCES ON DELETE SET NULL);
    CREATE COMPONENT Poison (dps f32);
    SPAWN Unit {hp: 10, name: 'chief', lvl: 3};
    SPAWN Unit {hp: 20, lvl: 1}, Poison {dps: 2};
    SPAWN Unit {hp: 30, lvl: 2}";

fn units(db: &Database) -> Vec<Vec<Value>> {
    rows(db, "SELECT * FROM Unit ORDER BY entity")
}

/// The error `text` gives, and the text it points at.
fn refused(db: &mut Database, text: &str) -> (ecsdb::query::Error, String) {
    let e = db.execute(text, ()).expect_err(text);
    let at = e.span.map(|sp| text[sp.start..sp.end].to_string()).unwrap_or_default();
    (e, at)
}

#[test]
fn an_added_field_holds_its_default_in_stored_values_and_is_read_and_written_like_the_others() {
    let mut db = db_with(SCHEMA);
    run(&mut db, "CREATE INDEX ON Unit (lvl) USING btree");
    run(&mut db, "ALTER COMPONENT Unit ADD FIELD armor f64 DEFAULT 1.5");
    assert_eq!(
        rows(&db, "SELECT Unit.hp, Unit.name, Unit.lvl, Unit.armor FROM Unit ORDER BY entity"),
        vec![
            vec![f(10.0), s("chief"), i(3), f(1.5)],
            vec![f(20.0), s("grunt"), i(1), f(1.5)],
            vec![f(30.0), s("grunt"), i(2), f(1.5)],
        ]
    );
    run(&mut db, "UPDATE Unit SET armor = Unit.armor * 2 WHERE Unit.lvl >= 2");
    assert_eq!(int(&db, "SELECT count(*) FROM Unit WHERE Unit.armor = 3"), 2);
    run(&mut db, "SPAWN Unit {hp: 1}");
    assert_eq!(rows(&db, "SELECT Unit.armor, Unit.name FROM Unit WHERE Unit.hp = 1"), vec![vec![f(1.5), s("grunt")]]);
    let d = rows(&db, "DESCRIBE Unit");
    assert_eq!(d.last().unwrap(), &vec![s("armor"), s("f64"), f(1.5), s("table")]);
    // The index on another field still answers, and is still chosen.
    assert_eq!(int(&db, "SELECT count(*) FROM Unit WHERE Unit.lvl = 2"), 1);
    let plan = common::db::explain(&db, "SELECT entity FROM Unit WHERE Unit.lvl = 2");
    assert!(plan.contains("Unit_lvl_btree"), "{plan}");
}

#[test]
fn drop_rename_and_defaults_change_the_component_and_keep_the_other_values() {
    let mut db = db_with(SCHEMA);
    run(&mut db, "ALTER COMPONENT Unit DROP FIELD name");
    assert_eq!(
        rows(&db, "SELECT Unit.hp, Unit.lvl, Unit.boss FROM Unit ORDER BY entity")[0],
        [f(10.0), i(3), Value::Null]
    );
    assert!(db.query("SELECT Unit.name FROM Unit", ()).is_err(), "the field is gone");
    run(&mut db, "ALTER COMPONENT Unit RENAME FIELD hp TO health");
    assert_eq!(int(&db, "SELECT count(*) FROM Unit WHERE Unit.health >= 20"), 2);
    run(&mut db, "ALTER COMPONENT Unit ALTER FIELD lvl SET DEFAULT 7");
    run(&mut db, "SPAWN Unit {health: 5}");
    assert_eq!(int(&db, "SELECT Unit.lvl FROM Unit WHERE Unit.health = 5"), 7);
    run(&mut db, "ALTER COMPONENT Unit ALTER FIELD lvl DROP DEFAULT");
    run(&mut db, "SPAWN Unit {health: 6}");
    assert_eq!(int(&db, "SELECT Unit.lvl FROM Unit WHERE Unit.health = 6"), 0);
    run(&mut db, "RENAME COMPONENT Unit TO Soldier");
    assert_eq!(int(&db, "SELECT count(*) FROM Soldier"), 5);
    assert!(db.query("SELECT count(*) FROM Unit", ()).is_err());
    // The reference followed its field through the changes.
    let boss = common::db::spawned(&mut db, "SPAWN Soldier {health: 99}");
    run(&mut db, &format!("UPDATE Soldier SET boss = {boss} WHERE Soldier.health = 5"));
    run(&mut db, &format!("DESPAWN {boss}"));
    assert_eq!(rows(&db, "SELECT Soldier.boss FROM Soldier WHERE Soldier.health = 5"), vec![vec![Value::Null]]);
    // An added entity field can be declared a reference as it is added.
    run(&mut db, "ALTER COMPONENT Soldier ADD FIELD mentor entity REFERENCES ON DELETE SET NULL");
    let mentor = common::db::spawned(&mut db, "SPAWN Soldier {health: 98}");
    run(&mut db, &format!("UPDATE Soldier SET mentor = {mentor} WHERE Soldier.health = 6"));
    let (e, _) = refused(&mut db, "UPDATE Soldier SET mentor = 999v9 WHERE Soldier.health = 6");
    assert_eq!(e.kind, ErrorKind::StaleEntity, "a dead target is refused: {e}");
    run(&mut db, &format!("DESPAWN {mentor}"));
    assert_eq!(rows(&db, "SELECT Soldier.mentor FROM Soldier WHERE Soldier.health = 6"), vec![vec![Value::Null]]);
}

#[test]
fn systems_follow_a_change_they_survive_and_refuse_one_they_do_not() {
    let mut db = db_with(SCHEMA);
    run(&mut db, "CREATE SYSTEM poison AS UPDATE Unit SET hp = Unit.hp - Poison.dps * $dt FROM Unit, Poison");
    db.tick(1, 1.0).unwrap();
    // Adding a field moves every value: the system is planned again and still writes `hp`.
    run(&mut db, "ALTER COMPONENT Unit ADD FIELD shield f32 DEFAULT 5");
    let failures = db.tick(1, 1.0).unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(rows(&db, "SELECT Unit.hp, Unit.shield FROM Unit, Poison"), vec![vec![f(16.0), f(5.0)]]);
    let before = units(&db);
    for (text, needle) in [
        ("ALTER COMPONENT Unit DROP FIELD hp", "system 'poison' depends on it"),
        ("ALTER COMPONENT Unit RENAME FIELD hp TO life", "system 'poison' depends on it"),
        ("RENAME COMPONENT Poison TO Venom", "system 'poison' depends on it"),
    ] {
        let (e, at) = refused(&mut db, text);
        assert_eq!(e.kind, ErrorKind::Constraint, "{text}: {e}");
        assert!(e.message.contains(needle), "{text}: {}", e.message);
        assert_eq!(at, text, "{text}: the error points at the statement");
        assert_eq!(units(&db), before, "{text}: nothing changed");
    }
    assert!(db.tick(1, 1.0).unwrap().is_empty());
    assert_eq!(int(&db, "SELECT count(*) FROM Unit WHERE Unit.hp = 14"), 1, "the system still runs");
    // Once the system is gone, the field can go.
    run(&mut db, "DROP SYSTEM poison");
    run(&mut db, "ALTER COMPONENT Unit DROP FIELD hp");
}

#[test]
fn an_index_or_a_reference_on_a_field_keeps_it_and_the_error_names_it() {
    let mut db = db_with(SCHEMA);
    run(&mut db, "CREATE INDEX by_lvl ON Unit (lvl) USING bitmap");
    let before = units(&db);
    let (e, _) = refused(&mut db, "ALTER COMPONENT Unit DROP FIELD lvl");
    assert!(e.message.contains("index 'by_lvl'"), "{}", e.message);
    let (e, _) = refused(&mut db, "ALTER COMPONENT Unit DROP FIELD boss");
    assert!(e.message.contains("reference"), "{}", e.message);
    assert_eq!(units(&db), before);
    // A rename carries the index along: it keeps its name and answers on the new one.
    run(&mut db, "ALTER COMPONENT Unit RENAME FIELD lvl TO level");
    let shown = rows(&db, "SHOW INDEXES");
    assert_eq!(shown[0][..4], [s("by_lvl"), s("bitmap"), s("Unit"), s("level")]);
    let plan = common::db::explain(&db, "SELECT entity FROM Unit WHERE Unit.level = 1");
    assert!(plan.contains("by_lvl"), "{plan}");
    assert_eq!(int(&db, "SELECT count(*) FROM Unit WHERE Unit.level = 1"), 1);
}

#[test]
fn bad_changes_are_errors_at_their_text_with_hints_and_change_nothing() {
    let mut db = db_with(SCHEMA);
    let before = units(&db);
    for (text, kind, at, needle) in [
        ("ALTER COMPONENT Unit DROP FIELD hpp", ErrorKind::UnknownField, "hpp", "has no field 'hpp'"),
        ("ALTER COMPONENT Unit RENAME FIELD lvl TO hp", ErrorKind::Constraint, "hp", "already has a field 'hp'"),
        ("ALTER COMPONENT Unit ADD FIELD name string", ErrorKind::Constraint, "name", "already has a field"),
        ("ALTER COMPONENT Unit ADD FIELD x u8 DEFAULT 300", ErrorKind::Type, "300", "of type u8"),
        ("ALTER COMPONENT Unit ADD FIELD x f32 REFERENCES", ErrorKind::Type, "REFERENCES", "only an entity field"),
        ("ALTER COMPONENT Unit ALTER FIELD lvl SET DEFAULT 'x'", ErrorKind::Type, "'x'", "of type u8"),
        ("ALTER COMPONENT Unit ADD FIELD x quux", ErrorKind::Type, "quux", "unknown field type"),
        ("ALTER COMPONENT Unti DROP FIELD hp", ErrorKind::UnknownComponent, "Unti", "Unti"),
        ("RENAME COMPONENT Unit TO Poison", ErrorKind::Constraint, "Poison", "already exists"),
    ] {
        let (e, pointed) = refused(&mut db, text);
        assert_eq!(e.kind, kind, "{text}: {e}");
        assert_eq!(pointed, at, "{text}: {e}");
        assert!(e.message.contains(needle), "{text}: {}", e.message);
        assert_eq!(units(&db), before, "{text}: nothing changed");
    }
    let (e, _) = refused(&mut db, "ALTER COMPONENT Unit DROP FIELD hpp");
    assert_eq!(e.suggestion.as_deref(), Some("hp"));
    let (e, _) = refused(&mut db, "ALTER COMPONENT Unit FROB FIELD hp");
    assert_eq!(e.kind, ErrorKind::Syntax, "{e}");
}

#[test]
fn statements_prepared_before_a_change_are_prepared_again_or_refuse_to_run() {
    let mut db = db_with(SCHEMA);
    let text = "SELECT Unit.lvl FROM Unit WHERE Unit.hp > 15 ORDER BY entity";
    assert_eq!(rows(&db, text), vec![vec![i(1)], vec![i(2)]]);
    let mut held = db.prepare(text).unwrap();
    run(&mut db, "ALTER COMPONENT Unit ADD FIELD extra string DEFAULT 'e'");
    // The statement cache plans the text again; a held statement says to prepare it again.
    assert_eq!(rows(&db, text), vec![vec![i(1)], vec![i(2)]]);
    let e = held.query(&db, ()).unwrap_err();
    assert!(e.message.contains("prepare it again"), "{e}");
    let mut again = db.prepare(text).unwrap();
    assert_eq!(again.query(&db, ()).unwrap().rows, vec![vec![i(1)], vec![i(2)]]);
}

#[test]
fn a_script_can_migrate_between_spawns_and_the_world_saves_and_loads_changed() {
    let mut db = db_with(SCHEMA);
    db.execute_script(
        "SPAWN Unit {hp: 40}; SPAWN Unit {hp: 41};
         ALTER COMPONENT Unit ADD FIELD mana i32 DEFAULT 50;
         SPAWN Unit {hp: 42, mana: 7}; SPAWN Unit {hp: 43};
         ALTER COMPONENT Unit DROP FIELD name;
         CREATE SYSTEM regen AS UPDATE Unit SET mana = Unit.mana + 1",
    )
    .unwrap();
    assert_eq!(
        rows(&db, "SELECT Unit.hp, Unit.mana FROM Unit WHERE Unit.hp >= 40 ORDER BY Unit.hp"),
        vec![vec![f(40.0), i(50)], vec![f(41.0), i(50)], vec![f(42.0), i(7)], vec![f(43.0), i(50)]]
    );
    let bytes = db.world().save_to_vec(&SaveOptions::default()).unwrap();
    let mut loaded = Database::from_world(World::load_from_bytes(&bytes).unwrap());
    assert_eq!(units(&loaded), units(&db));
    assert_eq!(rows(&loaded, "DESCRIBE Unit"), rows(&db, "DESCRIBE Unit"));
    assert!(loaded.tick(1, 0.1).unwrap().is_empty());
    assert_eq!(int(&loaded, "SELECT Unit.mana FROM Unit WHERE Unit.hp = 42"), 8);
}

#[test]
fn a_field_changes_type_losslessly_or_with_using_and_a_value_that_does_not_fit_changes_nothing() {
    let mut db = db_with(SCHEMA);
    run(&mut db, "CREATE SYSTEM grow AS UPDATE Unit SET lvl = Unit.lvl + 1");
    // A wider type holds every value: no USING needed.
    run(&mut db, "ALTER COMPONENT Unit ALTER FIELD lvl TYPE u32");
    assert_eq!(rows(&db, "DESCRIBE Unit")[2], vec![s("lvl"), s("u32"), Value::Null, s("table")]);
    run(&mut db, "UPDATE Unit SET lvl = 100000 WHERE Unit.hp = 30");
    assert_eq!(
        rows(&db, "SELECT Unit.lvl FROM Unit ORDER BY entity"),
        vec![vec![i(3)], vec![i(1)], vec![i(100000)]],
        "the values kept, and the wider range usable"
    );
    assert!(db.tick(1, 0.1).unwrap().is_empty(), "the system was planned again");
    assert_eq!(int(&db, "SELECT Unit.lvl FROM Unit WHERE Unit.hp = 30"), 100001);
    // A narrower or other type needs USING.
    let (e, at) = refused(&mut db, "ALTER COMPONENT Unit ALTER FIELD hp TYPE i32");
    assert_eq!((e.kind, at.as_str()), (ErrorKind::Type, "i32"), "{e}");
    assert!(e.message.contains("could lose information") && e.message.contains("USING"), "{}", e.message);
    run(&mut db, "ALTER COMPONENT Unit ALTER FIELD hp TYPE i32 USING round(Unit.hp / 3)");
    assert_eq!(rows(&db, "SELECT Unit.hp FROM Unit ORDER BY entity"), vec![vec![i(3)], vec![i(7)], vec![i(10)]]);
    run(&mut db, "ALTER COMPONENT Unit ALTER FIELD name TYPE string USING Unit.name || '!'");
    assert_eq!(int(&db, "SELECT count(*) FROM Unit WHERE Unit.name = 'grunt!'"), 2);
    // A value that does not fit the new type: an error at USING naming the entity, and
    // nothing changed.
    let before = units(&db);
    let (e, at) = refused(&mut db, "ALTER COMPONENT Unit ALTER FIELD lvl TYPE u8 USING Unit.lvl * 100");
    assert_eq!((e.kind, at.as_str()), (ErrorKind::Type, "Unit.lvl * 100"), "{e}");
    assert!(e.message.contains("of entity") && e.message.contains("as u8"), "{}", e.message);
    assert_eq!(units(&db), before);
    // An index on the field keeps it.
    run(&mut db, "CREATE INDEX ON Unit (hp) USING btree");
    let (e, _) = refused(&mut db, "ALTER COMPONENT Unit ALTER FIELD hp TYPE i64");
    assert!(e.message.contains("Unit_hp_btree"), "{}", e.message);
    assert_eq!(units(&db), before);
}
