//! A segment's shared dictionary and a version-3 page coded against it
//! (format version 3), each with a few byte mutations: the dictionary
//! must be rejected with an error or accepted, and the page then
//! rejected or accepted as a valid batch against it, never a panic.
//! Accepted pages are decoded within a budget linear in the input;
//! unchanged bytes must decode to the original rows.
//!
//! Input: a little-endian `u16` n, then n bytes that generate the rows
//! (the segment; its first half is the page), a byte choosing what to
//! mutate (bit 0 the dictionary, bit 1 the page), then the mutations.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use tocpile::{DecodeTree, EncodeOptions, Encoder, SharedDict, TocBatch};
use tocpile_fuzz::{arbitrary_batch, assert_tree_matches, check_validated, decode_budget};

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
    let Some(model) = encoder.learn_segment(&segment).expect("learn") else {
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
        Ok(dict) => Arc::new(dict),
        Err(e) => {
            assert!(dict != model.dict().as_bytes(), "valid dictionary rejected: {e}");
            return;
        }
    };
    let unchanged = dict.as_bytes() == model.dict().as_bytes() && bytes == page.as_bytes();
    let mut tree = DecodeTree::default();
    match TocBatch::from_bytes_shared(&bytes[..], &dict, &mut tree) {
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

/// Applies up to 16 mutations read from `u`.
fn mutate(bytes: &mut Vec<u8>, u: &mut Unstructured<'_>) -> Result<()> {
    for _ in 0..16 {
        if u.is_empty() {
            break;
        }
        let op = u.int_in_range(0u8..=7)?;
        let at = u.arbitrary::<u32>()? as usize;
        let len = bytes.len();
        match op {
            0 if len > 0 => bytes[at % len] ^= 1 << u.int_in_range(0u8..=7)?,
            1 if len > 0 => bytes[at % len] = u.arbitrary()?,
            2 if len > 0 => {
                bytes[at % len] =
                    *u.choose(&[0, 1, 2, 7, 8, 9, 16, 31, 32, 33, 0x7f, 0x80, 0xff])?
            }
            3 if len > 0 => {
                let delta = u.int_in_range(-4i8..=4)?;
                bytes[at % len] = bytes[at % len].wrapping_add_signed(delta);
            }
            4 => bytes.truncate(at % (len + 1)),
            5 => bytes.insert(at % (len + 1), u.arbitrary()?),
            6 if len > 0 => {
                bytes.remove(at % len);
            }
            7 if len > 1 => {
                let other = u.arbitrary::<u32>()? as usize % len;
                bytes.swap(at % len, other);
            }
            _ => {}
        }
    }
    Ok(())
}
