//! Opening the user's data: LIBSVM or CSV text (plain or gzip), Parquet
//! (with the `parquet` feature), or a tocpile dataset file, read chunk by
//! chunk.

mod blocks;
#[cfg(feature = "parquet")]
mod parquet;
pub mod stream;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use tocpile::dataset::{Dataset, FILE_MAGIC};
use tocpile::ingest::csv::{CsvOptions, CsvReader, Schema};
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::ingest::Chunk;
use tocpile::SparseBatch;

use crate::Failure;
use blocks::block_rows;

/// Rows read per chunk.
pub const CHUNK_ROWS: usize = 65_536;

/// Formats of an input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TextFormat {
    /// `label idx:val idx:val ...` lines.
    Libsvm,
    /// CSV with a header line.
    Csv,
    /// Parquet (a build with the `parquet` feature).
    Parquet,
}

/// The magic number at both ends of a Parquet file.
const PARQUET_MAGIC: [u8; 4] = *b"PAR1";

/// How to read an input file (shared by `encode`, `ratio` and `bench`).
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Input format; default by extension (`.csv[.gz]` is CSV; `.parquet`,
    /// `.parq`, `.pq` or a file starting with `PAR1` is Parquet; `.libsvm`,
    /// `.svm`, `.txt` and anything else LIBSVM). A tocpile dataset file
    /// (`.toc`) is recognised by its first bytes, where a command reads
    /// one.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<TextFormat>,
    /// LIBSVM: the column count (default: the largest index seen, which
    /// reads a file twice, and copies a stream to a scratch file first).
    #[arg(long, value_name = "N")]
    pub cols: Option<usize>,
    /// LIBSVM: indices start at 0 (default 1).
    #[arg(long)]
    pub zero_based: bool,
    /// CSV and Parquet: name of the label column.
    #[arg(long, value_name = "NAME", default_value = "label")]
    pub label_column: String,
    /// CSV and Parquet: the feature columns from a saved schema (a schema
    /// text file, as `tocpile inspect --schema` prints, or a .toc file
    /// encoded from CSV or Parquet); default: inferred from the file
    /// (which reads a file twice, and copies a stream to a scratch file
    /// first).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// CSV and Parquet: inferring the schema, give each numeric column with
    /// a missing value (a null in Parquet) an indicator column `NAME:missing` (1 where the value is
    /// missing, 0 elsewhere). Missing values read as 0 either way.
    #[arg(long, conflicts_with = "schema")]
    pub missing_indicators: bool,
    /// CSV: inferring the schema, the fields of a numeric column that read
    /// as missing besides the empty field, comma-separated ("" for none);
    /// default NA,N/A,n/a,#N/A,NULL,null,None,?
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "schema"
    )]
    pub missing_markers: Option<Vec<String>>,
    /// Where a stream (`-` for standard input, a pipe, a FIFO) is copied
    /// when it cannot be read as it comes (LIBSVM without --cols, CSV
    /// without --schema, Parquet); removed as soon as it is open, and on
    /// every exit path. Default: encode, the output's directory (which has
    /// room for the data; the temporary directory is often a small
    /// in-memory file system); others, the temporary directory.
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
}

/// An open input, read chunk by chunk.
pub enum Input {
    Libsvm(LibsvmReader),
    Csv(Box<CsvReader>),
    #[cfg(feature = "parquet")]
    Parquet(Box<parquet::ParquetInput>),
    /// A dataset file: its rows, page by page.
    Dataset {
        dataset: Box<Dataset>,
        next_block: usize,
    },
}

/// Why a dataset file is no input of `encode` (which read it as LIBSVM
/// and printed its raw bytes).
const ENCODED_ALREADY: &str = "this is a tocpile dataset file, encoded already: encode reads \
     LIBSVM, CSV or Parquet (`tocpile inspect` describes a dataset file; train, evaluate, \
     predict and ratio read it as it is)";

/// Whether `path` starts with `magic`.
fn starts_with(path: &Path, magic: [u8; 4]) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == magic)
}

/// Whether `path` starts with the dataset file magic.
fn is_dataset(path: &Path) -> bool {
    starts_with(path, FILE_MAGIC)
}

