//! Writing results: text to stdout (a closed pipe, as with `| head`, ends
//! the output quietly) and JSON; and the one rule every output file of
//! every command follows (issue 34, items 3 to 5), checked by [`check`]
//! before any work:
//!
//! - an output that is the same file as an input (same device and
//!   inode: through symbolic and hard links, however spelled) is
//!   refused, as is one given twice: writing it would replace the input;
//! - an output on standard output (`-`, `/dev/stdout`, or a path that is
//!   the file standard output already writes) gets the data, and the
//!   human text ([`emit`]) goes to standard error instead;
//! - an existing file without a write permission bit is replaced only
//!   with `--force` (an atomic rename ignores the file's mode);
//! - every other output must be writable ([`tocpile::atomic::check_writable`]).

use std::fs::Metadata;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::Failure;

/// Set when an output goes to standard output: [`emit`] then writes to
/// standard error.
static DATA_ON_STDOUT: AtomicBool = AtomicBool::new(false);
/// `--force`: replace read-only outputs.
static FORCE: AtomicBool = AtomicBool::new(false);

/// Sets `--force` for the run.
pub fn set_force(force: bool) {
    FORCE.store(force, Ordering::Relaxed);
}

/// Writes `text` to stdout, or to stderr when an output file is standard
/// output (the data must not be mixed with the text).
pub fn emit(text: &str) -> Result<(), Failure> {
    let written = if DATA_ON_STDOUT.load(Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        err.write_all(text.as_bytes()).and_then(|()| err.flush())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure(format!("writing the output: {e}"))),
    }
}

/// What standard output writes to (`None` when it is closed).
fn stdout_meta() -> Option<Metadata> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
        std::fs::File::from(fd).metadata().ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// What standard input reads from.
