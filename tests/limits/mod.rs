//! The resource policy (`tocpile::limits`, docs/FORMAT.md "Resource
//! limits"): forged inputs that once aborted on allocation give errors
//! naming the limit. The process-wide limits are never changed here (the
//! tests of this binary run in parallel); the command-line tests raise
//! them through `--max-page-nnz` and `--max-cols`.

mod shared_bomb;

use crate::support::forge::{
    bomb_batch, bomb_file, bomb_nnz, dataset, lying_footer, small_batch, Claims, TOC_FULL,
};
use crate::support::temp_path;
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::model::{Model, ModelKind};
use tocpile::scale::ScaleKind;
use tocpile::{decode_bytes, DecodeTree, Error, SparseBatch, TocBatch};

/// Rows of the bomb: 2^31 non-zeros from 65,536 two-code rows.
const BOMB_ROWS: u64 = 1 << 16;

pub(crate) fn is_limit(e: &Error, what: &str) -> bool {
    match e {
        Error::InFile { error, .. } => is_limit(error, what),
        Error::LimitExceeded { what: w, .. } => w.contains(what),
        _ => false,
    }
}

#[test]
fn the_bomb_generator_builds_a_valid_chain() {
    // Small enough to decode: row k is columns 0..=k.
    let batch = TocBatch::from_bytes(bomb_batch(100)).unwrap();
    assert_eq!(batch.decoded_nnz(), bomb_nnz(100));
    let rows = batch.decode();
    for (k, (cols, vals)) in rows.rows().enumerate() {
        assert_eq!(cols, (0..=k as u32).collect::<Vec<_>>().as_slice());
        assert!(vals.iter().all(|&v| v == 1.0));
    }
}

#[test]
fn decompression_bomb_decode_bytes_is_an_error() {
    let bytes = bomb_batch(BOMB_ROWS);
    assert!(bytes.len() < 500_000, "{} bytes", bytes.len());
    let e = decode_bytes(&bytes).unwrap_err();
    assert!(is_limit(&e, "decoded non-zeros"), "{e}");
    let text = e.to_string();
    assert!(text.contains(&bomb_nnz(BOMB_ROWS).to_string()), "{text}");
    assert!(text.contains("--max-page-nnz"), "{text}");
    let mut tree = DecodeTree::default();
    assert!(TocBatch::from_bytes_with_tree(&bytes[..], &mut tree).is_err());
    assert_eq!(tree.n_rows(), 0, "no tree left behind");
}

#[test]
fn decompression_bomb_in_a_dataset_file_is_an_error() {
    // An honest footer (2^31 non-zeros in one page) fails at the open.
    let e = Dataset::from_memory(bomb_file(BOMB_ROWS, true), "bomb.toc").unwrap_err();
    assert!(e.to_string().contains("footer non-zeros"), "{e}");
    // A lying footer opens; taking the page fails, by either path.
    let ds = Dataset::from_memory(bomb_file(BOMB_ROWS, false), "bomb.toc").unwrap();
    let block = ds.read_block(0).unwrap();
    let e = block.page(0).unwrap_err();
    assert!(is_limit(&e, "decoded non-zeros"), "{e}");
    assert!(e.to_string().contains("block 0, page 0"), "{e}");
    let e = block.toc_view(0, &mut DecodeTree::default()).unwrap_err();
    assert!(is_limit(&e, "decoded non-zeros"), "{e}");
    let e = ds.for_each_toc_view(|_, _| Ok(())).unwrap_err();
    assert!(is_limit(&e, "decoded non-zeros"), "{e}");
}

