//! Temporary files and interruption: every file the crate writes before
//! publishing it (the atomic writer's `.NAME.tmp-PID-N`) and every scratch
//! file it keeps for a while (Shuffle Once's copy and bucket files, a
//! program's copy of standard input) is registered here while it exists,
//! so that an interrupted process can remove them all.
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
//!   name: they carry the id of the process that made them
//!   ([`owner_pid`]), and [`remove_stale`] deletes those whose process is
//!   no longer alive (the atomic writer does so for its target's name when
//!   it starts; the Shuffle Once loader for its scratch directory).
//!   Liveness is looked up in this machine's `/proc`: processes of other
//!   machines or PID namespaces (containers) writing to the same
//!   directory look dead, so give them directories of their own.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// A scratch file of this process: registered while it lives, removed
/// when dropped (and by [`remove_registered`]). The file itself is created
/// by whoever writes it; the guard may exist before it does.
#[derive(Debug)]
pub struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    /// Guards `path`.
    pub fn new(path: impl Into<PathBuf>) -> ScratchFile {
        let path = path.into();
        register(&path);
        ScratchFile { path }
    }

    /// The guarded path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        release(&self.path);
    }
}

/// The id of the process that made the temporary or scratch file named
/// `name`, if the name is one the crate gives: `.NAME.tmp-PID-N` (the
/// atomic writer), `.tocpile-shuffled-PID-SEED-N.toc` and its buckets
/// `.tocpile-shuffled-PID-SEED-N.toc.bucket-K` (Shuffle Once),
/// `.tocpile-stream-PID-N` (a copy of a stream), `.tocpile-holdout-PID-…`
/// (the two parts of `train --holdout`).
pub fn owner_pid(name: &str) -> Option<u32> {
    let digits = |s: &str| -> Option<u32> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..end].parse().ok()
    };
    // Leading dots: a bucket file is named after its (hidden) copy.
    let rest = name.strip_prefix('.')?.trim_start_matches('.');
    for prefix in ["tocpile-shuffled-", "tocpile-stream-", "tocpile-holdout-"] {
        if let Some(tail) = rest.strip_prefix(prefix) {
            return digits(tail);
        }
    }
    let (_, tail) = rest.rsplit_once(".tmp-")?;
    let (pid, n) = tail.split_once('-')?;
    n.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
    (!n.is_empty()).then_some(())?;
    digits(pid).filter(|p| p.to_string() == pid)
}

/// Whether process `pid` is alive. Where that cannot be told (no
/// `/proc`), every process counts as alive, so nothing is removed.
pub fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Removes the files of `dir` whose name [`owner_pid`] recognises, whose
/// name starts with `prefix`, and whose process is no longer alive (killed
/// before it could clean up). Returns the removed paths. Errors reading
/// the directory yield an empty list: this is housekeeping.
pub fn remove_stale(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(prefix) {
            continue;
        }
        let Some(pid) = owner_pid(name) else { continue };
        if process_alive(pid) {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_crate_gives_carry_their_process() {
        assert_eq!(owner_pid(".train.toc.tmp-1234-0"), Some(1234));
        assert_eq!(owner_pid(".a.tmp-b.toc.tmp-77-12"), Some(77));
        assert_eq!(owner_pid(".tocpile-shuffled-99-7-0.toc"), Some(99));
        assert_eq!(owner_pid(".tocpile-holdout-42-0-train.toc"), Some(42));
        assert_eq!(
            owner_pid("..tocpile-shuffled-99-7-0.toc.bucket-3"),
            Some(99)
        );
        assert_eq!(owner_pid(".tocpile-stream-5-1"), Some(5));
        for other in [
            "train.toc",
            ".train.toc",
            ".x.tmp-",
            ".x.tmp-12",
            ".x.tmp-12-",
            ".x.tmp-a-1",
            "x.tmp-12-1",
        ] {
            assert_eq!(owner_pid(other), None, "{other}");
        }
    }

    #[test]
    fn stale_files_of_dead_processes_go_live_ones_stay() {
        let dir = std::env::temp_dir().join(format!("tocpile-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A pid above the kernel's maximum (2^22) is never alive.
        let dead = format!(".out.toc.tmp-{}-0", 1 << 23);
        let mine = format!(".out.toc.tmp-{}-0", std::process::id());
        for name in [&dead, &mine, &"out.toc".to_string()] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        let removed = remove_stale(&dir, ".out.toc.tmp-");
        if Path::new("/proc/self").exists() {
            assert_eq!(removed, [dir.join(&dead)]);
        }
        assert!(dir.join(&mine).exists() && dir.join("out.toc").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scratch_files_are_removed_when_dropped() {
        let path = std::env::temp_dir().join(format!("tocpile-scratch-{}", std::process::id()));
        let guard = ScratchFile::new(&path);
        std::fs::write(guard.path(), b"x").unwrap();
        assert!(registry().contains(&path));
        drop(guard);
        assert!(!path.exists());
        assert!(!registry().contains(&path));
    }
}
