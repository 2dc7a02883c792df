//! An arbitrary valid `SparseBatch` (edge-case values, shared row
//! prefixes) encoded with every option combination must validate and
//! decode back to the same batch, bit for bit. Also checks that the batch
//! constructors agree, and that a reused encoder writes the same bytes as a
//! fresh one (for one option combination per input).
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile::{Encoder, SparseBatch};
use tocpile_fuzz::{all_options, arbitrary_batch, arbitrary_options, assert_round_trip, Generated};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(generated) = arbitrary_batch(&mut u, 64, 64) else {
        return;
    };
    check_constructors(&generated);
    let batch = &generated.batch;
    for options in all_options() {
        assert_round_trip(batch, options);
    }

    // Reuse checks (for one option combination per input, to keep the
    // target fast): a reused encoder, whose buffers hold a different
    // batch, and encode_into after existing bytes write the same bytes as
    // a fresh encoder; a slice of the rows round-trips too.
    let Ok(options) = arbitrary_options(&mut u) else {
        return;
    };
    let other = arbitrary_batch(&mut u, 16, 32)
        .map(|g| g.batch)
        .unwrap_or_default();
    let fresh = Encoder::new(options).encode(batch).expect("encode");
    let mut encoder = Encoder::new(options);
    encoder.encode(&other).expect("encode other batch");
    let reused = encoder.encode(batch).expect("encode with a reused encoder");
    assert_eq!(
        reused.as_bytes(),
        fresh.as_bytes(),
        "reused encoder wrote different bytes ({options:?})"
    );
    let mut out = vec![0xA5; 3];
    encoder.encode_into(batch, &mut out).expect("encode_into");
    assert_eq!(&out[..3], &[0xA5; 3]);
    assert_eq!(&out[3..], fresh.as_bytes(), "encode_into ({options:?})");
    if batch.n_rows() > 1 {
        let half = batch.slice_rows(batch.n_rows() / 2..batch.n_rows());
        assert_round_trip(&half, options);
    }
});

/// `push_row`, `from_csr` and `from_triplets` (and `from_dense_rows` for
/// narrow batches) build the same batch from the same rows.
fn check_constructors(g: &Generated) {
    let mut offsets = vec![0usize];
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    let mut triplets = Vec::new();
    for (r, (rc, rv)) in g.rows.iter().enumerate() {
        cols.extend_from_slice(rc);
        vals.extend_from_slice(rv);
        offsets.push(cols.len());
        // Reverse order: from_triplets must sort.
        triplets.extend(rc.iter().zip(rv).rev().map(|(&c, &v)| (r, c, v)));
    }
    let csr = SparseBatch::from_csr(g.n_cols, offsets, cols, vals).expect("from_csr");
    assert!(csr == g.batch, "from_csr differs from push_row");
    let trip =
        SparseBatch::from_triplets(g.rows.len(), g.n_cols, &triplets).expect("from_triplets");
    assert!(trip == g.batch, "from_triplets differs from push_row");
    if g.n_cols <= 64 {
        let dense: Vec<Vec<f64>> = g
            .rows
            .iter()
            .map(|(rc, rv)| {
                let mut d = vec![0.0; g.n_cols];
                for (&c, &v) in rc.iter().zip(rv) {
                    d[c as usize] = v;
                }
                d
            })
            .collect();
        let from_dense = SparseBatch::from_dense_rows(g.n_cols, &dense).expect("from_dense_rows");
        assert!(
            from_dense == g.batch,
            "from_dense_rows differs from push_row"
        );
    }
}
