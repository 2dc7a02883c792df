//! `tocpile bench adaptive`: what each per-batch choice of format version
//! 2 buys (`tocpile::Adaptive`), and what a reader pays for it per page.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;

use clap::Args;
use tocpile::{Adaptive, DecodeTree, EncodeOptions, Encoder, SparseBatch, TocBatch};
use tocpile_bench_data::{median, thread_cpu_ns};

use crate::input::InputArgs;
use crate::output::emit;
use crate::rows::RowArgs;
use crate::{Failure, Outcome};

/// The layouts compared: the version-1 layout, each version-2 choice alone,
/// and all of them (the default, last).
const VARIANTS: [(&str, Adaptive); 5] = [
    ("version 1", Adaptive::NONE),
    (
        "+ flat pages",
        Adaptive {
            flat_pages: true,
            ..Adaptive::NONE
        },
    ),
    (
        "+ gaps",
        Adaptive {
            gaps: true,
            ..Adaptive::NONE
        },
    ),
    (
        "+ scaled dict",
        Adaptive {
            scaled_dictionary: true,
            ..Adaptive::NONE
        },
    ),
    ("all (default)", Adaptive::ALL),
];

/// Compression ratio of TOC_FULL with each version-2 choice alone and all
/// together, and the CPU time per page to validate and build the tree.
///
/// The rows of each INPUT (at most --max-rows, default 50,000; after
/// --shuffle) are cut into at most --batches batches of 250 rows and
/// encoded with the version-1 layout (Adaptive::NONE), with flat pages,
/// gap-coded columns or the scaled (decimal) dictionary alone, and with
/// all of them (the default); every page is decoded back and compared.
/// The ratio is dense f64 bytes over encoded bytes. The last columns are
/// what a reader pays per page (TocBatch::from_bytes_with_tree) for the
/// version-1 layout and the default, by the thread's CPU time (Linux),
/// median of 7 interleaved rounds.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench adaptive train.libsvm.gz --shuffle 42\n  \
    tocpile bench adaptive prices.libsvm.gz --shuffle 42 --decimals 2")]
pub struct AdaptiveArgs {
    /// LIBSVM or CSV text (plain or gzip), Parquet, or dataset files.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    rows: RowArgs,
    /// Batches of 250 rows measured (the first ones).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    batches: u64,
}

pub fn run(args: &AdaptiveArgs) -> Outcome {
    let mut out = String::from("| input |");
    for (name, _) in VARIANTS {
        let _ = write!(out, " {name} |");
    }
    out.push_str(
        " flat pages | version-2 pages | build us/page, version 1 | build us/page, default |\n",
    );
    let _ = writeln!(
        out,
        "|---|{}---:|---:|---:|---:|",
        "---:|".repeat(VARIANTS.len())
    );
    let take = usize::try_from(args.batches).unwrap_or(usize::MAX);
    for path in &args.inputs {
        let all = args.rows.load(path, &args.input_args, 50_000)?;
        let batches: Vec<SparseBatch> = (0..all.n_rows())
            .step_by(250)
            .take(take)
            .map(|s| all.slice_rows(s..(s + 250).min(all.n_rows())))
            .collect();
        let line = measure(&batches).map_err(|e| Failure::about(path, e))?;
        let _ = writeln!(out, "| {} |{line}", path.display());
    }
    emit(&out)
}

/// One table row (after the input's name): ratio per variant, the default's
/// flat and version-2 page counts, and the build times.
fn measure(batches: &[SparseBatch]) -> Result<String, String> {
    let dense: f64 = batches
        .iter()
        .map(|b| (b.n_rows() * b.n_cols() * 8) as f64)
        .sum();
    let mut line = String::new();
    let (mut flat, mut v2) = (0, 0);
    let mut blobs: Vec<Vec<Vec<u8>>> = Vec::new();
    for (name, adaptive) in VARIANTS {
        let mut encoder = Encoder::new(EncodeOptions::default().with_adaptive(adaptive));
        let mut bytes = 0usize;
        let mut pages = Vec::new();
        (flat, v2) = (0, 0);
        for (i, b) in batches.iter().enumerate() {
            let encoded = encoder.encode(b).map_err(|e| e.to_string())?;
            bytes += encoded.encoded_len();
            flat += usize::from(!encoded.has_tree());
            v2 += usize::from(encoded.version() == 2);
            let loaded = TocBatch::from_bytes(encoded.as_bytes()).map_err(|e| e.to_string())?;
            if loaded.decode() != *b {
                return Err(format!(
                    "{name}: batch {i} did not decode to its rows (a tocpile bug; please report it)"
                ));
            }
            pages.push(encoded.into_bytes());
        }
        let _ = write!(line, " {:.1} |", dense / bytes.max(1) as f64);
        blobs.push(pages);
    }
    // The last variant is the default, the first the version-1 layout.
    let default = blobs.pop().expect("variants");
    let micros = build_micros(&[blobs.swap_remove(0), default]);
    let _ = write!(
        line,
        " {flat} of {} | {v2} | {:.1} | {:.1} |",
        batches.len(),
        micros[0],
        micros[1]
    );
    Ok(line)
}

/// Median CPU microseconds per page to validate and build the tree of
/// each set of pages (interleaved rounds across the sets).
fn build_micros(sets: &[Vec<Vec<u8>>]) -> Vec<f64> {
    let mut tree = DecodeTree::default();
    let mut samples = vec![Vec::new(); sets.len()];
    for _ in 0..7 {
        for (s, pages) in sets.iter().enumerate() {
            let start = thread_cpu_ns();
            let mut passes = 0u64;
            while thread_cpu_ns() - start < 20_000_000 {
                for p in pages {
                    black_box(TocBatch::from_bytes_with_tree(&p[..], &mut tree).expect("checked"));
                }
                passes += 1;
            }
            let per_page = (thread_cpu_ns() - start) as f64 / passes as f64 / pages.len() as f64;
            samples[s].push(per_page / 1000.0);
        }
    }
    samples.into_iter().map(median).collect()
}
