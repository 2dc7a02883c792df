//! Streams as input: `-` (standard input), a pipe such as `/dev/stdin`, a
//! FIFO. A stream can be read once only, so nothing may open it twice or
//! peek at it by reopening it (the readers of regular files do both: the
//! column count or the CSV schema is inferred in a first pass).
//!
//! Where the options say everything a first pass would learn (`--cols` for
//! LIBSVM, `--schema` for CSV), the stream is read as it comes, in bounded
//! memory. Otherwise it is copied once, as it comes (gzip stays gzip), to a
//! scratch file in the scratch directory, which is then read like a file
//! and unlinked as soon as the reader holds it open: the input is still
//! read once, and the copy is removed on every exit path (an interruption
//! included, [`tocpile::cleanup`]).

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Write};
use std::path::Path;

use tocpile::cleanup::{self, ScratchFile};

use crate::Failure;

/// Bytes read ahead to recognise the input: at least the magic numbers
/// (dataset, Parquet, gzip), and up to the first line break within this
/// many (a CSV header on a stream named by no extension).
const HEAD: usize = 4096;

/// Whether `path` is a stream: `-`, or a FIFO, character device or socket
/// (`/dev/stdin` on a pipe resolves to a pipe).
pub fn is_stream(path: &Path) -> bool {
    if path == Path::new("-") {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| {
            let t = m.file_type();
            t.is_fifo() || t.is_char_device() || t.is_socket()
        })
    }
    #[cfg(not(unix))]
    false
}

/// An open stream with its first bytes read ahead.
pub struct Stream {
    /// The name errors use: "standard input" for `-`, else the path.
    pub name: String,
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
}

impl Stream {
    /// Opens `path` (`-`: standard input) and reads its first bytes.
    pub fn open(path: &Path) -> Result<Stream, Failure> {
        let (name, mut rest): (String, Box<dyn Read + Send>) = if path == Path::new("-") {
            ("standard input".into(), Box::new(std::io::stdin()))
        } else {
            let file = File::open(path).map_err(|e| Failure::about(path, e))?;
            (path.display().to_string(), Box::new(file))
        };
        let mut head = vec![0u8; HEAD];
        let mut got = 0;
        while got < 4 || (got < HEAD && !head[..got].contains(&b'\n')) {
            match rest.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure(format!("{name}: {e}"))),
            }
        }
        head.truncate(got);
        Ok(Stream { name, head, rest })
    }

    /// The first bytes (fewer for a shorter stream).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The whole stream, from its first byte.
    pub fn reader(self) -> BufReader<impl Read + Send + 'static> {
        BufReader::with_capacity(1 << 16, Cursor::new(self.head).chain(self.rest))
    }

    /// Copies the stream to a scratch file in `dir`, guarded until
    /// dropped. Stops with an error on an interruption.
    pub fn spill(self, dir: &Path) -> Result<ScratchFile, Failure> {
        cleanup::remove_stale(dir, ".tocpile-stream-");
        let pid = std::process::id();
        let guard =
            ScratchFile::claim(dir, |n| format!(".tocpile-stream-{pid}-{n}")).map_err(|e| {
                Failure(format!(
                    "{}: copying it to a scratch file in {} (give --scratch-dir DIR to put it \
                     elsewhere, or the options that let it be read as it comes: --cols for \
                     LIBSVM, --schema for CSV): {e}",
                    self.name,
                    dir.display()
                ))
            })?;
        let Stream {
            name,
            head,
            mut rest,
        } = self;
        let about = |e: std::io::Error| {
            Failure(format!(
                "{name}: copying it to the scratch file {} (give --scratch-dir DIR to put it \
                 elsewhere, or the options that let it be read as it comes: --cols for LIBSVM, \
                 --schema for CSV): {e}",
                guard.path().display()
            ))
        };
        let mut out = File::create(guard.path()).map_err(about)?;
        out.write_all(&head).map_err(about)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            cleanup::check()?;
            let n = match rest.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Failure(format!("{name}: {e}"))),
            };
            out.write_all(&buf[..n]).map_err(about)?;
        }
        Ok(guard)
    }
}

/// Whether the first line of `head` looks like a CSV header rather than
/// LIBSVM: a comma, and a first field that is not a number (a LIBSVM line
/// starts with its numeric label).
pub fn looks_like_csv_header(head: &[u8]) -> bool {
    // A whole first line of text only: binary data is no header.
    let Some(end) = head.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let Ok(line) = std::str::from_utf8(&head[..end]) else {
        return false;
    };
    let first = line
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .next()
        .unwrap_or_default();
    line.contains(',') && first.trim().parse::<f64>().is_err()
}

/// `message` with the scratch copy's path replaced by the stream's name.
pub fn rename(message: impl std::fmt::Display, copy: &Path, name: &str) -> Failure {
    Failure(
        message
            .to_string()
            .replace(&copy.display().to_string(), name),
    )
}
