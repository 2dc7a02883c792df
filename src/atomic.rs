//! Not part of the API (hidden): used by the workspace's front ends and
//! tests; may change in any release.
//!
//! The one atomic file writer: bytes go to a temporary file beside the
//! target, which is fsynced and then renamed over it, and the directory is
//! fsynced so the rename itself is durable. Until the writer commits,
//! nothing is visible at the target path, so a crash, a kill or an error
//! never leaves a half-written file that opens as valid; the temporary
//! file is removed on error and when an uncommitted writer is dropped.
//!
//! What is at the target path is respected, never replaced by something
//! else:
//!
//! - a regular file (or nothing): replaced atomically as above, keeping
//!   the old file's permissions;
//! - a symbolic link: written through to the file it names (a dangling
//!   link: to the file it would name), atomically, with the temporary
//!   file in that file's directory; the link stays a link;
//! - a FIFO or a character device (`/dev/null`, `/dev/stdout`, a
//!   terminal): streamed to as the bytes come, with no temporary file and
//!   no rename (there is nothing to replace; what was written cannot be
//!   taken back on an error);
//! - a directory, a block device or a socket: an error naming the path.
//!
//! Temporary files are registered with [`crate::cleanup`] while they
//! exist, and every write first checks its interruption flag (SIGINT,
//! SIGTERM): an interrupted writer fails with
//! [`Error::Interrupted`] and its temporary file goes. A temporary file is
//! locked by its writer for as long as it exists, so a process that died
//! without cleaning up (SIGKILL) leaves one whose lock is free: creating a
//! file removes those left for the same target, and never one in use
//! (whatever the process id in its name says).
//!
//! Dataset files ([`DatasetWriter`](crate::dataset::DatasetWriter), and
//! through it Shuffle Once's copy), model files
//! ([`Model::save`](crate::model::Model::save)) and CSV schemas
//! ([`Schema::save`](crate::ingest::csv::Schema::save)) are written
//! through it; [`write()`] and [`check_writable`] are for programs' own
//! outputs (the command line's predictions and plots).

use std::fs::{self, File, Permissions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cleanup;
use crate::error::{Error, Result};

/// Distinguishes temporary files of one process.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Most symbolic links followed from a target path (as the kernel's 40).
const MAX_LINKS: usize = 40;

/// What is at a target path, as far as writing it goes.
#[derive(Debug)]
enum Target {
    /// A regular file at `path` (symbolic links resolved), or nothing
    /// yet; `permissions` of the file being replaced.
    File {
        path: PathBuf,
        permissions: Option<Permissions>,
    },
    /// A FIFO or a character device: written in place.
    Stream,
}

/// Where the bytes go.
#[derive(Debug)]
enum Sink {
    /// A temporary file beside the target, renamed over it at commit.
    Temp {
        target: PathBuf,
        tmp: PathBuf,
        file: BufWriter<File>,
    },
    /// The target itself (a FIFO or a device).
    Stream { file: BufWriter<File> },
}

/// A file being written atomically to `path`.
#[derive(Debug)]
pub(crate) struct AtomicFile {
    /// The path as given (for messages).
    path: PathBuf,
    /// `None` once committed.
    sink: Option<Sink>,
}

/// What `path` is, for writing it: see the module docs.
///
/// # Errors
/// [`Error::Io`] naming `path` for a directory, a block device, a socket,
/// a loop of symbolic links, or a path that cannot be looked at.
fn resolve(path: &Path) -> Result<Target> {
    match fs::metadata(path) {
        Ok(meta) => {
            let kind = meta.file_type();
            if kind.is_file() {
                let linked = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                let path = if linked {
                    fs::canonicalize(path).map_err(|e| Error::io(path, e))?
                } else {
                    path.to_path_buf()
                };
                return Ok(Target::File {
                    path,
                    permissions: Some(meta.permissions()),
                });
            }
            if kind.is_dir() {
                return Err(refused(path, ErrorKind::IsADirectory, "is a directory"));
            }
            if is_stream(&kind) {
                return Ok(Target::Stream);
            }
            Err(refused(
                path,
                ErrorKind::InvalidInput,
                "is neither a regular file, a FIFO nor a character device (a block device or a \
                 socket): tocpile does not write there",
            ))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Target::File {
            path: dangling(path)?,
            permissions: None,
        }),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// FIFOs and character devices take a stream of bytes in place.
#[cfg(unix)]
fn is_stream(kind: &fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    kind.is_fifo() || kind.is_char_device()
}

#[cfg(not(unix))]
fn is_stream(_: &fs::FileType) -> bool {
    false
}

/// The file a missing `path` stands for: `path` itself, or, through
/// symbolic links that lead nowhere (dangling), the missing file the last
/// one names (relative links from the link's own directory).
fn dangling(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&at).map_err(|e| Error::io(&at, e))?;
                at = match at.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(refused(
        path,
        ErrorKind::InvalidInput,
        "too many levels of symbolic links",
    ))
}

/// An [`Error::Io`] naming `path` that says why tocpile will not write it.
fn refused(path: &Path, kind: ErrorKind, why: &str) -> Error {
    let message = format!("cannot write here: it {why}");
    Error::io_context(path, std::io::Error::new(kind, why.to_string()), message)
}

/// The directory of `path` (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The error for a temporary file that could not be created beside
/// `target`: named after the target (the temporary's name means nothing
/// to the user), saying which directory failed and why.
fn create_error(target: &Path, e: std::io::Error) -> Error {
    let dir = dir_of(target).display().to_string();
    let message = match e.kind() {
        ErrorKind::NotFound => format!("cannot create it: the directory {dir} does not exist"),
        ErrorKind::PermissionDenied => {
            format!("cannot create it: no permission to create files in {dir}")
        }
        _ => format!("cannot create a file in {dir}: {e}"),
    };
    Error::io_context(target, e, message)
}

/// Creates the temporary file `.NAME.tmp-PID-N` beside `target`, locked
/// for as long as it is open (see [`crate::cleanup`]), after removing
/// those left for the same `NAME` by runs that are gone. A name that
/// exists (a process of the same id in another PID namespace or on
/// another host sharing the directory) is skipped for the next `N`.
fn create_temp(target: &Path) -> Result<(PathBuf, File)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    cleanup::remove_stale(dir_of(target), &format!(".{name}.tmp-"));
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = target.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()));
        cleanup::register(&tmp);
        match cleanup::create_locked(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) => {
                cleanup::forget(&tmp);
                if e.kind() != ErrorKind::AlreadyExists {
                    return Err(create_error(target, e));
                }
            }
        }
    }
}

