//! Not part of the API (hidden): used by the workspace's front ends and
//! tests; may change in any release.
//!
//! Temporary files and interruption: every file the crate writes before
//! publishing it (the atomic writer's `.NAME.tmp-PID-N`) and every scratch
//! file it keeps for a while (Shuffle Once's copy and bucket files, a
//! program's copy of standard input, the parts of a held-out split) is
//! registered here while it exists, so that an interrupted process can
//! remove them all, and is locked by its owner for as long as it lives, so
//! that another process can tell one left by a killed run from one in use.
//!
//! Three ways out, three mechanisms:
//!
//! - An error or a normal end: the owners' `Drop` removes their files
//!   (the atomic writer's temporary file, [`ScratchFile`]).
//! - SIGINT or SIGTERM: a program's signal handler calls [`interrupt`] (or
//!   registers [`interrupt_flag`] directly, e.g. with the `signal-hook`
//!   crate). Writers check the flag before every write and fail with
//!   [`Error::Interrupted`], so the error path above removes their files.
//!   Code that cannot notice the flag soon (a blocked read, a long
//!   training epoch) is covered by [`remove_registered`], which a handler
//!   may call before it exits the process.
//! - SIGKILL or a power cut: nothing runs. Such files are recognised by
//!   their names (the process id in them is for people only) and by their
//!   locks: an owner holds an exclusive lock (`flock(2)` through
//!   [`File::lock`]) on its atomic writer's temporary file itself, and on
//!   a lock file `NAME.lock` beside each scratch file, from before the
//!   name appears until after it is gone; the system releases it when the
//!   process dies, however it dies. [`remove_stale`] removes a file only
//!   when it can take that lock, so a live run's files stay whatever its
//!   process id says (another PID namespace, another host sharing the
//!   directory, a reused id), and a dead run's go. The atomic writer calls
//!   it for its target's name when it starts; Shuffle Once, the command
//!   line's stream copy and the held-out split for their directories.
//!
//! Caveats: locks need a file system that supports them. Over NFS, Linux
//! emulates `flock` with the protocol's byte-range locks, which work
//! across hosts when the server runs its lock manager (NFSv4, or lockd for
//! NFSv3); a mount with `nolock` keeps locks local to each host, so runs
//! on several hosts sharing such a directory must each get their own
//! scratch directory. A host that crashes holds its locks until the
//! server's lease expires (NFSv4: about 90 s): its files are removed by
//! the first run after that. Where locking is not supported at all, no
//! file is ever taken for stale. Files of builds before these locks carry
//! none and are removed as stale.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::{Error, Result};

/// The process-wide interruption flag.
fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Files that exist now and must not outlive the process.
fn registry() -> MutexGuard<'static, Vec<PathBuf>> {
    static FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    // A panic while holding the lock leaves a usable list.
    FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asks every writer of the process to stop: their next write fails with
/// [`Error::Interrupted`] and their temporary files are removed. Only
/// stores to an atomic flag, so a signal handler may call it.
pub fn interrupt() {
    flag().store(true, Ordering::SeqCst);
}

/// The flag [`interrupt`] sets, for registering with a signal library
/// (`signal_hook::flag::register(SIGINT, interrupt_flag())`).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    Arc::clone(flag())
}

/// Whether [`interrupt`] was called (or the flag set).
pub fn interrupted() -> bool {
    flag().load(Ordering::SeqCst)
}

