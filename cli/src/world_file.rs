//! Opening, creating and saving world files (the engine's snapshots).
//!
//! Saving is atomic ([`ecsdb::World::save`]): the world is written to a temporary file in the
//! target's directory, synced, and renamed over the target, so a failure at any point leaves
//! the previous file as it was. Loading checks the whole file before building anything: a
//! truncated, corrupted or foreign file is an error, never a half-loaded world.

use std::fs;
use std::io;
use std::path::Path;

use ecsdb::{SaveOptions, SnapshotError, World};

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

/// Saves the world atomically; returns the size of the file in bytes.
pub fn save(world: &World, path: &Path) -> Result<u64, Failure> {
    world
        .save(path, &SaveOptions::default())
        .map(|stats| stats.bytes)
        .map_err(|e| Failure::usage(format!("cannot save world {}: {}", path.display(), snapshot_reason(&e))))
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
