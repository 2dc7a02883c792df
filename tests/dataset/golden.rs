//! Golden dataset files of format versions 1 and 2, one per page format,
//! committed once under `tests/golden/v1/dataset/` (and `v2/dataset/`;
//! versions 3 to 7, TOC_FULL only, in `v3/dataset/` to `v7/dataset/`)
//! and never regenerated:
//! every later build must open them and read back exactly the rows,
//! labels and footer they were written with. The footer's format byte is
//! the format's fixed code, so these files also pin the codes.
//!
//! The committed files hold a NaN value in rows 8, 10, 13 and 14 (pages 1
//! and 2), which builds since issue 23 reject (stored values must be
//! finite): those pages must be reported as such, naming the value, and
//! every other page must read back exactly. The generator writes a finite
//! value in its place, and its files read back whole.
//!
//! `golden_generator_reads_back` runs the generator into a temporary
//! directory (and checks what it wrote); only with `TOCPILE_GOLDEN_OUT`
//! set to a directory does it write there, for a new format version to be
//! committed by hand.

use std::path::{Path, PathBuf};

use tocpile::dataset::{Dataset, DatasetInfo, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::{DecodeTree, SparseBatch};

/// The file name of `format`'s golden file.
fn file_name(format: FormatKind) -> String {
    format!("{}.toc", format.name().to_ascii_lowercase())
}

/// The finite value the generator writes where the committed files hold
/// a NaN.
const NAN_STANDIN: f64 = -1e-300;

/// The rows of the committed files, as (columns, values) per row, NaN
/// included.
fn committed_rows() -> Vec<(Vec<u32>, Vec<f64>)> {
    let special = [f64::from_bits(1), 1e300, -2.5, f64::NAN, 7.0, 0.125];
    (0..23u32)
        .map(|r| {
            if r == 11 {
                (vec![], vec![])
            } else {
                (0..9u32)
                    .filter(|c| (r + 2 * c) % 3 != 0)
                    .map(|c| {
                        let v = match (r + c) % 5 {
                            0 => special[(r as usize + c as usize) % special.len()],
                            1 | 2 => 1.0,
                            3 => (r % 4) as f64 + 2.0,
                            _ => -0.5,
                        };
                        (c, v)
                    })
                    .unzip()
            }
        })
        .collect()
}

/// 23 rows of 9 columns: repeated values (a real prefix tree), integers,
/// edge values (subnormal, huge, negative, tiny), an empty row; the last
/// page is partial. The committed files' rows, the NaN made finite.
fn rows() -> SparseBatch {
    let mut batch = SparseBatch::with_cols(9).unwrap();
    for (cols, vals) in committed_rows() {
        let vals: Vec<f64> = vals
            .into_iter()
            .map(|v| if v.is_nan() { NAN_STANDIN } else { v })
            .collect();
        batch.push_row(&cols, &vals).unwrap();
    }
    batch
}

/// Whether committed page `k` (of 5 rows) holds a NaN.
fn page_has_nan(k: usize) -> bool {
    committed_rows()[5 * k..(5 * k + 5).min(23)]
        .iter()
        .any(|(_, vals)| vals.iter().any(|v| v.is_nan()))
}

/// One label per row: classes 0 to 2 and a non-integer.
fn labels() -> Vec<f64> {
    (0..23)
        .map(|r| if r == 5 { 0.75 } else { (r % 3) as f64 })
        .collect()
}

const SCHEMA: &str = "tocpile-schema 1\nnumeric golden \u{e9}\n";

fn options(format: FormatKind) -> WriterOptions {
    WriterOptions::default()
        .with_page_rows(5)
        .with_block_bytes(120)
        .with_format(format)
        .with_schema(SCHEMA.into())
        // Segments of two pages (file version 4 for TOC_FULL; the
        // committed version-3 file was written with the same options).
        .with_segment_rows(10)
}

/// Writes every format's golden file into `dir`.
fn generate(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for format in FormatKind::ALL {
        let path = dir.join(file_name(format));
        let mut writer = DatasetWriter::create(&path, 9, options(format)).unwrap();
        writer.push(&rows(), &labels()).unwrap();
        writer.finish().unwrap();
    }
}

/// Offsets, columns and the bits of every stored value.
fn bits(batch: &SparseBatch) -> (Vec<usize>, Vec<u32>, Vec<u64>) {
    (
        batch.offsets().to_vec(),
        batch.cols().to_vec(),
        batch.values().iter().map(|v| v.to_bits()).collect(),
    )
}

/// Opens `path` and checks its footer, rows and labels exactly; for a
/// committed file (`committed`), that the pages holding a NaN are
/// rejected, naming it, and every other page reads back exactly.
fn check(path: &Path, format: FormatKind, committed: bool) -> DatasetInfo {
    let ds = Dataset::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let info = ds.info().clone();
    assert_eq!(info.format, format);
    assert_eq!(
        (info.n_rows, info.n_cols, info.nnz, info.n_pages),
        (23, 9, rows().nnz() as u64, 5),
        "{format}"
    );
    assert_eq!((info.page_rows, info.block_bytes), (5, 120), "{format}");
    assert_eq!(info.schema, SCHEMA, "{format}");
    assert!(info.n_blocks >= 2, "{format}: {} blocks", info.n_blocks);
    let mut read_labels = Vec::new();
    let mut tree = DecodeTree::default();
    let mut k = 0;
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).unwrap();
        read_labels.extend_from_slice(block.labels());
        for j in 0..block.n_pages() {
            if committed && page_has_nan(k) {
                let e = block.page(j).unwrap_err();
                let text = e.to_string();
                assert!(
                    text.contains(&format!("block {b}, page {j}"))
                        && text.contains("is NaN, expected a finite number"),
                    "{format}: page {k}: {text}"
                );
                if format.level().is_some() {
                    assert!(block.toc_view(j, &mut tree).is_err(), "{format}: view");
                }
                k += 1;
                continue;
            }
            let page = block.page(j).unwrap();
            assert_eq!(page.kind(), format);
            let decoded = page.batch().decode();
            if format.level().is_some() {
                // The zero-copy view reads the same rows.
                let view = block.toc_view(j, &mut tree).unwrap();
                assert!(view.batch.decode() == decoded, "{format}: view");
            }
            let want = rows().slice_rows(5 * k..(5 * k + 5).min(23));
            assert_eq!(bits(&decoded), bits(&want), "{format}: page {k}");
            k += 1;
        }
    }
    assert_eq!(k, 5, "{format}: pages");
    assert_eq!(read_labels, labels(), "{format}: labels");
    info
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1/dataset")
}

