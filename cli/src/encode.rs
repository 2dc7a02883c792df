//! `tocpile encode` and `tocpile inspect`: text data to a dataset file, and
//! what a dataset file holds.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use tocpile::cleanup::ScratchFile;
use tocpile::dataset::{Dataset, DatasetInfo, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::scale::ScaleKind;

use crate::input::{progress, Input, InputArgs, CHUNK_ROWS};
use crate::output::{emit, emit_json};
use crate::{Failure, Outcome};

/// Parses a page format name (`toc`, `csr`, `TOC_SPARSE`, ...).
pub fn parse_format(name: &str) -> Result<FormatKind, String> {
    FormatKind::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = FormatKind::ALL.iter().map(|k| k.name()).collect();
        format!(
            "unknown format {name:?} (toc, or one of {})",
            names.join(", ")
        )
    })
}

/// Encode LIBSVM or CSV text (plain or gzip) or a Parquet file into a
/// tocpile dataset file.
///
/// The input is streamed: it is never held in memory whole. CSV and
/// Parquet columns are numeric or categorical (one-hot) as a schema says:
/// inferred from the file (a first pass), or given with --schema. Parquet
/// needs a build with the `parquet` feature. Rows are cut
/// into pages of --page-rows rows (one encoded mini-batch each) and pages
/// into blocks of about --block-bytes bytes (the unit of random I/O), each
/// block checksummed. The file is written to a temporary file and renamed
/// into place, so an interrupted run leaves no partial file (SIGINT and
/// SIGTERM remove the temporary file: exit code 130 or 143).
///
/// INPUT may be `-` (standard input), a pipe such as /dev/stdin, or a
/// FIFO, plain or gzip'd; it is read once. With --cols (LIBSVM) or
/// --schema (CSV) rows are encoded as they come; otherwise the stream is
/// first copied to --scratch-dir (default: the output's directory), and
/// the copy is removed. CSV on a stream needs --input-format csv.
/// Memory is bounded by chunks of about 8 MiB of rows, whatever their
/// width.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile encode train.libsvm.gz -o train.toc\n  \
    tocpile encode train.svm --cols 123 --page-rows 100 -o train.toc\n  \
    tocpile encode flights.csv.gz --label-column late -o flights.toc --json\n  \
    tocpile encode test.csv --label-column late --schema flights.toc -o test.toc\n  \
    tocpile encode flights.parquet --label-column late --missing-indicators -o flights.toc\n  \
    tocpile encode train.libsvm --page-format csr -o train-csr.toc\n  \
    zcat train.libsvm.gz | tocpile encode - --cols 784 -o train.toc\n  \
    tocpile encode /dev/stdin --input-format csv --schema train.toc -o test.toc < test.csv")]
pub struct EncodeArgs {
    /// The input: LIBSVM or CSV text (plain or gzip), or Parquet; `-` for
    /// standard input.
    pub input: PathBuf,
    /// The dataset file to write; `-` for standard output (built whole,
    /// then copied; the summary then goes to standard error).
    #[arg(short, long, value_name = "FILE.toc")]
    pub output: PathBuf,
    #[command(flatten)]
    pub input_args: InputArgs,
    /// Rows per page (a mini-batch of 250 rows spans five default pages,
    /// so training shuffles whole pages with no re-encoding), 1 to
    /// 4294967295 (what a reader accepts).
    #[arg(long, value_name = "N", default_value_t = tocpile::dataset::DEFAULT_PAGE_ROWS as u64, value_parser = clap::value_parser!(u64).range(1..=u64::from(u32::MAX)))]
    pub page_rows: u64,
    /// Target bytes per block (a block closes with the first page that
    /// reaches it), 1 to 4294967295 (what a reader accepts).
    #[arg(long, value_name = "N", default_value_t = tocpile::dataset::DEFAULT_BLOCK_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..=u64::from(u32::MAX)))]
    pub block_bytes: u64,
    /// Rows per segment of a toc file: a segment's pages share one
    /// dictionary (pairs, values and prefix-tree nodes) learned from its
    /// rows; 0 makes every page self-contained (file version 2).
    #[arg(long, value_name = "N", default_value_t = tocpile::dataset::DEFAULT_SEGMENT_ROWS as u64, value_parser = clap::value_parser!(u64).range(0..=u64::from(u32::MAX)))]
    pub segment_rows: u64,
    /// Format of every page: toc (TOC_FULL), toc_sparse, toc_logical, csr,
    /// cvi, dvi, den, gzip, snappy or lz4.
    #[arg(long, value_name = "FORMAT", default_value = "toc", value_parser = parse_format)]
    pub page_format: FormatKind,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Fit a column scaling in the same pass and store it in the file:
    /// maxabs (each column divided by its largest absolute value,
    /// scikit-learn's MaxAbsScaler; keeps zeros zero), standard (divided
    /// by its standard deviation, no centering) or none. The data and its
    /// compression are not changed: `train` applies the scaling to the
    /// model's parameters.
    #[arg(long, value_enum, default_value = "maxabs")]
    pub scale: ScaleOpt,
}