/// The format of `path`: as asked, else by extension, else Parquet by its
/// magic number, else LIBSVM.
fn text_format(path: &Path, asked: Option<TextFormat>) -> TextFormat {
    if let Some(format) = asked {
        return format;
    }
    match text_format_by_name(path) {
        TextFormat::Libsvm if starts_with(path, PARQUET_MAGIC) => TextFormat::Parquet,
        format => format,
    }
}

/// The LIBSVM reader's options from the command line.
fn libsvm_options(args: &InputArgs) -> LibsvmOptions {
    LibsvmOptions::default()
        .with_n_cols(args.cols)
        .with_zero_based(args.zero_based)
}

/// The CSV reader's options from the command line (reading a saved
/// schema if one is named).
fn csv_options(args: &InputArgs) -> Result<CsvOptions, Failure> {
    let schema = args.schema.as_deref().map(read_schema).transpose()?;
    let mut options = CsvOptions::default()
        .with_label(args.label_column.clone())
        .with_schema(schema)
        .with_missing_indicators(args.missing_indicators);
    if let Some(markers) = &args.missing_markers {
        options.missing_markers = markers.iter().filter(|m| !m.is_empty()).cloned().collect();
    }
    Ok(options)
}

/// The format a file name says: CSV for `.csv[.gz]`, Parquet for
/// `.parquet`, `.parq`, `.pq`, else LIBSVM.
fn text_format_by_name(path: &Path) -> TextFormat {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if name.ends_with(".csv") {
        TextFormat::Csv
    } else if [".parquet", ".parq", ".pq"]
        .iter()
        .any(|e| name.ends_with(e))
    {
        TextFormat::Parquet
    } else {
        TextFormat::Libsvm
    }
}

/// Reads a saved schema: a schema text file, or the schema stored in a
/// dataset file.
fn read_schema(path: &Path) -> Result<Schema, Failure> {
    let text = if is_dataset(path) {
        let dataset = Dataset::open(path)?;
        let text = dataset.info().schema.clone();
        if text.is_empty() {
            return Err(Failure::about(
                path,
                "this dataset file stores no schema (it was not encoded from CSV or Parquet)",
            ));
        }
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| Failure::about(path, e))?
    };
    Schema::from_text(&text).map_err(|e| Failure::about(path, e))
}

impl Input {
    /// Opens `path` as `args` say. Dataset files are accepted only if
    /// `datasets` is true.
    pub fn open(path: &Path, args: &InputArgs, datasets: bool) -> Result<Input, Failure> {
        if stream::is_stream(path) {
            return Input::open_stream(path, args, datasets);
        }
        if !path.exists() {
            return Err(Failure::about(path, "no such file"));
        }
        if args.input_format.is_none() && is_dataset(path) {
            if !datasets {
                return Err(Failure::about(path, ENCODED_ALREADY));
            }
            return Ok(Input::Dataset {
                dataset: Box::new(Dataset::open(path)?),
                next_block: 0,
            });
        }
        check_compression(path)?;
        match text_format(path, args.input_format) {
            TextFormat::Libsvm => Ok(Input::Libsvm(LibsvmReader::open(
                path,
                libsvm_options(args),
            )?)),
            TextFormat::Csv => Ok(Input::Csv(Box::new(CsvReader::open(
                path,
                csv_options(args)?,
            )?))),
            TextFormat::Parquet => open_parquet(path, args),
        }
    }