/// `Err(Error::Interrupted)` once [`interrupt`] was called.
///
/// # Errors
/// [`Error::Interrupted`].
pub fn check() -> Result<()> {
    if interrupted() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// Registers `path` as a temporary file of this process.
pub(crate) fn register(path: &Path) {
    registry().push(path.to_path_buf());
}

/// Removes `path` from disk and from the registry.
pub(crate) fn release(path: &Path) {
    let mut files = registry();
    let _ = std::fs::remove_file(path);
    if let Some(i) = files.iter().rposition(|p| p == path) {
        files.swap_remove(i);
    }
}

/// Forgets `path` without removing it (it was published).
pub(crate) fn forget(path: &Path) {
    let mut files = registry();
    if let Some(i) = files.iter().rposition(|p| p == path) {
        files.swap_remove(i);
    }
}

/// Removes every registered temporary and scratch file of this process
/// and returns how many were removed: for a signal handler that is about
/// to exit the process. Files being written are unlinked under their
/// writers, whose later writes go to the unlinked file, harmlessly. The
/// registry stays locked afterwards, so that no writer creates a file
/// after the sweep: call `std::process::exit` right after this.
pub fn remove_registered() -> usize {
    let mut files = registry();
    let removed = files
        .drain(..)
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count();
    // Hold the lock until the process exits: a writer starting now waits
    // instead of creating a file nobody would remove.
    std::mem::forget(files);
    removed
}

/// Whether `file` is the file now at `path` (not one removed, or replaced,
/// since it was opened).
fn is_at(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// Creates the new file `path` (an error if it exists) and takes an
/// exclusive lock on it, held until the returned file is closed. A
/// cleaner of another process may take the file for a dead run's in the
/// instant between its creation and the lock, and remove it: the file is
/// then created again. Where the file system has no locks, the file is
/// returned unlocked (and never taken for stale: see the module docs).
///
/// # Errors
/// The I/O error creating the file (`AlreadyExists` if it exists).
pub(crate) fn create_locked(path: &Path) -> std::io::Result<File> {
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        // Blocks only while a cleaner looks at it (an instant).
        let locked = loop {
            match file.lock() {
                // A signal while it waits (a stop and continue, for one)
                // is no reason to give up the lock: without it the file
                // would look abandoned to the next cleaner.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match locked {
            Ok(()) if is_at(&file, path) => return Ok(file),
            Ok(()) => continue,
            Err(_) => return Ok(file),
        }
    }
}

/// The file at `path`, locked, if its owner is gone: a regular file whose
/// exclusive lock can be taken, still the file at `path` once taken.
/// `None` for a file in use (or that cannot be opened, or on a file
/// system without locks).
fn take_abandoned(path: &Path) -> Option<File> {
    // Only regular files: opening a FIFO named like a temporary would wait.
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    // Opened for writing: NFS's emulation of flock needs it for an
    // exclusive lock.
    let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
    match file.try_lock() {
        Ok(()) => is_at(&file, path).then_some(file),
        Err(TryLockError::WouldBlock | TryLockError::Error(_)) => None,
    }
}

/// The lock file of scratch file `path`: `NAME.lock` beside it.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

/// A scratch file of this process: registered while it lives, removed
/// when dropped (and by [`remove_registered`]), and claimed by a lock
/// file `NAME.lock` beside it that this process holds locked for as long
/// as the guard lives (see the module docs), so that no other process
/// takes it for a killed run's. The file itself is created by whoever
/// writes it; the guard exists before it does.
#[derive(Debug)]
pub struct ScratchFile {
    path: PathBuf,
    lock_path: PathBuf,
    /// Open (and locked) while the guard lives.
    _lock: File,
}

/// The `n` of [`ScratchFile::claim`]'s names: distinct within a process.
static NEXT_SCRATCH: AtomicU64 = AtomicU64::new(0);

impl ScratchFile {
    /// Guards `path`: creates and locks its lock file. A lock file left by
    /// a dead process (its lock free) is taken over, with the scratch file
    /// it guarded removed.
    ///
    /// # Errors
    /// [`Error::Io`] naming the lock file: `AlreadyExists` when another
    /// live process holds `path` (another PID namespace or host may give
    /// the same name: [`claim`](Self::claim) picks a free one), or the
    /// error creating it.
    pub fn new(path: impl Into<PathBuf>) -> Result<ScratchFile> {
        let path = path.into();
        let lock_path = lock_path(&path);
        let lock = match create_locked(&lock_path) {
            Err(e) if e.kind() == ErrorKind::AlreadyExists => match take_abandoned(&lock_path) {
                Some(stale) => {
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(&lock_path);
                    drop(stale);
                    create_locked(&lock_path)
                }
                None => Err(e),
            },
            other => other,
        }
        .map_err(|e| Error::io(&lock_path, e))?;
        register(&path);
        register(&lock_path);
        Ok(ScratchFile {
            path,
            lock_path,
            _lock: lock,
        })
    }

    /// A new scratch file in `dir` named `name(n)`, for the first `n`
    /// (counting on from the last of this process) whose name no live
    /// process holds and that does not exist: names carry a process id,
    /// which other PID namespaces or hosts sharing `dir` may also have.
    ///
    /// # Errors
    /// [`Error::Io`] as [`new`](Self::new), other than a name in use.
    pub fn claim(dir: &Path, name: impl Fn(u64) -> String) -> Result<ScratchFile> {
        loop {
            let n = NEXT_SCRATCH.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(name(n));
            // A file there without a lock file: another build's; leave it.
            if std::fs::symlink_metadata(&path).is_ok() {
                continue;
            }
            match ScratchFile::new(&path) {
                Err(Error::Io {
                    kind: ErrorKind::AlreadyExists,
                    ..
                }) => {}
                other => return other,
            }
        }
    }

    /// The guarded path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        // The file first, its lock file last, still locked.
        release(&self.path);
        release(&self.lock_path);
    }
}

/// Whether `name` is one the crate gives a scratch file (its lock file
/// excepted): `.tocpile-shuffled-PID-SEED-N.toc` and its buckets
/// `..tocpile-shuffled-PID-SEED-N.toc.bucket-K` (Shuffle Once),
/// `.tocpile-stream-PID-N` (a copy of a stream),
/// `.tocpile-holdout-PID-…` (the parts of a held-out split).
fn is_scratch_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let rest = rest.trim_start_matches('.');
    ["tocpile-shuffled-", "tocpile-stream-", "tocpile-holdout-"]
        .iter()
        .any(|p| rest.starts_with(p))
        && !name.ends_with(".lock")
        && !is_temporary_name(name)
}

