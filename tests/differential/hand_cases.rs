//! Hand-written cases with exact answers, worked out from the spec by hand: they check the
//! reference evaluator itself (a wrong reference would make the differential test blame the
//! engine, or miss its bugs). No query engine involved.

use ecsdb::query::parse::{Statement, parse_statement};
use ecsdb::{Entity, Value};

use super::compare::compare;
use super::model::{Model, Schema};
use super::mutate::{Effect, effect};
use super::reference::{RefError, Reference, collapse, like};

fn e(index: u32, generation: u32) -> Entity {
    Entity::from_parts(index, generation)
}

use crate::common::values::{b, f, i, s};
fn ent(index: u32, generation: u32) -> Value {
    Value::Entity(e(index, generation))
}
fn obj(fields: &[(&str, Value)]) -> Value {
    Value::Object(fields.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}
const N: Value = Value::Null;

/// The little world every case reads:
///
/// | entity | components |
/// |---|---|
/// | 0v0 | Position(1, 2, 3), Health(10, 20), Team 'red', Level 5, Player |
/// | 1v0 | Position(-1, 0.5, 0), Health(0.5, 10), Team 'blue', Level -3, Monster |
/// | 2v0 | Health(7.5, 7.5), Team 'red', Name 'ziggy', Frozen |
/// | 3v0 | Position(0, 0, 0), Level 0, Name 'zag', Score 10, Target(null, [1, 1], 0.5) |
/// | 4v1 | Team '', Level 5, Score -7, Flags(true, 3) |
/// | 5v0 | (nothing) |
pub fn hand_model() -> Model {
    let builder = Model::new(Schema::standard());
    let mut m = Model::new(Schema::standard());
    let mut put = |ent: Entity, comps: &[(&str, &[(&str, Value)])]| {
        let mut entry = std::collections::BTreeMap::new();
        for (c, fields) in comps {
            let given: Vec<(String, Value)> = fields.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            entry.insert(c.to_string(), builder.build(c, &given).unwrap());
        }
        m.entities.insert(ent, entry);
    };
    put(
        e(0, 0),
        &[
            ("Position", &[("x", f(1.0)), ("y", f(2.0)), ("z", f(3.0))]),
            ("Health", &[("hp", f(10.0)), ("max", f(20.0))]),
            ("Team", &[("name", s("red"))]),
            ("Level", &[("value", i(5))]),
            ("Player", &[]),
        ],
    );
    put(
        e(1, 0),
        &[
            ("Position", &[("x", f(-1.0)), ("y", f(0.5)), ("z", f(0.0))]),
            ("Health", &[("hp", f(0.5)), ("max", f(10.0))]),
            ("Team", &[("name", s("blue"))]),
            ("Level", &[("value", i(-3))]),
            ("Monster", &[]),
        ],
    );
    put(
        e(2, 0),
        &[
            ("Health", &[("hp", f(7.5)), ("max", f(7.5))]),
            ("Team", &[("name", s("red"))]),
            ("Name", &[("value", s("ziggy"))]),
            ("Frozen", &[]),
        ],
    );
    put(
        e(3, 0),
        &[
            ("Position", &[]),
            ("Level", &[("value", i(0))]),
            ("Name", &[("value", s("zag"))]),
            ("Score", &[("v", i(10))]),
            ("Target", &[("at", Value::Vec2([1.0, 1.0])), ("w", f(0.5))]),
        ],
    );
    put(
        e(4, 1),
        &[
            ("Team", &[("name", s(""))]),
            ("Level", &[("value", i(5))]),
            ("Score", &[("v", i(-7))]),
            ("Flags", &[("a", b(true)), ("b", i(3))]),
        ],
    );
    put(e(5, 0), &[]);
    m
}

/// Runs `text` through the reference: columns and the rows of the window.
fn run(model: &Model, text: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), RefError> {
    let Statement::Select(sel) = parse_statement(text).unwrap_or_else(|err| panic!("{text}: {}", err.render(text)))
    else {
        panic!("{text}: not a SELECT")
    };
    let exp = Reference::new(model).select(&sel, text)?;
    let (a, z) = exp.window;
    Ok((exp.columns.clone(), exp.rows[a..z].to_vec()))
}

/// Checks an ordered answer (sequence).
#[track_caller]
pub fn seq(model: &Model, text: &str, columns: &[&str], rows: Vec<Vec<Value>>) {
    let (cols, got) = run(model, text).unwrap_or_else(|err| panic!("{text}: {err:?}"));
    assert_eq!(cols, columns, "{text}: columns");
    assert_eq!(got, rows, "{text}: rows");
}

/// Checks an unordered answer (multiset), through the comparison used for the engine.
#[track_caller]
pub fn set(model: &Model, text: &str, columns: &[&str], rows: Vec<Vec<Value>>) {
    let Statement::Select(sel) = parse_statement(text).unwrap() else { panic!("{text}: not a SELECT") };
    let exp = Reference::new(model).select(&sel, text).unwrap_or_else(|err| panic!("{text}: {err:?}"));
    let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    if let Err(why) = compare(&exp, &columns, &rows) {
        panic!("{text}: {why}\nreference rows: {:?}", exp.rows);
    }
    // And the other way round: every row of ours is wanted.
    assert_eq!(exp.window.1 - exp.window.0, rows.len(), "{text}: row count");
}

#[test]
fn reference_terms_and_the_implicit_required_rule() {
    let m = hand_model();
    set(&m, "SELECT entity FROM Position", &["entity"], vec![vec![ent(0, 0)], vec![ent(1, 0)], vec![ent(3, 0)]]);
    // Level is required because WHERE names it.
    set(&m, "SELECT Team.name WHERE Level.value > 0", &["Team.name"], vec![vec![s("red")], vec![s("")]]);
    seq(
        &m,
        "SELECT entity, Position.x FROM Team, ?Position ORDER BY entity",
        &["entity", "Position.x"],
        vec![vec![ent(0, 0), f(1.0)], vec![ent(1, 0), f(-1.0)], vec![ent(2, 0), N], vec![ent(4, 1), N]],
    );
    set(&m, "SELECT entity FROM Health, !Frozen", &["entity"], vec![vec![ent(0, 0)], vec![ent(1, 0)]]);
    set(&m, "SELECT entity FROM Health, NOT Frozen", &["entity"], vec![vec![ent(0, 0)], vec![ent(1, 0)]]);
    set(
        &m,
        "SELECT entity, Player, Monster FROM Player | Monster",
        &["entity", "Player", "Monster"],
        vec![vec![ent(0, 0), obj(&[]), N], vec![ent(1, 0), N, obj(&[])]],
    );
    // `!C` with C's field named: not required, reads null.
    set(
        &m,
        "SELECT entity FROM Team, !Position WHERE Position.x IS NULL",
        &["entity"],
        vec![vec![ent(2, 0)], vec![ent(4, 1)]],
    );
    // has() does not require.
    seq(
        &m,
        "SELECT entity, has(Frozen) FROM Team ORDER BY entity",
        &["entity", "has(Frozen)"],
        vec![vec![ent(0, 0), b(false)], vec![ent(1, 0), b(false)], vec![ent(2, 0), b(true)], vec![ent(4, 1), b(false)]],
    );
    // No FROM, nothing named: every entity, the empty one too.
    seq(&m, "SELECT count(*)", &["count(*)"], vec![vec![i(6)]]);
    set(
        &m,
        "SELECT * FROM Level, ?Score, !Frozen, Player | Monster",
        &["entity", "Level", "Score", "Player", "Monster"],
        vec![
            vec![ent(0, 0), obj(&[("value", i(5))]), N, obj(&[]), N],
            vec![ent(1, 0), obj(&[("value", i(-3))]), N, N, obj(&[])],
        ],
    );
    set(
        &m,
        "Level, Score",
        &["entity", "Level", "Score"],
        vec![
            vec![ent(3, 0), obj(&[("value", i(0))]), obj(&[("v", i(10))])],
            vec![ent(4, 1), obj(&[("value", i(5))]), obj(&[("v", i(-7))])],
        ],
    );
    // `*` lists FROM terms only, not implicitly required components.
    set(
        &m,
        "SELECT * FROM Score WHERE Level.value > 0",
        &["entity", "Score"],
        vec![vec![ent(4, 1), obj(&[("v", i(-7))])]],
    );
}

#[test]
fn reference_null_logic_and_arithmetic() {
    let m = hand_model();
    // NOT null is null: the row without Position is dropped either way.
    set(&m, "SELECT entity FROM Team, ?Position WHERE NOT Position.x > 0", &["entity"], vec![vec![ent(1, 0)]]);
    set(
        &m,
        "SELECT entity FROM Team, ?Position WHERE Position.x > 0 OR Team.name = 'red'",
        &["entity"],
        vec![vec![ent(0, 0)], vec![ent(2, 0)]],
    );
    set(
        &m,
        "SELECT entity FROM Team, ?Position WHERE Position.x > 0 AND Team.name = 'red'",
        &["entity"],
        vec![vec![ent(0, 0)]],
    );
    seq(
        &m,
        "SELECT 7 / 2, -7 / 2, 7 % 3, -7 % 3, 7 / 0, 7.0 / 0, 7 % 0, 7.5 % 2, 1 / 0.0 FROM Player",
        &["7 / 2", "-7 / 2", "7 % 3", "-7 % 3", "7 / 0", "7.0 / 0", "7 % 0", "7.5 % 2", "1 / 0.0"],
        vec![vec![i(3), i(-3), i(1), i(-1), N, N, N, f(1.5), N]],
    );
    seq(
        &m,
        "SELECT 1 + 0.5, 3 = 3.0, 2 < 2.5, null = null, null IS NULL, 1 + null FROM Player",
        &["1 + 0.5", "3 = 3.0", "2 < 2.5", "null = null", "null IS NULL", "1 + null"],
        vec![vec![f(1.5), b(true), b(true), N, b(true), N]],
    );
    set(
        &m,
        "SELECT entity FROM Level WHERE Level.value BETWEEN 0 AND 5",
        &["entity"],
        vec![vec![ent(0, 0)], vec![ent(3, 0)], vec![ent(4, 1)]],
    );
    set(&m, "SELECT entity FROM Level WHERE Level.value NOT BETWEEN 0 AND 5", &["entity"], vec![vec![ent(1, 0)]]);
    set(
        &m,
        "SELECT entity FROM Level WHERE Level.value IN (5, null)",
        &["entity"],
        vec![vec![ent(0, 0)], vec![ent(4, 1)]],
    );
    set(&m, "SELECT entity FROM Level WHERE Level.value NOT IN (5, null)", &["entity"], vec![]);
    set(&m, "SELECT entity FROM Level WHERE Level.value NOT IN (5, 0)", &["entity"], vec![vec![ent(1, 0)]]);
    set(
        &m,
        "SELECT entity FROM Level WHERE Level.value NOT IN ()",
        &["entity"],
        vec![vec![ent(0, 0)], vec![ent(1, 0)], vec![ent(3, 0)], vec![ent(4, 1)]],
    );
    set(
        &m,
        "SELECT entity FROM Team, ?Position WHERE Position IS NULL",
        &["entity"],
        vec![vec![ent(2, 0)], vec![ent(4, 1)]],
    );
    seq(
        &m,
        "SELECT Team.name || '-' || Level.value FROM Team ORDER BY entity",
        &["Team.name || '-' || Level.value"],
        vec![vec![s("red-5")], vec![s("blue--3")], vec![s("-5")]],
    );
    // Comparing an entity field that is null.
    seq(
        &m,
        "SELECT Target.who IS NULL, Target.at, Target.w, Target.who = entity FROM Target",
        &["Target.who IS NULL", "Target.at", "Target.w", "Target.who = entity"],
        vec![vec![b(true), Value::Vec2([1.0, 1.0]), f(0.5), N]],
    );
}

#[test]
fn reference_functions_and_vectors() {
    let m = hand_model();
    seq(
        &m,
        "SELECT abs(-3), abs(-2.5), sqrt(16), sqrt(-1), floor(2.7), ceil(2.1), round(2.5), round(-2.5), \
         min(3, 2.5), max(1, 2), min(1, null), len('héllo'), lower('AbC'), upper('abc') FROM Player",
        &[
            "abs(-3)",
            "abs(-2.5)",
            "sqrt(16)",
            "sqrt(-1)",
            "floor(2.7)",
            "ceil(2.1)",
            "round(2.5)",
            "round(-2.5)",
            "min(3, 2.5)",
            "max(1, 2)",
            "min(1, null)",
            "len('héllo')",
            "lower('AbC')",
            "upper('abc')",
        ],
        vec![vec![i(3), f(2.5), f(4.0), N, f(2.0), f(3.0), f(3.0), f(-3.0), f(2.5), i(2), N, i(5), s("abc"), s("ABC")]],
    );
    seq(
        &m,
        "SELECT distance(Position, [1, 2, 3]) AS d FROM Position ORDER BY entity",
        &["d"],
        vec![vec![f(0.0)], vec![f(15.25f64.sqrt())], vec![f(14f64.sqrt())]],
    );
    set(
        &m,
        "SELECT entity WHERE within(Position, [0, 0, 0], 1.5)",
        &["entity"],
        vec![vec![ent(1, 0)], vec![ent(3, 0)]],
    );
    set(
        &m,
        "SELECT entity WHERE inside(Position, [-1, 0, 0], [1, 2, 3])",
        &["entity"],
        vec![vec![ent(0, 0)], vec![ent(1, 0)], vec![ent(3, 0)]],
    );
    set(
        &m,
        "SELECT entity WHERE inside(Position, [-1, 0, 0], [1, 1, 3])",
        &["entity"],
        vec![vec![ent(1, 0)], vec![ent(3, 0)]],
    );
    // Health (hp, max) is vector-like: a vec2 in expressions, an object as an item.
    set(&m, "SELECT entity WHERE Health = [7.5, 7.5]", &["entity"], vec![vec![ent(2, 0)]]);
    seq(
        &m,
        "SELECT Health FROM Health ORDER BY Health.hp LIMIT 1",
        &["Health"],
        vec![vec![obj(&[("hp", f(0.5)), ("max", f(10.0))])]],
    );
    set(&m, "SELECT Name.value WHERE Name.value LIKE 'z_g%'", &["Name.value"], vec![vec![s("ziggy")], vec![s("zag")]]);
    set(&m, "SELECT Name.value WHERE Name.value NOT LIKE '%g'", &["Name.value"], vec![vec![s("ziggy")]]);
    assert!(like("100%", "100%") && like("a_b", "a_b") && like("axb", "a_b") && !like("ab", "a_b"));
    assert!(like("héllo", "h_llo") && like("", "%") && !like("", "_") && like("abcabc", "%b%c"));
    assert!(!like("Zig", "zig%") && like("zig", "zig%"));
}

#[test]
fn reference_aggregates_and_groups() {
    let m = hand_model();
    seq(
        &m,
        "SELECT count(*), sum(Level.value), avg(Level.value), min(Level.value), max(Level.value) WHERE Level.value > 100",
        &["count(*)", "sum(Level.value)", "avg(Level.value)", "min(Level.value)", "max(Level.value)"],
        vec![vec![i(0), N, N, N, N]],
    );
    seq(
        &m,
        "SELECT sum(Level.value), avg(Level.value), count(Level.value), sum(Health.hp) FROM Level, ?Health",
        &["sum(Level.value)", "avg(Level.value)", "count(Level.value)", "sum(Health.hp)"],
        vec![vec![i(7), f(1.75), i(4), f(10.5)]],
    );
    seq(
        &m,
        "SELECT Team.name, count(*) AS n GROUP BY Team.name ORDER BY n DESC, Team.name",
        &["Team.name", "n"],
        vec![vec![s("red"), i(2)], vec![s(""), i(1)], vec![s("blue"), i(1)]],
    );
    seq(
        &m,
        "SELECT Position.x IS NULL AS nx, count(*) FROM Team, ?Position GROUP BY Position.x IS NULL ORDER BY nx",
        &["nx", "count(*)"],
        vec![vec![b(false), i(2)], vec![b(true), i(2)]],
    );
    seq(
        &m,
        "SELECT Level.value * 2, count(*), min(entity) FROM Level GROUP BY Level.value ORDER BY Level.value",
        &["Level.value * 2", "count(*)", "min(entity)"],
        vec![vec![i(-6), i(1), ent(1, 0)], vec![i(0), i(1), ent(3, 0)], vec![i(10), i(2), ent(0, 0)]],
    );
    seq(
        &m,
        "SELECT max(Name.value), min(Name.value) FROM Name",
        &["max(Name.value)", "min(Name.value)"],
        vec![vec![s("ziggy"), s("zag")]],
    );
    // Arithmetic over aggregates; int / int truncates; / count of nothing is null.
    seq(
        &m,
        "SELECT sum(Level.value) / count(*), count(*) * 2 + 1 FROM Level",
        &["sum(Level.value) / count(*)", "count(*) * 2 + 1"],
        vec![vec![i(1), i(9)]],
    );
    // Tie groups: `runs` says groups with equal keys may come in any order.
    let text = "SELECT Team.name, count(*) FROM Team GROUP BY Team.name ORDER BY count(*)";
    let Statement::Select(sel) = parse_statement(text).unwrap() else { unreachable!() };
    let exp = Reference::new(&m).select(&sel, text).unwrap();
    assert_eq!(exp.runs, vec![0, 0, 1]);
    let cols = vec!["Team.name".to_string(), "count(*)".to_string()];
    compare(&exp, &cols, &[vec![s("blue"), i(1)], vec![s(""), i(1)], vec![s("red"), i(2)]]).unwrap();
    assert!(compare(&exp, &cols, &[vec![s("red"), i(2)], vec![s(""), i(1)], vec![s("blue"), i(1)]]).is_err());
    // An ungrouped item is an error.
    assert!(matches!(run(&m, "SELECT Level.value, count(*) FROM Level"), Err(RefError::Invalid(_))));
}

#[test]
fn reference_order_limit_and_names() {
    let m = hand_model();
    seq(
        &m,
        "SELECT entity, Position.x FROM Team, ?Position ORDER BY Position.x",
        &["entity", "Position.x"],
        vec![vec![ent(2, 0), N], vec![ent(4, 1), N], vec![ent(1, 0), f(-1.0)], vec![ent(0, 0), f(1.0)]],
    );
    seq(
        &m,
        "SELECT entity FROM Team, ?Position ORDER BY Position.x DESC",
        &["entity"],
        vec![vec![ent(0, 0)], vec![ent(1, 0)], vec![ent(2, 0)], vec![ent(4, 1)]],
    );
    seq(
        &m,
        "SELECT entity FROM Level ORDER BY Level.value DESC LIMIT 2 OFFSET 1",
        &["entity"],
        vec![vec![ent(4, 1)], vec![ent(3, 0)]],
    );
    seq(&m, "SELECT entity FROM Level ORDER BY Level.value LIMIT 0", &["entity"], vec![]);
    seq(&m, "SELECT entity FROM Level ORDER BY Level.value OFFSET 3", &["entity"], vec![vec![ent(4, 1)]]);
    seq(&m, "SELECT entity FROM Level ORDER BY Level.value OFFSET 30", &["entity"], vec![]);
    seq(
        &m,
        "SELECT Level.value  +\n   1, Level.value AS lv, ENTITY, Level FROM Level ORDER BY lv LIMIT 1",
        &["Level.value + 1", "lv", "entity", "Level"],
        vec![vec![i(-2), i(-3), ent(1, 0), obj(&[("value", i(-3))])]],
    );
    seq(
        &m,
        "SELECT entity FROM Team ORDER BY Team.name = 'red' DESC, entity DESC",
        &["entity"],
        vec![vec![ent(2, 0)], vec![ent(0, 0)], vec![ent(4, 1)], vec![ent(1, 0)]],
    );
    // Keys over several types, ties broken by entity.
    seq(
        &m,
        "SELECT entity FROM Level ORDER BY Level.value = 5, has(Score)",
        &["entity"],
        vec![vec![ent(1, 0)], vec![ent(3, 0)], vec![ent(0, 0)], vec![ent(4, 1)]],
    );
    assert_eq!(collapse("a  +\n\tb || 'x  y'"), "a + b || 'x  y'");
    assert_eq!(collapse("(a)  "), "(a)");
    assert!(matches!(run(&m, "SELECT Helth.hp"), Err(RefError::Unknown("component", _))));
    assert!(matches!(run(&m, "SELECT Health.hpp"), Err(RefError::Unknown("field", _))));
}

#[test]
fn reference_mutations() {
    let m = hand_model();
    let count = |text: &str| -> (usize, Model) {
        match effect(&m, &parse_statement(text).unwrap()).unwrap_or_else(|err| panic!("{text}: {err:?}")) {
            Effect::Count(n, next) => (n, *next),
            Effect::Spawn(_) => panic!("{text}: a spawn"),
        }
    };
    let (n, next) = count("UPDATE Health SET hp = Health.hp + 10, max = 200 WHERE Team.name = 'red'");
    assert_eq!(n, 2);
    assert_eq!(next.entities[&e(2, 0)]["Health"], vec![("hp".to_string(), f(17.5)), ("max".to_string(), f(200.0))]);
    assert_eq!(next.entities[&e(1, 0)]["Health"], m.entities[&e(1, 0)]["Health"]);
    let (n, next) = count("REMOVE Frozen WHERE Health.hp > 1");
    assert_eq!(n, 1);
    assert!(!next.has(e(2, 0), "Frozen"));
    let (n, _) = count("REMOVE Frozen FROM 0v0");
    assert_eq!(n, 0);
    let (n, next) = count("ADD Frozen, Score {v: 3} TO 0v0");
    assert_eq!(n, 1);
    assert_eq!(next.entities[&e(0, 0)]["Score"], vec![("v".to_string(), i(3))]);
    let (n, next) = count("DESPAWN WHERE Level.value = 5");
    assert_eq!(n, 2);
    assert!(!next.is_alive(e(0, 0)) && !next.is_alive(e(4, 1)) && next.is_alive(e(1, 0)));
    let (n, next) = count("UPDATE Position SET x = Position.x + Health.hp FROM Position, !Frozen");
    assert_eq!(n, 2);
    assert_eq!(next.entities[&e(1, 0)]["Position"][0].1, f(-0.5));
    assert_eq!(next.entities[&e(3, 0)]["Position"][0].1, f(0.0));
    // The statement's component is required whatever FROM says.
    assert_eq!(count("UPDATE Level SET value = 1 FROM !Level").0, 0);
    assert_eq!(count("UPDATE Level SET value = 1 FROM ?Level").0, 4);
    assert_eq!(count("REMOVE Frozen FROM ?Frozen").0, 1);
    // An entity target lacking what the statement requires is not affected.
    assert_eq!(count("UPDATE Position SET x = Health.hp FROM 3v0").0, 0);
    assert_eq!(count("UPDATE Position SET x = Health.hp FROM 1v0").0, 1);
    // ADD converts its values for the targets it has.
    assert_eq!(count("ADD Level {value: 3.5} WHERE Level.value > 100").0, 0);
    let err = effect(&m, &parse_statement("ADD Level {value: 3.5} TO 5v0").unwrap()).unwrap_err();
    assert!(matches!(err, RefError::Store(_)), "{err:?}");
    // Atomic: one target whose value does not fit fails the whole statement.
    let err = effect(&m, &parse_statement("UPDATE Level SET value = Level.value * 1.5").unwrap()).unwrap_err();
    assert!(matches!(err, RefError::Store(_)), "{err:?}");
    let err = effect(&m, &parse_statement("DESPAWN 4v0").unwrap()).unwrap_err();
    assert_eq!(err, RefError::Stale(e(4, 0)));
    // f32 fields hold the f32 rounding.
    let (_, next) = count("UPDATE Health SET hp = 0.1 FROM 0v0");
    assert_eq!(next.entities[&e(0, 0)]["Health"][0].1, f(0.1f32 as f64));
    match effect(&m, &parse_statement("SPAWN Level {value: 3}, Player").unwrap()).unwrap() {
        Effect::Spawn(values) => assert_eq!(values.len(), 2),
        other => panic!("{other:?}"),
    }
    assert!(effect(&m, &parse_statement("SPAWN Flags {b: 300}").unwrap()).is_err());
}
