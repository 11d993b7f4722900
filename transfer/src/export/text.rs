//! CSV and JSON-lines files: one row per entity, values in the language's text forms.
//!
//! Floats are written in their shortest form that reads back as the same value (`0.1`, `3`,
//! `NaN`, `inf`); vectors as `[x,y,z]`; a null entity as an empty CSV cell or JSON `null`. In
//! JSON, non-finite floats are the strings `"NaN"`, `"inf"`, `"-inf"` (as in the engine's JSON
//! worlds), since JSON numbers cannot hold them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use ecsdb_engine::{Entity, World};

use ecsdb_engine::storage::FieldView;

use super::ComponentPlan;
use crate::entity_text::push_entity_text;
use crate::error::TransferError;

/// Which text format.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Csv,
    Jsonl,
}

/// Appends a float's shortest round-trip text; in JSON, non-finite values as strings.
fn float(out: &mut Vec<u8>, x: impl std::fmt::Display + Copy, finite: bool, json: bool) {
    if json && !finite {
        out.push(b'"');
        write!(out, "{x}").expect("writing to a Vec");
        out.push(b'"');
    } else {
        write!(out, "{x}").expect("writing to a Vec");
    }
}

/// Appends row `row` of a column as text (CSV cells unquoted: the caller quotes); `entity`
/// maps a stored handle to the one written (see [`ComponentPlan::entity_out`]).
fn value(out: &mut Vec<u8>, col: &FieldView<'_>, row: usize, json: bool, entity: impl Fn(Entity) -> Entity) {
    macro_rules! int {
        ($c:expr_2021) => {
            write!(out, "{}", $c.get(row).expect("row in range")).expect("writing to a Vec")
        };
    }
    match col {
        FieldView::Bool(c) => out.extend_from_slice(if *c.get(row).expect("row") { b"true" } else { b"false" }),
        FieldView::I8(c) => int!(c),
        FieldView::I16(c) => int!(c),
        FieldView::I32(c) => int!(c),
        FieldView::I64(c) => int!(c),
        FieldView::U8(c) => int!(c),
        FieldView::U16(c) => int!(c),
        FieldView::U32(c) => int!(c),
        FieldView::U64(c) => int!(c),
        FieldView::F32(c) => {
            let x = *c.get(row).expect("row");
            float(out, x, x.is_finite(), json)
        }
        FieldView::F64(c) => {
            let x = *c.get(row).expect("row");
            float(out, x, x.is_finite(), json)
        }
        FieldView::Str(c) => {
            let s = c.get(row).expect("row");
            if json {
                serde_json::to_writer(&mut *out, s).expect("writing to a Vec");
            } else {
                out.extend_from_slice(s.as_bytes());
            }
        }
        FieldView::Entity(c) => {
            let e = entity(*c.get(row).expect("row"));
            if e.is_null() {
                if json {
                    out.extend_from_slice(b"null");
                }
            } else {
                if json {
                    out.push(b'"');
                }
                push_entity_text(e, out);
                if json {
                    out.push(b'"');
                }
            }
        }
        FieldView::Vec2(c) => vector(out, c.get(row).expect("row"), json),
        FieldView::Vec3(c) => vector(out, c.get(row).expect("row"), json),
        // A plan's segments store their component and the schema gives every field a type.
        FieldView::Missing => unreachable!("an export plan's columns are always readable"),
    }
}

fn vector(out: &mut Vec<u8>, v: &[f32], json: bool) {
    out.push(b'[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        float(out, *x, x.is_finite(), json);
    }
    out.push(b']');
}

/// Writes one component's CSV or JSON-lines file; returns its size in bytes.
pub(super) fn write(
    world: &World,
    plan: &ComponentPlan<'_>,
    path: &Path,
    style: Style,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, TransferError> {
    let io = |e: std::io::Error| TransferError::io(path, e);
    let file = File::create(path).map_err(io)?;
    let mut sink = BufWriter::with_capacity(1 << 20, file);
    let names: Vec<&str> = plan.info.fields().iter().map(|f| f.name.as_str()).collect();
    let mut written = 0u64;
    let mut cell = Vec::with_capacity(64);
    match style {
        Style::Csv => {
            let mut w = csv::WriterBuilder::new().from_writer(&mut sink);
            let csv_err = |e: csv::Error| io(e.into());
            w.write_field("entity").map_err(csv_err)?;
            for n in &names {
                w.write_field(n).map_err(csv_err)?;
            }
            w.write_record(None::<&[u8]>).map_err(csv_err)?;
            for seg in &plan.segments {
                let cols: Vec<FieldView<'_>> = (0..names.len()).map(|i| plan.column(world, seg, i)).collect();
                for (row, &e) in seg.entities.iter().enumerate() {
                    cell.clear();
                    push_entity_text(e, &mut cell);
                    w.write_field(&cell).map_err(csv_err)?;
                    for (i, c) in cols.iter().enumerate() {
                        cell.clear();
                        value(&mut cell, c, row, false, |e| plan.entity_out(world, i, e));
                        w.write_field(&cell).map_err(csv_err)?;
                    }
                    w.write_record(None::<&[u8]>).map_err(csv_err)?;
                }
                progress(seg.entities.len() as u64);
            }
            w.flush().map_err(io)?;
        }
        Style::Jsonl => {
            // The keys, quoted and escaped once.
            let keys: Vec<Vec<u8>> = names
                .iter()
                .map(|n| {
                    let mut k = b",".to_vec();
                    serde_json::to_writer(&mut k, n).expect("writing to a Vec");
                    k.push(b':');
                    k
                })
                .collect();
            for seg in &plan.segments {
                let cols: Vec<FieldView<'_>> = (0..names.len()).map(|i| plan.column(world, seg, i)).collect();
                for (row, &e) in seg.entities.iter().enumerate() {
                    cell.clear();
                    cell.extend_from_slice(b"{\"entity\":\"");
                    push_entity_text(e, &mut cell);
                    cell.push(b'"');
                    for (i, (k, c)) in keys.iter().zip(&cols).enumerate() {
                        cell.extend_from_slice(k);
                        value(&mut cell, c, row, true, |e| plan.entity_out(world, i, e));
                    }
                    cell.extend_from_slice(b"}\n");
                    sink.write_all(&cell).map_err(io)?;
                }
                progress(seg.entities.len() as u64);
            }
        }
    }
    sink.flush().map_err(io)?;
    written += sink.get_ref().metadata().map_err(io)?.len();
    Ok(written)
}