/// Whether `name` is one the atomic writer gives its temporary files:
/// `.NAME.tmp-PID-N`.
fn is_temporary_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let Some((_, tail)) = rest.rsplit_once(".tmp-") else {
        return false;
    };
    let Some((pid, n)) = tail.split_once('-') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(pid) && digits(n)
}

/// Whether `name` is a temporary, scratch or lock file the crate makes.
#[cfg(test)]
fn is_crate_file(name: &str) -> bool {
    is_temporary_name(name)
        || is_scratch_name(name)
        || name.strip_suffix(".lock").is_some_and(is_scratch_name)
}

/// Removes the temporary and scratch files of `dir` whose name starts
/// with `prefix` and whose owner is gone: an atomic writer's temporary
/// whose lock can be taken; a scratch file whose lock file's lock can be
/// taken (both go) or that has no lock file (a file of a build without
/// locks); a lock file whose lock can be taken. Returns the removed
/// paths (lock files included). Errors reading the directory yield an
/// empty list: this is housekeeping.
pub fn remove_stale(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    let mut remove = |path: PathBuf| {
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        if is_temporary_name(name) {
            if let Some(lock) = take_abandoned(&path) {
                remove(path);
                drop(lock);
            }
        } else if let Some(guarded) = name.strip_suffix(".lock").filter(|n| is_scratch_name(n)) {
            if let Some(lock) = take_abandoned(&path) {
                // The guarded file first, its lock file (still locked) last.
                remove(dir.join(guarded));
                remove(path);
                drop(lock);
            }
        } else if is_scratch_name(name) && std::fs::symlink_metadata(lock_path(&path)).is_err() {
            // No lock file: its owner removed it after the file (and
            // removes the file first), or never had one. Looked up now,
            // not in the listing, which may predate a lock file just made.
            remove(path);
        }
    }
    removed
}

