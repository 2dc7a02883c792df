//! Writes a Parquet copy of a shared LIBSVM dataset, one-hot columns
//! turned back into string columns by its `NAME.cols.txt` (and optionally
//! a CSV copy): the larger test file for `tocpile encode` from Parquet.
//!
//! ```sh
//! cargo run --release -p tocpile-cli --features parquet --example parquet_from_libsvm -- \
//!     ../shared/data/flights3m.libsvm.gz ../shared/data/flights3m.cols.txt \
//!     /tmp/flights3m.parquet [/tmp/flights3m.csv]
//! ```

#[path = "../tests/common/parquet_gen.rs"]
mod parquet_gen;

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [libsvm, cols, parquet, rest @ ..] = args.as_slice() else {
        eprintln!("usage: parquet_from_libsvm DATA.libsvm.gz DATA.cols.txt OUT.parquet [OUT.csv]");
        std::process::exit(2);
    };
    let start = Instant::now();
    let options = parquet_gen::Options {
        row_group_rows: 1 << 20,
        ..parquet_gen::Options::default()
    };
    let rows = parquet_gen::convert(
        libsvm,
        cols,
        parquet,
        rest.first().map(|p| p.as_path()),
        None,
        &options,
    );
    let bytes = std::fs::metadata(parquet).map(|m| m.len()).unwrap_or(0);
    println!(
        "wrote {} rows to {} ({:.1} MiB) in {:.1} s",
        rows,
        parquet.display(),
        bytes as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64()
    );
}