    /// Opens a stream (see [`stream`]): read as it comes where the options
    /// allow, else copied once to a scratch file that is unlinked once
    /// open.
    fn open_stream(path: &Path, args: &InputArgs, datasets: bool) -> Result<Input, Failure> {
        let stream = stream::Stream::open(path)?;
        let head = stream.head();
        if !datasets && args.input_format.is_none() && head.starts_with(&FILE_MAGIC) {
            return Err(Failure(format!("{}: {ENCODED_ALREADY}", stream.name)));
        }
        let dataset = datasets && args.input_format.is_none() && head.starts_with(&FILE_MAGIC);
        let format = match args.input_format {
            Some(format) => format,
            None if head.starts_with(&PARQUET_MAGIC) => TextFormat::Parquet,
            None => text_format_by_name(path),
        };
        if args.input_format.is_none()
            && !dataset
            && format == TextFormat::Libsvm
            && stream::looks_like_csv_header(head)
        {
            return Err(Failure::usage(format!(
                "{}: the first line looks like a CSV header, and a stream has no file name to \
                 tell its format by: give --input-format csv (or --input-format libsvm if it is \
                 LIBSVM)",
                stream.name
            )));
        }
        let name = stream.name.clone();
        match format {
            TextFormat::Libsvm if args.cols.is_some() && !dataset => {
                let options = libsvm_options(args);
                let reader = LibsvmReader::from_reader(stream.reader(), &name, options)?;
                return Ok(Input::Libsvm(reader));
            }
            TextFormat::Csv if args.schema.is_some() => {
                let reader = CsvReader::from_reader(stream.reader(), &name, csv_options(args)?)?;
                return Ok(Input::Csv(Box::new(reader)));
            }
            _ => {}
        }
        let dir = args.scratch_dir.clone().unwrap_or_else(std::env::temp_dir);
        let copy = stream.spill(&dir)?;
        let at = copy.path();
        let renamed = |e: tocpile::Error| stream::rename(e, at, &name);
        // Every reader below holds the copy open, so it is unlinked when
        // `copy` drops at the end of this function.
        if dataset {
            let dataset = Dataset::open(at).map_err(renamed)?;
            return Ok(Input::Dataset {
                dataset: Box::new(dataset),
                next_block: 0,
            });
        }
        let open = || std::fs::File::open(at).map_err(|e| Failure::about(at, e));
        let buffered = |f| std::io::BufReader::with_capacity(1 << 16, f);
        match format {
            TextFormat::Libsvm => {
                let mut options = libsvm_options(args);
                // The inference pass over the copy; the reading pass then
                // names the stream in its errors.
                options.n_cols = Some(LibsvmReader::open(at, options).map_err(renamed)?.n_cols());
                let reader = LibsvmReader::from_reader(buffered(open()?), &name, options)?;
                Ok(Input::Libsvm(reader))
            }
            TextFormat::Csv => {
                let mut options = csv_options(args)?;
                options.schema = Some(Schema::infer(at, &options).map_err(renamed)?);
                let reader = CsvReader::from_reader(buffered(open()?), &name, options)?;
                Ok(Input::Csv(Box::new(reader)))
            }
            TextFormat::Parquet => {
                open_parquet(at, args).map_err(|Failure(m)| stream::rename(m, at, &name))
            }
        }
    }

    /// The column count of every row.
    pub fn n_cols(&self) -> usize {
        match self {
            Input::Libsvm(r) => r.n_cols(),
            Input::Csv(r) => r.n_cols(),
            #[cfg(feature = "parquet")]
            Input::Parquet(r) => r.schema().n_cols(),
            Input::Dataset { dataset, .. } => dataset.info().n_cols,
        }
    }

    /// The schema to store with the rows (CSV, Parquet), as text; empty
    /// otherwise.
    pub fn schema_text(&self) -> String {
        match self {
            Input::Csv(r) => r.schema().to_text(),
            #[cfg(feature = "parquet")]
            Input::Parquet(r) => r.schema().to_text(),
            Input::Dataset { dataset, .. } => dataset.info().schema.clone(),
            Input::Libsvm(_) => String::new(),
        }
    }

    /// Categorical values not in the schema, so far: `None` for inputs
    /// without a schema (LIBSVM, dataset files).
    pub fn unseen_levels(&self) -> Option<u64> {
        match self {
            Input::Csv(r) => Some(r.unseen_levels()),
            #[cfg(feature = "parquet")]
            Input::Parquet(r) => Some(r.unseen_levels()),
            _ => None,
        }
    }