/// `encode --scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleOpt {
    /// No scaling stored.
    None,
    /// MaxAbsScaler.
    Maxabs,
    /// StandardScaler(with_mean=False).
    Standard,
}

impl ScaleOpt {
    fn kind(self) -> Option<ScaleKind> {
        match self {
            ScaleOpt::None => None,
            ScaleOpt::Maxabs => Some(ScaleKind::MaxAbs),
            ScaleOpt::Standard => Some(ScaleKind::Standard),
        }
    }
}

/// Show what a dataset file holds, after checking it.
///
/// Reads the footer, then every block (verifying its checksum) and every
/// page (validating its encoding), unless --footer-only.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile inspect train.toc\n  \
    tocpile inspect train.toc --json\n  \
    tocpile inspect flights.toc --schema > flights.schema")]
pub struct InspectArgs {
    /// The dataset file.
    pub file: PathBuf,
    /// Read the footer only (fast; blocks are not checked).
    #[arg(long)]
    pub footer_only: bool,
    /// Print the file's stored CSV schema (text form, for
    /// `encode --schema`) and nothing else.
    #[arg(long, conflicts_with = "json")]
    pub schema: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A dataset file's summary with stable JSON field names.
#[derive(Debug, Serialize)]
pub struct InfoJson {
    pub path: String,
    pub rows: u64,
    pub cols: usize,
    pub nnz: u64,
    pub page_format: &'static str,
    pub page_rows: usize,
    pub block_bytes: usize,
    pub blocks: usize,
    pub pages: u64,
    pub file_bytes: u64,
    pub payload_bytes: u64,
    pub ratio_vs_dense: f64,
    pub ratio_vs_csr: f64,
    pub schema: String,
    /// The stored scaling: "maxabs", "standard" or "none".
    pub scaling: &'static str,
    /// Between-page variance of the label over what random pages would
    /// show (about 1: pages as mixed as random rows; up to the page size:
    /// a label per page); absent in files written before it was stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_mix: Option<f64>,
    /// Blocks whose checksum and pages were checked (inspect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_blocks: Option<usize>,
    /// CSV values not in the schema (encode from CSV).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unseen_levels: Option<u64>,
    /// Format versions 3 and 4: segments and shared dictionaries (inspect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<SegmentsJson>,
}

/// The segments of a dataset file and their shared dictionaries (format
/// versions 3 to 6; zero segments in files of earlier versions).
#[derive(Debug, Serialize)]
pub struct SegmentsJson {
    /// The file's format version (1 to 7).
    pub version: u8,
    /// Segments (runs of consecutive blocks).
    pub count: usize,
    /// Segments that keep a shared dictionary.
    pub with_dictionary: usize,
    /// Bytes the dictionaries take in the file.
    pub dictionary_file_bytes: u64,
    /// Bytes the dictionaries hold in memory while the file is open.
    pub dictionary_resident_bytes: usize,
}

impl SegmentsJson {
    pub fn of(dataset: &Dataset) -> SegmentsJson {
        let (with_dictionary, count) = dataset.n_segments();
        SegmentsJson {
            version: dataset.info().version,
            count,
            with_dictionary,
            dictionary_file_bytes: dataset.shared_dict_file_bytes(),
            dictionary_resident_bytes: dataset.shared_dict_bytes(),
        }
    }

