//! Unit tests of the snapshot layer: crafted bodies behind valid checksums, opaque serde
//! round trips, layout remapping, retired indices, the atomic file write, the hand-written
//! body layout against bincode's, and the loader's paths (runs read while decoding, runs
//! deferred to the builder, runs read from a file; one thread or several) against each other.

use serde::{Deserialize, Serialize};

use super::format::{Body, Bytes, ColumnData, FLAG_TICKS, FieldRun, HEADER_LEN, Header, body_config};
use super::load::{decode_body, parse_header};
use super::*;
use crate::{Component, ComponentDef, Entity, FieldType, Value};

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Pos {
    x: f32,
    y: f32,
}
#[derive(Component, Clone, Debug, PartialEq)]
struct Name {
    value: String,
}
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Flag {
    on: bool,
    n: u8,
}
#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Big {
    v: u64,
}
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[component(opaque)]
struct Inventory(Vec<(String, u32)>);
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[component(opaque, storage = "sparse")]
enum Mood {
    Calm,
    Angry { level: u8 },
}

fn sample() -> World {
    let mut w = World::new();
    w.register_opaque_serde::<Inventory>().unwrap();
    w.register_opaque_serde::<Mood>().unwrap();
    for i in 0..20u32 {
        let e = w.spawn((Pos { x: i as f32, y: -(i as f32) }, Flag { on: i % 2 == 0, n: i as u8 }));
        if i % 3 == 0 {
            w.insert(e, Name { value: format!("e{i}") }).unwrap();
        }
        if i % 4 == 0 {
            w.insert(e, Inventory(vec![("apple".into(), i), ("pear".into(), 1)])).unwrap();
        }
        if i % 5 == 0 {
            w.insert(e, Mood::Angry { level: i as u8 }).unwrap();
            w.insert(e, Big { v: u64::MAX - i as u64 }).unwrap();
        }
    }
    let e = Entity::from_parts(7, 0);
    w.despawn(e).unwrap();
    w
}

fn typed() -> World {
    let mut w = World::new();
    w.register::<Pos>().unwrap();
    w.register::<Name>().unwrap();
    w.register::<Flag>().unwrap();
    w.register::<Big>().unwrap();
    w.register_opaque_serde::<Inventory>().unwrap();
    w.register_opaque_serde::<Mood>().unwrap();
    w
}

/// Decodes a snapshot's body, lets `f` change it, and re-encodes it behind a valid header.
fn tamper(bytes: &[u8], f: impl FnOnce(&mut Body<'_>)) -> Vec<u8> {
    let (header, body) = parse_header(bytes).unwrap();
    let mut body = decode_body(body).unwrap();
    f(&mut body);
    seal(header.flags, &body)
}

fn seal(flags: u32, body: &Body<'_>) -> Vec<u8> {
    let enc = bincode::serde::encode_to_vec(body, body_config()).unwrap();
    let h = Header { version: FORMAT_VERSION, flags, body_len: enc.len() as u64, body_crc: crc32fast::hash(&enc) };
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(&enc);
    out
}

fn corrupt_msg(bytes: &[u8]) -> String {
    let mut w = typed();
    match w.load_bytes_into(bytes, &LoadOptions::default()) {
        Err(SnapshotError::Corrupt(m)) => m,
        Err(e) => panic!("expected a corrupt-snapshot error, got {e}"),
        Ok(_) => panic!("loaded"),
    }
}

fn owned(v: Vec<u8>) -> Bytes<'static> {
    Bytes::owned(v)
}

fn catalog_pos(body: &Body<'_>, name: &str) -> usize {
    body.catalog.iter().position(|c| c.name.as_str() == name).unwrap()
}

/// The first table holding component `name`, and the column's position in it.
fn table_with(body: &Body<'_>, name: &str) -> (usize, usize) {
    let c = catalog_pos(body, name) as u32;
    body.tables.iter().enumerate().find_map(|(t, r)| Some((t, r.components.iter().position(|&x| x == c)?))).unwrap()
}

#[test]
fn opaque_values_round_trip_with_serde() {
    let w = sample();
    let bytes = w.save_to_vec(&SaveOptions::default()).unwrap();
    let mut t = typed();
    let stats = t.load_bytes_into(&bytes, &LoadOptions::default()).unwrap();
    assert!(stats.defined.is_empty(), "{:?}", stats.defined);
    for e in w.iter_entities() {
        assert_eq!(w.get::<Inventory>(e).ok(), t.get::<Inventory>(e).ok());
        assert_eq!(w.get::<Mood>(e).ok(), t.get::<Mood>(e).ok());
        assert_eq!(w.get::<Big>(e).ok(), t.get::<Big>(e).ok());
        assert_eq!(w.get::<Flag>(e).ok(), t.get::<Flag>(e).ok());
    }
}