#[test]
fn footer_claiming_2_pow_40_rows_or_nonzeros_fails_at_open() {
    let rows = 4;
    let truth = Claims {
        n_cols: 10,
        n_rows: rows,
        nnz: rows,
    };
    assert!(Dataset::from_memory(lying_footer(rows, truth), "ok.toc").is_ok());
    let many_rows = Claims {
        n_rows: 1 << 40,
        ..truth
    };
    let e = Dataset::from_memory(lying_footer(rows, many_rows), "rows.toc").unwrap_err();
    assert!(e.to_string().contains("block rows"), "{e}");
    let many_nnz = Claims {
        nnz: 1 << 40,
        ..truth
    };
    let e = Dataset::from_memory(lying_footer(rows, many_nnz), "nnz.toc").unwrap_err();
    assert!(e.to_string().contains("footer non-zeros"), "{e}");
    // Within the bounds (at most rows x columns) but false: the pages
    // decode to fewer non-zeros than claimed. (The page must have the
    // file's columns: a page of another width is an error of its own.)
    let wide = Claims { nnz: 7, ..truth };
    let file = dataset(
        TOC_FULL,
        rows,
        &crate::support::forge::small_batch(rows, 10),
        wide,
    );
    let ds = Dataset::from_memory(file, "wide.toc").unwrap();
    assert!(ds.read_block(0).unwrap().page(0).is_ok(), "pages are valid");
    let e = ds.verify(|_| {}).unwrap_err();
    assert!(
        e.to_string()
            .contains("footer non-zeros (the pages decode to): expected 7, found 4"),
        "{e}"
    );
    assert!(ds.check_totals(rows, rows).is_err());
    let honest = dataset(
        TOC_FULL,
        rows,
        &crate::support::forge::small_batch(rows, 10),
        truth,
    );
    let ds = Dataset::from_memory(honest, "honest.toc").unwrap();
    ds.verify(|_| {}).unwrap();
}

#[test]
fn models_refuse_columns_beyond_the_limit() {
    for kind in [
        ModelKind::Logistic,
        ModelKind::Softmax { classes: 10 },
        ModelKind::Mlp {
            hidden: vec![64],
            outputs: 2,
        },
    ] {
        let e = Model::new(kind.clone(), 1 << 32, 0).unwrap_err();
        assert!(is_limit(&e, "model columns"), "{kind:?}: {e}");
        assert!(e.to_string().contains("--max-cols"), "{e}");
        let e = Model::new(kind, 100_000_001, 0).unwrap_err();
        assert!(is_limit(&e, "model columns"), "{e}");
    }
    assert!(Model::new(ModelKind::Logistic, 1000, 0).is_ok());
}

/// Issue 23, 6: a 96-byte file with column id 500,000 made the TOC
/// paper's network allocate 100 million parameters (3.9 GB to train).
/// Parameters are limited (`max_params`, 2^26 by default); the columns
/// alone are within theirs.
#[test]
fn models_refuse_parameters_beyond_the_limit() {
    let e = Model::new(ModelKind::mlp(2), 500_000, 0).unwrap_err();
    assert!(is_limit(&e, "model parameters"), "{e}");
    assert_eq!(
        e.to_string(),
        "model parameters (weights and biases) is 100010301, above the limit of 67108864; \
         if the input is trusted, raise the limit with --max-params N (library: \
         tocpile::limits::set_limits)"
    );
    let e = Model::new(ModelKind::Softmax { classes: 10 }, 10_000_000, 0).unwrap_err();
    assert!(is_limit(&e, "model parameters"), "{e}");
    // The limit is on parameters, not columns: a softmax of 2 classes
    // over 10,000,000 columns has 20,000,002.
    assert!(tocpile::limits::check_params(20_000_002).is_ok());
}

/// Issue 23, 6: `Model::clone` of a model at the limits aborted when the
/// system refused (the first allocation was fallible, the clone not).
/// `try_clone` copies exactly, fallibly; training paths use it.
#[test]
fn models_copy_fallibly() {
    let mut m = Model::new(ModelKind::mlp(3), 50, 7).unwrap();
    m.set_scaling(Some(
        tocpile::scale::Scaling::new(ScaleKind::MaxAbs, vec![0.5; 50]).unwrap(),
    ))
    .unwrap();
    let copy = m.try_clone().unwrap();
    assert_eq!(copy, m);
    assert_eq!(copy.to_bytes(), m.to_bytes());
    assert_eq!(m.try_params().unwrap(), m.params());
}