/// The error for a failed write, flush or fsync of the temporary file
/// `tmp` of `target`: named after the target (a disk-full error naming
/// only `.NAME.tmp-PID-N` told the user nothing about their file),
/// saying which temporary file it was.
fn temp_error(tmp: &Path, target: &Path, doing: &str, e: std::io::Error) -> Error {
    let message = format!("{doing} its temporary file {}: {e}", tmp.display());
    Error::io_context(target, e, message)
}

/// The error for a temporary file that could not be renamed over
/// `target`: named after the target, saying which temporary file it was
/// (a `NotFound` here is about the temporary file, not the target).
fn rename_error(tmp: &Path, target: &Path, e: std::io::Error) -> Error {
    let message = format!(
        "cannot rename the temporary file {} over it: {e}",
        tmp.display()
    );
    Error::io_context(target, e, message)
}

impl AtomicFile {
    /// Prepares writing `path`: a temporary file beside the file `path`
    /// is or names, or `path` itself for a FIFO or a character device (see
    /// the module docs).
    ///
    /// # Errors
    /// [`Error::Interrupted`] after [`cleanup::interrupt`]; [`Error::Io`]
    /// naming the target for a path tocpile does not write (a directory,
    /// a block device) or a directory where the temporary file cannot be
    /// created.
    pub(crate) fn create(path: &Path) -> Result<AtomicFile> {
        cleanup::check()?;
        let sink = match resolve(path)? {
            Target::Stream => {
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| Error::io(path, e))?;
                Sink::Stream {
                    file: BufWriter::with_capacity(1 << 16, file),
                }
            }
            Target::File {
                path: target,
                permissions,
            } => {
                let (tmp, file) = create_temp(&target)?;
                if let Some(permissions) = permissions {
                    // Best effort: the replaced file's mode, not the umask's.
                    let _ = file.set_permissions(permissions);
                }
                Sink::Temp {
                    target,
                    tmp,
                    file: BufWriter::with_capacity(1 << 20, file),
                }
            }
        };
        Ok(AtomicFile {
            path: path.to_path_buf(),
            sink: Some(sink),
        })
    }

    /// Appends `bytes`.
    ///
    /// # Errors
    /// [`Error::Interrupted`] after [`cleanup::interrupt`]; [`Error::Io`]
    /// naming the target (and, in its message, the temporary file).
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        cleanup::check()?;
        match self.sink.as_mut().expect("open until commit") {
            Sink::Temp { tmp, file, target } => file
                .write_all(bytes)
                .map_err(|e| temp_error(tmp, target, "writing", e)),
            Sink::Stream { file } => file.write_all(bytes).map_err(|e| Error::io(&self.path, e)),
        }
    }

    /// Flushes and fsyncs the temporary file, renames it over the target
    /// and fsyncs the directory (best effort: not every platform lets a
    /// directory be opened). A stream is flushed.
    ///
    /// # Errors
    /// [`Error::Io`] naming the target (flush, fsync: the temporary file
    /// in its message; rename); the temporary file is removed and the
    /// target left as it was.
    pub(crate) fn commit(mut self) -> Result<()> {
        let (target, tmp, file) = match self.sink.take().expect("open until commit") {
            Sink::Stream { mut file } => return file.flush().map_err(|e| Error::io(&self.path, e)),
            Sink::Temp { target, tmp, file } => (target, tmp, file),
        };
        let published = file
            .into_inner()
            .map_err(|e| temp_error(&tmp, &target, "writing", e.into_error()))
            .and_then(|file| {
                file.sync_all()
                    .map_err(|e| temp_error(&tmp, &target, "saving (fsync)", e))?;
                #[cfg(test)]
                tests::before_rename(&tmp);
                // Renamed while still open, so still locked: closed before,
                // the temporary file would look abandoned to another
                // process's cleaner until renamed, and might be removed.
                let renamed = fs::rename(&tmp, &target).map_err(|e| rename_error(&tmp, &target, e));
                drop(file);
                renamed
            });
        if let Err(e) = published {
            cleanup::release(&tmp);
            return Err(e);
        }
        cleanup::forget(&tmp);
        if let Ok(d) = File::open(dir_of(&target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(Sink::Temp { tmp, .. }) = self.sink.take() {
            cleanup::release(&tmp);
        }
    }
}

/// Writes `bytes` to `path` atomically (see the module docs for what is
/// done with links, FIFOs and devices).
///
/// # Errors
/// [`Error::Interrupted`] after [`cleanup::interrupt`]; [`Error::Io`]
/// naming `path` for a path tocpile does not write (a directory, a block
/// device), a directory where the temporary file cannot be created, or a
/// failed write, fsync or rename; `path` is then untouched (a FIFO or a
/// device may have been written in part).
pub fn write(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path.as_ref())?;
    file.write_all(bytes)?;
    file.commit()
}

