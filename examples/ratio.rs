//! Compression of your data: the rows of a LIBSVM file cut into
//! mini-batches, each stored as CSR, snappy and gzip (both over the dense
//! bytes, as the TOC paper's baselines, section 6.2) and TOC, and the
//! ratio of the dense `f64` size to each format's. Every TOC batch is
//! decoded back and compared with its rows.
//!
//! ```sh
//! cargo run --release --example ratio                                     # the shipped mushrooms set
//! cargo run --release --example ratio -- FILE.libsvm.gz [BATCH_ROWS] [MAX_ROWS]
//! ```
//!
//! Defaults: 250-row batches, at most 100,000 rows (in file order). For
//! every format and the paper's figures, `tocpile ratio FILE` (the
//! command line) does more.

use std::path::PathBuf;

use tocpile::formats::FormatKind;
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::{decode_bytes, SparseBatch};

const FORMATS: [(FormatKind, &str); 4] = [
    (FormatKind::Csr, "CSR"),
    (FormatKind::Snappy, "snappy"),
    (FormatKind::Gzip, "gzip"),
    (FormatKind::TocFull, "TOC"),
];

fn main() -> Result<(), tocpile::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/mushrooms.libsvm.gz")
    });
    let number = |i: usize, default: usize| {
        args.get(i).map_or(default, |a| {
            a.parse().expect("BATCH_ROWS and MAX_ROWS: numbers")
        })
    };
    let (batch_rows, max_rows) = (number(1, 250).max(1), number(2, 100_000));

    let mut reader = LibsvmReader::open(&path, LibsvmOptions::default())?;
    let n_cols = reader.n_cols();
    let (mut sizes, mut dense, mut rows, mut batches) = ([0usize; 4], 0usize, 0usize, 0usize);
    let mut pending = SparseBatch::with_cols(n_cols)?;
    let mut flush = |batch: &SparseBatch| -> Result<(), tocpile::Error> {
        for (total, (kind, _)) in sizes.iter_mut().zip(FORMATS) {
            let encoded = kind.encode(batch)?;
            *total += encoded.encoded_len();
            if kind == FormatKind::TocFull {
                assert_eq!(&decode_bytes(&encoded.to_bytes())?, batch, "TOC round trip");
            }
        }
        dense += batch.n_rows() * n_cols * 8;
        batches += 1;
        Ok(())
    };
    while rows < max_rows {
        let Some(chunk) = reader.next_chunk((max_rows - rows).min(1 << 14))? else {
            break;
        };
        rows += chunk.labels.len();
        for (cols, vals) in chunk.batch.rows() {
            pending.push_row(cols, vals)?;
            if pending.n_rows() == batch_rows {
                flush(&pending)?;
                pending = SparseBatch::with_cols(n_cols)?;
            }
        }
    }
    if pending.n_rows() > 0 {
        flush(&pending)?;
    }

    println!(
        "{}: {rows} rows x {n_cols} columns in {batches} batches of {batch_rows} rows; dense f64 {dense} bytes\n",
        path.display()
    );
    println!("| format | bytes | ratio (dense / format) |\n|---|---:|---:|");
    for (size, (_, name)) in sizes.iter().zip(FORMATS) {
        println!("| {name} | {size} | {:.1} |", dense as f64 / *size as f64);
    }
    Ok(())
}
