//! World files shared between processes: one writer at a time, and changes on disk noticed.
//!
//! # The lock
//!
//! A save renames a new file over the world file, so a lock on the world file itself would
//! stay on the replaced inode. The lock lives on a sidecar file beside it instead: `WORLD.lock`
//! (`demo.ecsdb.lock` for `demo.ecsdb`), created on first use and never removed, because a
//! waiter that opened a removed sidecar would lock a file no one else sees. It is an OS lock
//! (`flock` on Unix, `LockFileEx` on Windows): the OS releases it when the holder closes the
//! file or dies, so a killed writer never leaves the world locked. While it holds the lock,
//! the holder keeps its process id in the sidecar, for the message of whoever waits.
//!
//! [`World::save`] takes the lock for the length of the write. A program that loads, changes
//! and saves a world, and must not lose another process's save in between, holds a
//! [`WorldLock`] across all three. Readers take no lock: a save renames a complete, synced
//! file into place, so they see the old file or the new one, never a mix.
//!
//! # Changes on disk
//!
//! A long-lived holder (an editor, a shell) should not keep the file locked while a user
//! works. It records a [`FileStamp`] when it loads, and saves with
//! [`WorldLock::save_unless_changed`], which refuses to overwrite a file that another process
//! saved in the meantime.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use super::{HEADER_LEN, SaveOptions, SaveStats, SnapshotError, save, write_atomically};
use crate::world::World;

/// How long [`World::save`] waits for another process's lock on the file before giving up.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest pause between two attempts to take a busy lock.
const MAX_PAUSE: Duration = Duration::from_millis(20);

/// An exclusive lock on a world file, for writing it; released when dropped (or when the
/// process ends, however it ends). It lives on a sidecar `WORLD.lock` file beside the world
/// file, so that a save that renames a new file over the world keeps it.
///
/// ```
/// use ecsdb_engine::{SaveOptions, World, WorldLock, DEFAULT_BUSY_TIMEOUT};
/// # let path = std::env::temp_dir().join(format!("doc-lock-{}.ecsdb", std::process::id()));
/// # World::new().save(&path, &SaveOptions::default()).unwrap();
/// // Load, change and save with no other writer in between.
/// let lock = WorldLock::acquire(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
/// let mut world = World::load(&path).unwrap();
/// world.define_component(&ecsdb_engine::ComponentDef::new("Tag", &[])).unwrap();
/// lock.save(&world, &SaveOptions::default()).unwrap();
/// // Another writer gives up while the lock is held.
/// let err = WorldLock::acquire(&path, std::time::Duration::ZERO).unwrap_err();
/// assert!(err.to_string().contains("is being written by another process"));
/// drop(lock);
/// # std::fs::remove_file(&path).unwrap();
/// # let _ = std::fs::remove_file(WorldLock::sidecar_path(&path).unwrap());
/// ```
#[derive(Debug)]
pub struct WorldLock {
    /// The locked sidecar file; closing it releases the lock.
    sidecar: File,
    /// The world file it guards.
    world: PathBuf,
}

