//! Export → import → export over every field type, storage kind and format, and the errors
//! import reports (file, row, column; world unchanged).

use std::fs;
use std::path::{Path, PathBuf};

use ecsdb_engine::{ComponentDef, Entity, FieldType, Value, World};
use ecsdb_transfer::{DataProblem, ExportOptions, Format, ImportOptions, TransferError, export, import, read_dir};

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ecsdb-transfer-{test}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A world with every field type, a sparse component, a tag, despawned ids (so generations
/// and gaps matter) and awkward values.
fn sample_world() -> World {
    let mut w = World::new();
    let all: Vec<(String, FieldType)> = FieldType::ALL.iter().map(|t| (format!("f_{}", t.name()), *t)).collect();
    w.define_component(&ComponentDef { name: "All".into(), fields: all, storage: Default::default() }).unwrap();
    w.define_component(&ComponentDef::new("Pos", &[("x", FieldType::F32), ("y", FieldType::F32)])).unwrap();
    w.define_component(&ComponentDef::new("Note", &[("text", FieldType::String)]).sparse()).unwrap();
    w.define_component(&ComponentDef::new("Tag", &[])).unwrap();
    let texts = ["plain", "with,comma", "with \"quotes\"", "line\nbreak", "ünïcødé ✓", ""];
    let floats = [0.1, -0.0, 1e-40, 3.4e38, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 12345.678];
    let mut spawned = Vec::new();
    for i in 0..40i64 {
        let e = match i % 4 {
            0 => w.spawn_values(&[("Pos", &[("x", Value::Float(i as f64)), ("y", Value::Float(-0.5))])]).unwrap(),
            1 => w
                .spawn_values(&[
                    ("Pos", &[("x", Value::Float(floats[i as usize % floats.len()]))]),
                    ("Tag", &[]),
                    ("Note", &[("text", Value::Str(texts[i as usize % texts.len()].into()))]),
                ])
                .unwrap(),
            2 => {
                let target = spawned.last().copied().map_or(Value::Null, Value::Entity);
                let f = floats[i as usize % floats.len()];
                w.spawn_values(&[(
                    "All",
                    &[
                        ("f_bool", Value::Bool(i % 3 == 0)),
                        ("f_i8", Value::Int(-i)),
                        ("f_i16", Value::Int(-300 * i)),
                        ("f_i32", Value::Int(i32::MIN as i64 + i)),
                        ("f_i64", Value::Int(i64::MIN + i)),
                        ("f_u8", Value::Int(255 - i)),
                        ("f_u16", Value::Int(65535 - i)),
                        ("f_u32", Value::Int(u32::MAX as i64 - i)),
                        ("f_u64", Value::Int(i64::MAX - i)),
                        ("f_f32", Value::Float(f)),
                        ("f_f64", Value::Float(f / 3.0)),
                        ("f_string", Value::Str(texts[i as usize % texts.len()].into())),
                        ("f_entity", target),
                        ("f_vec2", Value::Vec2([f, 1.5])),
                        ("f_vec3", Value::Vec3([0.25, f, -2.0])),
                    ],
                )])
                .unwrap()
            }
            _ => w.spawn_values(&[("Tag", &[]), ("Note", &[("text", Value::Str(format!("n{i}")))])]).unwrap(),
        };
        spawned.push(e);
    }
    for e in spawned.iter().step_by(7) {
        w.despawn(*e).unwrap();
    }
    // Reused slots get generation 1; two entities have no component at all.
    w.spawn_values(&[("Pos", &[("x", Value::Float(7.0))])]).unwrap();
    w.spawn_values(&[("All", &[("f_string", Value::Str("reused".into()))])]).unwrap();
    w.spawn_values(&[]).unwrap();
    let bare = w.spawn_values(&[("Tag", &[])]).unwrap();
    w.remove_component(bare, "Tag").unwrap();
    w.create_index(ecsdb_engine::index::IndexDef::new("Pos", &["x"], ecsdb_engine::index::IndexKind::Btree)).unwrap();
    w
}

/// Every entity with every component value, in a comparable form (NaN as text).
fn dump(w: &World) -> Vec<String> {
    let mut out: Vec<String> = w
        .iter_entities()
        .map(|e| {
            let mut comps: Vec<String> = w
                .components_of(e)
                .unwrap()
                .into_iter()
                .map(|id| format!("{}={:?}", w.components().info(id).name(), w.get_component_value(e, id).unwrap()))
                .collect();
            // Component ids depend on definition order, which an import without a schema
            // does not know.
            comps.sort();
            format!("{e}: {}", comps.join(" "))
        })
        .collect();
    out.sort();
    out
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_format_round_trips_values_ids_and_bytes() {
    let world = sample_world();
    for format in Format::ALL {
        let dir = temp_dir(&format!("rt-{format}"));
        let (a, b) = (dir.join("a"), dir.join("b"));
        let opts = ExportOptions { format, components: None };
        let stats = export(&world, &a, &opts).unwrap();
        assert_eq!(stats.files.len(), 5, "{format}: four components and the schema");
        let mut back = World::new();
        let imported = import(&mut back, &a, &ImportOptions::default()).unwrap();
        assert_eq!(imported.entities, world.len(), "{format}");
        assert_eq!(dump(&back), dump(&world), "{format}");
        assert_eq!(back.indexes().len(), 1, "{format}: the index is rebuilt");
        // Every id lives again, entities without components included, and the allocator
        // is the original's: the same free list, so the same ids are issued next.
        assert!(world.iter_entities().all(|e| back.is_alive(e)));
        assert_eq!(back.entities().state(), world.entities().state(), "{format}");
        assert!(world.entities().state().free.len() >= 2, "the sample has free indices");
        export(&back, &b, &opts).unwrap();
        assert_eq!(files(&a), files(&b), "{format}: a second export is byte-identical");
        // Without schema.json the files alone describe the components (CSV and JSON lines
        // guess the widest type, so only Parquet gives back the same values). Entities
        // without components are only in the schema, so they are missing then.
        fs::remove_file(a.join("schema.json")).unwrap();
        let guessed = read_dir(&a, &ImportOptions::default()).unwrap();
        assert_eq!(guessed.components.len(), 4, "{format}");
        assert!(guessed.bare_entities.is_empty() && guessed.dead.is_none());
        if format == Format::Parquet {
            let mut again = World::new();
            import(&mut again, &a, &ImportOptions::default()).unwrap();
            let with_components: Vec<String> = dump(&world).into_iter().filter(|l| !l.ends_with(": ")).collect();
            assert_eq!(dump(&again), with_components);
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn selected_components_only() {
    let world = sample_world();
    let dir = temp_dir("select");
    let opts = ExportOptions { format: Format::Csv, components: Some(vec!["Tag".into(), "Pos".into()]) };
    export(&world, &dir, &opts).unwrap();
    let names: Vec<String> = files(&dir).into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["Pos.csv", "Tag.csv", "schema.json"]);
    let tag = fs::read_to_string(dir.join("Tag.csv")).unwrap();
    assert!(tag.starts_with("entity\n1v0\n"), "{tag}");
    let bad = ExportOptions { format: Format::Csv, components: Some(vec!["Nope".into()]) };
    assert!(matches!(export(&world, &dir, &bad), Err(TransferError::Component(..))));
    fs::remove_dir_all(&dir).unwrap();
}

/// Writes `text` as `dir/<name>` next to an export's schema, imports, and returns the error.
fn import_error(test: &str, file: &str, text: &str) -> TransferError {
    let dir = temp_dir(test);
    let world = sample_world();
    export(&world, &dir, &ExportOptions { format: Format::Csv, components: None }).unwrap();
    fs::write(dir.join(file), text).unwrap();
    let mut target = World::new();
    let err = import(&mut target, &dir, &ImportOptions::default()).unwrap_err();
    assert!(target.is_empty() && target.components().is_empty(), "the world is unchanged");
    fs::remove_dir_all(&dir).unwrap();
    err
}

fn assert_place(err: &TransferError, file: &str, row: Option<usize>, column: &str) {
    let TransferError::Data { file: f, place, .. } = err else { panic!("not a data error: {err}") };
    assert!(f.ends_with(file), "{err}");
    assert_eq!(place.row, row, "{err}");
    assert_eq!(place.column.as_deref(), Some(column), "{err}");
}

#[test]
fn import_errors_name_file_row_and_column() {
    let e = import_error("type", "Pos.csv", "entity,x,y\n0v0,1,2\n1v0,abc,2\n");
    assert_place(&e, "Pos.csv", Some(2), "x");
    assert!(matches!(e, TransferError::Data { problem: DataProblem::TypeMismatch { .. }, .. }));
    assert_eq!(
        e.to_string().rsplit('/').next().unwrap(),
        "Pos.csv: row 2, column 'x': 'abc' does not fit field type f32"
    );

    let e = import_error("dup", "Pos.csv", "entity,x,y\n0v0,1,2\n5v0,1,2\n0v0,3,4\n");
    assert_place(&e, "Pos.csv", Some(3), "entity");
    assert!(matches!(e, TransferError::Data { problem: DataProblem::DuplicateEntity(ref s), .. } if s == "0v0"));

    let e = import_error("unknown", "Pos.csv", "entity,x,y,z\n0v0,1,2,3\n");
    assert_place(&e, "Pos.csv", None, "z");
    assert!(matches!(e, TransferError::Data { problem: DataProblem::UnknownColumn(_), .. }));

    let e = import_error("badid", "Pos.csv", "entity,x,y\n0v0,1,2\nv12,1,2\n");
    assert_place(&e, "Pos.csv", Some(2), "entity");
    assert!(matches!(e, TransferError::Data { problem: DataProblem::BadEntity(ref s), .. } if s == "v12"));

    let e = import_error("range", "All.csv", &{
        let mut t = String::from("entity");
        for ty in FieldType::ALL {
            t.push_str(&format!(",f_{}", ty.name()));
        }
        t.push_str("\n2v0,true,300,0,0,0,0,0,0,0,0,0,,,\"[0,0]\",\"[0,0,0]\"\n");
        t
    });
    assert_place(&e, "All.csv", Some(1), "f_i8");

    // Two generations of one index across components.
    let e = import_error("gens", "Pos.csv", "entity,x,y\n2v1,1,2\n");
    assert!(matches!(e, TransferError::Data { .. }), "{e}");
}

#[test]
fn import_needs_an_empty_world_and_parquet_errors_have_places() {
    let world = sample_world();
    let dir = temp_dir("parquet-errors");
    export(&world, &dir, &ExportOptions::default()).unwrap();
    let mut full = sample_world();
    assert!(matches!(import(&mut full, &dir, &ImportOptions::default()), Err(TransferError::WorldNotEmpty(_))));
    // A Parquet file whose column has the wrong type for the schema: Pos written as All.
    fs::copy(dir.join("All.parquet"), dir.join("Pos.parquet")).unwrap();
    let mut target = World::new();
    let err = import(&mut target, &dir, &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("Pos.parquet"), "{err}");
    assert!(matches!(err, TransferError::Data { problem: DataProblem::UnknownColumn(_), .. }), "{err}");
    assert!(target.is_empty());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_made_elsewhere_import_without_a_schema() {
    let dir = temp_dir("foreign");
    fs::write(dir.join("Item.csv"), "entity,name,weight,count,owner\n3v0,sword,2.5,1,\n1v2,shield,\"7\",2,3v0\n")
        .unwrap();
    fs::write(
        dir.join("Spot.jsonl"),
        "{\"entity\":\"3v0\",\"at\":[1,2,3],\"ok\":true}\n{\"entity\":\"9v0\",\"at\":[0,0,0.5],\"ok\":false}\n",
    )
    .unwrap();
    let mut w = World::new();
    let stats = import(&mut w, &dir, &ImportOptions::default()).unwrap();
    assert_eq!((stats.components, stats.entities), (2, 3));
    let item = w.components().by_name("Item").unwrap();
    let types: Vec<FieldType> = item.fields().iter().map(|f| f.ty).collect();
    assert_eq!(types, [FieldType::String, FieldType::F64, FieldType::I64, FieldType::Entity]);
    assert_eq!(
        w.get_field(Entity::from_parts(1, 2), "Item", "owner").unwrap(),
        Value::Entity(Entity::from_parts(3, 0))
    );
    assert_eq!(w.get_field(Entity::from_parts(9, 0), "Spot", "at").unwrap(), Value::Vec3([0.0, 0.0, 0.5]));
    // The allocator: free slots are reused lowest first, and slot 1 continues at generation 2.
    assert_eq!(w.spawn_values(&[]).unwrap(), Entity::from_parts(0, 0));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_entities_section_is_a_schema_error() {
    let world = sample_world();
    let dir = temp_dir("entities");
    export(&world, &dir, &ExportOptions { format: Format::Csv, components: None }).unwrap();
    let schema = fs::read_to_string(dir.join("schema.json")).unwrap();
    let issued = format!("\"issued\": {}", world.entities().capacity_used());
    assert!(schema.contains(&issued), "{schema}");
    let free = world.entities().state().free;
    let first_free = format!("\"{}v", free[0]);
    for (from, to, says) in [
        (issued.as_str(), "\"issued\": 3", "indices issued"),
        (first_free.as_str(), "\"x", "is not an entity id"),
        (first_free.as_str(), "\"1v", "alive, or listed twice"),
    ] {
        fs::write(dir.join("schema.json"), schema.replacen(from, to, 1)).unwrap();
        let mut back = World::new();
        let err = import(&mut back, &dir, &ImportOptions::default()).unwrap_err();
        assert!(matches!(&err, TransferError::Schema { .. }) && err.to_string().contains(says), "{err}");
        assert!(back.is_empty() && back.components().is_empty(), "nothing was built");
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// A dangling reference (`L.who REFERENCES ON DELETE NO ACTION`, its target despawned) is
/// exported as null in every format, as the engine and queries read it; a live one keeps
/// its handle.
#[test]
fn a_dangling_reference_exports_as_null() {
    use ecsdb_engine::{OnDelete, ReferenceDef};
    let mut world = World::new();
    world.define_component(&ComponentDef::new("L", &[("who", FieldType::Entity)])).unwrap();
    world.declare_reference(&ReferenceDef::new("L", "who", OnDelete::NoAction, false)).unwrap();
    let gone = world.spawn_values(&[]).unwrap();
    let kept = world.spawn_values(&[]).unwrap();
    let a = world.spawn_values(&[("L", &[("who", Value::Entity(gone))])]).unwrap();
    let b = world.spawn_values(&[("L", &[("who", Value::Entity(kept))])]).unwrap();
    world.despawn(gone).unwrap();
    let (ta, tb, tk) = (a.to_string(), b.to_string(), kept.to_string());
    for format in Format::ALL {
        let dir = temp_dir(&format!("dangling-{format}"));
        export(&world, &dir, &ExportOptions { format, components: None }).unwrap();
        match format {
            Format::Jsonl => {
                let text = fs::read_to_string(dir.join("L.jsonl")).unwrap();
                assert_eq!(
                    text,
                    format!("{{\"entity\":\"{ta}\",\"who\":null}}\n{{\"entity\":\"{tb}\",\"who\":\"{tk}\"}}\n")
                );
            }
            Format::Csv => {
                let text = fs::read_to_string(dir.join("L.csv")).unwrap();
                assert_eq!(text, format!("entity,who\n{ta},\n{tb},{tk}\n"));
            }
            _ => {}
        }
        let mut back = World::new();
        import(&mut back, &dir, &ImportOptions::default()).unwrap();
        let id = back.component_id("L").unwrap();
        assert_eq!(back.entity_field(a, id, 0), Some(Entity::NULL), "{format}");
        assert_eq!(back.entity_field(b, id, 0), Some(kept), "{format}");
        fs::remove_dir_all(&dir).unwrap();
    }
}

/// Field defaults travel in `schema.json` and are set again by import, in every format; a
/// default that does not fit its field is a schema error and builds nothing.
#[test]
fn field_defaults_travel_in_the_schema() {
    let mut world = sample_world();
    let all = world.component_id("All").unwrap();
    let defaults = [
        ("f_bool", Value::Bool(true)),
        ("f_u8", Value::Int(200)),
        ("f_f32", Value::Float(f64::NEG_INFINITY)),
        ("f_f64", Value::Float(0.1)),
        ("f_string", Value::Str("dé\"faut".into())),
        ("f_entity", Value::Entity(Entity::from_parts(2, 0))),
        ("f_vec3", Value::Vec3([1.0, f64::NAN, -2.5])),
    ];
    for (field, v) in &defaults {
        world.set_field_default(all, field, Some(v)).unwrap();
    }
    let shown = |w: &World, id| {
        let info = w.components().info(id);
        info.fields()
            .iter()
            .map(|f| format!("{}={:?}", f.name, w.field_default(id, &f.name).unwrap()))
            .collect::<Vec<_>>()
    };
    for format in [Format::Parquet, Format::Csv, Format::Jsonl] {
        let dir = temp_dir(&format!("defaults-{format:?}"));
        export(&world, &dir, &ExportOptions { format, components: None }).unwrap();
        let mut back = World::new();
        import(&mut back, &dir, &ImportOptions::default()).unwrap();
        let id = back.component_id("All").unwrap();
        assert_eq!(shown(&back, id), shown(&world, all), "{format:?}");
        assert_eq!(dump(&back), dump(&world), "{format:?}");

        let schema = fs::read_to_string(dir.join("schema.json")).unwrap();
        assert!(schema.contains(r#""default":200"#) || schema.contains(r#""default": 200"#), "{schema}");
        fs::write(dir.join("schema.json"), schema.replacen("200", "300", 1)).unwrap();
        let mut refused = World::new();
        let err = import(&mut refused, &dir, &ImportOptions::default()).unwrap_err();
        assert!(matches!(&err, TransferError::Schema { .. }) && err.to_string().contains("f_u8"), "{err}");
        assert!(refused.is_empty() && refused.components().is_empty(), "nothing was built");
        fs::remove_dir_all(&dir).unwrap();
    }
}

/// A component moved between storages on a live world (`ALTER COMPONENT … SET STORAGE`)
/// exports and imports with its new storage and the same values, in every format.
#[test]
fn a_moved_storage_round_trips() {
    use ecsdb_engine::{ComponentChange, StorageKind};
    let mut world = sample_world();
    let (pos, note) = (world.component_id("Pos").unwrap(), world.component_id("Note").unwrap());
    drop(world.alter_component(pos, &ComponentChange::SetStorage(StorageKind::Sparse)).unwrap());
    drop(world.alter_component(note, &ComponentChange::SetStorage(StorageKind::Table)).unwrap());
    for format in Format::ALL {
        let dir = temp_dir(&format!("moved-{format}"));
        export(&world, &dir, &ExportOptions { format, components: None }).unwrap();
        let mut back = World::new();
        import(&mut back, &dir, &ImportOptions::default()).unwrap();
        assert_eq!(dump(&back), dump(&world), "{format}");
        let storage = |w: &World, name: &str| w.components().by_name(name).unwrap().storage();
        assert_eq!(storage(&back, "Pos"), StorageKind::Sparse, "{format}");
        assert_eq!(storage(&back, "Note"), StorageKind::Table, "{format}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