#[test]
fn golden_v1_dataset_files_still_read() {
    for format in FormatKind::ALL {
        let path = golden_dir().join(file_name(format));
        let info = check(&path, format, true);
        assert_eq!(info.version, 1, "{format}");
        assert_eq!(
            info.file_bytes,
            std::fs::metadata(&path).unwrap().len(),
            "{format}"
        );
    }
}

/// Version 2 (the integer labels form; page 1 holds the label 0.75 and
/// keeps the float form), committed under `tests/golden/v2/dataset/`.
#[test]
fn golden_v2_dataset_files_still_read() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v2/dataset");
    for format in FormatKind::ALL {
        let path = dir.join(file_name(format));
        let info = check(&path, format, false);
        assert_eq!(info.version, 2, "{format}");
    }
}

/// Version 3 (segments of two pages sharing a dictionary; one of the
/// three segments keeps its dictionary), committed under
/// `tests/golden/v3/dataset/`: TOC_FULL only, the one format with
/// segments.
#[test]
fn golden_v3_dataset_file_still_reads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v3/dataset");
    let path = dir.join(file_name(FormatKind::TocFull));
    let info = check(&path, FormatKind::TocFull, false);
    assert_eq!(info.version, 3);
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.n_segments(), (1, 3));
}

/// Version 4 (the version-3 file's rows and segments, its pages coded
/// against a dictionary in the compact form), committed under
/// `tests/golden/v4/dataset/`.
#[test]
fn golden_v4_dataset_file_reads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v4/dataset");
    let path = dir.join(file_name(FormatKind::TocFull));
    let info = check(&path, FormatKind::TocFull, false);
    assert_eq!(info.version, 4);
    let ds = Dataset::open(&path).unwrap();
    assert_eq!(ds.n_segments(), (1, 3));
    let mut tree = DecodeTree::default();
    let mut versions = Vec::new();
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).unwrap();
        for p in 0..block.n_pages() {
            if let Ok(view) = block.toc_view(p, &mut tree) {
                versions.push(view.batch.version());
            }
        }
    }
    assert!(versions.contains(&4), "compact pages: {versions:?}");
    assert!(!versions.contains(&3), "no version-3 page: {versions:?}");
}

/// Version 5's rows: the golden rows with the first page (5 rows)
/// four times, so that a segment of 20 rows holds one page and three
/// copies of it; labels likewise.
fn rows_v5() -> (SparseBatch, Vec<f64>) {
    let (all, labels) = (rows(), labels());
    let mut out = SparseBatch::with_cols(9).unwrap();
    let mut out_labels = Vec::new();
    let order = (0..4).flat_map(|_| 0..5).chain(5..23);
    for r in order {
        let (c, v) = all.rows().nth(r).unwrap();
        out.push_row(c, v).unwrap();
        out_labels.push(labels[r]);
    }
    (out, out_labels)
}