#[test]
fn opaque_values_need_serde_to_load_or_are_skipped() {
    let bytes = sample().save_to_vec(&SaveOptions::default()).unwrap();
    let err = World::load_from_bytes(&bytes).err().unwrap();
    assert!(matches!(&err, SnapshotError::OpaqueWithoutSerde(n) if n == &["Inventory", "Mood"]), "{err}");
    let mut w = World::new();
    let stats = w.load_bytes_into(&bytes, &LoadOptions { skip_opaque: true, ..LoadOptions::default() }).unwrap();
    assert_eq!(stats.skipped_opaque, ["Inventory", "Mood"]);
    assert_eq!(w.len(), 19);
    assert!(w.component_id("Inventory").is_err());
    // Registered as a type but without serde functions: the same.
    let mut r = World::new();
    r.register::<Inventory>().unwrap();
    r.register_opaque_serde::<Mood>().unwrap();
    let err = r.load_bytes_into(&bytes, &LoadOptions::default()).unwrap_err();
    assert!(matches!(&err, SnapshotError::OpaqueWithoutSerde(n) if n == &["Inventory"]), "{err}");
}

#[test]
fn failing_opaque_decode_is_a_serde_error() {
    let bytes = sample().save_to_vec(&SaveOptions::default()).unwrap();
    let bad = tamper(&bytes, |b| {
        let (t, c) = table_with(b, "Inventory");
        let ColumnData::Opaque { data, .. } = &mut b.tables[t].columns[c].data else { panic!() };
        let mut d = data.mem().unwrap().to_vec();
        // The first string's length prefix claims far more than the blob holds.
        d[8..16].copy_from_slice(&(u32::MAX as u64).to_le_bytes());
        *data = owned(d);
    });
    let mut w = typed();
    let err = w.load_bytes_into(&bad, &LoadOptions::default()).unwrap_err();
    assert!(matches!(&err, SnapshotError::Serde { component, .. } if component == "Inventory"), "{err}");
    assert!(w.is_empty());
}