    /// The next rows (at most `max_rows` for text; a block for datasets);
    /// `None` at the end.
    pub fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Chunk>, Failure> {
        match self {
            Input::Libsvm(r) => Ok(r.next_chunk(max_rows)?),
            Input::Csv(r) => Ok(r.next_chunk(max_rows)?),
            // Batches of the size the file was opened with (CHUNK_ROWS);
            // callers cut them where they need fewer rows.
            #[cfg(feature = "parquet")]
            Input::Parquet(r) => r.next_chunk(),
            Input::Dataset {
                dataset,
                next_block,
            } => {
                if *next_block >= dataset.n_blocks() {
                    return Ok(None);
                }
                *next_block += 1;
                block_rows(dataset, *next_block - 1).map(Some)
            }
        }
    }
}

/// Opens a Parquet file.
#[cfg(feature = "parquet")]
fn open_parquet(path: &Path, args: &InputArgs) -> Result<Input, Failure> {
    let schema = args.schema.as_deref().map(read_schema).transpose()?;
    let options = tocpile::ingest::arrow::ArrowOptions {
        label: args.label_column.clone(),
        missing_indicators: args.missing_indicators,
    };
    let input = parquet::ParquetInput::open(path, schema, &options, CHUNK_ROWS)?;
    Ok(Input::Parquet(Box::new(input)))
}

/// Parquet needs the `parquet` feature: say how to get it.
#[cfg(not(feature = "parquet"))]
fn open_parquet(path: &Path, _: &InputArgs) -> Result<Input, Failure> {
    Err(Failure::about(
        path,
        "a Parquet file, and this tocpile was built without Parquet support: \
         install it with `cargo install --path cli --features parquet`",
    ))
}

/// Reads at most `max_rows` rows of `path` into memory, with a progress
/// spinner on a terminal.
pub fn load_rows(
    path: &Path,
    args: &InputArgs,
    max_rows: usize,
) -> Result<(SparseBatch, Vec<f64>), Failure> {
    let mut input = Input::open(path, args, true)?;
    let decoded = matches!(input, Input::Dataset { .. });
    let mut all = SparseBatch::with_cols(input.n_cols())?;
    let mut labels = Vec::new();
    let bar = progress(&format!("reading {}", path.display()));
    while all.n_rows() < max_rows {
        let want = (max_rows - all.n_rows()).min(CHUNK_ROWS);
        let Some(chunk) = input.next_chunk(want)? else {
            break;
        };
        let keep = chunk.batch.n_rows().min(max_rows - all.n_rows());
        if decoded {
            // Every row read is held at once: a dataset file's rows are
            // decoded, and bounded as a CorgiPile buffer's are.
            let nnz = (all.nnz() + chunk.batch.offsets()[keep]) as u64;
            tocpile::limits::check_decode_nnz(nnz, "non-zeros of the rows read into memory")
                .map_err(|e| Failure::about(path, e))?;
        }
        for (cols, vals) in chunk.batch.rows().take(keep) {
            all.push_row(cols, vals)
                .map_err(|e| Failure::about(path, e))?;
        }
        labels.extend_from_slice(&chunk.labels[..keep]);
        bar.set_position(all.n_rows() as u64);
    }
    bar.finish_and_clear();
    Ok((all, labels))
}

/// Turns the numeric columns of `batch` (those holding any value other
/// than 1; one-hot columns hold only 1) into `places`-decimal columns by
/// dividing every value by `10^places`, as prices in cents become prices
/// in currency units. `value / 10^places` is correctly rounded, so each
/// result is the `f64` that parsing its decimal text would give: a
/// measurement aid that builds tabular data of mixed one-hot and decimal
/// columns from integer data (`ratio --decimals 2`).
pub fn to_decimals(batch: &SparseBatch, places: u32) -> Result<SparseBatch, Failure> {
    let divisor = 10f64.powi(places as i32);
    let mut numeric = vec![false; batch.n_cols()];
    for (&c, &v) in batch.cols().iter().zip(batch.values()) {
        numeric[c as usize] |= v != 1.0;
    }
    let mut out = SparseBatch::with_cols(batch.n_cols())?;
    let mut vals = Vec::new();
    for (cols, row) in batch.rows() {
        vals.clear();
        vals.extend(cols.iter().zip(row).map(
            |(&c, &v)| {
                if numeric[c as usize] {
                    v / divisor
                } else {
                    v
                }
            },
        ));
        out.push_row(cols, &vals)?;
    }
    Ok(out)
}

