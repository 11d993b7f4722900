//! Snapshots: whole worlds saved to and loaded from files. (Worlds as text, for people and
//! other tools, are `ecsdb-transfer`'s: Parquet, CSV or JSON lines with `schema.json`.)
//!
//! A snapshot holds the component catalog (names, fields, types, storage kinds), the entity
//! allocator (generations, free list, live flags: handles stay valid across save and load,
//! and the next spawns get the same ids), every archetype table and sparse set, index
//! definitions and the world's change tick. Loading one into an empty world reproduces the
//! world exactly: same entities and ids, same values, same table order, same query answers.
//!
//! # Format (version 3)
//!
//! ```text
//! offset  size  field
//!      0     8  magic            89 45 43 53 44 42 0D 0A  ("\x89ECSDB\r\n")
//!      8     4  format version   u32 LE (3; 2 and 1 are read too)
//!     12     4  flags            u32 LE (bit 0: change ticks saved; other bits must be 0)
//!     16     8  body length      u64 LE
//!     24     4  body checksum    u32 LE, CRC-32 (IEEE) of the body
//!     28     4  header checksum  u32 LE, CRC-32 of bytes 0..28
//!     32     …  body             serde + bincode 2: little-endian, fixed-width integers
//!
//! body
//!   world_tick         u32
//!   catalog            [component: name, storage (0 table, 1 sparse), opaque, size,
//!                       fields [name, type code, offset]]           (saving world's id order)
//!   allocator          generations (u32 LE per index), live bits, free list (u32 LE, reuse
//!                      order)
//!   tables             [table: component positions in the catalog, entities (index u32 LE,
//!                       generation u32 LE per row), one column per component]
//!   sparse             [set: component position, entities, one column]
//!   index_definitions  version u32, [name, kind, component, fields]; version 2 adds reference
//!                      declarations as kind `reference`, fields [field, ON DELETE policy,
//!                      `acyclic` or `cyclic`] (version 1 is written when there are none)
//!   schedule           (format 2 and later) version u32, systems, fixed rate, clocks
//!   defaults           (format 3 and later) version u32, [component position, field
//!                      position, the value as the field stores it]
//!
//! column   = data + ticks (added, changed: u32 LE per row; only with flag bit 0)
//! data     = Empty                      tags
//!          | Bulk(bytes)                plain numeric fields covering the value without
//!                                       padding: the column's rows as they are in memory,
//!                                       laid out as the catalog's size and offsets say
//!          | Fields([run])              one run per field, in declaration order:
//!                                         Plain(bytes): values back to back, little-endian
//!                                         Strings(lengths u32 LE, UTF-8 text back to back)
//!          | Opaque(lengths, blobs)     serde values (bincode), through registered functions
//! ```
//!
//! Byte runs are length-prefixed and copied in one piece: saving a plain column is one memory
//! copy, loading it into the same layout another. Strings, entities and values with padding go
//! field by field. Loading into a program whose layout differs (another field order, a
//! `#[repr(C)]` type) moves each field to its offset. The file describes itself: any program,
//! with or without the Rust types, can open it.
//!
//! # Safety of saving and loading
//!
//! - [`World::save`] writes a temporary file next to the target, syncs it and renames it over
//!   the target, so a failed or interrupted save leaves the previous file as it was.
//! - Saves lock the file against other processes' saves (a `WORLD.lock` sidecar, see
//!   [`WorldLock`]); a program holds the lock across load, change and save so that no other
//!   process's save is lost in between, or checks a [`FileStamp`] before saving.
//! - Loading checks the header, both checksums, and then every structural claim of the body
//!   (lengths, counts, component references, entity ids against the allocator, UTF-8, bool
//!   bytes) before building anything. A truncated, corrupted, foreign or newer file is a
//!   [`SnapshotError`], never a panic or a partly loaded world, and no allocation is sized by
//!   a length the file claims but does not back with bytes.
//!
//! # Loading into a program
//!
//! [`World::load`] builds a world from the file alone: every component becomes a run-time
//! component. A program that wants its Rust types registers them first and loads with
//! [`World::load_into`]: components are matched by name, their fields by name and type (a
//! mismatch is a [`SnapshotError::SchemaMismatch`] naming the component and field), and
//! components the program does not know load as run-time components.
//!
//! ```
//! use ecsdb_engine::{Component, Entity, SaveOptions, World};
//! #[derive(Component, Debug, PartialEq)]
//! struct Position { x: f32, y: f32 }
//! #[derive(Component, Debug, PartialEq)]
//! struct Name { value: String }
//!
//! let mut world = World::new();
//! let a = world.spawn((Position { x: 1.0, y: 2.0 }, Name { value: "a".into() }));
//! let bytes = world.save_to_vec(&SaveOptions::default()).unwrap();
//!
//! // Without the Rust types: run-time components, readable by name.
//! let opened = World::load_from_bytes(&bytes).unwrap();
//! assert_eq!(opened.get_field(a, "Name", "value").unwrap(), "a".into());
//!
//! // With them: typed access, same entity handles.
//! let mut typed = World::new();
//! typed.register::<Position>().unwrap();
//! typed.register::<Name>().unwrap();
//! typed.load_bytes_into(&bytes, &Default::default()).unwrap();
//! assert_eq!(typed.get::<Position>(a).unwrap(), &Position { x: 1.0, y: 2.0 });
//! // The allocator came along: the next spawn gets the same id in both worlds.
//! assert_eq!(typed.spawn(Position { x: 0.0, y: 0.0 }), world.spawn(Position { x: 0.0, y: 0.0 }));
//! ```

