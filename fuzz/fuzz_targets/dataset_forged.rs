//! Forged dataset files with every checksum right (footers lying about
//! their totals, pages claiming any row count, prefix-tree bombs): opening,
//! reading, fully decoding and verifying must give errors or valid pages,
//! never a panic, with memory held by the resource limits (set low here,
//! so `-malloc_limit_mb` catches any allocation they miss).
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tocpile_fuzz::forged::{arbitrary_file, read_everything, set_fuzz_limits};

fuzz_target!(|data: &[u8]| {
    set_fuzz_limits();
    let mut u = Unstructured::new(data);
    if let Ok(file) = arbitrary_file(&mut u) {
        read_everything(file);
    }
});
