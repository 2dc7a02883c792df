//! The file-level figure of `tocpile ratio` and `tocpile bench codec`: the
//! dataset file that `tocpile encode` writes with its default options (50-row
//! pages, 2 KiB blocks, max-abs scaling stored) against the input text
//! compressed by the tools a user already has: gzip -6, zstd -19 and xz -9
//! of the LIBSVM or CSV text as given (decompressed first if it is gzip),
//! and, in a build with the `parquet` feature, the same rows as a Parquet
//! file (zstd).
//!
//! The batch tables measure mini-batches (after --max-rows, --decimals and
//! --shuffle); this figure is about the files, so it always covers the
//! whole input as it is on disk.
//!
//! zstd and xz come from the `zstd` crate (bindings to the reference
//! library, the one `zstd -19` runs) and `xz2` (bindings to liblzma, the
//! one `xz -9` runs): the command line's dependencies, never the library's.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;

use tocpile::dataset::WriterOptions;

use crate::encode::{write_dataset, ScaleOpt};
use crate::input::{Input, InputArgs};
use crate::Failure;

/// Bytes of each file; `None` where a figure was not measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSizes {
    /// The input text, decompressed.
    pub text: u64,
    /// The `.toc` file of a default `tocpile encode`.
    pub toc: u64,
    /// gzip -6 of the text.
    pub gzip: u64,
    /// zstd -19 of the text.
    pub zstd: u64,
    /// xz -9 of the text.
    pub xz: u64,
    /// The rows as Parquet, zstd (a build with the `parquet` feature).
    pub parquet: Option<u64>,
}

/// The compressors of the text, with the names the tables print.
pub const COMPRESSORS: [&str; 3] = ["gzip -6", "zstd -19", "xz -9"];

impl FileSizes {
    /// Bytes of each compressed text, in [`COMPRESSORS`] order.
    pub fn compressed(&self) -> [u64; 3] {
        [self.gzip, self.zstd, self.xz]
    }
}

/// Measures the file-level figure of the input at `path`, read with
/// `args`. `Ok(None)` for an input that is not a text file on disk (a
/// stream, a dataset file, Parquet), which has no text to compress.
///
/// # Errors
/// An input that cannot be read or encoded, or a temporary file that
/// cannot be written.
pub fn file_sizes(path: &Path, args: &InputArgs) -> Result<Option<FileSizes>, Failure> {
    if crate::input::stream::is_stream(path) {
        return Ok(None);
    }
    let mut input = Input::open(path, args, true)?;
    if !matches!(input, Input::Libsvm(_) | Input::Csv(_)) {
        return Ok(None);
    }
    let (text, [gzip, zstd, xz]) = compress_text(path)?;
    let out = std::env::temp_dir().join(format!("tocpile-file-figure-{}.toc", std::process::id()));
    let options = WriterOptions::default().with_schema(input.schema_text());
    let what = format!("encoding {} with the defaults", path.display());
    let written = write_dataset(&mut input, &out, options, ScaleOpt::Maxabs, &what);
    let toc = written.map(|info| info.file_bytes);
    let _ = std::fs::remove_file(&out);
    let toc = toc?;
    let parquet = parquet_size(path, args)?;
    Ok(Some(FileSizes {
        text,
        toc,
        gzip,
        zstd,
        xz,
        parquet,
    }))
}

/// [`file_sizes`], or `None` with a warning on stderr when it fails: the
/// figure is an extra beside `ratio`'s and `bench codec`'s measurements,
/// and a compressor that cannot get its memory (xz -9 under a tight
/// limit) should not lose them.
pub fn file_sizes_or_skip(path: &Path, args: &InputArgs) -> Option<FileSizes> {
    file_sizes(path, args).unwrap_or_else(|e| {
        eprintln!(
            "tocpile: warning: the file-level figure is skipped: {}",
            e.0
        );
        None
    })
}