/// The next number for [`ScratchFile::claim`]'s names (for tests).
#[cfg(test)]
fn peek_next() -> u64 {
    NEXT_SCRATCH.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tocpile-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn names_the_crate_gives_are_recognised() {
        for name in [
            ".train.toc.tmp-1234-0",
            ".a.tmp-b.toc.tmp-77-12",
            ".tocpile-shuffled-99-7-0.toc",
            ".tocpile-shuffled-99-7-0.toc.lock",
            ".tocpile-holdout-42-0-train.toc",
            "..tocpile-shuffled-99-7-0.toc.bucket-3",
            "..tocpile-shuffled-99-7-0.toc.bucket-3.lock",
            "...tocpile-shuffled-99-7-0.toc.bucket-3.tmp-99-2",
            ".tocpile-stream-5-1",
        ] {
            assert!(is_crate_file(name), "{name}");
        }
        for other in [
            "train.toc",
            ".train.toc",
            ".x.tmp-",
            ".x.tmp-12",
            ".x.tmp-12-",
            ".x.tmp-a-1",
            "x.tmp-12-1",
            "tocpile-stream-5-1",
            ".train.toc.lock",
        ] {
            assert!(!is_crate_file(other), "{other}");
        }
    }

    #[test]
    fn unlocked_files_go_locked_ones_stay_whatever_their_pid() {
        let dir = dir("stale");
        // A dead process's temporary; one of this process; one of a live
        // process whose id means nothing here (another namespace): locked.
        let dead = ".out.toc.tmp-8388608-0";
        let unlocked_mine = format!(".out.toc.tmp-{}-0", std::process::id());
        let live_elsewhere = ".out.toc.tmp-8388609-0";
        for name in [dead, &unlocked_mine, "out.toc"] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        let held = create_locked(&dir.join(live_elsewhere)).unwrap();
        let mut removed = remove_stale(&dir, ".out.toc.tmp-");
        removed.sort();
        let mut want = vec![dir.join(dead), dir.join(&unlocked_mine)];
        want.sort();
        assert_eq!(removed, want);
        assert!(dir.join(live_elsewhere).exists() && dir.join("out.toc").exists());
        drop(held);
        assert_eq!(
            remove_stale(&dir, ".out.toc.tmp-"),
            [dir.join(live_elsewhere)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scratch_files_are_locked_while_guarded_and_removed_when_dropped() {
        let dir = dir("scratch");
        let path = dir.join(".tocpile-stream-8388608-0");
        let guard = ScratchFile::new(&path).unwrap();
        std::fs::write(guard.path(), b"x").unwrap();
        assert!(registry().contains(&path));
        // Another process's cleaner leaves it alone.
        assert!(remove_stale(&dir, ".tocpile-stream-").is_empty());
        assert!(path.exists());
        // The same name cannot be guarded twice.
        assert!(matches!(
            ScratchFile::new(&path),
            Err(Error::Io {
                kind: ErrorKind::AlreadyExists,
                ..
            })
        ));
        drop(guard);
        assert!(!path.exists() && !lock_path(&path).exists());
        assert!(!registry().contains(&path));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dead_owners_scratch_file_goes_with_its_lock_file() {
        let dir = dir("scratch-dead");
        let path = dir.join(".tocpile-shuffled-8388608-0-0.toc");
        // Left by a killed run: the file and its lock file, unlocked.
        std::fs::write(&path, b"copy").unwrap();
        std::fs::write(lock_path(&path), b"").unwrap();
        // An old build's file, without a lock file.
        let old = dir.join(".tocpile-shuffled-8388608-0-1.toc");
        std::fs::write(&old, b"copy").unwrap();
        let removed = remove_stale(&dir, ".tocpile-shuffled-");
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn claim_skips_names_in_use() {
        let dir = dir("claim");
        let n = peek_next();
        let taken = ScratchFile::new(dir.join(format!(".tocpile-stream-1-{n}"))).unwrap();
        let guard = ScratchFile::claim(&dir, |k| format!(".tocpile-stream-1-{k}")).unwrap();
        assert_ne!(guard.path(), taken.path());
        drop((guard, taken));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