mod columnar;
mod columns;
mod format;
mod load;
mod lock;
mod placement;
mod read;
mod save;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::index::IndexBuild;
pub use columnar::{ColumnarWorld, ComponentColumns, DeadIndices, FieldValues};
pub use format::{FORMAT_VERSION, HEADER_LEN, MAGIC};
pub use lock::{DEFAULT_BUSY_TIMEOUT, FileStamp, WorldLock};

use crate::world::World;

/// What to do while saving.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveOptions {
    /// Leave out opaque components that have no registered serde functions (instead of
    /// failing). Their values are lost; the entities keep their other components.
    pub skip_opaque: bool,
    /// Also save every row's added and changed ticks (8 bytes per row and component), so
    /// that `Added`/`Changed` filters see the same history after loading. Without them,
    /// every loaded row is stamped with the saved world tick.
    pub change_ticks: bool,
    /// Save the schema only: components, index and reference definitions, systems and the
    /// clock, with no entities (the tick too, so a world loaded from it stamps its rows
    /// later than the saved one). A template for a world to fill, such as a copy that
    /// [`World::mirror_from`] then brings up to date a chunk at a time.
    ///
    /// ```
    /// use ecsdb_engine::{ComponentDef, FieldType, SaveOptions, Value, World};
    /// let mut world = World::new();
    /// world.define_component(&ComponentDef::new("Hp", &[("v", FieldType::I64)])).unwrap();
    /// world.spawn_values(&[("Hp", &[("v", Value::Int(1))])]).unwrap();
    /// let bytes = world.save_to_vec(&SaveOptions { schema_only: true, ..SaveOptions::default() }).unwrap();
    /// let empty = World::load_from_bytes(&bytes).unwrap();
    /// assert!(empty.is_empty());
    /// assert!(empty.component_id("Hp").is_ok());
    /// ```
    pub schema_only: bool,
}

/// What to do while loading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Leave out values of opaque components this program cannot decode (not registered
    /// with [`World::register_opaque_serde`]) instead of failing.
    pub skip_opaque: bool,
    /// When the snapshot's secondary indexes are built: before the load returns (the
    /// default), or at the first read of each (a copy whose readers may never use them).
    pub indexes: IndexBuild,
}

/// What a save wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveStats {
    /// Bytes of the snapshot (header and body).
    pub bytes: u64,
    /// Bytes of component data saved, as the world holds it: every value's size, plus the
    /// text of its strings. The payload throughput figures are measured on.
    pub component_bytes: u64,
    /// Live entities saved.
    pub entities: usize,
    /// Non-empty archetype tables saved.
    pub tables: usize,
    /// Opaque components left out (see [`SaveOptions::skip_opaque`]).
    pub skipped_opaque: Vec<String>,
}

/// What a load read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Bytes of the snapshot.
    pub bytes: u64,
    /// Bytes of component data loaded, as the world holds it: every value's size, plus the
    /// text of its strings.
    pub component_bytes: u64,
    /// Live entities loaded.
    pub entities: usize,
    /// Components the program did not know, defined as run-time components.
    pub defined: Vec<String>,
    /// Opaque components whose values were left out (see [`LoadOptions::skip_opaque`]).
    pub skipped_opaque: Vec<String>,
    /// Index definitions the load could not rebuild by itself: function indexes (register
    /// their predicate again with `create_function_index`) and definitions that no longer fit
    /// the catalog. Every other saved index is rebuilt from the loaded data.
    pub index_definitions: Vec<IndexDefinition>,
}

