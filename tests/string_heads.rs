//! Differential test of the string heads that `LIKE` and string `=` scan (each row's first
//! seven bytes and length, kept by the column between statements): a world changed through
//! every write path (typed `get_mut` and `query_mut`, text UPDATE, bulk DESPAWN, ADD and REMOVE
//! that move rows between tables, single despawns, spawns, `clear`), and after each round the
//! text answers of random patterns (`LIKE`, `=`, `!=`, `IN`) must equal a plain scan of the strings, and every table's
//! heads must equal the heads of its current values.

use ecsdb::query::Database;
use ecsdb::storage::{TableId, string_head};
use ecsdb::{Component, Entity, World};

mod common;
use common::rng::Rng;

#[derive(Component, Clone, Debug)]
struct Name {
    value: String,
}
#[derive(Component, Clone, Copy, Debug)]
struct Health {
    hp: i32,
}
#[derive(Component, Clone, Copy, Debug)]
struct Frozen;

/// Names of every length around the head's seven bytes, sharing prefixes, some multi-byte.
const WORDS: [&str; 16] = [
    "",
    "z",
    "zi",
    "zig",
    "zigzag",
    "zigzagz",
    "zigzagzag",
    "zigzagzig",
    "orc",
    "orcs",
    "orchestra",
    "é",
    "éé",
    "zé",
    "ziggurat",
    "zigzagzagzag",
];

/// Patterns: prefixes and exact strings inside and past a head, suffixes, substrings and
/// wildcards (matched on the heads of strings of up to seven bytes, on the strings past that).
const PATTERNS: [&str; 18] = [
    "z%",
    "zi%",
    "zig%",
    "zigzagz%",
    "zigzagza%",
    "zi",
    "orc",
    "orchestra",
    "",
    "é%",
    "%zag",
    "%g%",
    "z_g%",
    "zigzagzag",
    "%é",
    "%estra",
    "%",
    "_",
];

/// `LIKE` by its definition: `%` any run of characters, `_` one character, the rest itself.
fn reference_like(s: &str, pattern: &str) -> bool {
    fn go(s: &[char], p: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('%', rest)) => (0..=s.len()).any(|i| go(&s[i..], rest)),
            Some(('_', rest)) => !s.is_empty() && go(&s[1..], rest),
            Some((c, rest)) => s.first() == Some(c) && go(&s[1..], rest),
        }
    }
    go(&s.chars().collect::<Vec<_>>(), &pattern.chars().collect::<Vec<_>>())
}

fn count(db: &Database, text: &str) -> i64 {
    match db.query(text, ()).unwrap_or_else(|e| panic!("{}", e.render(text))).rows[0][0] {
        ecsdb::Value::Int(n) => n,
        ref other => panic!("count(*) gave {other:?}"),
    }
}

/// Every text answer against a scan of the strings, and every table's heads against its values.
fn check(db: &Database, round: usize) {
    let world = db.world();
    let names: Vec<String> = world.query::<&Name>().map(|n| n.value.clone()).collect();
    for p in PATTERNS {
        let like = count(db, &format!("SELECT count(*) WHERE Name.value LIKE '{p}'"));
        let want = names.iter().filter(|s| reference_like(s, p)).count() as i64;
        assert_eq!(like, want, "round {round}: LIKE '{p}'");
        let not_like = count(db, &format!("SELECT count(*) WHERE Name.value NOT LIKE '{p}'"));
        assert_eq!(not_like, names.len() as i64 - want, "round {round}: NOT LIKE '{p}'");
        if !p.contains('%') && !p.contains('_') {
            let eq = count(db, &format!("SELECT count(*) WHERE Name.value = '{p}'"));
            let ne = count(db, &format!("SELECT count(*) WHERE '{p}' != Name.value"));
            assert_eq!(eq, like, "round {round}: = '{p}'");
            assert_eq!(ne, names.len() as i64 - like, "round {round}: != '{p}'");
        }
    }
    // `IN` of strings: one exact test a string (a null in the list goes to the evaluator).
    let listed = ["zi", "orc", "zigzagzag", "é", "nope"];
    let want = names.iter().filter(|s| listed.contains(&s.as_str())).count() as i64;
    let list = listed.map(|s| format!("'{s}'")).join(", ");
    assert_eq!(count(db, &format!("SELECT count(*) WHERE Name.value IN ({list})")), want, "round {round}: IN");
    let not_in = count(db, &format!("SELECT count(*) WHERE Name.value NOT IN ({list})"));
    assert_eq!(not_in, names.len() as i64 - want, "round {round}: NOT IN");
    assert_eq!(count(db, &format!("SELECT count(*) WHERE Name.value IN ({list}, null)")), want, "round {round}");
    assert_eq!(count(db, &format!("SELECT count(*) WHERE Name.value NOT IN ({list}, null)")), 0, "round {round}");
    let id = world.component_id("Name").unwrap();
    for (t, table) in world.tables().iter().enumerate() {
        if let Some(heads) = world.table_string_heads(TableId(t as u32), id, 0) {
            let column = world.table_field::<String>(TableId(t as u32), id, 0).unwrap();
            let want: Vec<u64> = column.iter().map(|s| string_head(s)).collect();
            assert_eq!(heads.as_slice(), want, "round {round}: heads of table {t} ({} rows)", table.len());
        }
    }
}

