//! Writes the generated loan-like set (`tocpile_bench_data::loan_like`:
//! 119 columns, 16.5 non-zeros a row, 11 of them high-cardinality numeric
//! columns) as gzip-compressed LIBSVM text, so that the command line's
//! measurements (`tocpile bench kernels`, `tocpile ratio`) can read it.
//!
//! ```text
//! cargo run --release --example loan_like -- /tmp/loan_like.libsvm.gz [ROWS] [SEED]
//! ```
//!
//! Defaults: 10,000 rows, the seed `load("loan_like")` uses.

use std::io::Write as _;

use tocpile_bench_data::{loan_like, LOAN_ROWS, LOAN_SEED};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: loan_like OUT.libsvm.gz [ROWS] [SEED]")?;
    let rows = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(LOAN_ROWS);
    let seed = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(LOAN_SEED);
    let (batch, labels) = loan_like(rows, seed);
    let mut text = String::new();
    for ((cols, vals), y) in batch.rows().zip(&labels) {
        text.push_str(&format!("{y}"));
        for (c, v) in cols.iter().zip(vals) {
            text.push_str(&format!(" {}:{v}", c + 1));
        }
        text.push('\n');
    }
    let tmp = format!("{path}.tmp");
    let mut gz =
        flate2::write::GzEncoder::new(std::fs::File::create(&tmp)?, flate2::Compression::new(6));
    gz.write_all(text.as_bytes())?;
    gz.finish()?.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    eprintln!(
        "{path}: {rows} rows x {} columns, {} non-zeros",
        batch.n_cols(),
        batch.nnz()
    );
    Ok(())
}