    /// One line of `inspect`'s summary.
    fn line(&self) -> String {
        if self.count == 0 {
            return format!(
                "format version {}: no segments, no shared dictionaries\n",
                self.version
            );
        }
        let plural = if self.count == 1 { "" } else { "s" };
        format!(
            "format version {}: {} segment{plural}, {} with a shared dictionary ({} bytes in \
             the file, {} resident while it is open)\n",
            self.version,
            self.count,
            self.with_dictionary,
            self.dictionary_file_bytes,
            self.dictionary_resident_bytes
        )
    }
}

impl InfoJson {
    pub fn new(path: &Path, info: &DatasetInfo) -> Self {
        let payload = info.payload_bytes.max(1) as f64;
        InfoJson {
            path: path.display().to_string(),
            rows: info.n_rows,
            cols: info.n_cols,
            nnz: info.nnz,
            page_format: info.format.name(),
            page_rows: info.page_rows,
            block_bytes: info.block_bytes,
            blocks: info.n_blocks,
            pages: info.n_pages,
            file_bytes: info.file_bytes,
            payload_bytes: info.payload_bytes,
            ratio_vs_dense: info.dense_bytes() / payload,
            ratio_vs_csr: info.csr_bytes() / payload,
            schema: info.schema.clone(),
            scaling: info.scaling.as_ref().map_or("none", |s| s.kind().name()),
            label_mix: info.label_mix.map(|m| m.ratio),
            verified_blocks: None,
            unseen_levels: None,
            segments: None,
        }
    }
}

pub fn run_encode(args: &EncodeArgs) -> Outcome {
    let inputs: Vec<&Path> = std::iter::once(args.input.as_path())
        .chain(args.input_args.schema.as_deref())
        .collect();
    crate::output::check(&inputs, &[("-o", &args.output)])?;
    let to_stdout = crate::output::is_stdout(&args.output);
    let mut input_args = args.input_args.clone();
    if input_args.scratch_dir.is_none() && !to_stdout {
        // A stream's copy goes beside the output, which has room for data.
        input_args.scratch_dir = Some(match args.output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        });
    }
    let mut input = Input::open(&args.input, &input_args, false)?;
    let options = WriterOptions::default()
        .with_page_rows(usize::try_from(args.page_rows).unwrap_or(usize::MAX))
        .with_block_bytes(usize::try_from(args.block_bytes).unwrap_or(usize::MAX))
        .with_format(args.page_format)
        .with_schema(input.schema_text())
        .with_segment_rows(usize::try_from(args.segment_rows).unwrap_or(usize::MAX));
    let what = format!("encoding {}", args.input.display());
    let info = if to_stdout {
        // Built whole, then copied: a pipe cannot be renamed into, and a
        // file streamed as it is written would be cut short by an error.
        let dir = crate::output::staging_dir(input_args.scratch_dir.as_deref());
        let pid = std::process::id();
        tocpile::cleanup::remove_stale(&dir, ".tocpile-stdout-");
        let staged = ScratchFile::claim(&dir, |n| format!(".tocpile-stdout-{pid}-{n}.toc"))
            .map_err(|e| {
                Failure(format!(
                    "-o {}: building the file in {} before it goes to standard output (give \
                     --scratch-dir DIR to build it elsewhere): {e}",
                    args.output.display(),
                    dir.display()
                ))
            })?;
        let info = write_dataset(&mut input, staged.path(), options, args.scale, &what)?;
        crate::output::copy_to_stdout(staged.path())?;
        info
    } else {
        write_dataset(&mut input, &args.output, options, args.scale, &what)?
    };
    let unseen = input.unseen_levels();
    if args.json {
        let mut json = InfoJson::new(&args.output, &info);
        json.unseen_levels = unseen;
        return emit_json(&json);
    }
    let written = match to_stdout {
        true => format!("{} (standard output)", args.output.display()),
        false => args.output.display().to_string(),
    };
    let mut text = format!("wrote {written}\n{}\n", info.summary());
    if let Some(unseen) = unseen.filter(|&n| n > 0) {
        text.push_str(&format!(
            "{unseen} categorical values were not levels of the schema (encoded as all zeros)\n"
        ));
    }
    emit(&text)
}

