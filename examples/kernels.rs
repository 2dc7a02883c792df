//! The products of SGD on an encoded batch, checked against plain dense
//! math: encode a batch (TOC, the tuple-oriented compression of the TOC
//! paper, section 3), then run `A.v`, `v.A`, `A.M`, `M.A` and the sum
//! (section 4) through `TocBatch::kernels()` on the compressed form, with
//! no decompression, and compare each with the same product on the
//! batch's dense matrix.
//!
//! ```sh
//! cargo run --release --example kernels                 # 250 rows of the shipped mushrooms set
//! cargo run --release --example kernels -- FILE.libsvm.gz ROWS
//! ```

use std::path::PathBuf;

use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::ndarray::{Array1, Array2};
use tocpile::{encode, SparseBatch, TocBatch};

/// The first `rows` rows of a LIBSVM file (plain or gzip).
fn read_rows(path: &PathBuf, rows: usize) -> Result<SparseBatch, tocpile::Error> {
    let mut reader = LibsvmReader::open(path, LibsvmOptions::default())?;
    let chunk = reader
        .next_chunk(rows)?
        .ok_or(tocpile::Error::BadArgument {
            what: "input",
            expected: "at least one row",
        })?;
    Ok(chunk.batch)
}

/// The largest |got - want| relative to the largest |want| (or 1).
fn relative_error(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
    got.iter()
        .zip(want)
        .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()))
        / scale
}

fn main() -> Result<(), tocpile::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/mushrooms.libsvm.gz")
    });
    let n_rows: usize = args
        .get(1)
        .map_or(250, |r| r.parse().expect("ROWS: a number"));
    let rows = read_rows(&path, n_rows)?;
    let (n, d) = (rows.n_rows(), rows.n_cols());

    // Encode, then read the bytes back as untrusted input would be.
    let bytes = encode(&rows)?.as_bytes().to_vec();
    let batch = TocBatch::from_bytes(bytes.as_slice())?;
    println!(
        "{}: {n} rows x {d} columns, {} non-zeros; TOC {} bytes, dense f64 {} bytes ({:.1}x smaller)",
        path.display(),
        rows.nnz(),
        bytes.len(),
        n * d * 8,
        (n * d * 8) as f64 / bytes.len() as f64
    );

    // The decode tree is rebuilt once here and reused by every product.
    let mut kernels = batch.kernels();
    let dense: Array2<f64> = rows.to_dense();
    let v: Vec<f64> = (0..d).map(|j| 1.0 + (j % 7) as f64 / 7.0).collect();
    let u: Vec<f64> = (0..n).map(|i| (i % 5) as f64 - 2.0).collect();
    let m = Array2::from_shape_fn((d, 20), |(j, k)| ((j * 31 + k * 17) % 11) as f64 - 5.0);
    let ml = Array2::from_shape_fn((20, n), |(k, i)| ((i * 13 + k * 7) % 9) as f64 - 4.0);

    let checks = [
        (
            "A.v",
            relative_error(
                &kernels.matvec(&v)?,
                dense.dot(&Array1::from(v.clone())).as_slice().unwrap(),
            ),
        ),
        (
            "v.A",
            relative_error(
                &kernels.vecmat(&u)?,
                Array1::from(u.clone()).dot(&dense).as_slice().unwrap(),
            ),
        ),
        (
            "A.M",
            relative_error(
                kernels.matmat(m.view())?.as_slice().unwrap(),
                dense.dot(&m).as_slice().unwrap(),
            ),
        ),
        (
            "M.A",
            relative_error(
                kernels.left_matmat(ml.view())?.as_slice().unwrap(),
                ml.dot(&dense).as_slice().unwrap(),
            ),
        ),
        ("sum", relative_error(&[kernels.sum()], &[dense.sum()])),
    ];
    println!("\n| product | largest error relative to the largest dense value |\n|---|---:|");
    for (name, error) in &checks {
        println!("| {name} | {error:.1e} |");
    }
    for (name, error) in checks {
        assert!(error <= 1e-12, "{name}: relative error {error}");
    }
    // A vector of the wrong length is an error, not a panic.
    assert!(kernels.matvec(&v[1..]).is_err());
    println!("\nevery product equals dense math (to 1e-12)");
    Ok(())
}
