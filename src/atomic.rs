//! The one atomic file writer: bytes go to a temporary file beside the
//! target, which is fsynced and then renamed over it, and the directory is
//! fsynced so the rename itself is durable. Until [`AtomicFile::commit`]
//! nothing is visible at the target path, so a crash, a kill or an error
//! never leaves a half-written file that opens as valid; the temporary
//! file is removed on error and when an uncommitted writer is dropped.
//!
//! Temporary files are registered with [`crate::cleanup`] while they
//! exist, and every write first checks its interruption flag (SIGINT,
//! SIGTERM): an interrupted writer fails with
//! [`Error::Interrupted`] and its temporary file goes. Temporaries of
//! processes that died without cleaning up (SIGKILL) carry their process
//! id in the name; creating a file removes those left for the same target.
//!
//! Dataset files ([`DatasetWriter`](crate::dataset::DatasetWriter), and
//! through it Shuffle Once's copy), model files
//! ([`Model::save`](crate::model::Model::save)) and CSV schemas
//! ([`Schema::save`](crate::ingest::csv::Schema::save)) are written
//! through it.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cleanup;
use crate::error::{Error, Result};

/// Distinguishes temporary files of one process.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A file being written atomically to `path`.
#[derive(Debug)]
pub(crate) struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    /// `None` once committed.
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file `.NAME.tmp-PID-N` beside `path`, after
    /// removing those of dead processes for the same `NAME`.
    ///
    /// # Errors
    /// [`Error::Interrupted`] after [`cleanup::interrupt`]; [`Error::Io`]
    /// naming the temporary file.
    pub(crate) fn create(path: &Path) -> Result<AtomicFile> {
        cleanup::check()?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        cleanup::remove_stale(dir.unwrap_or(Path::new(".")), &format!(".{name}.tmp-"));
        cleanup::register(&tmp);
        let file = File::create(&tmp).map_err(|e| {
            cleanup::forget(&tmp);
            Error::io(&tmp, e)
        })?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            file: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// Appends `bytes`.
    ///
    /// # Errors
    /// [`Error::Interrupted`] after [`cleanup::interrupt`]; [`Error::Io`]
    /// naming the temporary file.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        cleanup::check()?;
        let file = self.file.as_mut().expect("open until commit");
        file.write_all(bytes).map_err(|e| Error::io(&self.tmp, e))
    }

    /// Flushes and fsyncs the temporary file, renames it over the target
    /// and fsyncs the directory (best effort: not every platform lets a
    /// directory be opened).
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary file (flush, fsync) or the
    /// target (rename); the temporary file is removed and the target left
    /// as it was.
    pub(crate) fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("open until commit");
        let published = file
            .into_inner()
            .map_err(|e| Error::io(&self.tmp, e.into_error()))
            .and_then(|file| file.sync_all().map_err(|e| Error::io(&self.tmp, e)))
            .and_then(|()| fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e)));
        if let Err(e) = published {
            cleanup::release(&self.tmp);
            return Err(e);
        }
        cleanup::forget(&self.tmp);
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            cleanup::release(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` atomically.
///
/// # Errors
/// As [`AtomicFile::create`], [`AtomicFile::write_all`] and
/// [`AtomicFile::commit`]; `path` is then untouched.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tocpile-atomic-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn nothing_is_visible_until_commit_and_drop_cleans_up() {
        let dir = dir("commit");
        let target = dir.join("out.bin");
        fs::write(&target, b"old").unwrap();
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"new bytes").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"old");
        assert_eq!(entries(&dir).len(), 2);
        file.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(entries(&dir), ["out.bin"]);

        let mut dropped = AtomicFile::create(&target).unwrap();
        dropped.write_all(b"lost").unwrap();
        drop(dropped);
        assert_eq!(fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(entries(&dir), ["out.bin"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_rename_names_the_target_and_removes_the_temporary() {
        let dir = dir("rename");
        // A directory in the way: the rename fails.
        let target = dir.join("taken");
        fs::create_dir_all(target.join("inside")).unwrap();
        let err = write(&target, b"x").unwrap_err();
        match &err {
            Error::Io { path, .. } => assert_eq!(path, &target.display().to_string()),
            other => panic!("{other:?}"),
        }
        assert!(std::error::Error::source(&err).is_some());
        assert_eq!(entries(&dir), ["taken"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_temporary_file() {
        let target = std::env::temp_dir().join("tocpile-no-such-dir/x/out.bin");
        match write(&target, b"x") {
            Err(Error::Io { path, kind, .. }) => {
                assert!(path.contains("out.bin.tmp-"), "{path}");
                assert_eq!(kind, std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
    }
}
