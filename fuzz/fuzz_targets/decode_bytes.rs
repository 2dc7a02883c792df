//! Arbitrary bytes through the trust boundary: `TocBatch::from_bytes` must
//! return an error or a batch, never panic. A batch whose decoded size is
//! within a budget linear in the input is decoded, checked to be a valid
//! `SparseBatch` of the announced size, and round-tripped at `Level::Full`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tocpile::TocBatch;
use tocpile_fuzz::{check_validated, decode_budget};

fuzz_target!(|data: &[u8]| {
    match TocBatch::from_bytes(data) {
        Ok(batch) => {
            check_validated(&batch, decode_budget(data.len()));
        }
        Err(e) => {
            // Formatting the error must not panic either.
            let _ = e.to_string();
        }
    }
});
