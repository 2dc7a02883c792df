//! Every format as a `Batch` against the batch it encodes: decode
//! round trips, every kernel against plain dense math (operands and outputs
//! in row-major, column-major and strided layouts, outputs pre-filled with
//! garbage), scaling, encoded sizes and names. proptest on random batches
//! and a pass over the first rows of every real dataset. `pages`: the
//! page bytes of every format, written and loaded back from untrusted
//! bytes.

mod pages;

use std::panic::{catch_unwind, AssertUnwindSafe};

use ndarray::{s, Array1, Array2, ArrayView2, ShapeBuilder};
use proptest::prelude::*;

use crate::strategy::finite_batch;
use crate::support::{assert_close, batches, load, numbers, Sets};
use tocpile::formats::{Batch, FormatKind};
use tocpile::{SparseBatch, Workspace};

/// `a` copied into a column-major array.
fn fortran(a: &Array2<f64>) -> Array2<f64> {
    let mut f = Array2::zeros(a.dim().f());
    f.assign(a);
    f
}

/// `a` as a strided view: every other row of a taller array.
fn strided1(a: &Array1<f64>) -> Array2<f64> {
    let mut wide = Array2::from_elem((a.len(), 2), f64::NAN);
    wide.column_mut(0).assign(a);
    wide
}

/// Every kernel of `enc` against dense math on `batch`.
pub(crate) fn check_kernels(
    kind: FormatKind,
    enc: &Batch,
    batch: &SparseBatch,
    ws: &mut Workspace,
    seed: u64,
) {
    let a = batch.to_dense();
    let abs = a.mapv(f64::abs);
    let (n, m) = a.dim();

    // A.v, into contiguous and strided outputs, from contiguous and strided v.
    let v = Array1::from(numbers(seed, m));
    let want = a.dot(&v);
    let scale = abs.dot(&v.mapv(f64::abs));
    let v_strided = strided1(&v);
    for vv in [v.view(), v_strided.column(0)] {
        let mut out = Array1::from_elem(n, f64::NAN);
        enc.matvec_into(vv, out.view_mut(), ws);
        assert_close(&out, &want, &scale, &format!("{kind} A.v"));
        let mut out = Array2::from_elem((n, 3), f64::NAN);
        enc.matvec_into(vv, out.column_mut(1), ws);
        assert_close(out.column(1), &want, &scale, &format!("{kind} A.v strided"));
    }

    // v.A likewise.
    let u = Array1::from(numbers(seed + 1, n));
    let want = u.dot(&a);
    let scale = u.mapv(f64::abs).dot(&abs);
    let u_strided = strided1(&u);
    for uu in [u.view(), u_strided.column(0)] {
        let mut out = Array1::from_elem(m, f64::NAN);
        enc.vecmat_into(uu, out.view_mut(), ws);
        assert_close(&out, &want, &scale, &format!("{kind} v.A"));
        let mut out = Array2::from_elem((m, 2), f64::NAN);
        enc.vecmat_into(uu, out.column_mut(0), ws);
        assert_close(out.column(0), &want, &scale, &format!("{kind} v.A strided"));
    }
    // v.A added into an output already holding values (the linear
    // models' gradient, page after page).
    let base = Array1::from(numbers(seed + 5, m));
    let mut out = base.to_vec();
    enc.vecmat_add(u.as_slice().unwrap(), &mut out, ws);
    let scale_add = &scale + &base.mapv(f64::abs);
    assert_close(
        &Array1::from(out),
        &(&base + &want),
        &scale_add,
        &format!("{kind} v.A added"),
    );

    for p in [0, 1, 3, 20] {
        // A.M: M and out in C and F order, out also a strided slice.
        let mm = Array2::from_shape_vec((m, p), numbers(seed + 2, m * p)).unwrap();
        let want = a.dot(&mm);
        let scale = abs.dot(&mm.mapv(f64::abs));
        let mm_f = fortran(&mm);
        for layout in [mm.view(), mm_f.view()] {
            let mut out = Array2::from_elem((n, p), f64::NAN);
            enc.matmat_into(layout, out.view_mut(), ws);
            assert_close(&out, &want, &scale, &format!("{kind} A.M p={p}"));
            let mut out = Array2::from_elem((n, p).f(), f64::NAN);
            enc.matmat_into(layout, out.view_mut(), ws);
            assert_close(&out, &want, &scale, &format!("{kind} A.M into F p={p}"));
            let mut out = Array2::from_elem((n, 2 * p), f64::NAN);
            enc.matmat_into(layout, out.slice_mut(s![.., ..;2]), ws);
            assert_close(
                out.slice(s![.., ..;2]),
                &want,
                &scale,
                &format!("{kind} A.M strided p={p}"),
            );
        }

        // M.A likewise.
        let ml = Array2::from_shape_vec((p, n), numbers(seed + 3, n * p)).unwrap();
        let want = ml.dot(&a);
        let scale = ml.mapv(f64::abs).dot(&abs);
        let ml_f = fortran(&ml);
        for layout in [ml.view(), ml_f.view()] {
            let mut out = Array2::from_elem((p, m), f64::NAN);
            enc.left_matmat_into(layout, out.view_mut(), ws);
            assert_close(&out, &want, &scale, &format!("{kind} M.A p={p}"));
            let mut out = Array2::from_elem((p, m).f(), f64::NAN);
            enc.left_matmat_into(layout, out.view_mut(), ws);
            assert_close(&out, &want, &scale, &format!("{kind} M.A into F p={p}"));
            let mut out = Array2::from_elem((p, 2 * m), f64::NAN);
            enc.left_matmat_into(layout, out.slice_mut(s![.., ..;2]), ws);
            assert_close(
                out.slice(s![.., ..;2]),
                &want,
                &scale,
                &format!("{kind} M.A strided p={p}"),
            );
        }
    }
}