#[test]
fn crafted_bodies_are_rejected() {
    let w = sample();
    let bytes = w.save_to_vec(&SaveOptions::default()).unwrap();
    type Edit = Box<dyn Fn(&mut Body<'_>)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "bool field",
            Box::new(|b| {
                let (t, c) = table_with(b, "Flag");
                let ColumnData::Bulk(d) = &mut b.tables[t].columns[c].data else { panic!("Flag is bulk") };
                let mut v = d.mem().unwrap().to_vec();
                v[0] = 2;
                *d = owned(v);
            }),
        ),
        (
            "bulk data",
            Box::new(|b| {
                let (t, c) = table_with(b, "Pos");
                let ColumnData::Bulk(d) = &mut b.tables[t].columns[c].data else { panic!() };
                let mut v = d.mem().unwrap().to_vec();
                v.pop();
                *d = owned(v);
            }),
        ),
        (
            "not alive",
            Box::new(|b| {
                let (t, _) = table_with(b, "Pos");
                let mut v = b.tables[t].entities.mem().unwrap().to_vec();
                v[4] ^= 1; // generation of the first row
                b.tables[t].entities = owned(v);
            }),
        ),
        (
            "two table rows",
            Box::new(|b| {
                // The second row of a table names the first row's entity.
                let (t, _) = table_with(b, "Pos");
                let rec = &mut b.tables[t];
                let mut v = rec.entities.mem().unwrap().to_vec();
                v.copy_within(..8, 8);
                rec.entities = owned(v);
            }),
        ),
        (
            "live entities",
            Box::new(|b| {
                // Index 7 was despawned: mark it alive (and not free) without a table row.
                let mut live = b.allocator.live.mem().unwrap().to_vec();
                live[0] |= 1 << 7;
                b.allocator.live = owned(live);
                b.allocator.free = owned(vec![]);
            }),
        ),
        (
            "free list",
            Box::new(|b| {
                let mut v = b.allocator.free.mem().unwrap().to_vec();
                v.extend_from_slice(&0u32.to_le_bytes()); // index 0 is alive
                b.allocator.free = owned(v);
            }),
        ),
        ("live-flag bytes", Box::new(|b| b.allocator.live = owned(vec![]))),
        (
            "string lengths",
            Box::new(|b| {
                let (t, c) = table_with(b, "Name");
                let ColumnData::Fields(runs) = &mut b.tables[t].columns[c].data else { panic!("Name is per field") };
                let FieldRun::Strings { data, .. } = &mut runs[0] else { panic!() };
                let mut v = data.mem().unwrap().to_vec();
                v.push(b'x');
                *data = owned(v);
            }),
        ),
        (
            "not UTF-8",
            Box::new(|b| {
                let (t, c) = table_with(b, "Name");
                let ColumnData::Fields(runs) = &mut b.tables[t].columns[c].data else { panic!() };
                let FieldRun::Strings { data, .. } = &mut runs[0] else { panic!() };
                let mut v = data.mem().unwrap().to_vec();
                v[0] = 0xff;
                *data = owned(v);
            }),
        ),
        (
            "unknown type code",
            Box::new(|b| {
                let c = catalog_pos(b, "Pos");
                b.catalog[c].fields[0].ty = 99;
            }),
        ),
        (
            "sparse or listed twice",
            Box::new(|b| {
                let big = catalog_pos(b, "Big") as u32;
                let (t, _) = table_with(b, "Pos");
                b.tables[t].components.push(big);
                b.tables[t].columns.push(super::format::ColumnRecord { data: ColumnData::Empty, ticks: None });
            }),
        ),
        (
            "not in the catalog",
            Box::new(|b| {
                let (t, c) = table_with(b, "Pos");
                b.tables[t].components[c] = 1000;
            }),
        ),
        (
            "listed twice",
            Box::new(|b| {
                let c = catalog_pos(b, "Name");
                b.catalog[c].name = super::format::Text("Pos".into());
            }),
        ),
        (
            "not an identifier",
            Box::new(|b| {
                let c = catalog_pos(b, "Name");
                b.catalog[c].name = super::format::Text("no spaces".into());
            }),
        ),
        (
            "change ticks",
            Box::new(|b| {
                let (t, c) = table_with(b, "Pos");
                b.tables[t].columns[c].ticks =
                    Some(super::format::TickRecord { added: owned(vec![]), changed: owned(vec![]) });
            }),
        ),
        (
            "does not fit a bulk row",
            Box::new(|b| {
                let c = catalog_pos(b, "Pos");
                b.catalog[c].fields[1].offset = u64::MAX - 1;
            }),
        ),
        (
            "column kind",
            Box::new(|b| {
                let (t, c) = table_with(b, "Pos");
                b.tables[t].columns[c].data = ColumnData::Empty;
            }),
        ),
        ("index definitions version", Box::new(|b| b.index_definitions.version = 9)),
        (
            "opaque value lengths",
            Box::new(|b| {
                let (t, c) = table_with(b, "Inventory");
                let ColumnData::Opaque { lens, .. } = &mut b.tables[t].columns[c].data else { panic!() };
                let mut v = lens.mem().unwrap().to_vec();
                v[0] = v[0].wrapping_add(1);
                *lens = owned(v);
            }),
        ),
    ];
    for (want, edit) in cases {
        let msg = corrupt_msg(&tamper(&bytes, |b| edit(b)));
        assert!(msg.contains(want), "expected {want:?} in {msg:?}");
    }
    // The ticks flag in the header without ticks in the columns.
    let (_, body) = parse_header(&bytes).unwrap();
    let body = decode_body(body).unwrap();
    assert!(corrupt_msg(&seal(FLAG_TICKS, &body)).contains("change ticks"));
    // Unknown flags.
    assert!(matches!(World::load_from_bytes(&seal(0x80, &body)), Err(SnapshotError::UnsupportedFlags(0x80))));
}

#[test]
fn header_checks() {
    let bytes = sample().save_to_vec(&SaveOptions::default()).unwrap();
    let mut h = bytes.clone();
    h[17] ^= 1; // body length, caught by the header checksum
    assert!(matches!(World::load_from_bytes(&h), Err(SnapshotError::Corrupt(m)) if m == "header checksum mismatch"));
    assert!(matches!(parse_header(&bytes[..3]), Err(SnapshotError::Truncated { expected: 32, actual: 3 })));
    assert!(matches!(parse_header(b"\x89ECSDX"), Err(SnapshotError::NotASnapshot)));
}

