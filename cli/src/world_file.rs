//! Opening, creating and saving world files (the engine's snapshots).
//!
//! Saving is atomic ([`ecsdb::World::save`]): the world is written to a temporary file in the
//! target's directory, synced, and renamed over the target, so a failure at any point leaves
//! the previous file as it was. Loading checks the whole file before building anything: a
//! truncated, corrupted or foreign file is an error, never a half-loaded world.
//!
//! Writers take the world's lock (the `WORLD.lock` sidecar, [`ecsdb::WorldLock`]) and wait up
//! to `--busy-timeout` for another writer: `exec` holds it from load to save, so no other
//! process's save falls in between; the shell takes it only to save, and refuses to overwrite
//! a file that changed on disk since it loaded it ([`ecsdb::FileStamp`]).

use std::fs;
use std::io;
use std::path::Path;
use std::time::Duration;

use ecsdb::{FileStamp, SaveOptions, SnapshotError, World, WorldLock};

use crate::Failure;

/// Loads an existing world file.
pub fn load(path: &Path) -> Result<World, Failure> {
    let fail = |reason: String| Failure::usage(format!("cannot open world {}: {reason}", path.display()));
    let meta = fs::metadata(path).map_err(|e| fail(io_reason(&e)))?;
    if meta.is_dir() {
        return Err(fail("it is a directory".to_string()));
    }
    World::load(path).map_err(|e| fail(snapshot_reason(&e)))
}

/// Loads the world file if it exists, or returns an empty world if it does not.
pub fn open_or_create(path: &Path) -> Result<World, Failure> {
    match fs::metadata(path) {
        Ok(_) => load(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(World::new()),
        Err(e) => Err(Failure::usage(format!("cannot open world {}: {}", path.display(), io_reason(&e)))),
    }
}

/// Takes the world file's lock, waiting up to `timeout` for another writer.
pub fn lock(path: &Path, timeout: Duration) -> Result<WorldLock, Failure> {
    WorldLock::acquire(path, timeout).map_err(|e| match e {
        SnapshotError::Busy { .. } => {
            Failure::usage(format!("{e}; gave up after {} (--busy-timeout)", seconds(timeout)))
        }
        e => Failure::usage(format!("cannot lock world {}: {}", path.display(), snapshot_reason(&e))),
    })
}

/// What the world file looks like now (`None` if there is none), for noticing later saves by
/// other processes.
pub fn stamp(path: &Path) -> Result<Option<FileStamp>, Failure> {
    FileStamp::of(path)
        .map_err(|e| Failure::usage(format!("cannot open world {}: {}", path.display(), snapshot_reason(&e))))
}

/// Saves the world atomically, under the file's lock (waiting up to
/// [`ecsdb::DEFAULT_BUSY_TIMEOUT`] for another writer); returns the size of the file in bytes.
pub fn save(world: &World, path: &Path) -> Result<u64, Failure> {
    save_locked(world, &lock(path, ecsdb::DEFAULT_BUSY_TIMEOUT)?)
}

/// Saves the world atomically to the locked file; returns the size of the file in bytes.
pub fn save_locked(world: &World, lock: &WorldLock) -> Result<u64, Failure> {
    lock.save(world, &SaveOptions::default())
        .map(|stats| stats.bytes)
        .map_err(|e| Failure::usage(format!("cannot save world {}: {}", lock.path().display(), snapshot_reason(&e))))
}

/// Parses a `--busy-timeout`: seconds (`5`, `0.5`), or with a unit (`250ms`, `2s`).
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) =
        if let Some(ms) = t.strip_suffix("ms") { (ms, 1e-3) } else { (t.strip_suffix('s').unwrap_or(t), 1.0) };
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale <= 86_400.0 => Ok(Duration::from_secs_f64(v * scale)),
        _ => Err(format!("'{text}' is not a time: use seconds (5, 0.5) or 250ms, up to a day")),
    }
}

/// A duration in seconds, for messages: `5 s`, `0.25 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A snapshot error in words; file errors without the temporary file's name.
fn snapshot_reason(e: &SnapshotError) -> String {
    match e {
        SnapshotError::File { source, .. } | SnapshotError::Io(source) => io_reason(source),
        other => other.to_string(),
    }
}

/// An I/O error in words, without Rust's `(os error N)` suffix.
pub fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}