/// `batch` with every value multiplied by `c` (zeros dropped).
fn scaled(batch: &SparseBatch, c: f64) -> SparseBatch {
    let values = batch.values().iter().map(|&x| x * c).collect();
    SparseBatch::from_csr(
        batch.n_cols(),
        batch.offsets().to_vec(),
        batch.cols().to_vec(),
        values,
    )
    .unwrap()
}

/// Distinct non-zero values of `batch`, by bits.
fn distinct(batch: &SparseBatch) -> usize {
    let mut bits: Vec<u64> = batch.values().iter().map(|v| v.to_bits()).collect();
    bits.sort_unstable();
    bits.dedup();
    bits.len()
}

/// Bytes per id for a dictionary of `len` entries.
fn id_width(len: usize) -> usize {
    match len {
        0..=256 => 1,
        257..=65536 => 2,
        _ => 4,
    }
}

/// Bytes of `v` as a LEB128 varint.
fn varint_len(v: usize) -> usize {
    let mut len = 1;
    let mut v = v >> 7;
    while v > 0 {
        len += 1;
        v >>= 7;
    }
    len
}

/// The documented sizes of the formats whose layout is fixed (header:
/// magic, version, varint dimensions, and the dictionary length for CVI
/// and DVI), and that `encoded_len` is the length of the page bytes.
fn check_len(kind: FormatKind, enc: &Batch, batch: &SparseBatch) {
    let (n, m, nnz, d) = (batch.n_rows(), batch.n_cols(), batch.nnz(), distinct(batch));
    let header = 5 + varint_len(n) + varint_len(m);
    assert_eq!(enc.to_bytes().len(), enc.encoded_len(), "{kind}: bytes");
    let want = match kind {
        FormatKind::Den => header + 8 * n * m,
        FormatKind::Csr => header + 4 * (n + 1) + 12 * nnz,
        FormatKind::Cvi => {
            header + varint_len(d) + 4 * (n + 1) + 4 * nnz + id_width(d) * nnz + 8 * d
        }
        FormatKind::Dvi => header + varint_len(d) + id_width(d + 1) * n * m + 8 * d,
        _ => {
            assert!(enc.encoded_len() > 0, "{kind}: size");
            return;
        }
    };
    assert_eq!(enc.encoded_len(), want, "{kind}: encoded_len");
}

