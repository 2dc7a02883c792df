//! A segment's shared dictionary and a page coded against it (a
//! version-3 page, or a compact page of a file of version 4 to 8, a
//! page of row ids where that is smaller, whose row count comes from
//! its page header), each with a few byte mutations: the dictionary
//! must be rejected with an error or accepted, and the page then
//! rejected or accepted as a valid batch against it, never a panic.
//! Accepted pages are decoded within a budget linear in the input;
//! unchanged bytes must decode to the original rows. The loader's check
//! without a tree (`tocpile::internals::check_page`) must agree with the
//! build on every page.
//!
//! Input: a little-endian `u16` n, then n bytes that generate the rows
//! (the segment; its first half is the page), a byte choosing what to
//! mutate (bit 0 the dictionary, bit 1 the page), the page form (bit 2:
//! compact) and whether the row count given is one more than the page's
//! (bit 3), then the mutations.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile::internals::check_page;
use tocpile::{DecodeTree, EncodeOptions, Encoder, SharedDict, TocBatch};
use tocpile_fuzz::{arbitrary_batch, assert_tree_matches, check_validated, decode_budget, mutate};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let n = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (head, rest) = data[2..].split_at(n);
    let Some((&what, muts)) = rest.split_first() else {
        return;
    };
    let mut u = Unstructured::new(head);
    let Ok(generated) = arbitrary_batch(&mut u, 64, 32) else {
        return;
    };
    let segment = generated.batch;
    let mut encoder = Encoder::new(EncodeOptions::default());
    let compact = what & 4 != 0;
    let Some(model) = encoder.learn_segment_in(&segment, compact).expect("learn") else {
        return;
    };
    let rows = segment.slice_rows(0..segment.n_rows().div_ceil(2));
    let page = encoder.encode_shared(&rows, &model).expect("encode");
    let (mut dict, mut bytes) = (model.dict().as_bytes().to_vec(), page.as_bytes().to_vec());
    let mut u = Unstructured::new(muts);
    if what & 1 != 0 {
        let _ = mutate(&mut dict, &mut u);
    }
    if what & 2 != 0 {
        let _ = mutate(&mut bytes, &mut u);
    }
    let dict = match SharedDict::from_bytes(dict.clone()) {
        Ok(dict) => Arc::new(dict.with_compact_pages(compact).with_row_id_pages(compact)),
        Err(e) => {
            assert!(
                dict != model.dict().as_bytes(),
                "valid dictionary rejected: {e}"
            );
            return;
        }
    };
    let n_rows = rows.n_rows() + usize::from(what & 8 != 0);
    let unchanged = dict.as_bytes() == model.dict().as_bytes()
        && bytes == page.as_bytes()
        && (n_rows == rows.n_rows() || !compact);
    let mut tree = DecodeTree::default();
    let built = TocBatch::from_bytes_shared(&bytes[..], n_rows, &dict, &mut tree);
    // The loader's check without a tree accepts and refuses the same
    // bytes, with the same error and non-zero count.
    let checked = check_page(&bytes, n_rows, Some(&dict), &mut DecodeTree::default());
    match (&built, &checked) {
        (Ok(b), Ok(c)) => assert_eq!(
            (c.n_rows, c.n_cols, c.level, c.decoded_nnz),
            (b.n_rows(), b.n_cols(), b.level(), b.decoded_nnz())
        ),
        (Err(b), Err(c)) => assert_eq!(format!("{c:?}"), format!("{b:?}")),
        _ => panic!("build and check disagree: {built:?} against {checked:?}"),
    }
    match built {
        Ok(batch) => {
            assert_tree_matches(&tree, &batch);
            let budget = decode_budget(data.len()).max(rows.nnz() as u64);
            if let Some(decoded) = check_validated(&batch, budget) {
                if unchanged {
                    assert!(decoded == rows, "unmutated page decodes differently");
                }
            }
        }
        Err(e) => {
            assert!(!unchanged, "valid page rejected: {e}");
            let _ = e.to_string();
        }
    }
});