/// Checks, without writing it, that [`write()`] could write `path`: it is
/// not a directory (or another kind of file tocpile does not write), and
/// a temporary file can be created in its directory (created and removed
/// at once). For a command that writes its result after a long run, to
/// fail in the first second rather than at the end. A FIFO or a device is
/// not opened (opening a FIFO waits for its reader).
///
/// # Errors
/// [`Error::Io`] naming `path` and saying what is wrong.
pub fn check_writable(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    match resolve(path)? {
        Target::Stream => Ok(()),
        Target::File { path: target, .. } => {
            let (tmp, _file) = create_temp(&target)?;
            cleanup::release(&tmp);
            Ok(())
        }
    }
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

    /// What a test runs at a point of `commit`, given the temporary file.
    type Hook = Box<dyn FnOnce(&Path)>;

    thread_local! {
        /// Run by `commit` on this thread just before its rename.
        static BEFORE_RENAME: std::cell::RefCell<Option<Hook>> =
            const { std::cell::RefCell::new(None) };
    }

    pub(super) fn before_rename(tmp: &Path) {
        if let Some(hook) = BEFORE_RENAME.with(|h| h.borrow_mut().take()) {
            hook(tmp);
        }
    }

    /// Another process's cleaner (Shuffle Once's, an atomic writer's for
    /// the same target) may run while a commit is between its fsync and
    /// its rename: the temporary file is still in use then, so it stays.
    /// It used to be closed, so unlocked, before the rename: the cleaner
    /// took it for a killed run's and removed it, and the commit failed
    /// with `NotFound`.
    #[test]
    fn a_cleaner_running_just_before_the_rename_leaves_the_file_alone() {
        let dir = dir("cleaner");
        let target = dir.join("out.toc");
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"new bytes").unwrap();
        let cleaner_dir = dir.clone();
        BEFORE_RENAME.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |tmp: &Path| {
                assert!(tmp.exists());
                let removed = cleanup::remove_stale(&cleaner_dir, ".out.toc.tmp-");
                assert_eq!(removed, Vec::<PathBuf>::new(), "a file in use was removed");
            }))
        });
        let committed = file.commit();
        // The hook ran (and was taken).
        assert!(BEFORE_RENAME.with(|h| h.borrow().is_none()));
        committed.unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new bytes");
        assert_eq!(entries(&dir), ["out.toc"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_at_the_target_is_refused_by_name() {
        let dir = dir("rename");
        let target = dir.join("taken");
        fs::create_dir_all(target.join("inside")).unwrap();
        let err = write(&target, b"x").unwrap_err();
        match &err {
            Error::Io { path, kind, .. } => {
                assert_eq!(path, &target.display().to_string());
                assert_eq!(*kind, ErrorKind::IsADirectory);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().ends_with("is a directory"), "{err}");
        assert!(std::error::Error::source(&err).is_some());
        assert!(check_writable(&target).is_err());
        assert_eq!(entries(&dir), ["taken"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_target_and_the_directory() {
        let target = std::env::temp_dir().join("tocpile-no-such-dir/x/out.bin");
        for err in [
            write(&target, b"x").unwrap_err(),
            check_writable(&target).unwrap_err(),
        ] {
            match &err {
                Error::Io { path, kind, .. } => {
                    assert_eq!(path, &target.display().to_string());
                    assert_eq!(*kind, ErrorKind::NotFound);
                }
                other => panic!("{other:?}"),
            }
            assert!(
                err.to_string()
                    .contains("tocpile-no-such-dir/x does not exist"),
                "{err}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn replacing_a_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = dir("mode");
        let target = dir.join("private.model");
        fs::write(&target, b"old").unwrap();
        fs::set_permissions(&target, Permissions::from_mode(0o600)).unwrap();
        write(&target, b"new").unwrap();
        let mode = fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        fs::remove_dir_all(&dir).unwrap();
    }
}