fn stdin_meta() -> Option<Metadata> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        std::fs::File::from(fd).metadata().ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Whether `a` and `b` are the same file.
fn same(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Whether `path` is `-` (standard input for an input, standard output
/// for an output).
fn is_dash(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Whether the output `path` is standard output: `-`, `/dev/stdout`
/// (`/dev/fd/1`, `/proc/self/fd/1`), or the very file standard output
/// writes (`-o out.toc > out.toc`).
pub fn is_stdout(path: &Path) -> bool {
    if is_dash(path)
        || ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"].contains(&path.to_str().unwrap_or(""))
    {
        return true;
    }
    match (std::fs::metadata(path), stdout_meta()) {
        // A regular file only: a terminal or /dev/null may well be both.
        (Ok(p), Some(out)) => p.is_file() && same(&p, &out),
        _ => false,
    }
}

/// What the file at `path` is, for the rule (`-`: standard input or
/// output).
fn meta(path: &Path, output: bool) -> Option<Metadata> {
    match (is_dash(path), output) {
        (true, true) => stdout_meta(),
        (true, false) => stdin_meta(),
        (false, true) if is_stdout(path) => stdout_meta(),
        _ => std::fs::metadata(path).ok(),
    }
}

/// Checks the outputs of a command against the rule (see the module
/// docs) before it does any work: `outputs` are `(option, path)`, the
/// option as the user wrote it (`-o`, `--save`), for messages.
///
/// # Errors
/// A [`Failure`] (exit code 1) naming the path and the rule it breaks.
pub fn check(inputs: &[&Path], outputs: &[(&str, &Path)]) -> Result<(), Failure> {
    // Only regular files can be replaced (a terminal may be standard
    // input and output at once).
    let inputs: Vec<(&Path, Metadata)> = inputs
        .iter()
        .filter_map(|&p| meta(p, false).filter(Metadata::is_file).map(|m| (p, m)))
        .collect();
    let mut seen: Vec<(String, Metadata)> = Vec::new();
    let mut seen_paths: Vec<(String, PathBuf)> = Vec::new();
    for &(option, path) in outputs {
        let to_stdout = is_stdout(path);
        let named = format!("{option} {}", shown(path));
        // Files to be created: the same path twice.
        if let Some(at) = resolved(path).filter(|_| !to_stdout) {
            if let Some((other, _)) = seen_paths.iter().find(|(_, p)| *p == at) {
                return Err(Failure(format!(
                    "{named}: the same file as {other}: each output needs its own file"
                )));
            }
            seen_paths.push((named.clone(), at));
        }
        match meta(path, true) {
            Some(out) if out.is_file() => {
                if let Some((input, _)) = inputs.iter().find(|(_, m)| same(m, &out)) {
                    return Err(Failure(format!(
                        "{named}: this is the input {}: writing it would replace the input; \
                         choose another path",
                        input.display()
                    )));
                }
                if let Some((other, _)) = seen.iter().find(|(_, m)| same(m, &out)) {
                    return Err(Failure(format!(
                        "{named}: the same file as {other}: each output needs its own file"
                    )));
                }
                let force = FORCE.load(Ordering::Relaxed);
                if !to_stdout && out.permissions().readonly() && !force {
                    return Err(Failure(format!(
                        "{named}: the file is read-only (no write permission): tocpile does \
                         not replace it; remove it, make it writable, or give --force"
                    )));
                }
                seen.push((named.clone(), out));
            }
            None if to_stdout => {
                return Err(Failure(format!("{named}: standard output is closed")));
            }
            _ => {}
        }
        if to_stdout {
            if DATA_ON_STDOUT.swap(true, Ordering::Relaxed) {
                return Err(Failure(format!(
                    "{named}: another output already goes to standard output"
                )));
            }
        } else {
            tocpile::atomic::check_writable(path).map_err(|e| Failure(format!("{option} {e}")))?;
        }
    }
    Ok(())
}

/// Where `path` is, however spelled (links resolved, for an existing
/// file or directory).
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(dir).ok()?.join(path.file_name()?))
}

/// `path` for a message (`-` as "- (standard output)").
fn shown(path: &Path) -> String {
    if is_dash(path) {
        "- (standard output)".into()
    } else {
        path.display().to_string()
    }
}

/// Writes `bytes` to the output `path`: atomically to a file (see
/// [`tocpile::atomic`]), or to standard output (after [`check`] said it
/// is), all at once.
pub fn write_file(path: &Path, bytes: &[u8]) -> tocpile::Result<()> {
    if !is_stdout(path) {
        return tocpile::atomic::write(path, bytes);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| tocpile::Error::io("standard output", e))
}

/// Saves `model` to the output `path` ([`Model::save`](tocpile::model::Model::save),
/// or its bytes to standard output).
pub fn save_model(model: &tocpile::model::Model, path: &Path) -> tocpile::Result<()> {
    if is_stdout(path) {
        write_file(path, &model.to_bytes())
    } else {
        model.save(path)
    }
}

/// Copies the file `from` (complete) to standard output.
pub fn copy_to_stdout(from: &Path) -> Result<(), Failure> {
    let mut file = std::fs::File::open(from).map_err(|e| Failure::about(from, e))?;
    let mut out = std::io::stdout().lock();
    std::io::copy(&mut file, &mut out)
        .and_then(|_| out.flush())
        .map_err(|e| Failure(tocpile::Error::io("standard output", e).to_string()))
}

/// Where a dataset file for standard output is built before it is
/// copied there (a pipe cannot be renamed into, and a file streamed as
/// it is written would be cut short by an error): `dir`, else the
/// system's temporary directory.
pub fn staging_dir(dir: Option<&Path>) -> PathBuf {
    dir.map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// Writes `value` as pretty JSON and a line break to stdout.
pub fn emit_json<T: Serialize>(value: &T) -> Result<(), Failure> {
    let mut text = serde_json::to_string_pretty(value).expect("plain data serializes");
    text.push('\n');
    emit(&text)
}

/// A number for a message: plain decimals for everyday magnitudes, the
/// shortest exponent form for the very large and the very small (a label
/// of 1e300 is "1e300", not three hundred digits).
pub fn number(v: f64) -> String {
    let magnitude = v.abs();
    if v.is_finite() && v != 0.0 && !(1e-4..1e15).contains(&magnitude) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(super::number(1e300), "1e300");
        assert_eq!(super::number(2.5), "2.5");
        assert_eq!(super::number(-3e-7), "-3e-7");
    }
}
