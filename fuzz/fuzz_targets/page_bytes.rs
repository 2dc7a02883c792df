//! Arbitrary bytes as a page of some format: the first byte picks the
//! `FormatKind`, the rest goes to `FormatKind::load`, which must return an
//! error or a page, never panic. A loaded page must rewrite to exactly the
//! input. Within a decode budget linear in the input, it is decoded (a
//! valid `SparseBatch` of the announced shape), every kernel runs (and
//! `A.v` matches the decoded batch when the values are moderate), the
//! decoded batch re-encodes in the same format and loads back equal, and
//! the bytes of the page scaled by -1 load back to the scaled page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ndarray::{Array1, Array2};
use tocpile::formats::{Batch, FormatKind};
use tocpile::{SparseBatch, TocBatch, Workspace};
use tocpile_fuzz::{assert_valid_batch, decode_budget};

/// Whether decoding `page` stays within `budget` (rows, columns and, for
/// TOC, the decoded entries, which a prefix tree can multiply).
fn within_budget(kind: FormatKind, page: &Batch, bytes: &[u8], budget: u64) -> bool {
    if page.n_rows() as u64 + page.n_cols() as u64 > budget {
        return false;
    }
    match kind {
        FormatKind::TocSparse | FormatKind::TocLogical | FormatKind::TocFull => {
            let toc = TocBatch::from_bytes(bytes).expect("loaded as a page");
            toc.decoded_nnz() <= budget
        }
        _ => true,
    }
}

/// Runs every kernel; checks `A.v` against the decoded batch when every
/// value is finite and moderate (so that rounding is bounded).
fn check_kernels(page: &Batch, batch: &SparseBatch) {
    let (n, m) = (page.n_rows(), page.n_cols());
    let ws = &mut Workspace::new();
    let v = Array1::from_iter((0..m).map(|i| 1.0 + (i % 7) as f64 / 8.0));
    let mut out = Array1::from_elem(n, f64::NAN);
    page.matvec_into(v.view(), out.view_mut(), ws);
    if batch.values().iter().all(|x| x.abs() < 1e100) {
        for r in 0..n {
            let (s, e) = (batch.offsets()[r], batch.offsets()[r + 1]);
            let (mut want, mut scale) = (0.0, 0.0);
            for (&c, &x) in batch.cols()[s..e].iter().zip(&batch.values()[s..e]) {
                want += x * v[c as usize];
                scale += (x * v[c as usize]).abs();
            }
            assert!(
                (out[r] - want).abs() <= 1e-9 * scale + 1e-300,
                "A.v row {r}: {} vs {want}",
                out[r]
            );
        }
    }
    let u = Array1::from_elem(n, 0.5);
    page.vecmat_into(u.view(), Array1::zeros(m).view_mut(), ws);
    let mm = Array2::from_elem((m, 2), 0.25);
    page.matmat_into(mm.view(), Array2::zeros((n, 2)).view_mut(), ws);
    let ml = Array2::from_elem((2, n), 0.25);
    page.left_matmat_into(ml.view(), Array2::zeros((2, m)).view_mut(), ws);
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let kind = FormatKind::ALL[pick as usize % FormatKind::ALL.len()];
    let mut page = match kind.load(bytes) {
        Ok(page) => page,
        Err(e) => {
            // Formatting the error must not panic either.
            let _ = e.to_string();
            return;
        }
    };
    assert_eq!(page.kind(), kind);
    assert_eq!(page.encoded_len(), bytes.len(), "{kind}: encoded_len");
    assert!(page.to_bytes() == bytes, "{kind}: rewritten bytes differ");

    if !within_budget(kind, &page, bytes, decode_budget(bytes.len())) {
        return;
    }
    let batch = page.decode();
    assert_valid_batch(&batch);
    assert_eq!(
        (batch.n_rows(), batch.n_cols()),
        (page.n_rows(), page.n_cols()),
        "{kind}: decoded shape"
    );
    check_kernels(&page, &batch);

    // The decoded batch round-trips through this format's bytes.
    let again = kind.encode(&batch).expect("a loaded batch re-encodes");
    let again_bytes = again.to_bytes();
    assert_eq!(
        again_bytes.len(),
        again.encoded_len(),
        "{kind}: re-encoded length"
    );
    let back = kind.load(&again_bytes).expect("re-encoded page loads");
    assert!(back.decode() == batch, "{kind}: re-encoded round trip");

    // The bytes of a scaled page hold the scaled batch.
    page.scale(-1.0);
    let scaled = page.decode();
    let reloaded = kind.load(&page.to_bytes()).expect("scaled page loads");
    assert!(reloaded.decode() == scaled, "{kind}: scaled page bytes");
});
