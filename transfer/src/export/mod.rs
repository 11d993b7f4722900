//! Export: each component's rows, table by table (then its sparse set), written to one file.

mod parquet;
mod text;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ecsdb_engine::storage::{FieldPlace, FieldView, TableId};
use ecsdb_engine::{ComponentId, ComponentInfo, Entity, FieldType, StorageKind, World};
use rayon::prelude::*;

use crate::error::TransferError;
use crate::schema::{ComponentEntry, EntitiesEntry, ExportSchema, IndexEntry, SCHEMA_FILE};
use crate::{ExportOptions, ExportStats, Format};

/// Rows of a component in one place: a table, or the component's sparse set.
pub(crate) struct Segment<'w> {
    pub entities: &'w [Entity],
    table: Option<TableId>,
}

/// One component to export: where its rows are.
pub(crate) struct ComponentPlan<'w> {
    pub info: &'w ComponentInfo,
    pub segments: Vec<Segment<'w>>,
    pub rows: usize,
}

impl<'w> ComponentPlan<'w> {
    fn new(world: &'w World, info: &'w ComponentInfo) -> ComponentPlan<'w> {
        let id = info.id();
        let segments: Vec<Segment<'w>> = match info.storage() {
            StorageKind::Table => world
                .tables()
                .iter()
                .filter(|t| !t.is_empty() && t.has(id))
                .map(|t| Segment { entities: t.entities(), table: Some(t.id()) })
                .collect(),
            StorageKind::Sparse => world
                .sparse_set(id)
                .filter(|s| !s.is_empty())
                .map(|s| Segment { entities: s.entities(), table: None })
                .into_iter()
                .collect(),
        };
        let rows = segments.iter().map(|s| s.entities.len()).sum();
        ComponentPlan { info, segments, rows }
    }

    fn id(&self) -> ComponentId {
        self.info.id()
    }

    /// Field `field` over the rows of `seg`, in its type (the engine's [`FieldView`]).
    pub fn column(&self, world: &'w World, seg: &Segment<'w>, field: usize) -> FieldView<'w> {
        let place = match seg.table {
            Some(t) => FieldPlace::Table(t),
            None => FieldPlace::Sparse,
        };
        FieldView::new(world, place, self.id(), field)
    }

    /// Field `field`'s handle `e` as exported: a dangling reference (a declared reference
    /// whose target is gone, left by `ON DELETE NO ACTION`) is written as the null entity,
    /// as the engine and queries read it.
    pub fn entity_out(&self, world: &World, field: usize, e: Entity) -> Entity {
        if !e.is_null() && !world.is_alive(e) && world.reference(self.id(), field).is_some() { Entity::NULL } else { e }
    }

    /// Bytes of component data: every value's size plus the text of its strings.
    fn component_bytes(&self, world: &'w World) -> u64 {
        let mut bytes = (self.rows * self.info.layout().size()) as u64;
        for (i, f) in self.info.fields().iter().enumerate() {
            if f.ty == FieldType::String {
                for seg in &self.segments {
                    if let FieldView::Str(c) = self.column(world, seg, i) {
                        bytes += c.iter().map(|s| s.len() as u64).sum::<u64>();
                    }
                }
            }
        }
        bytes
    }
}

/// Live entities that no exported component lists (they have no component, or only opaque
/// ones), in index order.
fn without_components(world: &World, plans: &[ComponentPlan<'_>]) -> Vec<Entity> {
    let mut listed = vec![false; world.entities().capacity_used()];
    for e in plans.iter().flat_map(|p| p.segments.iter()).flat_map(|s| s.entities) {
        listed[e.index() as usize] = true;
    }
    let mut bare: Vec<Entity> = world.iter_entities().filter(|e| !listed[e.index() as usize]).collect();
    bare.sort_unstable_by_key(|e| e.index());
    bare
}

/// The components to export, checked.
fn select<'w>(world: &'w World, opts: &ExportOptions) -> Result<Vec<&'w ComponentInfo>, TransferError> {
    let comps = world.components();
    match &opts.components {
        None => Ok(comps.iter().filter(|i| !i.is_opaque()).collect()),
        Some(names) => {
            let mut out: Vec<&ComponentInfo> = Vec::with_capacity(names.len());
            for n in names {
                let info =
                    comps.by_name(n).ok_or_else(|| TransferError::Component(n.clone(), "no such component".into()))?;
                if info.is_opaque() {
                    return Err(TransferError::Component(n.clone(), "it is opaque (it has no schema)".into()));
                }
                if !out.iter().any(|o| o.id() == info.id()) {
                    out.push(info);
                }
            }
            out.sort_by_key(|i| i.id());
            Ok(out)
        }
    }
}

