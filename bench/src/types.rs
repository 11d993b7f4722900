//! Types and schema evolution (issue 47's `types` suite; the workloads built so far).
//!
//! - `alter_add_field`: `ALTER COMPONENT Stats ADD FIELD armor f32 DEFAULT 1` on a world of
//!   1,000,000 entities holding `Stats (hp f32, mana f32, xp u32, lvl u8, team u8)` in four
//!   tables (a tag splits them). `ecsdb`: the statement through `Database::execute` on a world
//!   loaded fresh for every iteration (not timed), every value moved to the new layout and
//!   the old columns freed inside the timing. `ecsdb-load`: loading a snapshot of the same
//!   world from memory (`World::load_from_bytes`), the cost the issue bounds the change by:
//!   a migration must not cost more than reading that component back.
//! - `alter_add_field_str`: the same with a `name string` field in Stats (every value a
//!   distinct 10–16-byte string): the change clones each string, the load allocates it.

use ecsdb::query::Database;
use ecsdb::{ComponentDef, FieldType, SaveOptions, Value, World};

use crate::harness::{Suite, batched};

const N: usize = 1_000_000;

/// The world of `alter_add_field` (with a string field for `alter_add_field_str`), as
/// snapshot bytes.
fn stats_world(with_string: bool) -> Vec<u8> {
    let mut world = World::new();
    let mut fields = vec![
        ("hp", FieldType::F32),
        ("mana", FieldType::F32),
        ("xp", FieldType::U32),
        ("lvl", FieldType::U8),
        ("team", FieldType::U8),
    ];
    if with_string {
        fields.push(("name", FieldType::String));
    }
    let stats = ComponentDef::new("Stats", &fields);
    world.define_component(&stats).unwrap();
    for tag in ["A", "B", "C"] {
        world.define_component(&ComponentDef::new(tag, &[])).unwrap();
    }
    for i in 0..N {
        let mut fields = vec![
            ("hp", Value::Float((i % 100) as f64)),
            ("mana", Value::Float((i % 7) as f64)),
            ("xp", Value::Int(i as i64)),
            ("lvl", Value::Int((i % 50) as i64)),
            ("team", Value::Int((i % 4) as i64)),
        ];
        if with_string {
            fields.push(("name", Value::Str(format!("unit-{i}"))));
        }
        let tag: &[(&str, &[(&str, Value)])] = match i % 4 {
            0 => &[],
            1 => &[("A", &[])],
            2 => &[("B", &[])],
            _ => &[("C", &[])],
        };
        let mut components: Vec<(&str, &[(&str, Value)])> = vec![("Stats", &fields)];
        components.extend_from_slice(tag);
        world.spawn_values(&components).unwrap();
    }
    world.save_to_vec(&SaveOptions::default()).unwrap()
}

pub fn run(s: &mut Suite) {
    for (workload, with_string) in [("alter_add_field", false), ("alter_add_field_str", true)] {
        alter_add_field(s, workload, with_string);
    }
    s.note(format!("{N} entities × Stats (hp f32, mana f32, xp u32, lvl u8, team u8[, name string]) in 4 tables"));
}

fn alter_add_field(s: &mut Suite, workload: &str, with_string: bool) {
    s.workload(workload, |w| {
        let bytes = std::rc::Rc::new(stats_world(with_string));
        // Check once, outside the timing, that the change does what is measured.
        let mut check = Database::from_world(World::load_from_bytes(&bytes).unwrap());
        check.execute("ALTER COMPONENT Stats ADD FIELD armor f32 DEFAULT 1", ()).unwrap();
        let total = check.query("SELECT sum(Stats.armor), sum(Stats.xp) FROM Stats", ()).unwrap();
        assert_eq!(total.rows[0][0], Value::Float(N as f64));
        drop(check);
        let b = bytes.clone();
        w.lib(
            "ecsdb",
            batched(
                move || Database::from_world(World::load_from_bytes(&b).unwrap()),
                |mut db| {
                    db.execute("ALTER COMPONENT Stats ADD FIELD armor f32 DEFAULT 1", ()).unwrap();
                    db
                },
            ),
        );
        let b = bytes.clone();
        w.lib("ecsdb-load", batched(|| (), move |()| World::load_from_bytes(&b).unwrap()))
            .extra("bytes", bytes.len() as u64);
    });
}