/// A row-count spinner on stderr, hidden unless stderr is a terminal.
pub fn progress(message: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_message(message.to_string());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}: {human_pos} rows ({per_sec}, {elapsed})")
            .expect("valid template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// Rows of `batch` and their labels in a random order fixed by `seed`
/// (the library's seeded Fisher-Yates, [`tocpile::rng::Rng`]): the TOC
/// paper shuffles once before cutting mini-batches.
pub fn shuffled(
    batch: &SparseBatch,
    labels: &[f64],
    seed: u64,
) -> Result<(SparseBatch, Vec<f64>), Failure> {
    let order = tocpile::rng::Rng::new(seed).permutation(batch.n_rows());
    let mut out = SparseBatch::with_cols(batch.n_cols())?;
    for &r in &order {
        let (cols, vals) = batch.row(r);
        out.push_row(cols, vals)?;
    }
    let labels = order
        .iter()
        .filter_map(|&r| labels.get(r).copied())
        .collect();
    Ok((out, labels))
}

/// Opens a dataset file (`train`, `inspect`). A file that is not one gets
/// a message saying what it looks like (LIBSVM or CSV text, Parquet,
/// compressed data) and what to do, instead of the magic bytes found.
pub fn open_dataset(path: &Path) -> Result<Dataset, Failure> {
    Dataset::open(path).map_err(|error| match looks_like(path) {
        Some(what) if !is_dataset(path) => Failure::about(path, what),
        _ => error.into(),
    })
}

/// The compressor whose magic bytes start `head`, among those tocpile does
/// not read (gzip it does), with the command that decompresses it.
fn foreign_compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
        Some(("bzip2", "bunzip2 FILE"))
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Some(("xz", "unxz FILE"))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(("zstd", "zstd -d FILE"))
    } else {
        None
    }
}

/// The first bytes of `path` (up to 4 KiB; empty if it cannot be read).
fn head_of(path: &Path) -> Vec<u8> {
    let mut head = Vec::new();
    let _ = std::fs::File::open(path).and_then(|f| f.take(4096).read_to_end(&mut head));
    head
}

/// Refuses text input compressed by a tool tocpile does not read.
fn check_compression(path: &Path) -> Result<(), Failure> {
    match foreign_compression(&head_of(path)) {
        Some((name, command)) => Err(Failure::about(
            path,
            format!(
                "this is {name} data, which tocpile does not read: decompress it first \
                 (`{command}`), or recompress it with gzip"
            ),
        )),
        None => Ok(()),
    }
}

/// What a file that is not a dataset file looks like, by its first bytes.
fn looks_like(path: &Path) -> Option<String> {
    let head = head_of(path);
    let encode = "run `tocpile encode FILE -o FILE.toc` first";
    if let Some((name, command)) = foreign_compression(&head) {
        return Some(format!(
            "this is {name} data, not a tocpile dataset file: decompress it (`{command}`), \
             then {encode}"
        ));
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some(format!("this is gzip data, not a tocpile dataset file: if it holds LIBSVM or CSV text, {encode}"));
    }
    if head.starts_with(&PARQUET_MAGIC) {
        return Some(format!(
            "this looks like a Parquet file, not a tocpile dataset file: {encode}"
        ));
    }
    let text = std::str::from_utf8(&head).unwrap_or_else(|e| {
        // The 4 KiB cut may split a character.
        std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
    });
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let mut tokens = line.split_whitespace();
    let label = tokens.next().is_some_and(|t| t.parse::<f64>().is_ok());
    let pairs = tokens.all(|t| {
        t.split_once(':')
            .is_some_and(|(i, v)| i.parse::<u64>().is_ok() && v.parse::<f64>().is_ok())
    });
    if label && pairs {
        Some(format!(
            "this looks like LIBSVM text, not a tocpile dataset file: {encode}"
        ))
    } else if line.contains(',') && !line.contains('\0') {
        Some(format!(
            "this looks like CSV text, not a tocpile dataset file: {encode}"
        ))
    } else {
        None
    }
}
