//! A version-5 or 6 dataset file whose blocks hold page copies (a zero
//! byte for a page equal to the block's previous one; in version 6 a
//! zero byte and a count for a run of them), generated from
//! arbitrary rows as the writer lays it out, then its pages, row counts,
//! copies or version mutated, every length and checksum recomputed.
//! Opening, reading, decoding every page, verifying, holding a block's
//! pages at once, packing and decoding from the packed bytes give errors
//! or valid rows, never a panic, within the lowered resource limits and
//! `-malloc_limit_mb=512` (a copy repeats a page's rows for one byte: a
//! block's rows are bounded by the decode limit). An unmutated file
//! decodes to its rows, copies included.
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile_fuzz::forged::{arbitrary_v5_file_with_copies, read_packed, set_fuzz_limits};

fuzz_target!(|data: &[u8]| {
    set_fuzz_limits();
    let mut u = Unstructured::new(data);
    let Ok((file, original)) = arbitrary_v5_file_with_copies(&mut u) else {
        return;
    };
    let decoded = read_packed(file);
    if let Some(rows) = original {
        assert!(
            decoded == Some(rows),
            "an unmutated file reads back its rows, copies included"
        );
    }
});