/// Everything for every format on one batch.
fn check_batch(batch: &SparseBatch, ws: &mut Workspace, seed: u64) {
    for kind in FormatKind::ALL {
        let mut enc = kind.encode(batch).unwrap();
        assert_eq!(enc.kind(), kind);
        assert_eq!(
            (enc.n_rows(), enc.n_cols()),
            (batch.n_rows(), batch.n_cols()),
            "{kind}: shape"
        );
        assert_eq!(enc.decode(), *batch, "{kind}: decode");
        check_len(kind, &enc, batch);
        check_kernels(kind, &enc, batch, ws, seed);

        // The page bytes load back to the same batch and kernels.
        let bytes = enc.to_bytes();
        let loaded = kind.load(&bytes).unwrap();
        assert_eq!(loaded.kind(), kind);
        assert_eq!(loaded.decode(), *batch, "{kind}: decode of loaded page");
        assert_eq!(loaded.to_bytes(), bytes, "{kind}: rewritten page");
        check_kernels(kind, &loaded, batch, ws, seed);

        // A*c: exact on the values, and A.v scales with it.
        let v = Array1::from(numbers(seed + 5, batch.n_cols()));
        let mut before = Array1::zeros(batch.n_rows());
        enc.matvec_into(v.view(), before.view_mut(), ws);
        let scale = batch.to_dense().mapv(f64::abs).dot(&v.mapv(f64::abs)) * 2.5;
        enc.scale(-2.5);
        assert_eq!(
            enc.decode(),
            scaled(batch, -2.5),
            "{kind}: decode after A*c"
        );
        let mut after = Array1::zeros(batch.n_rows());
        enc.matvec_into(v.view(), after.view_mut(), ws);
        assert_close(
            &after,
            &before.mapv(|x| -2.5 * x),
            &scale,
            &format!("{kind} (A*c).v"),
        );
        // The bytes of a scaled page hold the scaled batch.
        let loaded = kind.load(&enc.to_bytes()).unwrap();
        assert_eq!(
            loaded.decode(),
            scaled(batch, -2.5),
            "{kind}: loaded after A*c"
        );
        enc.scale(0.0);
        let zero = kind.load(&enc.to_bytes()).unwrap().decode();
        assert_eq!(zero.nnz(), 0, "{kind}: loaded after A*0");
        let zero = enc.decode();
        assert_eq!(
            (zero.n_rows(), zero.n_cols(), zero.nnz()),
            (batch.n_rows(), batch.n_cols(), 0),
            "{kind}: A*0"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn formats_match_dense_math(batch in finite_batch(60), seed in any::<u64>()) {
        check_batch(&batch, &mut Workspace::new(), seed);
    }
}

#[test]
fn formats_match_dense_math_on_every_dataset() {
    formats_match_dense_math_on(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn formats_match_dense_math_on_the_shared_datasets() {
    formats_match_dense_math_on(Sets::SharedOnly);
}

fn formats_match_dense_math_on(sets: Sets) {
    // One workspace across shapes and formats: reuse must not leak state.
    let mut ws = Workspace::new();
    for (d, name) in sets.plain() {
        let (all, _) = load(name, 500);
        for (i, b) in batches(&all, 250).iter().enumerate() {
            check_batch(b, &mut ws, (d * 100 + i) as u64);
        }
    }
}

#[test]
fn formats_handle_empty_batches() {
    let mut ws = Workspace::new();
    for batch in [
        SparseBatch::with_cols(5).unwrap(),
        SparseBatch::from_dense_rows(0, &[[0.0; 0]; 3]).unwrap(),
        SparseBatch::from_dense_rows(4, &[[0.0; 4]; 3]).unwrap(),
    ] {
        check_batch(&batch, &mut ws, 7);
    }
}

/// A batch of `distinct` distinct values (`1.0..=distinct`), 256 columns
/// per row, the last row shorter.
fn counting(distinct: usize) -> SparseBatch {
    let values: Vec<f64> = (1..=distinct).map(|x| x as f64).collect();
    let mut batch = SparseBatch::with_cols(256).unwrap();
    for chunk in values.chunks(256) {
        let cols: Vec<u32> = (0..chunk.len() as u32).collect();
        batch.push_row(&cols, chunk).unwrap();
    }
    batch
}

#[test]
fn value_indexing_widens_with_the_dictionary() {
    // Around each width boundary; DVI's id 0 is reserved, so its ids widen
    // one distinct value earlier than CVI's.
    for distinct in [255, 256, 257, 65_535, 65_536, 65_537] {
        let batch = counting(distinct);
        for kind in [FormatKind::Cvi, FormatKind::Dvi] {
            let enc = kind.encode(&batch).unwrap();
            check_len(kind, &enc, &batch);
            assert_eq!(enc.decode(), batch, "{kind}: decode, {distinct} values");
        }
    }
    // 300 values: u16 ids, whose kernels run too; CVI = CSR - values + ids
    // + dictionary (and its length, a 2-byte varint).
    let batch = counting(300);
    check_batch(&batch, &mut Workspace::new(), 3);
    let csr = FormatKind::Csr.encode(&batch).unwrap().encoded_len();
    let cvi = FormatKind::Cvi.encode(&batch).unwrap().encoded_len();
    assert_eq!(cvi, csr - 8 * 300 + 2 * 300 + 8 * 300 + 2);
    // u32 ids.
    check_batch(&counting(70_000), &mut Workspace::new(), 4);
}

#[test]
fn general_codecs_compress_repetitive_batches() {
    let rows = vec![[1.5, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0]; 250];
    let batch = SparseBatch::from_dense_rows(8, &rows).unwrap();
    let den = FormatKind::Den.encode(&batch).unwrap().encoded_len();
    for kind in [FormatKind::Snappy, FormatKind::Gzip, FormatKind::Lz4] {
        let len = kind.encode(&batch).unwrap().encoded_len();
        assert!(len * 10 < den, "{kind}: {len} bytes vs DEN {den}");
    }
}

#[test]
fn names_round_trip() {
    for kind in FormatKind::ALL {
        assert_eq!(FormatKind::from_name(kind.name()), Some(kind));
        assert_eq!(
            FormatKind::from_name(&kind.name().to_lowercase()),
            Some(kind)
        );
        assert_eq!(
            FormatKind::from_name(&kind.name().to_uppercase()),
            Some(kind)
        );
        assert_eq!(kind.to_string(), kind.name());
    }
    assert_eq!(FormatKind::from_name("toc"), Some(FormatKind::TocFull));
    assert_eq!(FormatKind::from_name("zstd"), None);
    assert_eq!(FormatKind::from_name(""), None);
}

/// The panic message of `f`, which must panic.
fn panic_message(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("should panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn kernels_check_dimensions() {
    let batch = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0], [0.0, 4.0, 0.0]]).unwrap();
    let ws = &mut Workspace::new();
    let (v2, v3) = (Array1::<f64>::zeros(2), Array1::<f64>::zeros(3));
    for kind in FormatKind::ALL {
        let enc = kind.encode(&batch).unwrap();
        let msg = panic_message(|| enc.matvec_into(v2.view(), Array1::zeros(2).view_mut(), ws));
        assert!(msg.contains("A.v:"), "{kind}: {msg}");
        let msg = panic_message(|| enc.matvec_into(v3.view(), Array1::zeros(3).view_mut(), ws));
        assert!(msg.contains("A.v:"), "{kind}: {msg}");
        let msg = panic_message(|| enc.vecmat_into(v3.view(), Array1::zeros(3).view_mut(), ws));
        assert!(msg.contains("v.A:"), "{kind}: {msg}");
        let m: Array2<f64> = Array2::zeros((2, 4));
        let msg = panic_message(|| enc.matmat_into(m.view(), Array2::zeros((2, 4)).view_mut(), ws));
        assert!(msg.contains("A.M:"), "{kind}: {msg}");
        let msg = panic_message(|| {
            enc.left_matmat_into(ArrayView2::from(&m), Array2::zeros((2, 3)).view_mut(), ws)
        });
        assert!(msg.contains("M.A:"), "{kind}: {msg}");
    }
}