fn word(r: &mut Rng) -> String {
    r.pick(&WORDS).to_string()
}

#[test]
fn string_heads_follow_every_write_path() {
    let mut r = Rng::new(0x5eed_5eed);
    let mut world = World::new();
    let mut live: Vec<Entity> =
        world.spawn_batch((0..600).map(|i| (Name { value: WORDS[i % 16].into() }, Health { hp: i as i32 % 100 })));
    let mut db = Database::from_world(world);
    check(&db, 0);
    for round in 1..60 {
        for _ in 0..r.below(4) + 1 {
            match r.below(10) {
                0 => {
                    let world = db.world_mut();
                    for _ in 0..20 {
                        let e = *r.pick(&live);
                        if let Ok(mut n) = world.get_mut::<Name>(e) {
                            n.value = word(&mut r);
                        }
                    }
                }
                1 => {
                    let (keep, w) = (r.below(16), word(&mut r));
                    for mut n in db.world_mut().query_mut::<&mut Name>() {
                        if n.value.len() % 16 == keep {
                            n.value = w.clone();
                        }
                    }
                }
                2 => {
                    let (hp, w) = (r.below(100), word(&mut r));
                    db.execute(&format!("UPDATE Name SET value = '{w}' WHERE Health.hp < {hp}"), ()).unwrap();
                }
                3 => {
                    let hp = r.below(8);
                    db.execute(&format!("DESPAWN WHERE Health.hp = {hp}"), ()).unwrap();
                }
                4 => {
                    let hp = r.below(100);
                    db.execute(&format!("ADD Frozen WHERE Health.hp > {hp}"), ()).unwrap();
                }
                5 => {
                    let hp = r.below(100);
                    db.execute(&format!("REMOVE Frozen WHERE Health.hp < {hp}"), ()).unwrap();
                }
                6 => {
                    let world = db.world_mut();
                    for _ in 0..10 {
                        let e = *r.pick(&live);
                        let _ = world.despawn(e);
                    }
                }
                7 | 8 => {
                    let n = r.below(50) + 1;
                    let batch: Vec<(Name, Health)> =
                        (0..n).map(|_| (Name { value: word(&mut r) }, Health { hp: r.below(100) as i32 })).collect();
                    live.extend(db.world_mut().spawn_batch(batch));
                }
                _ => {
                    let world = db.world_mut();
                    for _ in 0..5 {
                        let e = *r.pick(&live);
                        let _ = world.insert(e, Frozen);
                    }
                }
            }
        }
        if round == 40 {
            db.world_mut().clear();
            live =
                db.world_mut().spawn_batch((0..100).map(|i| (Name { value: WORDS[i % 16].into() }, Health { hp: 50 })));
        }
        live.retain(|&e| db.world().is_alive(e));
        if live.is_empty() {
            live = db.world_mut().spawn_batch([(Name { value: "orc".into() }, Health { hp: 1 })]);
        }
        check(&db, round);
    }
}
