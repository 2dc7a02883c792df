//! Pages of row ids (dataset file version 7): a compact page that stores
//! each distinct row of the page once and an id per row. Round trips of
//! pages whose rows repeat (the same rows as the compact page that spells
//! them out, fewer bytes), one forged page per rule the form adds, the
//! content rules applied to the rows the ids spell out, the form refused
//! where the dictionary's file version has none, and every bit flip of a
//! real page read without a panic.

use std::sync::Arc;

use super::compact::{refused_alike, Case};
use super::errors::Blob;
use super::shared::small_dict_in;
use crate::support::runs;
use tocpile::{DecodeTree, EncodeOptions, Encoder, Error, SharedDict, SparseBatch, TocBatch};

fn read(dict: &Arc<SharedDict>, blob: &[u8], rows: usize) -> Result<SparseBatch, Error> {
    TocBatch::from_bytes_shared(blob, rows, dict, &mut DecodeTree::default()).map(|b| b.decode())
}

/// The same dictionary for the compact pages of versions 4 to 6 (no
/// pages of row ids).
fn without_row_ids(dict: &SharedDict) -> Arc<SharedDict> {
    Arc::new(
        SharedDict::from_bytes(dict.as_bytes().to_vec())
            .unwrap()
            .with_compact_pages(true),
    )
}

/// A page of row ids: the distinct rows' lengths and codes, then the ids
/// (widths 4, 6 and `id_width`).
fn ids_page(distinct: u64, lengths: &[u32], codes: &[u32], ids: &[u32], id_width: u8) -> Vec<u8> {
    Blob(vec![2])
        .varint(distinct)
        .payload(lengths, 4)
        .payload(codes, 6)
        .payload(ids, id_width)
        .0
}

#[test]
fn pages_of_repeated_rows_round_trip_smaller() {
    for (pool, run) in [(1, 50), (2, 1), (3, 7), (50, 1)] {
        let (all, _) = runs(pool, run, 500, 9);
        let mut encoder = Encoder::new(EncodeOptions::default());
        let model = encoder.learn_segment_in(&all, true).unwrap().unwrap();
        let dict = Arc::clone(model.dict());
        assert!(dict.row_id_pages());
        let v6 = without_row_ids(&dict);
        let mut encoder3 = Encoder::new(EncodeOptions::default());
        let model3 = encoder3.learn_segment_in(&all, false).unwrap().unwrap();
        // The same pairs and shared nodes (a version-8 dictionary may
        // number and store them otherwise: `tests/codec/grouped.rs`).
        let shape = |d: &SharedDict| (d.n_pairs(), d.n_nodes());
        assert_eq!(shape(model3.dict()), shape(&dict), "one dictionary");
        let mut tree = DecodeTree::default();
        for start in (0..500).step_by(50) {
            let want = all.slice_rows(start..start + 50);
            let page = encoder.encode_shared(&want, &model).unwrap();
            let read7 = TocBatch::from_bytes_shared(page.as_bytes(), 50, &dict, &mut tree).unwrap();
            assert!(read7.decode() == want, "pool {pool} run {run} at {start}");
            assert_eq!(read7.decoded_nnz(), want.nnz() as u64);
            assert_eq!(read7.n_rows(), 50);
            let mut out = SparseBatch::default();
            tree.decode_into(&mut out);
            assert!(out == want, "pool {pool} run {run} at {start}: tree");
            // Every row distinct: the page spells its rows out. Else a
            // page of row ids, smaller than the compact page of the same
            // rows (the version-3 page's codes without its header and
            // counts), with the same codes once spelled out.
            if pool == 50 {
                assert_eq!(page.version(), 4, "distinct rows");
                continue;
            }
            assert_eq!(page.version(), 7, "pool {pool} run {run}");
            let v3 = encoder3.encode_shared(&want, &model3).unwrap();
            assert_eq!(read7.n_codes(), v3.n_codes());
            let varint = |v: usize| (64 - (v as u64 | 1).leading_zeros() as usize).div_ceil(7);
            let header = 4 + 1 + 1 + varint(9) + varint(50) + varint(v3.n_codes()) - 1;
            let spelled = v3.encoded_len() - header;
            assert!(
                page.encoded_len() < spelled,
                "{} {spelled}",
                page.encoded_len()
            );
            // Only a version-7 dictionary reads it, naming the form.
            let e = read(&v6, page.as_bytes(), 50).unwrap_err().to_string();
            assert!(e.contains("page of row ids"), "{e}");
        }
    }
}