/// Exports `world` into `dir` (created if missing): one file per component, `<Name>.<ext>`,
/// and `schema.json`. Existing files of the same names are replaced.
pub fn export(world: &World, dir: &Path, opts: &ExportOptions) -> Result<ExportStats, TransferError> {
    export_with_progress(world, dir, opts, &|_| {})
}

/// [`export`], calling `progress(rows)` as rows are written (from several threads; the
/// counts add up to [`ExportStats::rows`]).
pub fn export_with_progress(
    world: &World,
    dir: &Path,
    opts: &ExportOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ExportStats, TransferError> {
    let selected = select(world, opts)?;
    fs::create_dir_all(dir).map_err(|e| TransferError::io(dir, e))?;
    let plans: Vec<ComponentPlan<'_>> = selected.iter().map(|i| ComponentPlan::new(world, i)).collect();
    // Largest first, so the two halves of a small machine finish together.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(plans[i].rows * plans[i].info.layout().size().max(1)));
    // Per plan: the file written and its size.
    type Written = Result<(PathBuf, u64), TransferError>;
    let results: Vec<(usize, Written)> = order
        .into_par_iter()
        .map(|i| {
            let plan = &plans[i];
            let path = dir.join(format!("{}.{}", plan.info.name(), opts.format.extension()));
            let written = match opts.format {
                Format::Parquet => parquet::write(world, plan, &path, progress),
                Format::Csv => text::write(world, plan, &path, text::Style::Csv, progress),
                Format::Jsonl => text::write(world, plan, &path, text::Style::Jsonl, progress),
            };
            (i, written.map(|bytes| (path, bytes)))
        })
        .collect();
    let mut by_plan: Vec<Option<(PathBuf, u64)>> = vec![None; plans.len()];
    for (i, r) in results {
        by_plan[i] = Some(r?);
    }
    let mut stats = ExportStats::default();
    let mut schema = ExportSchema::new(opts.format);
    for (plan, written) in plans.iter().zip(by_plan) {
        let (path, bytes) = written.expect("every plan was written");
        let file = path.file_name().expect("a file name").to_string_lossy().into_owned();
        schema.components.push(ComponentEntry::new(world, plan.info.id(), file, plan.rows as u64));
        stats.files.push(path);
        stats.rows += plan.rows as u64;
        stats.file_bytes += bytes;
        stats.component_bytes += plan.component_bytes(world);
    }
    if opts.components.is_none() {
        schema.entities = Some(EntitiesEntry::new(world, &without_components(world, &plans)));
    }
    let exported: Vec<&str> = plans.iter().map(|p| p.info.name()).collect();
    schema.indexes = world
        .indexes()
        .into_iter()
        .filter(|i| exported.contains(&i.component.as_str()))
        .map(|i| IndexEntry { name: i.name, kind: i.kind.name().to_string(), component: i.component, fields: i.fields })
        .collect();
    let path = dir.join(SCHEMA_FILE);
    let mut text = serde_json::to_string_pretty(&schema).expect("the schema serialises");
    text.push('\n');
    let mut f = fs::File::create(&path).map_err(|e| TransferError::io(&path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| TransferError::io(&path, e))?;
    stats.file_bytes += text.len() as u64;
    stats.files.push(path);
    Ok(stats)
}
