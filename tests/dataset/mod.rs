//! The dataset file: round trips of real data for several page and block
//! sizes (partial last pages and blocks included), every byte flip and
//! every truncation of a small file detected, atomic writes.

use std::path::PathBuf;

mod copies;
mod golden;
mod prefetch;
mod shared_forged;

use crate::support::{batches, load, temp_path, Sets};
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::{Error, SparseBatch};

fn write(
    path: &PathBuf,
    all: &SparseBatch,
    labels: &[f64],
    options: WriterOptions,
) -> tocpile::dataset::DatasetInfo {
    let mut w = DatasetWriter::create(path, all.n_cols(), options).unwrap();
    // Push in uneven chunks, as a reader would hand them over.
    let mut at = 0;
    for (i, chunk) in batches(all, 997).iter().enumerate() {
        let n = chunk.n_rows();
        w.push(chunk, &labels[at..at + n]).unwrap();
        at += n;
        if i == 0 {
            w.push(&SparseBatch::with_cols(all.n_cols()).unwrap(), &[])
                .unwrap();
        }
    }
    w.finish().unwrap()
}

/// Every row and label of the file, in order.
fn read_all(path: &PathBuf) -> (SparseBatch, Vec<f64>) {
    let ds = Dataset::open(path).unwrap();
    let mut rows = SparseBatch::with_cols(ds.info().n_cols).unwrap();
    let mut labels = Vec::new();
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).unwrap();
        assert_eq!(block.n_rows() as u64, ds.block_rows(b));
        for p in 0..block.n_pages() {
            let page = block.page(p).unwrap();
            labels.extend_from_slice(page.labels());
            for (c, v) in page.batch().decode().rows() {
                rows.push_row(c, v).unwrap();
            }
        }
    }
    (rows, labels)
}

