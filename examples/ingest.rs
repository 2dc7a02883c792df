//! Ingestion measured end to end: a LIBSVM file (plain or gzip) streamed
//! through `LibsvmReader` into a dataset file, once per page format, then
//! each file read back sequentially with a trivial consumer. Reports rows
//! per second, the process's peak resident memory, file sizes, and the
//! sequential read time of each file as a ratio to the CSR file, for two
//! readers: one thread, and read-ahead with pages loaded in parallel.
//!
//! ```text
//! cargo run --release --example ingest [-- INPUT.libsvm[.gz] [--cols N] [--rows N] [--out DIR] [--cold]]
//! ```
//!
//! `--cold` drops the page cache before each sequential read (writes
//! `/proc/sys/vm/drop_caches`, so root on Linux), making the reads real
//! disk reads; without it the files are read from the page cache and the
//! comparison is of decoding work only.
//!
//! Default input: `../shared/data/flights3m.libsvm.gz` (496 columns). Peak
//! memory is the kernel's high-water mark (`VmHWM`), so it covers the
//! whole run: run one input per process.

mod shared;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() -> tocpile::Result<()> {
    let args = shared::Args::from_env();
    let input = args
        .0
        .first()
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .unwrap_or_else(|| tocpile_bench_data::shared_data_dir().join("flights3m.libsvm.gz"));
    let is_flights = input.to_string_lossy().contains("flights3m");
    let n_cols: Option<usize> = args
        .has("--cols")
        .then(|| args.get("--cols", 0))
        .or(is_flights.then_some(496));
    let max_rows: u64 = args.get("--rows", u64::MAX);
    let out_dir: PathBuf = args.get("--out", std::env::temp_dir());
    let cold = args.has("--cold");

    println!("input {}", input.display());
    println!("| page format | rows | seconds | rows/s | file MiB | payload ratio vs dense | vs CSR | peak RSS MiB |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut files = Vec::new();
    for format in [FormatKind::TocFull, FormatKind::Csr] {
        let start = Instant::now();
        let mut reader = LibsvmReader::open(
            &input,
            LibsvmOptions::default()
                .with_n_cols(n_cols)
                .with_zero_based(false),
        )?;
        let out = out_dir.join(format!("ingest-{}.toc", format.name()));
        // The layout the README's figures were measured with (the
        // writer's defaults before 50-row pages and 2 KiB blocks).
        let options = WriterOptions::default()
            .with_format(format)
            .with_page_rows(250)
            .with_block_bytes(4 << 20);
        let mut writer = DatasetWriter::create(&out, reader.n_cols(), options)?;
        let mut rows = 0u64;
        while rows < max_rows {
            let want = (max_rows - rows).min(100_000) as usize;
            let Some(chunk) = reader.next_chunk(want)? else {
                break;
            };
            rows += chunk.batch.n_rows() as u64;
            writer.push(&chunk.batch, &chunk.labels)?;
        }
        let info = writer.finish()?;
        let secs = start.elapsed().as_secs_f64();
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.1} | {:.1} | {:.2} | {:.0} |",
            format.name(),
            info.n_rows,
            secs,
            info.n_rows as f64 / secs,
            info.file_bytes as f64 / (1 << 20) as f64,
            info.dense_bytes() / info.payload_bytes as f64,
            info.csr_bytes() / info.payload_bytes as f64,
            peak_rss_mib()
        );
        files.push((format, out));
    }

    // Sequential read: every block read and verified, every page loaded
    // and validated (the TOC tree built); the consumer counts rows. Two
    // readers: one thread doing both, and the pipelined reader (a
    // read-ahead thread, pages loaded in parallel across both cores).
    let mut times = Vec::new();
    for (format, path) in &files {
        let ds = Arc::new(Dataset::open(path)?);
        for pipelined in [false, true] {
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                if cold {
                    drop_page_cache();
                }
                let start = Instant::now();
                let rows = if pipelined {
                    read_pipelined(&ds)?
                } else {
                    read_plain(&ds)?
                };
                assert_eq!(rows as u64, ds.info().n_rows);
                best = best.min(start.elapsed().as_secs_f64());
            }
            times.push((*format, pipelined, best));
        }
    }
    let how = if cold {
        "from disk, page cache dropped"
    } else {
        "from the page cache"
    };
    println!("\nsequential read ({how}), best of 3:\n");
    println!("| page format | reader | seconds | vs CSR, same reader |");
    println!("|---|---|---:|---:|");
    for &(format, pipelined, secs) in &times {
        let base = times
            .iter()
            .find(|t| t.0 == FormatKind::Csr && t.1 == pipelined)
            .map_or(f64::NAN, |t| t.2);
        let reader = if pipelined {
            "read-ahead + parallel pages"
        } else {
            "one thread"
        };
        println!(
            "| {} | {reader} | {secs:.3} | {:.2} |",
            format.name(),
            secs / base
        );
    }
    for (_, path) in &files {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// One thread reads each block and loads its pages in turn.
fn read_plain(ds: &Dataset) -> tocpile::Result<usize> {
    let mut rows = 0;
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b)?;
        for p in 0..block.n_pages() {
            rows += block.page(p)?.n_rows();
        }
    }
    Ok(rows)
}

/// A read-ahead thread reads blocks two in front; each block's pages load
/// in parallel.
fn read_pipelined(ds: &Arc<Dataset>) -> tocpile::Result<usize> {
    let mut rows = 0;
    for block in ds.prefetch((0..ds.n_blocks()).collect(), 2)? {
        for page in block?.pages()? {
            rows += page.n_rows();
        }
    }
    Ok(rows)
}

/// Flushes dirty pages and drops the page cache, so the next read comes
/// from disk.
fn drop_page_cache() {
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    if !synced || std::fs::write("/proc/sys/vm/drop_caches", "1").is_err() {
        eprintln!("--cold: could not drop the page cache (needs root on Linux)");
    }
}