#[test]
fn fields_are_remapped_between_layouts() {
    // Saved from a run-time component (laid out by decreasing alignment: b, a, c) ...
    let mut w = World::new();
    w.define_component(&ComponentDef::new("M", &[("a", FieldType::F32), ("b", FieldType::F64), ("c", FieldType::F32)]))
        .unwrap();
    let mut es = Vec::new();
    for i in 0..5 {
        let v = |x: f64| Value::Float(x);
        es.push(
            w.spawn_values(&[("M", &[("a", v(i as f64)), ("b", v(0.5 + i as f64)), ("c", v(-(i as f64)))])]).unwrap(),
        );
    }
    let info = w.components().by_name("M").unwrap();
    assert!(save::is_bulk(info), "b, a, c tile 16 bytes");
    let bytes = w.save_to_vec(&SaveOptions::default()).unwrap();
    // ... loaded into a Rust type with another layout.
    #[derive(Component, Debug, PartialEq)]
    #[repr(C)]
    struct M {
        a: f32,
        b: f64,
        c: f32,
    }
    let mut t = World::new();
    t.register::<M>().unwrap();
    t.load_bytes_into(&bytes, &LoadOptions::default()).unwrap();
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(t.get::<M>(e).unwrap(), &M { a: i as f32, b: 0.5 + i as f64, c: -(i as f32) });
    }
    // With change ticks too (per-row path).
    let bytes = w.save_to_vec(&SaveOptions { change_ticks: true, ..Default::default() }).unwrap();
    let mut t = World::new();
    t.register::<M>().unwrap();
    t.load_bytes_into(&bytes, &LoadOptions::default()).unwrap();
    assert_eq!(t.get::<M>(es[4]).unwrap().c, -4.0);
}

#[test]
fn bulk_needs_plain_fields_without_padding() {
    let mut w = World::new();
    let id = w.register::<Pos>().unwrap();
    assert!(save::is_bulk(w.components().info(id)));
    let id = w.register::<Flag>().unwrap();
    assert!(save::is_bulk(w.components().info(id)));
    let id = w.register::<Name>().unwrap();
    assert!(!save::is_bulk(w.components().info(id)));
    let id = w.define_component(&ComponentDef::new("P", &[("a", FieldType::U8), ("b", FieldType::F32)])).unwrap();
    assert!(!save::is_bulk(w.components().info(id)), "3 bytes of padding");
    let id = w.define_component(&ComponentDef::new("E", &[("e", FieldType::Entity)])).unwrap();
    assert!(!save::is_bulk(w.components().info(id)));
    let id = w.define_component(&ComponentDef::new("T", &[])).unwrap();
    assert!(!save::is_bulk(w.components().info(id)));
}

#[test]
fn retired_indices_stay_retired() {
    let mut w = World::new();
    let a = w.spawn(Pos { x: 1.0, y: 1.0 });
    w.despawn(a).unwrap();
    w.entities.set_generation(a.index(), u32::MAX);
    let b = w.spawn(Pos { x: 2.0, y: 2.0 });
    assert_eq!(b, Entity::from_parts(0, u32::MAX));
    w.despawn(b).unwrap();
    assert_eq!(w.entities().retired(), 1);
    let mut l = World::load_from_bytes(&w.save_to_vec(&SaveOptions::default()).unwrap()).unwrap();
    assert_eq!(l.entities().retired(), 1);
    assert_eq!(l.entities().state(), w.entities().state());
    assert_eq!(l.spawn(Pos { x: 0.0, y: 0.0 }), Entity::from_parts(1, 0));
}

#[test]
fn change_ticks_survive_when_asked() {
    let mut w = sample();
    let mut q = w.query_state::<&Pos, crate::Changed<Pos>>();
    assert_eq!(q.iter(&w).count(), 19);
    let e = Entity::from_parts(3, 0);
    w.get_mut::<Pos>(e).unwrap().x = 99.0;
    let with = w.save_to_vec(&SaveOptions { change_ticks: true, ..Default::default() }).unwrap();
    let mut l = typed();
    l.load_bytes_into(&with, &LoadOptions::default()).unwrap();
    assert_eq!(l.change_tick(), w.change_tick());
    let tables = |w: &World| -> Vec<Vec<u32>> {
        w.tables().iter().flat_map(|t| t.columns().iter().map(|c| c.changed_ticks().to_vec())).collect()
    };
    assert_eq!(tables(&w), tables(&l));
    // Without ticks every row is stamped with the saved world tick.
    let without = w.save_to_vec(&SaveOptions::default()).unwrap();
    let mut l2 = typed();
    l2.load_bytes_into(&without, &LoadOptions::default()).unwrap();
    for t in l2.tables() {
        for c in t.columns() {
            assert!(c.added_ticks().iter().chain(c.changed_ticks().iter().copied()).all(|k| k == w.change_tick()));
        }
    }
    assert!(without.len() < with.len());
}