#[test]
fn real_datasets_round_trip_for_several_layouts() {
    round_trip_for_several_layouts(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn shared_datasets_round_trip_for_several_layouts() {
    round_trip_for_several_layouts(Sets::SharedOnly);
}

fn round_trip_for_several_layouts(sets: Sets) {
    for (name, max_rows) in [
        ("mushrooms", usize::MAX),
        ("coil2000", usize::MAX),
        ("mnist5k", 2000),
        ("census_fertility", 30_000),
        ("nycflights13", 20_000),
        ("flights3m", 30_000),
    ] {
        if !sets.has(name) {
            continue;
        }
        let (all, labels) = load(name, max_rows);
        for (page_rows, block_bytes) in [(250, 4 << 20), (50, 20_000), (7, 777)] {
            for format in [FormatKind::TocFull, FormatKind::TocSparse] {
                let path = temp_path(name);
                let options = WriterOptions::default()
                    .with_page_rows(page_rows)
                    .with_block_bytes(block_bytes)
                    .with_format(format)
                    .with_schema(format!("schema of {name}"))
                    // Several segments at every page size (the default,
                    // 4,096 rows, would make one of small sets).
                    .with_segment_rows(1000);
                let info = write(&path, &all, &labels, options);
                assert_eq!(info.n_rows, all.n_rows() as u64);
                assert_eq!(info.nnz, all.nnz() as u64);
                assert_eq!(info.n_pages, all.n_rows().div_ceil(page_rows) as u64);
                let ds = Dataset::open(&path).unwrap();
                assert_eq!(ds.info(), &info, "{name}: footer");
                let (rows, back) = read_all(&path);
                assert!(
                    rows == all,
                    "{name} {page_rows}/{block_bytes} {format}: rows"
                );
                assert_eq!(back, labels, "{name}: labels");
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
}

#[test]
fn toc_pages_are_smaller_than_csr_sized_ones() {
    let (all, labels) = load("coil2000", usize::MAX);
    let path = temp_path("coil-ratio");
    let info = write(&path, &all, &labels, WriterOptions::default());
    assert!(
        info.csr_bytes() / info.payload_bytes as f64 > 3.0,
        "{}",
        info.summary()
    );
    assert!(info.summary().contains("rows 9822, columns 565"));
    std::fs::remove_file(&path).unwrap();
}

/// A small file of many blocks.
pub(super) fn small_file() -> (PathBuf, Vec<u8>) {
    let (all, labels) = load("mushrooms", 120);
    let path = temp_path("small");
    let options = WriterOptions::default()
        .with_page_rows(16)
        .with_block_bytes(300)
        // Four segments, each with its shared dictionary (version 3).
        .with_segment_rows(32);
    write(&path, &all, &labels, options);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// Opens and reads everything, returning the first error.
fn check(path: &PathBuf) -> Result<(), Error> {
    let ds = Dataset::open(path)?;
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b)?;
        for p in 0..block.n_pages() {
            block.page(p)?;
        }
    }
    Ok(())
}

#[test]
fn every_byte_flip_is_detected() {
    let (path, bytes) = small_file();
    assert!(Dataset::open(&path).unwrap().n_blocks() > 3);
    let bad = temp_path("flipped");
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            std::fs::write(&bad, &b).unwrap();
            // The version byte is outside every checksum: a version-7
            // file without pages of row ids is, but for that byte, the
            // version-6 file of the same rows, so 7 -> 6 loses nothing.
            let unnoticed = check(&bad).is_ok();
            let lower = b[4] < bytes[4];
            let harmless = i == 4 && lower && unnoticed && read_all(&bad) == read_all(&path);
            assert!(
                !unnoticed || harmless,
                "flip {mask:#x} at byte {i} of {} went unnoticed",
                bytes.len()
            );
        }
    }
    let _ = std::fs::remove_file(&bad);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn every_truncation_is_an_error() {
    let (path, bytes) = small_file();
    let bad = temp_path("cut");
    for len in 0..bytes.len() {
        std::fs::write(&bad, &bytes[..len]).unwrap();
        assert!(
            check(&bad).is_err(),
            "truncation to {len} bytes went unnoticed"
        );
    }
    let _ = std::fs::remove_file(&bad);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_damaged_block_is_named() {
    let (path, mut bytes) = small_file();
    let ds = Dataset::open(&path).unwrap();
    drop(ds);
    // Byte 20 lies in block 0 (the header is 8 bytes).
    bytes[20] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let ds = Dataset::open(&path).unwrap();
    match ds.read_block(0) {
        Err(Error::ChecksumMismatch {
            section, offset, ..
        }) => {
            assert_eq!((section.as_str(), offset), ("block 0", 8));
        }
        other => panic!("expected a checksum error, got {other:?}"),
    }
    assert!(ds.read_block(1).is_ok(), "other blocks still read");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn writes_are_atomic() {
    let (all, labels) = load("mushrooms", 100);
    // A directory of its own: other tests write files concurrently.
    let dir = temp_path("atomic-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.toc");
    let count = || std::fs::read_dir(&dir).unwrap().count();
    let before = count();
    {
        let mut w = DatasetWriter::create(&path, all.n_cols(), WriterOptions::default()).unwrap();
        w.push(&all, &labels).unwrap();
        // Dropped without finish: nothing at the path, no temporary left.
    }
    assert!(!path.exists());
    assert_eq!(count(), before);
    // A finished file stays intact while a replacement is being written.
    write(&path, &all, &labels, WriterOptions::default());
    let original = std::fs::read(&path).unwrap();
    {
        let mut w = DatasetWriter::create(&path, all.n_cols(), WriterOptions::default()).unwrap();
        w.push(&all.slice_rows(0..10), &labels[..10]).unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), original);
    assert_eq!(count(), before + 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_are_errors() {
    let path = temp_path("args");
    let zero = WriterOptions::default().with_page_rows(0);
    assert!(matches!(
        DatasetWriter::create(&path, 3, zero),
        Err(Error::BadArgument { .. })
    ));
    let mut w = DatasetWriter::create(&path, 3, WriterOptions::default()).unwrap();
    let b = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0]]).unwrap();
    assert!(matches!(w.push(&b, &[]), Err(Error::LengthMismatch { .. })));
    let wide = SparseBatch::from_dense_rows(4, &[[1.0, 0.0, 2.0, 0.0]]).unwrap();
    assert!(matches!(
        w.push(&wide, &[1.0]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        Dataset::open(temp_path("missing")),
        Err(Error::Io { .. })
    ));
}

#[test]
fn memory_and_file_read_alike_and_pages_visit_in_order() {
    let (path, bytes) = small_file();
    let from_file = Dataset::open(&path).unwrap();
    let from_memory = Dataset::from_memory(bytes, "small.toc").unwrap();
    assert_eq!(from_file.info(), from_memory.info());
    let (rows, labels) = read_all(&path);
    let mut seen = SparseBatch::with_cols(rows.n_cols()).unwrap();
    let mut seen_labels = Vec::new();
    let mut ws = tocpile::Workspace::new();
    from_memory
        .for_each_toc_view(|page, tree| {
            seen_labels.extend_from_slice(page.labels);
            // The tree is ready for kernels on the page just validated.
            let ones = ndarray::Array1::from_elem(tree.n_cols(), 1.0);
            let sums = tree.matvec(ones.view(), &mut ws);
            for (r, (c, v)) in page.batch.decode().rows().enumerate() {
                assert_eq!(sums[r], v.iter().sum::<f64>());
                seen.push_row(c, v).unwrap();
            }
            Ok(())
        })
        .unwrap();
    assert!(seen == rows);
    assert_eq!(seen_labels, labels);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn every_page_format_round_trips_through_a_file() {
    let (all, labels) = load("census_fertility", 3000);
    for format in FormatKind::ALL {
        let path = temp_path(format.name());
        let options = WriterOptions::default()
            .with_page_rows(100)
            .with_block_bytes(10_000)
            .with_format(format);
        let info = write(&path, &all, &labels, options);
        let ds = Dataset::open(&path).unwrap();
        assert_eq!(ds.info(), &info);
        assert_eq!(ds.info().format, format);
        let mut rows = SparseBatch::with_cols(all.n_cols()).unwrap();
        let mut back = Vec::new();
        for b in 0..ds.n_blocks() {
            let block = ds.read_block(b).unwrap();
            for p in 0..block.n_pages() {
                let page = block.page(p).unwrap();
                assert_eq!(page.kind(), format);
                back.extend_from_slice(page.labels());
                for (c, v) in page.batch().decode().rows() {
                    rows.push_row(c, v).unwrap();
                }
                // The zero-copy TOC path refuses other formats by name.
                let toc = block.toc_view(p, &mut tocpile::DecodeTree::default());
                match format {
                    FormatKind::TocSparse | FormatKind::TocLogical | FormatKind::TocFull => {
                        assert!(toc.is_ok())
                    }
                    _ => match toc {
                        Err(Error::InFile { error, .. }) => assert!(
                            matches!(*error, Error::WrongFormat { expected: "TOC", found } if found == format.name())
                        ),
                        other => panic!("{format}: {other:?}"),
                    },
                }
            }
        }
        assert!(rows == all, "{format}: rows");
        assert_eq!(back, labels, "{format}: labels");
        std::fs::remove_file(&path).unwrap();
    }
}

/// Issue 23, 2: a checksum-valid file holding a NaN value (or label) was
/// called valid by `Dataset::verify` (`tocpile inspect`). Values and
/// labels must be finite: reading the block (labels) or the page (values)
/// says which, where; the writer refuses to write a NaN label.
#[test]
fn values_and_labels_that_are_not_finite_make_a_file_invalid() {
    use crate::support::forge::{dataset_labelled, valued_batch, Claims, TOC_FULL};
    let dir = temp_path("not-finite");
    std::fs::create_dir_all(&dir).unwrap();
    let claims = Claims {
        n_cols: 3,
        n_rows: 6,
        nnz: 6,
    };
    let cases = [
        (
            "value",
            f64::NAN,
            1.0,
            "block 0, page 0",
            "dictionary value 0",
        ),
        (
            "infinite",
            f64::INFINITY,
            1.0,
            "block 0, page 0",
            "dictionary value 0",
        ),
        (
            "label",
            1.0,
            f64::NAN,
            "block 0",
            "label dictionary entry 0",
        ),
    ];
    for (name, value, label, section, what) in cases {
        let path = dir.join(format!("{name}.toc"));
        let pages = [(6, valued_batch(6, 3, value))];
        std::fs::write(&path, dataset_labelled(TOC_FULL, &pages, 1, claims, label)).unwrap();
        let ds = Dataset::open(&path).unwrap();
        let e = ds.verify(|_| {}).unwrap_err();
        let text = e.to_string();
        let shown = if value.is_finite() { label } else { value };
        assert!(
            text.starts_with(&path.display().to_string())
                && text.contains(section)
                && text.contains(&format!("{what} (at byte "))
                && text.ends_with(&format!("is {shown}, expected a finite number")),
            "{name}: {text}"
        );
    }
    let mut w = DatasetWriter::create(dir.join("w.toc"), 2, WriterOptions::default()).unwrap();
    let rows = SparseBatch::from_dense_rows(2, &[[1.0, 0.0], [0.0, 1.0]]).unwrap();
    let e = w.push(&rows, &[0.0, f64::INFINITY]).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidNumber { what, .. } if what.contains("row 1")),
        "{e:?}"
    );
    drop(w);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A model file's error keeps its cause in the `source()` chain under
/// the file's context.
#[test]
fn file_errors_keep_their_source() {
    use std::error::Error as _;
    let path = crate::support::temp_path("not-a-model");
    std::fs::write(&path, b"TOCM\x01\x09\x00\x00").unwrap();
    let err = tocpile::model::Model::load(&path).unwrap_err();
    assert!(matches!(err, tocpile::Error::InFile { .. }), "{err:?}");
    let inner = err.source().expect("the error inside the file's context");
    assert!(inner.to_string().contains("model kind"), "{inner}");
    std::fs::remove_file(path).unwrap();
}

/// Version 2's integer labels form in forged files (checksums right): a
/// valid section reads back through the block and the packed block the
/// loader keeps; each broken rule is an error naming the block, never a
/// panic; a version-1 file with a kind byte, or a version 3 header, is
/// refused.
#[test]
fn forged_integer_labels_are_read_or_refused() {
    use crate::support::forge::{dataset_versioned, int_labels, valued_batch, Claims, TOC_FULL};
    let claims = Claims {
        n_cols: 3,
        n_rows: 4,
        nnz: 4,
    };
    let file = |version: u8, labels: Vec<u8>| {
        let pages = [(4, labels, valued_batch(4, 3, 1.0))];
        Dataset::from_memory(
            dataset_versioned(TOC_FULL, version, &pages, 1, claims),
            "forged.toc",
        )
    };
    let ds = file(2, int_labels(&[-1, 7], &[1, 0, 0, 1])).unwrap();
    let block = ds.read_block(0).unwrap();
    assert_eq!(block.labels(), &[7.0, -1.0, -1.0, 7.0]);
    let packed = block.pack().unwrap();
    let mut decoder = tocpile::dataset::PageDecoder::default();
    packed.decode_page(0, &mut decoder).unwrap();
    assert_eq!(packed.page(0).unwrap().labels(), &[7.0, -1.0, -1.0, 7.0]);

    let broken = [
        ("descending", int_labels(&[7, -1], &[1, 0, 0, 1])),
        ("repeated", int_labels(&[2, 2], &[1, 0, 0, 1])),
        (
            "id past the dictionary",
            int_labels(&[1, 2, 3], &[3, 0, 0, 1]),
        ),
        (
            "more labels than rows",
            int_labels(&[1, 2, 3, 4, 5], &[0; 4]),
        ),
        ("no labels", int_labels(&[], &[])),
        ("beyond 2^53", int_labels(&[(1 << 53) + 1], &[0; 4])),
        ("unknown kind", vec![2, 0]),
    ];
    for (name, labels) in broken {
        let e = file(2, labels).unwrap().read_block(0).unwrap_err();
        assert!(e.to_string().contains("block 0"), "{name}: {e}");
    }
    // Padding bits set: four rows of one bit leave four.
    let mut padded = int_labels(&[0, 1], &[1, 0, 0, 1]);
    *padded.last_mut().unwrap() |= 0x80;
    assert!(file(2, padded).unwrap().read_block(0).is_err());
    // Kind bytes belong to version 2 only.
    assert!(file(1, int_labels(&[0, 1], &[1, 0, 0, 1]))
        .unwrap()
        .read_block(0)
        .is_err());
    assert!(matches!(
        file(9, int_labels(&[0, 1], &[1, 0, 0, 1])),
        Err(Error::InFile { error, .. }) if matches!(*error, Error::UnsupportedVersion { found: 9, .. })
    ));
    // Version 8's scaled form (exponent 1, base -15, width 5: offsets 0,
    // 22, 30, 15): -1.5, 0.7, 1.5, 0; kind 2 in version 7 names the
    // kinds it has.
    let offsets: u32 = 22 << 5 | 30 << 10 | 15 << 15;
    let mut scaled = vec![2, 1, 29, 5];
    scaled.extend_from_slice(&offsets.to_le_bytes()[..3]);
    let ds = file(8, scaled.clone()).unwrap();
    let block = ds.read_block(0).unwrap();
    assert_eq!(block.labels(), &[-1.5, 0.7, 1.5, 0.0]);
    let packed = block.pack().unwrap();
    assert_eq!(packed.page(0).unwrap().labels(), &[-1.5, 0.7, 1.5, 0.0]);
    let e = file(7, scaled)
        .unwrap()
        .read_block(0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("block 0") && e.contains("labels kind") && e.contains("at most 1"),
        "{e}"
    );
}

/// A version-4 file reads back the same rows through every path: owned
/// pages, the loader's packed blocks (trusted decode against the
/// segment's dictionary) and the zero-copy views; its pages coded
/// against a dictionary are compact.
#[test]
fn shared_dictionary_files_read_back_through_every_path() {
    // The shipped sets: the test runs from a clone alone.
    for name in ["mushrooms", "census_fertility", "coil2000"] {
        let (all, labels) = load(name, 5000);
        let path = temp_path("shared");
        let options = WriterOptions::default().with_segment_rows(1500);
        let info = write(&path, &all, &labels, options);
        assert_eq!(info.version, 8, "{name}");
        let ds = Dataset::open(&path).unwrap();
        let (with_dict, segments) = ds.n_segments();
        assert_eq!(segments, 4, "{name}");
        assert!(with_dict > 0, "{name}");
        assert!(ds.shared_dict_bytes() > 0);
        let mut tree = tocpile::DecodeTree::default();
        let mut decoder = tocpile::dataset::PageDecoder::default();
        let (mut owned, mut packed, mut viewed) = (Vec::new(), Vec::new(), Vec::new());
        let mut compact = 0;
        for b in 0..ds.n_blocks() {
            let block = ds.read_block(b).unwrap();
            for p in 0..block.n_pages() {
                owned.push(block.page(p).unwrap().batch().decode());
                let view = block.toc_view(p, &mut tree).unwrap();
                assert_ne!(view.batch.version(), 3, "{name}: no version-3 page");
                compact += usize::from(view.batch.version() == 4);
                viewed.push(view.batch.decode());
            }
            let block = block.pack().unwrap();
            for p in 0..block.n_pages() {
                block.decode_page(p, &mut decoder).unwrap();
                let mut rows = SparseBatch::with_cols(all.n_cols()).unwrap();
                for i in 0..decoder.n_rows() {
                    let (s, e) = decoder.row_range(i);
                    rows.push_row(&decoder.cols()[s..e], &decoder.vals()[s..e])
                        .unwrap();
                }
                packed.push(rows);
            }
        }
        assert!(compact > 0, "{name}: compact pages");
        for pages in [owned, packed, viewed] {
            let mut rows = SparseBatch::with_cols(all.n_cols()).unwrap();
            for page in pages {
                for (c, v) in page.rows() {
                    rows.push_row(c, v).unwrap();
                }
            }
            assert!(rows == all, "{name}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// A version-8 file whose dictionary gap-codes its value ids (a float
/// dictionary, so nothing else of version 8), labelled version 7, is
/// refused when it opens, naming the form.
#[test]
fn gap_coded_ids_are_refused_before_version_8() {
    // 200 values that are no decimal, each in ten rows: the pages pay
    // for a dictionary.
    let mut rows = SparseBatch::with_cols(1).unwrap();
    for i in 0..2000u32 {
        rows.push_row(&[0], &[(i * 7 % 200 + 1) as f64 * 1e-30])
            .unwrap();
    }
    let path = temp_path("id-gaps");
    let info = write(&path, &rows, &[1.0; 2000], WriterOptions::default());
    assert_eq!(info.version, 8);
    let mut bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    Dataset::from_memory(bytes.clone(), "v8.toc").unwrap();
    bytes[4] = 7;
    let e = Dataset::from_memory(bytes, "v7.toc")
        .unwrap_err()
        .to_string();
    assert!(e.contains("gap-coded value ids (flag 16)"), "{e}");
}
