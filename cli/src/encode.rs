//! `tocpile encode` and `tocpile inspect`: text data to a dataset file, and
//! what a dataset file holds.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use tocpile::dataset::{Dataset, DatasetInfo, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;

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
/// into place, so an interrupted run leaves no partial file.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile encode train.libsvm.gz -o train.toc\n  \
    tocpile encode train.svm --cols 123 --page-rows 100 -o train.toc\n  \
    tocpile encode flights.csv.gz --label-column late -o flights.toc --json\n  \
    tocpile encode test.csv --label-column late --schema flights.toc -o test.toc\n  \
    tocpile encode flights.parquet --label-column late --missing-indicators -o flights.toc\n  \
    tocpile encode train.libsvm --page-format csr -o train-csr.toc")]
pub struct EncodeArgs {
    /// The input: LIBSVM or CSV text (plain or gzip), or Parquet.
    pub input: PathBuf,
    /// The dataset file to write.
    #[arg(short, long, value_name = "FILE.toc")]
    pub output: PathBuf,
    #[command(flatten)]
    pub input_args: InputArgs,
    /// Rows per page (a mini-batch of 250 rows spans five default pages,
    /// so training shuffles whole pages with no re-encoding).
    #[arg(long, value_name = "N", default_value_t = tocpile::dataset::DEFAULT_PAGE_ROWS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub page_rows: u64,
    /// Target bytes per block (a block closes with the first page that
    /// reaches it).
    #[arg(long, value_name = "N", default_value_t = tocpile::dataset::DEFAULT_BLOCK_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub block_bytes: u64,
    /// Format of every page: toc (TOC_FULL), toc_sparse, toc_logical, csr,
    /// cvi, dvi, den, gzip, snappy or lz4.
    #[arg(long, value_name = "FORMAT", default_value = "toc", value_parser = parse_format)]
    pub page_format: FormatKind,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
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
    /// Blocks whose checksum and pages were checked (inspect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_blocks: Option<usize>,
    /// CSV values not in the schema (encode from CSV).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unseen_levels: Option<u64>,
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
            verified_blocks: None,
            unseen_levels: None,
        }
    }
}

pub fn run_encode(args: &EncodeArgs) -> Outcome {
    let mut input = Input::open(&args.input, &args.input_args, false)?;
    let options = WriterOptions {
        page_rows: usize::try_from(args.page_rows).unwrap_or(usize::MAX),
        block_bytes: usize::try_from(args.block_bytes).unwrap_or(usize::MAX),
        format: args.page_format,
        schema: input.schema_text(),
    };
    let mut writer = DatasetWriter::create(&args.output, input.n_cols(), options)?;
    let bar = progress(&format!("encoding {}", args.input.display()));
    while let Some(chunk) = input.next_chunk(CHUNK_ROWS)? {
        writer.push(&chunk.batch, &chunk.labels)?;
        bar.inc(chunk.batch.n_rows() as u64);
    }
    let info = writer.finish()?;
    bar.finish_and_clear();
    let unseen = input.unseen_levels();
    if args.json {
        let mut json = InfoJson::new(&args.output, &info);
        json.unseen_levels = unseen;
        return emit_json(&json);
    }
    let mut text = format!("wrote {}\n{}\n", args.output.display(), info.summary());
    if let Some(unseen) = unseen.filter(|&n| n > 0) {
        text.push_str(&format!(
            "{unseen} categorical values were not levels of the schema (encoded as all zeros)\n"
        ));
    }
    emit(&text)
}

pub fn run_inspect(args: &InspectArgs) -> Outcome {
    let dataset = Dataset::open(&args.file)?;
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
        return emit_json(&json);
    }
    let mut text = format!("{}\n{}\n", args.file.display(), info.summary());
    match verified {
        Some(n) => text.push_str(&format!(
            "checked {n} blocks and {} pages: checksums match, every page is valid\n",
            info.n_pages
        )),
        None => text.push_str("footer only: blocks not checked\n"),
    }
    emit(&text)
}

/// Reads every block (checksum) and loads every page (validation); returns
/// the number of blocks.
fn verify(dataset: &Dataset) -> Result<usize, Failure> {
    let bar = progress("checking");
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b)?;
        for p in 0..block.n_pages() {
            block.page(p)?;
        }
        bar.inc(block.n_rows() as u64);
    }
    bar.finish_and_clear();
    Ok(dataset.n_blocks())
}