impl WorldLock {
    /// Takes the lock on the world file `path` (which need not exist), waiting up to
    /// `timeout` for another holder to release it. Gives up with [`SnapshotError::Busy`],
    /// naming the holder's process id when it is known.
    pub fn acquire(path: impl AsRef<Path>, timeout: Duration) -> Result<WorldLock, SnapshotError> {
        let world = path.as_ref().to_path_buf();
        let sidecar_path = WorldLock::sidecar_path(&world)?;
        let file_err = |source| SnapshotError::File { path: sidecar_path.clone(), source };
        let mut sidecar = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&sidecar_path)
            .map_err(file_err)?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match sidecar.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let waited = start.elapsed();
                    if waited >= timeout {
                        return Err(SnapshotError::Busy { path: world, pid: holder_pid(&sidecar_path) });
                    }
                    thread::sleep(pause.min(timeout - waited));
                    pause = (pause * 2).min(MAX_PAUSE);
                }
                Err(TryLockError::Error(e)) => return Err(file_err(e)),
            }
        }
        let write_pid = |f: &mut File| -> io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            writeln!(f, "{}", std::process::id())
        };
        write_pid(&mut sidecar).map_err(file_err)?;
        Ok(WorldLock { sidecar, world })
    }

    /// The sidecar file that holds the lock of the world file `path`: `path` with `.lock`
    /// appended to its file name.
    pub fn sidecar_path(path: impl AsRef<Path>) -> Result<PathBuf, SnapshotError> {
        let path = path.as_ref();
        let name = path.file_name().ok_or_else(|| SnapshotError::File {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"),
        })?;
        let mut lock_name = name.to_os_string();
        lock_name.push(".lock");
        Ok(path.with_file_name(lock_name))
    }

    /// The world file this lock guards.
    pub fn path(&self) -> &Path {
        &self.world
    }

    /// Saves `world` to the locked file, atomically (see [`World::save`]).
    pub fn save(&self, world: &World, opts: &SaveOptions) -> Result<SaveStats, SnapshotError> {
        let mut enc = save::Encoder::new(world, opts)?;
        write_atomically(&self.world, |f| enc.write_file(f).map(|_| ()))?;
        Ok(enc.stats)
    }

    /// Saves `world` to the locked file only if the file is still as `expected` (the stamp
    /// taken when the world was loaded; `None` if the file did not exist then). Otherwise
    /// fails with [`SnapshotError::ChangedOnDisk`] and leaves the file untouched.
    pub fn save_unless_changed(
        &self,
        world: &World,
        expected: Option<&FileStamp>,
        opts: &SaveOptions,
    ) -> Result<SaveStats, SnapshotError> {
        if self.stamp()?.as_ref() != expected {
            return Err(SnapshotError::ChangedOnDisk { path: self.world.clone() });
        }
        self.save(world, opts)
    }

    /// The locked file as it is now (`None` if it does not exist). Taken after a save, it is
    /// the stamp the next [`WorldLock::save_unless_changed`] expects.
    pub fn stamp(&self) -> Result<Option<FileStamp>, SnapshotError> {
        FileStamp::of(&self.world)
    }
}

impl Drop for WorldLock {
    fn drop(&mut self) {
        // Clear the process id while still holding the lock; closing the file releases it.
        let _ = self.sidecar.set_len(0);
    }
}

/// The process id a lock's sidecar names, if it names one.
fn holder_pid(sidecar: &Path) -> Option<u32> {
    fs::read_to_string(sidecar).ok()?.trim().parse().ok()
}

/// What a world file looked like at one moment: its identity on disk, size, modification
/// time and snapshot header (whose checksums cover the whole file). Any save by any process
/// changes it.
///
/// Take the stamp *before* loading: a save that lands between the two then shows up as a
/// change (a false alarm), never the other way round (a lost update).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Device and inode: every save renames a new file into place.
    #[cfg(unix)]
    identity: (u64, u64),
    /// The first bytes of the file: the snapshot header with the body's checksum.
    head: [u8; HEADER_LEN],
}

