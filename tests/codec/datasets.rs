//! Round trip of every real dataset (`data/`, and `../shared/data` for the
//! ignored ones), in 50- and 250-row
//! batches, through every encoder configuration, with one reused encoder
//! per configuration (as a dataset writer uses it).

use crate::support::{batches, load, shuffled, DATASETS};
use tocpile::{EncodeOptions, Encoder, Level, Packing, TocBatch};

fn check_dataset(name: &str) {
    let (all, _) = load(name, usize::MAX);
    let options = [
        EncodeOptions::default(),
        EncodeOptions::paper(),
        EncodeOptions::level(Level::Logical),
        EncodeOptions::level(Level::Sparse),
        EncodeOptions::default().with_packing(Packing::Bytes),
    ];
    for rows in [50, 250] {
        for options in options {
            let mut encoder = Encoder::new(options);
            let mut tree = tocpile::DecodeTree::default();
            let mut out = tocpile::SparseBatch::default();
            for (i, b) in batches(&all, rows).iter().enumerate() {
                let encoded = encoder.encode(b).unwrap();
                let loaded = TocBatch::from_bytes_with_tree(encoded.as_bytes(), &mut tree).unwrap();
                assert_eq!(loaded.decoded_nnz(), b.nnz() as u64);
                tree.decode_into(&mut out);
                assert!(&out == b, "{name}: batch {i} of {rows} rows, {options:?}");
            }
        }
    }
    // The paper shuffles once before cutting batches: check that order too.
    let mixed = shuffled(&all, 7);
    let mut encoder = Encoder::new(EncodeOptions::default());
    for b in batches(&mixed, 250) {
        assert!(
            encoder.encode(&b).unwrap().decode() == b,
            "{name}: shuffled"
        );
    }
}

#[test]
fn mushrooms() {
    check_dataset("mushrooms");
}

#[test]
fn coil2000() {
    check_dataset("coil2000");
}

#[test]
#[ignore = "needs ../shared/data (mnist5k)"]
fn mnist5k() {
    check_dataset("mnist5k");
}

#[test]
fn census_fertility() {
    check_dataset("census_fertility");
}

#[test]
#[ignore = "needs ../shared/data (nycflights13)"]
fn nycflights13() {
    check_dataset("nycflights13");
}

#[test]
#[ignore = "needs ../shared/data (flights3m)"]
fn flights3m() {
    check_dataset("flights3m");
}

#[test]
fn every_dataset_is_covered() {
    assert_eq!(DATASETS.len(), 6);
}