/// The kind under which the index definitions section records a reference declaration.
pub(crate) const REFERENCE_KIND: &str = "reference";

/// A secondary index as a snapshot records it: indexes are saved as definitions and rebuilt
/// from the data when loading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDefinition {
    /// The index's name.
    pub name: String,
    /// Its kind (`rtree`, `bitmap`, `btree`, `function`, `relation`; `reference` for a
    /// reference declaration that could not be restored).
    pub kind: String,
    /// The component it indexes.
    pub component: String,
    /// The indexed fields.
    pub fields: Vec<String>,
}

/// Why a snapshot could not be saved or loaded. A failed load changes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Reading or writing failed.
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    /// Reading or writing a file failed.
    #[error("i/o error on '{}': {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The data does not start with the snapshot magic bytes.
    #[error("not an ecsdb snapshot")]
    NotASnapshot,
    /// The snapshot was written in a format version this build does not read.
    #[error("unsupported snapshot version {0}")]
    UnsupportedVersion(u32),
    /// The header sets flags this build does not know.
    #[error("unsupported snapshot flags {0:#x}")]
    UnsupportedFlags(u32),
    /// The data ends before the header says it should.
    #[error("corrupt snapshot: truncated ({actual} bytes, the header promises {expected})")]
    Truncated {
        /// Bytes the header promises.
        expected: u64,
        /// Bytes present.
        actual: u64,
    },
    /// The body does not match its checksum.
    #[error("corrupt snapshot: checksum mismatch")]
    ChecksumMismatch,
    /// The body is inconsistent (undecodable, or a structural check failed).
    #[error("corrupt snapshot: {0}")]
    Corrupt(String),
    /// A component of the snapshot and the program's component of the same name disagree.
    #[error("component '{component}' does not match the snapshot: {reason}")]
    SchemaMismatch {
        /// The component.
        component: String,
        /// The field concerned, if one is.
        field: Option<String>,
        /// What differs.
        reason: String,
    },
    /// Opaque components with values but no registered serde functions.
    #[error(
        "opaque component(s) {} have no serde functions: register them with \
         World::register_opaque_serde, or skip them with skip_opaque",
        .0.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
    )]
    OpaqueWithoutSerde(Vec<String>),
    /// A registered serde function failed on a value.
    #[error("serde error in component '{component}': {message}")]
    Serde {
        /// The component.
        component: String,
        /// The serde error.
        message: String,
    },
    /// Something is beyond what the format can describe (a string over 4 GiB).
    #[error("{what} is too large for a snapshot")]
    TooLarge {
        /// What.
        what: String,
    },
    /// Encoding the body failed.
    #[error("encoding the snapshot failed: {0}")]
    Encode(String),
    /// [`World::load_into`] needs a world without live entities.
    #[error("cannot load into a world with {0} live entities")]
    WorldNotEmpty(usize),
    /// Another process held the world file's lock for longer than the wait allowed (see
    /// [`WorldLock`]). Nothing was written.
    #[error("world {} is being written by another process (pid {})", path.display(),
            pid.map_or("unknown".to_string(), |p| p.to_string()))]
    Busy {
        /// The world file.
        path: PathBuf,
        /// The process holding the lock, when its sidecar names one.
        pid: Option<u32>,
    },
    /// The world file changed on disk since it was loaded (another process saved it), so
    /// saving would lose that process's work (see [`WorldLock::save_unless_changed`]).
    /// Nothing was written.
    #[error("world {} changed on disk since it was loaded", path.display())]
    ChangedOnDisk {
        /// The world file.
        path: PathBuf,
    },
    /// Columns given to [`World::import_columns`] do not describe a world.
    #[error("component '{component}'{}: {reason}", row.map(|r| format!(", row {r}")).unwrap_or_default())]
    Columns {
        /// The component.
        component: String,
        /// The row concerned (0-based), if one is.
        row: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// An entity is listed twice in one component given to [`World::import_columns`].
    #[error("component '{component}', row {row}: entity {entity} is listed twice")]
    DuplicateEntity {
        /// The component.
        component: String,
        /// The second row listing it (0-based).
        row: usize,
        /// The entity.
        entity: crate::Entity,
    },
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Under Miri, which runs the tests thousands of times slower, the sizes that send large
/// snapshots down the parallel, deferred and file paths (and the chunks those paths work in)
/// are divided by this, so that the tests' small worlds still take those paths.
const SIZE_DIVISOR: usize = if cfg!(miri) { 256 } else { 1 };

/// Snapshot files up to this size are read into memory whole before loading.
const SMALL_FILE: u64 = (1 << 20) / SIZE_DIVISOR as u64;

/// Removes a temporary file unless disarmed.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Writes `path` atomically: `write` fills a new temporary file in the same directory,
/// which is synced and renamed over `path`. On any error the temporary file is removed and
/// `path` is untouched.
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<(), SnapshotError>,
) -> Result<(), SnapshotError> {
    let file_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SnapshotError::File { path, source }
    };
    let name = path.file_name().ok_or_else(|| SnapshotError::File {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"),
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}-{}.tmp", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
    let tmp = dir.join(tmp_name);
    let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(file_err(&tmp))?;
    let mut guard = TempFile(Some(tmp.clone()));
    write(&mut file).map_err(|e| match e {
        SnapshotError::Io(source) => file_err(&tmp)(source),
        e => e,
    })?;
    file.sync_all().map_err(file_err(&tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(file_err(path))?;
    guard.0 = None;
    // Make the rename itself durable. Not every platform or filesystem can sync a
    // directory; the data is safe either way, so a failure here is not an error. Miri cannot
    // sync one at all: it stops there as on any unsupported operation.
    #[cfg(all(unix, not(miri)))]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

impl World {
    /// Saves the world to `path`, atomically: a temporary file in the same directory is
    /// written, synced and renamed over `path`, so an error (or a crash) never harms the
    /// previous file.
    ///
    /// The save holds the file's [`WorldLock`], waiting up to [`DEFAULT_BUSY_TIMEOUT`] for
    /// another process's save to finish (then [`SnapshotError::Busy`]); a program already
    /// holding the lock saves with [`WorldLock::save`] instead.
    ///
    /// Fails with [`SnapshotError::OpaqueWithoutSerde`] when an opaque component has values
    /// but no serde functions (see [`World::register_opaque_serde`] and
    /// [`SaveOptions::skip_opaque`]).
    pub fn save(&self, path: impl AsRef<Path>, opts: &SaveOptions) -> Result<SaveStats, SnapshotError> {
        WorldLock::acquire(path, DEFAULT_BUSY_TIMEOUT)?.save(self, opts)
    }

    /// Writes the snapshot to a writer (no temporary file: the caller owns atomicity).
    pub fn save_to_writer(&self, w: impl Write, opts: &SaveOptions) -> Result<SaveStats, SnapshotError> {
        let mut enc = save::Encoder::new(self, opts)?;
        enc.write_to(w)?;
        Ok(enc.stats)
    }

    /// The snapshot as bytes.
    pub fn save_to_vec(&self, opts: &SaveOptions) -> Result<Vec<u8>, SnapshotError> {
        Ok(save::Encoder::new(self, opts)?.into_vec()?.0)
    }

    /// The snapshot as bytes, with what was written.
    pub fn save_to_vec_with_stats(&self, opts: &SaveOptions) -> Result<(Vec<u8>, SaveStats), SnapshotError> {
        save::Encoder::new(self, opts)?.into_vec()
    }

    /// Loads a snapshot file into a new world. Every component becomes a run-time component
    /// (use [`World::load_into`] to load into Rust types).
    pub fn load(path: impl AsRef<Path>) -> Result<World, SnapshotError> {
        let mut w = World::new();
        w.load_into(path, &LoadOptions::default())?;
        Ok(w)
    }

    /// Loads a snapshot from a reader into a new world.
    pub fn load_from_reader(mut r: impl Read) -> Result<World, SnapshotError> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)?;
        World::load_from_bytes(&bytes)
    }

    /// Loads a snapshot from bytes into a new world.
    pub fn load_from_bytes(bytes: &[u8]) -> Result<World, SnapshotError> {
        let mut w = World::new();
        w.load_bytes_into(bytes, &LoadOptions::default())?;
        Ok(w)
    }

    /// Loads a snapshot file into this world, which must have no live entities: its
    /// component registrations (Rust types, run-time components, serde functions) are kept
    /// and matched with the snapshot's components by name; its entities, allocator, tables
    /// and tick are replaced by the snapshot's. On error the world is unchanged.
    ///
    /// The world gets a new [`World::id`]: query states prepared before must be prepared
    /// again. The snapshot's secondary indexes are rebuilt from the loaded data (except
    /// function indexes: see [`LoadStats::index_definitions`]).
    pub fn load_into(&mut self, path: impl AsRef<Path>, opts: &LoadOptions) -> Result<LoadStats, SnapshotError> {
        let path = path.as_ref();
        if !self.is_empty() {
            return Err(SnapshotError::WorldNotEmpty(self.len()));
        }
        let file_err = |source| SnapshotError::File { path: path.to_path_buf(), source };
        let mut file = File::open(path).map_err(file_err)?;
        let total = file.metadata().map_err(file_err)?.len();
        #[cfg(test)]
        let small = read::knobs::SMALL_FILE.with(|c| c.get()).unwrap_or(SMALL_FILE);
        #[cfg(not(test))]
        let small = SMALL_FILE;
        if !read::POSITIONED_READS || total <= small {
            // One read into a buffer of the file's size, then the in-memory path.
            let mut bytes = Vec::with_capacity(total as usize + 1);
            file.read_to_end(&mut bytes).map_err(file_err)?;
            return self.load_bytes_into(&bytes, opts);
        }
        // Large files are not read into memory: the loader reads each run straight into its
        // column.
        let mut head = [0u8; HEADER_LEN];
        let head = &mut head[..total.min(HEADER_LEN as u64) as usize];
        file.read_exact(head).map_err(file_err)?;
        let header = load::check_header(head, total)?;
        let input = read::Input::File { file: &file, base: HEADER_LEN as u64, len: header.body_len };
        let mut stats = load::load_snapshot(self, &input, &header, opts).map_err(|e| match e {
            SnapshotError::Io(source) => file_err(source),
            e => e,
        })?;
        stats.bytes = total;
        self.rebuild_snapshot_indexes(&mut stats, opts.indexes);
        Ok(stats)
    }

    /// Loads a snapshot from bytes into this world (see [`World::load_into`]).
    pub fn load_bytes_into(&mut self, bytes: &[u8], opts: &LoadOptions) -> Result<LoadStats, SnapshotError> {
        if !self.is_empty() {
            return Err(SnapshotError::WorldNotEmpty(self.len()));
        }
        let (header, body) = load::parse_header(bytes)?;
        let mut stats = load::load_snapshot(self, &read::Input::Mem(body), &header, opts)?;
        stats.bytes = bytes.len() as u64;
        self.rebuild_snapshot_indexes(&mut stats, opts.indexes);
        Ok(stats)
    }

    /// Index definitions to save with the world: every secondary index, by its resolved name
    /// and fields, so loading rebuilds exactly the same indexes.
    pub(crate) fn snapshot_index_definitions(&self) -> Vec<IndexDefinition> {
        let references = self.reference_definitions().into_iter().map(|r| IndexDefinition {
            name: format!("{}_{}_{REFERENCE_KIND}", r.component, r.field),
            kind: REFERENCE_KIND.to_string(),
            component: r.component,
            fields: vec![r.field, r.on_delete.name().to_string(), if r.acyclic { "acyclic" } else { "cyclic" }.into()],
        });
        references
            // The definitions as registered: listing them must not build an index whose build
            // was deferred (see `World::create_index_deferred`).
            .chain(self.index_definitions().into_iter().map(|d| IndexDefinition {
                name: d.name.unwrap_or_default(),
                kind: d.kind.name().to_string(),
                component: d.component,
                fields: d.fields,
            }))
            .collect()
    }

    /// Rebuilds the indexes a snapshot defined, after its data is in place. Function indexes
    /// (whose predicate is Rust code) and definitions that no longer fit the catalog stay in
    /// `stats.index_definitions` for the program to handle; the rest are rebuilt and removed
    /// from that list.
    pub(crate) fn rebuild_snapshot_indexes(&mut self, stats: &mut LoadStats, build: IndexBuild) {
        let defs = std::mem::take(&mut stats.index_definitions);
        for d in defs {
            let kind = crate::index::IndexKind::from_name(&d.kind);
            if d.kind == REFERENCE_KIND {
                let declared = match d.fields.as_slice() {
                    [field, policy, acyclic] => {
                        crate::OnDelete::ALL.into_iter().find(|p| p.name() == policy).is_some_and(|on_delete| {
                            let def = crate::ReferenceDef::new(&d.component, field, on_delete, acyclic == "acyclic");
                            self.declare_reference(&def).is_ok()
                        })
                    }
                    _ => false,
                };
                if !declared {
                    stats.index_definitions.push(d);
                }
                continue;
            }
            let rebuilt = match kind {
                Some(kind) if kind != crate::index::IndexKind::Function => {
                    let def = crate::index::IndexDef {
                        name: Some(d.name.clone()),
                        component: d.component.clone(),
                        fields: d.fields.clone(),
                        kind,
                    };
                    self.create_index_with(def, build).is_ok()
                }
                _ => false,
            };
            if !rebuilt {
                stats.index_definitions.push(d);
            }
        }
    }
}