#[test]
fn forged_pages_of_row_ids_break_one_rule_each() {
    let dict = small_dict_in(true);
    // Pairs: 1 = (0, 1), 2 = (0, 2), 3 = (1, 1), 4 = (2, 1), then the
    // shared nodes; the page's own nodes from `s` on.
    assert_eq!(dict.n_pairs(), 4);
    let s = dict.n_nodes() as u32;
    // Distinct rows [1 3] and [2 4]; rows 0, 1, 0, 0.
    let ok = ids_page(2, &[2, 2], &[1, 3, 2, 4], &[0, 1, 0, 0], 1);
    let rows = read(&dict, &ok, 4).unwrap();
    assert_eq!(rows.offsets(), [0, 2, 4, 6, 8]);
    assert_eq!(rows.cols(), [0, 1, 0, 2, 0, 1, 0, 1]);
    assert_eq!(rows.values()[2], 2.0);
    // One distinct row: ids of width 0.
    let one = ids_page(1, &[2], &[1, 3], &[], 0);
    assert_eq!(read(&dict, &one, 5).unwrap().nnz(), 10);
    // The rows the ids spell out follow the content rules in their
    // order: row 0 [1 3] makes node s, which row 1 may name.
    let order = ids_page(2, &[2, 1], &[1, 3, s], &[0, 1], 1);
    assert_eq!(read(&dict, &order, 2).unwrap().nnz(), 4);

    let mut trailing = ok.clone();
    trailing.push(0);
    let mut padded = ok.clone();
    *padded.last_mut().unwrap() |= 0x80; // the ids' unused bits
                                         // A distinct row of 1,024 codes, repeated by 2^18 ids of no bits:
                                         // 2^28 codes, over the page limit, from under 800 bytes.
    let long: Vec<u32> = (0..1024).map(|i| 1 + i % 4).collect();
    let bomb = Blob(vec![2])
        .varint(1)
        .payload(&[1024], 11)
        .payload(&long, 6)
        .payload(&[], 0)
        .0;
    let cases: Vec<Case> = vec![
        (
            "no distinct rows",
            ids_page(0, &[], &[], &[0; 4], 1),
            4,
            |e| matches!(e, Error::FieldBelowMinimum { value: 0, .. }),
        ),
        (
            "more distinct rows than rows",
            ids_page(5, &[1; 5], &[1; 5], &[0; 4], 1),
            4,
            |e| {
                matches!(
                    e,
                    Error::FieldOutOfRange {
                        value: 5,
                        max: 4,
                        ..
                    }
                )
            },
        ),
        (
            "an id past the distinct rows",
            ids_page(2, &[2, 2], &[1, 3, 2, 4], &[0, 1, 2, 0], 2),
            4,
            |e| {
                matches!(
                    e,
                    Error::FieldOutOfRange {
                        value: 2,
                        max: 1,
                        ..
                    }
                )
            },
        ),
        (
            "ids of width 33",
            [
                ids_page(2, &[2, 2], &[1, 3, 2, 4], &[], 0)[..8].to_vec(),
                vec![33],
            ]
            .concat(),
            4,
            |e| matches!(e, Error::BadWidth { width: 33, .. }),
        ),
        ("ids cut short", ok[..ok.len() - 1].to_vec(), 4, |e| {
            matches!(e, Error::Truncated { .. })
        }),
        ("padding bits set", padded, 4, |e| {
            matches!(e, Error::NonZeroPadding { .. })
        }),
        ("trailing byte", trailing, 4, |e| {
            matches!(e, Error::TrailingBytes { .. })
        }),
        ("rows repeating past the page limit", bomb, 1 << 18, |e| {
            matches!(e, Error::LimitExceeded { .. })
        }),
        // The content rules, on the rows spelled out.
        ("code 0", ids_page(1, &[2], &[0, 3], &[0, 0], 1), 2, |e| {
            matches!(e, Error::CodeOutOfRange { code: 0, .. })
        }),
        (
            "a node before the row that makes it",
            ids_page(2, &[2, 1], &[1, 3, s], &[1, 0], 1),
            2,
            |e| matches!(e, Error::CodeOutOfRange { .. }),
        ),
        (
            "columns not ascending",
            ids_page(1, &[2], &[3, 1], &[0], 1),
            1,
            |e| matches!(e, Error::ColumnsNotAscending { .. }),
        ),
    ];
    refused_alike(&dict, cases);
    // Where the dictionary's file has no such pages, the form is named.
    let e = read(&without_row_ids(&dict), &ok, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("found a page of row ids"), "{e}");
}

/// Every single-bit flip of a real page of row ids, read with its row
/// count and one more: an error or some page, never a panic; a page that
/// still reads decodes to its counted non-zeros.
#[test]
fn every_bit_flip_of_a_page_of_row_ids_is_an_error_or_a_page() {
    let (all, _) = runs(3, 4, 100, 9);
    let mut encoder = Encoder::new(EncodeOptions::default());
    let model = encoder.learn_segment_in(&all, true).unwrap().unwrap();
    let page = encoder
        .encode_shared(&all.slice_rows(0..50), &model)
        .unwrap();
    assert_eq!(page.version(), 7);
    let good = page.as_bytes().to_vec();
    let mut tree = DecodeTree::default();
    for i in 0..good.len() * 8 {
        let mut b = good.clone();
        b[i / 8] ^= 1 << (i % 8);
        for rows in [50, 51] {
            if let Ok(p) = TocBatch::from_bytes_shared(&b, rows, model.dict(), &mut tree) {
                assert_eq!(p.decode().nnz() as u64, p.decoded_nnz(), "bit {i}");
            }
        }
    }
}