/// Writes every row of `input` to the dataset file `output` (atomically,
/// as [`DatasetWriter`] does) with `options` and the scaling `scale`,
/// showing `what` on a progress bar: `tocpile encode`, and the default
/// file that `ratio` and `bench codec` measure.
pub fn write_dataset(
    input: &mut Input,
    output: &Path,
    options: WriterOptions,
    scale: ScaleOpt,
    what: &str,
) -> Result<DatasetInfo, Failure> {
    let mut writer = DatasetWriter::create(output, input.n_cols(), options)?;
    // The scaling is an extra beside the data: a file too wide for one
    // (three f64s a column) is still encoded, with a warning.
    if let Err(e) = writer.set_scaling(scale.kind()) {
        eprintln!(
            "tocpile: warning: {}: no scaling stored: {e}",
            output.display()
        );
    }
    let bar = progress(what);
    // Chunks sized by bytes, not rows: memory stays bounded whatever the
    // row width (images of 784 columns, one-hot rows of 10).
    let mut rows = FIRST_CHUNK_ROWS;
    while let Some(chunk) = input.next_chunk(rows)? {
        tocpile::cleanup::check()?;
        writer.push(&chunk.batch, &chunk.labels)?;
        bar.inc(chunk.batch.n_rows() as u64);
        rows = chunk_rows(&chunk.batch);
    }
    let info = writer.finish()?;
    bar.finish_and_clear();
    Ok(info)
}

/// Rows of the first chunk an encode reads, before the row width is known.
const FIRST_CHUNK_ROWS: usize = 1024;

/// Decoded bytes of a chunk the encode reads: the reader holds the chunk's
/// text, its parsed parts and the joined batch (about three times this),
/// beside the writer's round.
const CHUNK_BYTES: usize = 8 << 20;

/// Rows of the next chunk: [`CHUNK_BYTES`] of rows as wide as `last`'s
/// (12 bytes per non-zero, 16 per row), within 64 to [`CHUNK_ROWS`].
fn chunk_rows(last: &tocpile::SparseBatch) -> usize {
    let per_row = (12 * last.nnz() + 16 * last.n_rows()) / last.n_rows().max(1);
    (CHUNK_BYTES / per_row.max(1)).clamp(64, CHUNK_ROWS)
}

pub fn run_inspect(args: &InspectArgs) -> Outcome {
    let dataset = crate::input::open_dataset(&args.file)?;
    let info = dataset.info();
    if args.schema {
        if info.schema.is_empty() {
            return Err(Failure::about(
                &args.file,
                "this dataset file stores no schema (it was not encoded from CSV or Parquet)",
            ));
        }
        return emit(&info.schema);
    }
    let verified = if args.footer_only {
        None
    } else {
        Some(verify(&dataset)?)
    };
    if args.json {
        let mut json = InfoJson::new(&args.file, info);
        json.verified_blocks = verified;
        json.segments = Some(SegmentsJson::of(&dataset));
        return emit_json(&json);
    }
    let mut text = format!("{}\n{}\n", args.file.display(), info.summary());
    text.push_str(&SegmentsJson::of(&dataset).line());
    match verified {
        Some(n) => text.push_str(&format!(
            "checked {n} blocks and {} pages: checksums match, every page is valid, \
             the footer's totals are the pages'\n",
            info.n_pages
        )),
        None => text.push_str("footer only: blocks not checked\n"),
    }
    emit(&text)
}

/// Reads every block (checksum), loads every page (validation) and checks
/// the footer's totals against the pages; returns the number of blocks.
fn verify(dataset: &Dataset) -> Result<usize, Failure> {
    let bar = progress("checking");
    dataset.verify(|block| bar.inc(block.n_rows() as u64))?;
    bar.finish_and_clear();
    Ok(dataset.n_blocks())
}