fn options_v5() -> WriterOptions {
    WriterOptions::default()
        .with_page_rows(5)
        .with_block_bytes(120)
        .with_schema(SCHEMA.into())
        .with_segment_rows(20)
}

/// Reads a golden file of version 5 to 7 back (`version`): its rows and
/// labels (`want`), through owned pages and the loader's packed blocks,
/// and the page copies (one each in version 5, one run from version 6).
/// Returns the version of each TOC page it holds (a page's view).
fn check_copies(path: &Path, version: u8, want: (SparseBatch, Vec<f64>)) -> Vec<u8> {
    let ds = Dataset::open(path).unwrap();
    assert_eq!(ds.info().version, version);
    ds.verify(|_| {}).unwrap();
    let (want, want_labels) = want;
    let mut got = SparseBatch::with_cols(9).unwrap();
    let (mut labels, mut copies, mut versions) = (Vec::new(), 0, Vec::new());
    let mut decoder = tocpile::dataset::PageDecoder::new();
    let mut tree = DecodeTree::default();
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).unwrap();
        labels.extend_from_slice(block.labels());
        copies += (0..block.n_pages())
            .filter(|&j| block.page_is_copy(j))
            .count();
        for p in 0..block.n_pages() {
            if let Ok(view) = block.toc_view(p, &mut tree) {
                versions.push(view.batch.version());
            }
        }
        for page in block.pages().unwrap() {
            for (c, v) in page.batch().decode().rows() {
                got.push_row(c, v).unwrap();
            }
        }
        let packed = block.pack().unwrap();
        for j in 0..packed.n_pages() {
            packed.decode_page(j, &mut decoder).unwrap();
            assert_eq!(decoder.n_rows(), packed.page_rows(j));
        }
    }
    assert_eq!(bits(&got), bits(&want));
    assert_eq!(labels, want_labels);
    assert_eq!(copies, 3, "pages 1 to 3 copy page 0");
    versions
}

/// Version 5 (page copies), committed under `tests/golden/v5/dataset/`.
#[test]
fn golden_v5_dataset_file_reads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v5/dataset");
    check_copies(&dir.join(file_name(FormatKind::TocFull)), 5, rows_v5());
}

/// Version 6 (runs of page copies: the three copies are one zero byte
/// and a 3), committed under `tests/golden/v6/dataset/`.
#[test]
fn golden_v6_dataset_file_reads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v6/dataset");
    let path = dir.join(file_name(FormatKind::TocFull));
    check_copies(&path, 6, rows_v5());
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.windows(2).any(|w| w == [0, 3]), "a run of 3 copies");
}

/// Version 7's rows: version 5's with a page of five equal one-entry
/// rows after the copies, which the writer stores as a page of row ids
/// (one distinct row, ids of no bits).
fn rows_v7() -> (SparseBatch, Vec<f64>) {
    let (all, labels) = (rows(), labels());
    let mut out = SparseBatch::with_cols(9).unwrap();
    let mut out_labels = Vec::new();
    let order = (0..4)
        .flat_map(|_| 0..5)
        .map(Some)
        .chain(std::iter::repeat_n(None, 5))
        .chain((5..23).map(Some));
    for r in order {
        let (row, label) = match r {
            Some(r) => (all.rows().nth(r).unwrap(), labels[r]),
            None => ((&[3u32][..], &[2.5][..]), 1.0),
        };
        out.push_row(row.0, row.1).unwrap();
        out_labels.push(label);
    }
    (out, out_labels)
}

/// Reads the golden file of `version` (7 or later) back as
/// [`check_copies`] does, and finds its one page of row ids.
fn check_row_ids(path: &Path, version: u8) {
    let versions = check_copies(path, version, rows_v7());
    let ids = versions.iter().filter(|&&v| v == 7).count();
    assert_eq!(ids, 1, "one page of row ids: {versions:?}");
}

/// Version 7 (a page of row ids beside the run of copies), committed
/// under `tests/golden/v7/dataset/`.
#[test]
fn golden_v7_dataset_file_reads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v7/dataset");
    check_row_ids(&dir.join(file_name(FormatKind::TocFull)), 7);
}