#[test]
fn atomic_write_keeps_the_old_file_when_the_writer_fails() {
    let dir = std::env::temp_dir().join(format!("ecsdb-unit-atomic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("world.snap");
    std::fs::write(&path, b"old contents").unwrap();
    // The writer fails midway, after part of the new file is written.
    let err = write_atomically(&path, |f| {
        f.write_all(b"new con")?;
        Err(io::Error::other("disk full").into())
    })
    .unwrap_err();
    assert!(err.to_string().contains("disk full"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"old contents");
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(entries.len(), 1, "the temporary file is removed");
    // A full save through the same path succeeds and replaces it.
    let w = sample();
    w.save(&path, &SaveOptions::default()).unwrap();
    let mut t = typed();
    t.load_into(&path, &LoadOptions::default()).unwrap();
    assert_eq!(t.len(), w.len());
    // A path without a file name is an error, not a panic.
    assert!(w.save(std::path::Path::new("/"), &SaveOptions::default()).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn opaque_blob_decoding_is_bounded() {
    // A string claiming 2^40 bytes in a 16-byte blob: refused by the limit, not allocated.
    let mut blob = (1u64 << 40).to_le_bytes().to_vec();
    blob.extend_from_slice(b"abcdefgh");
    assert!(crate::component::opaque_serde::decode_value::<String>(&blob).is_err());
    let mut ok = Vec::new();
    crate::component::opaque_serde::encode_value(&"hi".to_string(), &mut ok).unwrap();
    assert_eq!(crate::component::opaque_serde::decode_value::<String>(&ok).unwrap(), "hi");
    ok.push(0);
    assert!(crate::component::opaque_serde::decode_value::<String>(&ok).unwrap_err().contains("trailing"));
}

#[test]
fn mutated_bodies_with_opaque_values_never_panic() {
    let bytes = sample().save_to_vec(&SaveOptions { change_ticks: true, ..Default::default() }).unwrap();
    // A deterministic sweep: flip each bit of a stride of body bytes, reseal, load.
    let mut tried = 0;
    let mut step = 0usize;
    let stride = crate::test_size(7, (bytes.len() - HEADER_LEN) / 2);
    while step < bytes.len() - HEADER_LEN {
        for bit in [0u8, 3, 7] {
            let mut b = bytes.clone();
            b[HEADER_LEN + step] ^= 1 << bit;
            let body = &b[HEADER_LEN..];
            let h = Header {
                version: FORMAT_VERSION,
                flags: FLAG_TICKS,
                body_len: body.len() as u64,
                body_crc: crc32fast::hash(body),
            };
            b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
            let mut t = typed();
            if t.load_bytes_into(&b, &LoadOptions::default()).is_ok() {
                // Whatever loaded is sound: it saves again.
                t.save_to_vec(&SaveOptions::default()).unwrap();
            }
            tried += 1;
        }
        step += stride;
    }
    assert!(tried > crate::test_size(100, 5));
}

#[test]
fn large_worlds_load_across_threads() {
    // Enough rows for the parallel build (several tables, strings, tags, a sparse set).
    let n = 40_000 / SIZE_DIVISOR as u32;
    let mut w = World::new();
    for i in 0..n {
        let p = Pos { x: i as f32, y: 1.0 };
        let e = if i % 2 == 0 {
            w.spawn((p, Name { value: format!("n{}", i % 97) }))
        } else {
            w.spawn((p, Flag { on: i % 3 == 0, n: i as u8 }))
        };
        if i % 7 == 0 {
            w.insert(e, Big { v: i as u64 }).unwrap();
        }
    }
    for ticks in [false, true] {
        let bytes = w.save_to_vec(&SaveOptions { change_ticks: ticks, ..Default::default() }).unwrap();
        let mut t = typed();
        let stats = t.load_bytes_into(&bytes, &LoadOptions::default()).unwrap();
        assert_eq!(stats.entities, n as usize);
        assert_eq!(t.entities().state(), w.entities().state());
        let a: Vec<Entity> = w.iter_entities().collect();
        assert_eq!(a, t.iter_entities().collect::<Vec<_>>());
        for &e in a.iter().step_by(13) {
            assert_eq!(w.get::<Pos>(e).unwrap(), t.get::<Pos>(e).unwrap());
            assert_eq!(w.get::<Name>(e).ok(), t.get::<Name>(e).ok());
            assert_eq!(w.get::<Flag>(e).ok(), t.get::<Flag>(e).ok());
            assert_eq!(w.get::<Big>(e).ok(), t.get::<Big>(e).ok());
        }
    }
}

#[test]
fn a_failed_load_leaves_the_registry_as_it_was() {
    let bytes = sample().save_to_vec(&SaveOptions::default()).unwrap();
    let bad = tamper(&bytes, |b| {
        let (t, c) = table_with(b, "Pos");
        b.tables[t].components[c] = 1000;
    });
    // Every component of the file is known here, so the registry is moved, not cloned.
    let mut t = typed();
    let before: Vec<String> = t.components().iter().map(|i| i.name().to_string()).collect();
    let pos = t.components().id_of::<Pos>();
    assert!(t.load_bytes_into(&bad, &LoadOptions::default()).is_err());
    let after: Vec<String> = t.components().iter().map(|i| i.name().to_string()).collect();
    assert_eq!(before, after);
    assert_eq!(t.components().id_of::<Pos>(), pos);
    // And the world still loads the good snapshot afterwards, with its serde functions.
    t.load_bytes_into(&bytes, &LoadOptions::default()).unwrap();
    assert_eq!(t.len(), 19);
    // A world that must define components clones its registry instead.
    let mut u = World::new();
    u.register_opaque_serde::<Inventory>().unwrap();
    u.register_opaque_serde::<Mood>().unwrap();
    assert!(u.load_bytes_into(&bad, &LoadOptions::default()).is_err());
    assert_eq!(u.components().len(), 2);
}

// ----- the hand-written body layout against bincode's ------------------------------------------

/// A world with long runs, saved and loaded on several threads (its rows scale with the
/// thresholds, divided under Miri).
fn big() -> World {
    let rows = 30_000 / SIZE_DIVISOR as u32;
    let mut big = World::new();
    big.register_opaque_serde::<Inventory>().unwrap();
    big.register_opaque_serde::<Mood>().unwrap();
    for i in 0..rows {
        let e = big.spawn((Pos { x: i as f32, y: 0.5 }, Flag { on: i % 3 == 0, n: i as u8 }));
        if i % 2 == 0 {
            big.insert(e, Name { value: format!("n{}é", i % 101) }).unwrap();
        }
        if i % 5 == 0 {
            big.insert(e, Big { v: i as u64 }).unwrap();
        }
        if i % 97 == 0 {
            big.insert(e, Inventory(vec![("x".into(), i)])).unwrap();
        }
    }
    for i in (0..rows).step_by(7) {
        big.despawn(Entity::from_parts(i, 0)).unwrap();
    }
    // A table emptied after use: its string column encodes to an empty run that starts where
    // the next piece does.
    let gone: Vec<Entity> = (0..3).map(|i| big.spawn((Name { value: format!("gone {i}") }, Big { v: i }))).collect();
    for e in gone {
        big.despawn(e).unwrap();
    }
    big
}

/// Worlds of every shape: small, with ticks, large (long runs, several threads), empty.
fn shapes() -> Vec<(World, SaveOptions)> {
    let ticks = SaveOptions { change_ticks: true, ..SaveOptions::default() };
    let big = big();
    vec![
        (sample(), SaveOptions::default()),
        (sample(), ticks.clone()),
        (World::new(), SaveOptions::default()),
        (big.clone_for_tests(), SaveOptions::default()),
        (big, ticks),
    ]
}

impl World {
    /// A copy through a snapshot (worlds are not `Clone`).
    fn clone_for_tests(&self) -> World {
        let mut w = typed();
        w.load_bytes_into(
            &self.save_to_vec(&SaveOptions { change_ticks: true, ..Default::default() }).unwrap(),
            &LoadOptions::default(),
        )
        .unwrap();
        w
    }
}

fn temp_file(name: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("ecsdb-unit-{}-{n}-{name}", std::process::id()))
}

#[test]
fn the_body_layout_is_bincodes() {
    let mut long = 0;
    for (w, opts) in shapes() {
        let bytes = w.save_to_vec(&opts).unwrap();
        // Long bodies take the parallel paths (encoding, copying, writing at offsets).
        long += (bytes.len() as u64 > save::PARALLEL_BYTES) as usize;
        let body = &bytes[HEADER_LEN..];
        // bincode reads what the encoder wrote, and writes it back byte for byte.
        let (b, used): (Body<'_>, usize) = bincode::serde::borrow_decode_from_slice(body, body_config()).unwrap();
        assert_eq!(used, body.len());
        assert!(bincode::serde::encode_to_vec(&b, body_config()).unwrap() == body);
        // The hand-written decoder reads the same body.
        let h = decode_body(body).unwrap();
        assert!(bincode::serde::encode_to_vec(&h, body_config()).unwrap() == body);
        // Every way of saving writes the same bytes.
        let mut v = Vec::new();
        let stats = w.save_to_writer(&mut v, &opts).unwrap();
        assert!(v == bytes);
        assert_eq!(stats.bytes, bytes.len() as u64);
        let path = temp_file("layout.snap");
        let stats = w.save(&path, &opts).unwrap();
        assert!(std::fs::read(&path).unwrap() == bytes);
        assert_eq!(stats, w.save_to_vec_with_stats(&opts).unwrap().1);
        // Saving again replaces the file.
        w.save(&path, &opts).unwrap();
        assert!(std::fs::read(&path).unwrap() == bytes);
        std::fs::remove_file(&path).unwrap();
    }
    assert!(long >= 1, "{long}");
}

#[test]
fn the_decoder_accepts_exactly_what_bincode_accepts() {
    let bytes = sample().save_to_vec(&SaveOptions { change_ticks: true, ..Default::default() }).unwrap();
    let body = &bytes[HEADER_LEN..];
    let bincode_reads = |b: &[u8]| match bincode::serde::borrow_decode_from_slice::<Body<'_>, _>(b, body_config()) {
        Ok((d, used)) => (used == b.len()).then(|| bincode::serde::encode_to_vec(&d, body_config()).unwrap()),
        Err(_) => None,
    };
    let hand_reads = |b: &[u8]| decode_body(b).ok().map(|d| bincode::serde::encode_to_vec(&d, body_config()).unwrap());
    let mut cases: Vec<Vec<u8>> = Vec::new();
    // Every byte, or under Miri one a third of the way in (in a run of values: some
    // mutations are accepted).
    let (first, stride) = crate::test_size((0, 1), (body.len() / 3, body.len()));
    for at in (first..body.len()).step_by(stride) {
        for bit in [0u8, 1, 4, 7] {
            let mut m = body.to_vec();
            m[at] ^= 1 << bit;
            cases.push(m);
        }
        let mut m = body.to_vec();
        m[at] = 0xff;
        cases.push(m);
    }
    for cut in (first..body.len()).step_by(3 * stride) {
        cases.push(body[..cut].to_vec());
    }
    let mut longer = body.to_vec();
    longer.push(0);
    cases.push(longer);
    let mut accepted = 0;
    for (k, m) in cases.iter().enumerate() {
        let (a, b) = (bincode_reads(m), hand_reads(m));
        assert!(a == b, "case {k}: bincode {} / hand-written {}", a.is_some(), b.is_some());
        accepted += a.is_some() as usize;
    }
    assert!(accepted > crate::test_size(100, 0), "{accepted}");
}

// ----- the loader's paths against each other --------------------------------------------------

/// Sets the test knobs for the current thread while `f` runs.
fn with_knobs<R>(defer: Option<usize>, small_file: Option<u64>, parallel: Option<usize>, f: impl FnOnce() -> R) -> R {
    use super::read::knobs;
    knobs::DEFER_MIN.with(|c| c.set(defer));
    knobs::SMALL_FILE.with(|c| c.set(small_file));
    knobs::PARALLEL_BYTES.with(|c| c.set(parallel));
    let r = f();
    knobs::DEFER_MIN.with(|c| c.set(None));
    knobs::SMALL_FILE.with(|c| c.set(None));
    knobs::PARALLEL_BYTES.with(|c| c.set(None));
    r
}

/// A loaded world as bytes (equal worlds save to equal bytes), or the error's text.
fn outcome(w: Result<World, SnapshotError>) -> Result<Vec<u8>, String> {
    w.map(|w| w.save_to_vec(&SaveOptions { change_ticks: true, ..Default::default() }).unwrap())
        .map_err(|e| e.to_string())
}

/// Loads a snapshot every way, into a world with the Rust types registered: runs read while
/// decoding, one thread; every run deferred to the builder, several threads; every run read
/// from a file by the builder, several threads. Returns the three outcomes.
fn load_every_way(bytes: &[u8], path: &std::path::Path) -> [Result<Vec<u8>, String>; 3] {
    let load = |b: &[u8]| {
        let mut w = typed();
        w.load_bytes_into(b, &LoadOptions::default()).map(|_| w)
    };
    let eager = with_knobs(Some(usize::MAX), None, Some(usize::MAX), || outcome(load(bytes)));
    let deferred = with_knobs(Some(1), None, Some(0), || outcome(load(bytes)));
    std::fs::write(path, bytes).unwrap();
    let file = with_knobs(Some(1), Some(0), Some(0), || {
        let mut w = typed();
        outcome(w.load_into(path, &LoadOptions::default()).map(|_| w))
    });
    [eager, deferred, file]
}

fn assert_paths_agree(bytes: &[u8], path: &std::path::Path, what: &str) -> bool {
    let [eager, deferred, file] = load_every_way(bytes, path);
    let show = |r: &Result<Vec<u8>, String>| match r {
        Ok(b) => format!("Ok({} bytes)", b.len()),
        Err(e) => format!("Err({e})"),
    };
    assert!(eager == deferred, "{what}: in place {} / deferred {}", show(&eager), show(&deferred));
    // A file's error names the file; the rest agrees.
    let file = file.map_err(|e| e.replace(&format!("i/o error on '{}': ", path.display()), "i/o error: "));
    assert!(eager == file, "{what}: in place {} / file {}", show(&eager), show(&file));
    eager.is_ok()
}

#[test]
fn every_load_path_reads_the_same_worlds() {
    let path = temp_file("paths.snap");
    for (w, opts) in shapes() {
        let bytes = w.save_to_vec(&opts).unwrap();
        assert!(assert_paths_agree(&bytes, &path, "intact"));
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn every_load_path_fails_alike_on_damaged_snapshots() {
    let path = temp_file("damaged.snap");
    for &ticks in crate::test_size(&[false, true][..], &[true]) {
        let bytes = sample().save_to_vec(&SaveOptions { change_ticks: ticks, ..Default::default() }).unwrap();
        let mut loaded = 0;
        // Every third byte, or under Miri the first.
        for at in (HEADER_LEN..bytes.len()).step_by(crate::test_size(3, bytes.len())) {
            for &bit in crate::test_size(&[0u8, 5][..], &[5]) {
                let mut b = bytes.clone();
                b[at] ^= 1 << bit;
                // As it is (a checksum mismatch), and resealed (the structural checks).
                assert_paths_agree(&b, &path, &format!("flip {at}.{bit}"));
                let body = &b[HEADER_LEN..];
                let h = Header {
                    version: FORMAT_VERSION,
                    flags: u32::from_le_bytes(b[12..16].try_into().unwrap()),
                    body_len: body.len() as u64,
                    body_crc: crc32fast::hash(body),
                };
                b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
                loaded += assert_paths_agree(&b, &path, &format!("resealed flip {at}.{bit}")) as usize;
            }
        }
        assert!(loaded > crate::test_size(10, 0), "{loaded}");
        for cut in [0, 7, 31, 32, 40, bytes.len() / 2, bytes.len() - 1] {
            assert!(!assert_paths_agree(&bytes[..cut], &path, &format!("cut {cut}")));
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(b"extra");
        assert!(!assert_paths_agree(&longer, &path, "longer"));
    }
    // Long runs: damage inside them is found by the builder's checks and checksums.
    let big = big();
    let bytes = big.save_to_vec(&SaveOptions::default()).unwrap();
    // Forty places, or under Miri the middle.
    let (first, step) = crate::test_size((HEADER_LEN, bytes.len() / 40), (bytes.len() / 2, bytes.len()));
    for at in (first..bytes.len()).step_by(step) {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        assert!(!assert_paths_agree(&b, &path, &format!("big flip {at}")));
        let body = &b[HEADER_LEN..];
        let h =
            Header { version: FORMAT_VERSION, flags: 0, body_len: body.len() as u64, body_crc: crc32fast::hash(body) };
        b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
        assert_paths_agree(&b, &path, &format!("big resealed flip {at}"));
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn large_snapshot_files_load_straight_into_columns() {
    // Real thresholds (divided under Miri, like the world): the file is larger than the size
    // read into memory whole, and its long runs go from the file to the columns.
    let (big, opts) = (big(), SaveOptions { change_ticks: true, ..Default::default() });
    let path = temp_file("large.snap");
    let saved = big.save(&path, &opts).unwrap();
    assert!(saved.bytes > SMALL_FILE, "{}", saved.bytes);
    let mut t = typed();
    let stats = t.load_into(&path, &LoadOptions::default()).unwrap();
    assert_eq!(stats.bytes, saved.bytes);
    assert_eq!(stats.component_bytes, saved.component_bytes);
    assert_eq!(stats.entities, big.len());
    assert!(t.save_to_vec(&opts).unwrap() == big.clone_for_tests().save_to_vec(&opts).unwrap());
    // Damage in a long run of the file: a checksum mismatch, and the world is unchanged.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let mut u = typed();
    assert!(matches!(u.load_into(&path, &LoadOptions::default()), Err(SnapshotError::ChecksumMismatch)));
    assert!(u.is_empty());
    // Truncated, and with bytes after the body.
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
    assert!(matches!(u.load_into(&path, &LoadOptions::default()), Err(SnapshotError::Truncated { .. })));
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 10]);
    std::fs::write(&path, &longer).unwrap();
    assert!(matches!(u.load_into(&path, &LoadOptions::default()), Err(SnapshotError::Corrupt(_))));
    // A missing file names itself.
    std::fs::remove_file(&path).unwrap();
    let err = u.load_into(&path, &LoadOptions::default()).unwrap_err();
    assert!(matches!(&err, SnapshotError::File { path: p, .. } if p == &path), "{err}");
    assert!(u.is_empty());
}