impl FileStamp {
    /// The stamp of the file `path` now, or `None` if there is no such file.
    pub fn of(path: impl AsRef<Path>) -> Result<Option<FileStamp>, SnapshotError> {
        let path = path.as_ref();
        let file_err = |source| SnapshotError::File { path: path.to_path_buf(), source };
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(file_err(e)),
        };
        let meta = file.metadata().map_err(file_err)?;
        let mut head = [0u8; HEADER_LEN];
        if meta.is_file() {
            let mut filled = 0;
            while filled < HEADER_LEN {
                match file.read(&mut head[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(file_err(e)),
                }
            }
        }
        Ok(Some(FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            identity: {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino())
            },
            head,
        }))
    }

    /// The file's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ComponentDef;

    fn temp_world(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("ecsdb-unit-lock-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.ecsdb");
        (dir, path)
    }

    fn world_with(component: &str) -> World {
        let mut w = World::new();
        w.define_component(&ComponentDef::new(component, &[])).unwrap();
        w
    }

    #[test]
    fn a_second_holder_waits_then_gives_up_naming_the_first() {
        let (dir, path) = temp_world("busy");
        let first = WorldLock::acquire(&path, Duration::ZERO).unwrap();
        let sidecar = WorldLock::sidecar_path(&path).unwrap();
        assert_eq!(fs::read_to_string(&sidecar).unwrap(), format!("{}\n", std::process::id()));
        let start = Instant::now();
        let err = WorldLock::acquire(&path, Duration::from_millis(60)).unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(60), "it waited the whole timeout");
        match &err {
            SnapshotError::Busy { path: p, pid } => {
                assert_eq!(p, &path);
                assert_eq!(*pid, Some(std::process::id()));
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!("world {} is being written by another process (pid {})", path.display(), std::process::id())
        );
        drop(first);
        assert_eq!(fs::read_to_string(&sidecar).unwrap(), "", "a released lock names no one");
        // World::save waits for the same lock. The lock is held only briefly while the saver
        // waits: a slow run (Miri) must not outlast the saver's timeout.
        let held = WorldLock::acquire(&path, Duration::ZERO).unwrap();
        held.save(&world_with("A"), &SaveOptions::default()).unwrap();
        let saved = fs::read(&path).unwrap();
        let saver = thread::spawn({
            let path = path.clone();
            move || world_with("B").save(&path, &SaveOptions::default()).map(|s| s.bytes)
        });
        thread::sleep(Duration::from_millis(30));
        assert_eq!(fs::read(&path).unwrap(), saved, "the save waits for the lock");
        drop(held);
        saver.join().unwrap().unwrap();
        assert!(World::load(&path).unwrap().components().by_name("B").is_some(), "the waiting save came last");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_changed_file_is_not_overwritten() {
        let (dir, path) = temp_world("changed");
        assert_eq!(FileStamp::of(&path).unwrap(), None);
        world_with("A").save(&path, &SaveOptions::default()).unwrap();
        let loaded = FileStamp::of(&path).unwrap();
        assert!(loaded.is_some());
        assert_eq!(FileStamp::of(&path).unwrap(), loaded, "a stamp is stable while nothing writes");

        // Another writer saves in between.
        world_with("B").save(&path, &SaveOptions::default()).unwrap();
        let theirs = fs::read(&path).unwrap();
        let lock = WorldLock::acquire(&path, Duration::ZERO).unwrap();
        let err = lock.save_unless_changed(&world_with("C"), loaded.as_ref(), &SaveOptions::default()).unwrap_err();
        assert!(matches!(err, SnapshotError::ChangedOnDisk { .. }), "{err:?}");
        assert_eq!(fs::read(&path).unwrap(), theirs, "the file is untouched");
        // A file that did not exist at load time and exists now has changed too.
        assert!(lock.save_unless_changed(&world_with("C"), None, &SaveOptions::default()).is_err());

        // With the current stamp, the save goes through, and its own stamp is the next one.
        let now = lock.stamp().unwrap();
        lock.save_unless_changed(&world_with("C"), now.as_ref(), &SaveOptions::default()).unwrap();
        let after = lock.stamp().unwrap();
        assert_ne!(after, now);
        lock.save_unless_changed(&world_with("D"), after.as_ref(), &SaveOptions::default()).unwrap();
        drop(lock);
        assert!(World::load(&path).unwrap().components().by_name("D").is_some());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_overwrite_in_place_of_the_same_size_is_a_change() {
        let (dir, path) = temp_world("inplace");
        fs::write(&path, [1u8; 100]).unwrap();
        let before = FileStamp::of(&path).unwrap();
        let mut f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all(&[2u8; 8]).unwrap();
        drop(f);
        assert_ne!(FileStamp::of(&path).unwrap(), before);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_path_without_a_file_name_is_an_error() {
        assert!(WorldLock::acquire("/", Duration::ZERO).is_err());
        assert!(WorldLock::sidecar_path("").is_err());
    }
}
