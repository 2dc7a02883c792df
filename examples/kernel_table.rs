//! The TOC paper's Figure 8 measured here: time of A*c, A.v, v.A, A.M and
//! M.A (p = 20) for every format, as a ratio to CSR in the same run, on
//! 250-row batches of each shared dataset's shuffled rows.
//!
//! ```text
//! cargo run --release --example kernel_table [-- --rows N] [--batches N] [--datasets a,b] [--formats CSR,TOC_FULL]
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use tocpile::bench::{kernel_table, KernelBenchConfig};
use tocpile::formats::FormatKind;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let rows: usize = flag("--rows").map_or(50_000, |s| s.parse().expect("--rows N"));
    let n_batches: usize = flag("--batches").map_or(40, |s| s.parse().expect("--batches N"));
    let names: Vec<String> = flag("--datasets").map_or_else(
        || support::DATASETS.iter().map(|s| s.to_string()).collect(),
        |s| s.split(',').map(str::to_string).collect(),
    );
    for name in &names {
        let (all, _) = support::load(name, rows);
        let batches: Vec<_> = support::batches(&support::shuffled(&all, 42), 250)
            .into_iter()
            .take(n_batches)
            .collect();
        let mut config = KernelBenchConfig::default();
        if let Some(list) = flag("--formats") {
            config.formats = list
                .split(',')
                .map(|n| FormatKind::from_name(n).unwrap_or_else(|| panic!("unknown format {n}")))
                .collect();
        }
        if all.n_cols() > 1000 {
            // Dense formats of nycflights13 take minutes: measure fewer.
            config.formats.retain(|k| {
                !matches!(
                    k,
                    FormatKind::Gzip | FormatKind::Snappy | FormatKind::Lz4 | FormatKind::Dvi
                )
            });
        }
        let report = kernel_table(&batches, &config).expect("encode");
        println!(
            "\n### {name}: {} batches of {} rows, p = {} (time as a ratio to CSR)\n",
            report.n_batches, report.batch_rows, report.p
        );
        println!("{}", report.to_markdown());
        println!("{}", report.csr_micros());
    }
}