#[test]
fn dense_formats_refuse_columns_beyond_the_limit() {
    let mut batch = SparseBatch::with_cols(100_000_001).unwrap();
    batch.push_row(&[100_000_000], &[1.0]).unwrap();
    for kind in [
        tocpile::formats::FormatKind::Den,
        tocpile::formats::FormatKind::Dvi,
        tocpile::formats::FormatKind::Gzip,
    ] {
        let e = kind.encode(&batch).unwrap_err();
        assert!(is_limit(&e, "columns of a dense page"), "{kind:?}: {e}");
    }
    // The sparse formats need no dense matrix.
    assert!(tocpile::formats::FormatKind::Csr.encode(&batch).is_ok());
}

/// A small file written by the library: 40 rows, pages of 4, blocks of
/// about 64 bytes, with a scaling section in its footer when `scale` is
/// given.
fn small_file_scaled(scale: Option<ScaleKind>) -> Vec<u8> {
    small_file_labelled(scale, &[1.0; 40])
}

/// [`small_file_scaled`] with the given labels.
fn small_file_labelled(scale: Option<ScaleKind>, labels: &[f64]) -> Vec<u8> {
    let path = temp_path("limits-small");
    let options = WriterOptions::default()
        .with_page_rows(4)
        .with_block_bytes(64);
    let mut w = DatasetWriter::create(&path, 10, options).unwrap();
    w.set_scaling(scale).unwrap();
    let mut rows = SparseBatch::with_cols(10).unwrap();
    for k in 0..40u32 {
        rows.push_row(&[k % 10], &[1.0 + k as f64]).unwrap();
    }
    w.push(&rows, labels).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

#[test]
fn a_truncated_file_says_where_it_was_cut() {
    a_truncated_file_says_where_it_was_cut_with(None);
}

/// Regression: a cut in the trailer of a file whose footer may hold a
/// scaling section was read as a cut section, and the bound passed the
/// file's real length.
#[test]
fn a_truncated_file_with_a_scaling_section_says_where_it_was_cut() {
    a_truncated_file_says_where_it_was_cut_with(Some(ScaleKind::MaxAbs));
}

/// Pages whose labels (distinct counts) take the scaled form of file
/// version 8: the walk that finds the cut reads through them.
#[test]
fn a_truncated_file_of_scaled_labels_says_where_it_was_cut() {
    let labels: Vec<f64> = (0..40).map(|k| (k * 37 % 1000) as f64).collect();
    let bytes = small_file_labelled(None, &labels);
    assert_eq!(bytes[4], 8);
    // The first page: 4 rows, labels kind 2 (the scaled form).
    assert_eq!(&bytes[8..10], &[4, 2]);
    a_truncated_file_says_where_it_was_cut_in(bytes);
}

fn a_truncated_file_says_where_it_was_cut_with(scale: Option<ScaleKind>) {
    a_truncated_file_says_where_it_was_cut_in(small_file_scaled(scale));
}

fn a_truncated_file_says_where_it_was_cut_in(bytes: Vec<u8>) {
    let n = bytes.len() as u64;
    let mut truncated = 0;
    for len in 8..bytes.len() {
        let e = Dataset::from_memory(bytes[..len].to_vec(), "cut.toc").unwrap_err();
        if let Error::TruncatedFile {
            len: found, needed, ..
        } = e
        {
            truncated += 1;
            assert_eq!(found, len as u64);
            let footer_at = u64::from_le_bytes(bytes[bytes.len() - 16..][..8].try_into().unwrap());
            assert!(
                needed > len as u64 && needed <= n,
                "{len}: needed {needed} of {n} (footer at {footer_at})"
            );
            assert!(
                e.to_string()
                    .contains(&format!("truncated at byte {len} of at least {needed}")),
                "{e}"
            );
        }
    }
    // Cuts within a trailer-sized distance of a valid end can look like a
    // damaged trailer; every other cut is reported as a truncation.
    assert!(
        truncated >= bytes.len() - 8 - 16,
        "{truncated} of {}",
        bytes.len() - 8
    );
    // A damaged trailer is not a truncation.
    let mut damaged = bytes.clone();
    *damaged.last_mut().unwrap() ^= 0xff;
    let e = Dataset::from_memory(damaged, "damaged.toc").unwrap_err();
    assert!(!matches!(e, Error::TruncatedFile { .. }), "{e}");
    assert!(e.to_string().contains("trailer"), "{e}");
}

/// A whole file followed by more bytes (what `encode -o /dev/stdout`
/// piped to a file gave when the summary went to the same output) is said
/// to be that, with where the file ends, not "truncated at byte N of at
/// least M" with M below N. Bytes after a file that is cut short are not
/// mistaken for it.
#[test]
fn bytes_after_a_whole_file_are_named_as_such() {
    let bytes = small_file_scaled(None);
    let n = bytes.len() as u64;
    for extra in [&b"x"[..], b"wrote out.toc\nrows 40\n", b"TOCD", &[0u8; 40]] {
        let mut appended = bytes.clone();
        appended.extend_from_slice(extra);
        let e = Dataset::from_memory(appended, "appended.toc").unwrap_err();
        let Error::BytesAfterEnd { end, len, .. } = e else {
            panic!("{extra:?}: {e}");
        };
        assert_eq!((end, len), (n, n + extra.len() as u64));
        assert!(
            e.to_string().contains(&format!(
                "{} bytes follow the file's end at byte {n}",
                extra.len()
            )),
            "{e}"
        );
    }
    // A file cut inside its trailer, then given more bytes, has no whole
    // trailer where its footer ends: a truncation or a damaged trailer.
    let mut cut = bytes[..bytes.len() - 3].to_vec();
    cut.extend_from_slice(b"more text after the cut");
    let e = Dataset::from_memory(cut, "cut.toc").unwrap_err();
    assert!(!matches!(e, Error::BytesAfterEnd { .. }), "{e}");
}

/// Regression (fuzz target `dataset_bytes`): a page whose varints claim a
/// length near 2^64 made the truncation bound `end + trailer` overflow (a
/// panic where overflow is checked, a wrapped bound below the file's
/// length elsewhere). Such a length is garbage, not a cut.
#[test]
fn a_page_length_near_2_pow_64_gives_no_wrapped_truncation_bound() {
    let hex = "544f4344010000000000000000000000000000000000d6ffffffffffffffff01000000\
               0000000000000000000000000000000000000000000000000000000000000000000000\
               000000000000000000000000000000000000000000f700000000000000000000000000\
               0000000000000000000000000000000000000000000000000100000000000000000000\
               0000000000000000000000000000000000000000000000000000000000000000000000\
               00000000544f554f434400000000544f43000054";
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(bytes.len(), 195);
    let e = Dataset::from_memory(bytes, "fuzz.toc").unwrap_err();
    if let Error::TruncatedFile { len, needed, .. } = e {
        assert!(needed > len, "a bound of {needed} for a cut at {len}");
    }
}

/// Found by the `train_forged` fuzz target: a page 10 columns wide in a
/// file whose footer says 4. Exact mode gathered its rows into 4-column
/// CSR mini-batches (an invalid batch: the kernels would index past the
/// model's weights). Every page must now have the file's columns.
#[test]
fn a_page_wider_than_its_file_is_an_error_in_every_mode() {
    use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
    let claims = Claims {
        n_cols: 4,
        n_rows: 20,
        nnz: 20,
    };
    let file = dataset(TOC_FULL, 20, &small_batch(20, 10), claims);
    let ds = std::sync::Arc::new(Dataset::from_memory(file, "wide.toc").unwrap());
    let named = |e: &Error| {
        let text = e.to_string();
        assert!(text.contains("block 0, page 0"), "{text}");
        assert!(text.contains("columns of a page"), "{text}");
    };
    named(&ds.read_block(0).unwrap().page(0).unwrap_err());
    named(&ds.verify(|_| {}).unwrap_err());
    for mode in [Mode::Exact, Mode::Page] {
        for strategy in [Strategy::CorgiPile, Strategy::NoShuffle, Strategy::Mrs] {
            let options = LoaderOptions::default()
                .with_mode(mode)
                .with_strategy(strategy)
                .with_batch_rows(16);
            let loader = Loader::new(std::sync::Arc::clone(&ds), options).unwrap();
            let first = loader.epoch(0).and_then(|mut e| e.next().unwrap());
            named(&first.unwrap_err());
        }
    }
}