/// A sink that counts the bytes written to it.
#[derive(Default)]
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The text's bytes and those of gzip -6, zstd -19 and xz -9 of it: one
/// thread reads (and inflates) the file in 1 MiB pieces and hands each to
/// the three compressors, each on its own thread.
fn compress_text(path: &Path) -> Result<(u64, [u64; 3]), Failure> {
    let fail = |e: std::io::Error| Failure::about(path, e);
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut head = [0u8; 2];
    let gzipped = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == [0x1f, 0x8b]);
    let mut reader: Box<dyn Read> = if gzipped {
        Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(
            file,
        )))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for level in 0..3 {
            // Two pieces in flight per compressor bound the memory held.
            let (tx, rx) = mpsc::sync_channel::<std::sync::Arc<Vec<u8>>>(2);
            senders.push(tx);
            workers.push(scope.spawn(move || compress(level, rx)));
        }
        let mut text = 0u64;
        let read = loop {
            let mut piece = vec![0u8; 1 << 20];
            let n = match read_full(&mut reader, &mut piece) {
                Ok(n) => n,
                Err(e) => break Err(fail(e)),
            };
            if n == 0 {
                break Ok(());
            }
            piece.truncate(n);
            text += n as u64;
            let piece = std::sync::Arc::new(piece);
            if senders.iter().any(|tx| tx.send(piece.clone()).is_err()) {
                break Ok(()); // a compressor failed: its error is reported below
            }
        };
        drop(senders);
        let mut sizes = [0u64; 3];
        for (size, worker) in sizes.iter_mut().zip(workers) {
            let result = worker
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("compressor thread panicked")));
            *size = result.map_err(fail)?;
        }
        read.map(|()| (text, sizes))
    })
}

/// Fills `buf` as far as the input goes; the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut at = 0;
    while at < buf.len() {
        match r.read(&mut buf[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}

/// Compressed bytes of the pieces received, by compressor `which` of
/// [`COMPRESSORS`].
fn compress(which: usize, rx: mpsc::Receiver<std::sync::Arc<Vec<u8>>>) -> std::io::Result<u64> {
    fn feed<W: Write>(
        mut w: W,
        rx: &mpsc::Receiver<std::sync::Arc<Vec<u8>>>,
    ) -> std::io::Result<W> {
        for piece in rx {
            w.write_all(&piece)?;
        }
        Ok(w)
    }
    Ok(match which {
        0 => {
            let gz = flate2::write::GzEncoder::new(Count::default(), flate2::Compression::new(6));
            feed(gz, &rx)?.finish()?.0
        }
        1 => {
            let z = zstd::stream::write::Encoder::new(Count::default(), 19)?;
            feed(z, &rx)?.finish()?.0
        }
        _ => {
            // `XzEncoder::new` panics when liblzma cannot get the memory
            // of level 9 (about 674 MiB): an error instead.
            let stream = xz2::stream::Stream::new_easy_encoder(9, xz2::stream::Check::Crc64)
                .map_err(|e| {
                    std::io::Error::other(format!(
                        "xz -9 could not start ({e}; it needs about 674 MiB)"
                    ))
                })?;
            let xz = xz2::write::XzEncoder::new_stream(Count::default(), stream);
            feed(xz, &rx)?.finish()?.0
        }
    })
}

/// Bytes of the rows of `path` as a Parquet file: the label and one
/// `Float64` column per feature (zeros stored as 0, as the dense matrix
/// holds them), zstd at the writer's default level, dictionary encoding
/// and row groups as the `parquet` crate writes them by default.
#[cfg(feature = "parquet")]
fn parquet_size(path: &Path, args: &InputArgs) -> Result<Option<u64>, Failure> {
    use std::sync::Arc;

    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    use tocpile::ingest::arrow::arrow_array::{ArrayRef, Float64Array, RecordBatch};
    use tocpile::ingest::arrow::arrow_schema::{DataType, Field, Schema};

    let mut input = Input::open(path, args, false)?;
    let n_cols = input.n_cols();
    let mut fields = vec![Field::new("label", DataType::Float64, false)];
    fields.extend((0..n_cols).map(|c| Field::new(format!("f{}", c + 1), DataType::Float64, false)));
    let schema = Arc::new(Schema::new(fields));
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let fail = |e: parquet::errors::ParquetError| Failure::about(path, e);
    let mut writer =
        ArrowWriter::try_new(Count::default(), schema.clone(), Some(props)).map_err(fail)?;
    // About 16 MiB of dense values per record batch.
    let rows = ((16 << 20) / (8 * (n_cols + 1))).max(1);
    while let Some(chunk) = input.next_chunk(rows)? {
        let n = chunk.batch.n_rows();
        let mut dense = vec![vec![0.0f64; n]; n_cols];
        for (r, (cols, vals)) in chunk.batch.rows().enumerate() {
            for (&c, &v) in cols.iter().zip(vals) {
                dense[c as usize][r] = v;
            }
        }
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Float64Array::from(chunk.labels))];
        columns.extend(
            dense
                .into_iter()
                .map(|c| Arc::new(Float64Array::from(c)) as ArrayRef),
        );
        let batch =
            RecordBatch::try_new(schema.clone(), columns).map_err(|e| Failure::about(path, e))?;
        writer.write(&batch).map_err(fail)?;
    }
    Ok(Some(writer.into_inner().map_err(fail)?.0))
}

