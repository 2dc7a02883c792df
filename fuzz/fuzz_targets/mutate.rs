//! A valid encoding with a few byte mutations (bit flips, overwrites,
//! truncation, insertion, deletion) must be rejected with an error or
//! accepted as a valid batch, never panic. Accepted batches are decoded
//! within a budget linear in the input and round-tripped; unchanged bytes
//! must decode to the original batch.
//!
//! Input: a little-endian `u16` n, then n bytes that generate the batch
//! and options, then the mutations.
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile::{Encoder, TocBatch};
use tocpile_fuzz::{
    arbitrary_batch, arbitrary_options, assert_tree_matches, check_validated, decode_budget, mutate,
};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let n = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (head, muts) = data[2..].split_at(n);
    let mut u = Unstructured::new(head);
    let Ok(options) = arbitrary_options(&mut u) else {
        return;
    };
    let Ok(generated) = arbitrary_batch(&mut u, 32, 32) else {
        return;
    };
    let original = generated.batch;
    let encoded = Encoder::new(options).encode(&original).expect("encode");
    let mut bytes = encoded.as_bytes().to_vec();
    let _ = mutate(&mut bytes, &mut Unstructured::new(muts));

    // Validate into a tree that holds the original batch, so the reuse
    // path of from_bytes_with_tree is exercised as well.
    let mut tree = encoded.tree();
    match TocBatch::from_bytes_with_tree(&bytes[..], &mut tree) {
        Ok(batch) => {
            assert_tree_matches(&tree, &batch);
            let budget = decode_budget(data.len()).max(original.nnz() as u64);
            if let Some(decoded) = check_validated(&batch, budget) {
                if bytes == encoded.as_bytes() {
                    assert!(decoded == original, "unmutated bytes decode differently");
                }
            }
        }
        Err(e) => {
            assert!(
                bytes != encoded.as_bytes(),
                "valid encoding rejected ({options:?}): {e}"
            );
            let _ = e.to_string();
        }
    }
});
