//! A version-4 dataset file mutated as a whole: generated from arbitrary
//! rows as the writer lays it out (a segment's shared dictionary, compact
//! pages coded against it, in blocks), then its dictionary, pages and
//! page row counts mutated, with every length and checksum recomputed so
//! that the mutations reach the decoders (`shared_page` mutates one page
//! and its dictionary in isolation; this is the file around them).
//! Opening, reading, decoding every page, verifying, holding a block's
//! pages and their trees at once, packing and decoding from the packed
//! bytes give errors or valid rows, never a panic, within the lowered
//! resource limits and `-malloc_limit_mb=512` (issue 34: a 682 KB file
//! of one-row pages naming a deep shared node aborted six commands). An
//! unmutated file decodes to its rows.
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile_fuzz::forged::{arbitrary_v4_file, read_packed, set_fuzz_limits};

fuzz_target!(|data: &[u8]| {
    set_fuzz_limits();
    let mut u = Unstructured::new(data);
    let Ok((file, original)) = arbitrary_v4_file(&mut u) else {
        return;
    };
    let decoded = read_packed(file);
    if let Some(rows) = original {
        assert!(
            decoded == Some(rows),
            "an unmutated file reads back its rows"
        );
    }
});