/// Version 8: version 7's rows, whose dictionaries' values (1, 7, -2.5,
/// 0.125, 1e300, a subnormal) are grouped (integers, one and three
/// decimals, raw), whose pairs' value ids are gap-coded within columns
/// and whose pages of labels 0, 1 and 2 take the scaled form. Called
/// version 7, the file is refused at its first dictionary (a version-8
/// form in each); its labels are the scaled form's.
fn check_v8(path: &Path) {
    check_row_ids(path, 8);
    let mut v7 = std::fs::read(path).unwrap();
    v7[4] = 7;
    let e = Dataset::from_memory(v7, "v7.toc").unwrap_err().to_string();
    assert!(
        e.contains("a grouped value dictionary (kind 3)")
            || e.contains("gap-coded value ids (flag 16)"),
        "{e}"
    );
    let (_, labels) = rows_v7();
    let bytes = std::fs::read(path).unwrap();
    // Two of its three dictionaries' pairs gap-code their value ids: a
    // version-2 batch of flags TREE, INDEXED, GAPS and ID_GAPS.
    let id_gaps = bytes.windows(6).filter(|w| w == b"TOCB\x02\x17").count();
    assert_eq!(id_gaps, 2);
    // The first page: 5 rows, labels 0 1 2 0 1 as kind 2, exponent 0,
    // base 0, width 2, offsets packed from the low bits: 00 01 10 00,
    // then 01.
    assert_eq!(labels[..5], [0.0, 1.0, 2.0, 0.0, 1.0]);
    assert_eq!(bytes[8..15], [5, 2, 0, 0, 2, 0b0010_0100, 0b01]);
}

/// Version 8, committed under `tests/golden/v8/dataset/`.
#[test]
fn golden_v8_dataset_file_reads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v8/dataset");
    check_v8(&dir.join(file_name(FormatKind::TocFull)));
}

/// Writes the version-8 golden file (to `TOCPILE_GOLDEN_OUT/v8` when
/// set, else a temporary directory), reads it back, and checks that it
/// is the committed file byte for byte (the writer's output depends on
/// its input only: `writers_output_is_the_same_every_run`). The files of
/// versions 5 to 7 were written by this test's earlier forms.
#[test]
fn golden_v8_generator_reads_back() {
    let dir = match std::env::var_os("TOCPILE_GOLDEN_OUT") {
        Some(dir) => PathBuf::from(dir).join("v8"),
        None => crate::support::temp_path("golden-v8"),
    };
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file_name(FormatKind::TocFull));
    let (rows, labels) = rows_v7();
    let mut writer = DatasetWriter::create(&path, 9, options_v5()).unwrap();
    writer.push(&rows, &labels).unwrap();
    writer.finish().unwrap();
    check_v8(&path);
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/v8/dataset")
        .join(file_name(FormatKind::TocFull));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(committed).unwrap()
    );
    if std::env::var_os("TOCPILE_GOLDEN_OUT").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn golden_files_store_the_fixed_format_codes() {
    // The footer's format byte sits right after the three leading varints;
    // it must be the code, whatever FormatKind::ALL's order.
    let codes = [
        (FormatKind::Den, 0),
        (FormatKind::Csr, 1),
        (FormatKind::Cvi, 2),
        (FormatKind::Dvi, 3),
        (FormatKind::Snappy, 4),
        (FormatKind::Gzip, 5),
        (FormatKind::Lz4, 6),
        (FormatKind::TocSparse, 7),
        (FormatKind::TocLogical, 8),
        (FormatKind::TocFull, 9),
    ];
    for (format, code) in codes {
        assert_eq!(format.code(), code);
        assert_eq!(FormatKind::from_code(code), Some(format));
        let bytes = std::fs::read(golden_dir().join(file_name(format))).unwrap();
        let n = bytes.len();
        let footer_at = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().unwrap()) as usize;
        let footer = &bytes[footer_at..];
        assert_eq!(&footer[..4], b"TOCF");
        // After n_cols (9), n_rows (23) and nnz, as varints.
        let varint_len = |v: u64| (64 - (v | 1).leading_zeros() as usize).div_ceil(7);
        let at = 4 + varint_len(9) + varint_len(23) + varint_len(rows().nnz() as u64);
        assert_eq!(footer[at], code, "{format}");
    }
    assert_eq!(FormatKind::from_code(10), None);
    assert_eq!(FormatKind::from_code(255), None);
}

#[test]
fn golden_generator_reads_back() {
    let dir = match std::env::var_os("TOCPILE_GOLDEN_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => crate::support::temp_path("golden-datasets"),
    };
    generate(&dir);
    for format in FormatKind::ALL {
        check(&dir.join(file_name(format)), format, false);
    }
    if std::env::var_os("TOCPILE_GOLDEN_OUT").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