/// Without the `parquet` feature there is no Parquet writer.
#[cfg(not(feature = "parquet"))]
fn parquet_size(_path: &Path, _args: &InputArgs) -> Result<Option<u64>, Failure> {
    Ok(None)
}

/// `part / whole`, for the ratios of the tables.
fn over(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

/// The figure as a markdown section: bytes of each file, and the `.toc`
/// file's size over each.
pub fn markdown(sizes: &FileSizes) -> String {
    let mut names = vec!["text", ".toc (defaults)"];
    names.extend(COMPRESSORS);
    let mut bytes = vec![sizes.text, sizes.toc];
    bytes.extend(sizes.compressed());
    if let Some(p) = sizes.parquet {
        names.push("Parquet (zstd)");
        bytes.push(p);
    }
    let mut s = String::from(
        "File level: the .toc file of a default `tocpile encode` of the whole input, \
         against the input text (decompressed) and compressed.\n\n",
    );
    s.push_str(&format!("| | {} |\n", names.join(" | ")));
    s.push_str(&format!("|---|{}\n", "---:|".repeat(names.len())));
    let cells: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
    s.push_str(&format!("| bytes | {} |\n", cells.join(" | ")));
    let cells: Vec<String> = bytes
        .iter()
        .map(|&b| format!("{:.2}", over(sizes.toc, b)))
        .collect();
    s.push_str(&format!("| .toc / this | {} |\n", cells.join(" | ")));
    if sizes.parquet.is_none() {
        s.push_str("\n(Parquet: a build with the `parquet` feature.)\n");
    }
    s
}

/// The figure in `--json` output: bytes of each file and the `.toc`
/// file's size over each compressed one.
#[derive(Debug, serde::Serialize)]
pub struct FileJson {
    /// Bytes of the input text (decompressed).
    pub text_bytes: u64,
    /// Bytes of the default `.toc` file.
    pub toc_bytes: u64,
    /// Bytes of each compressed form: `gzip -6`, `zstd -19`, `xz -9` and
    /// `parquet_zstd` (absent without the `parquet` feature).
    pub compressed_bytes: std::collections::BTreeMap<&'static str, u64>,
    /// `toc_bytes` over each of `compressed_bytes`.
    pub toc_over: std::collections::BTreeMap<&'static str, f64>,
}

impl From<&FileSizes> for FileJson {
    fn from(sizes: &FileSizes) -> Self {
        let mut compressed: std::collections::BTreeMap<&'static str, u64> =
            COMPRESSORS.into_iter().zip(sizes.compressed()).collect();
        if let Some(p) = sizes.parquet {
            compressed.insert("parquet_zstd", p);
        }
        let toc_over = compressed
            .iter()
            .map(|(&k, &b)| (k, over(sizes.toc, b)))
            .collect();
        FileJson {
            text_bytes: sizes.text,
            toc_bytes: sizes.toc,
            compressed_bytes: compressed,
            toc_over,
        }
    }
}
