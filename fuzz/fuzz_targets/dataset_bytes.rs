//! Arbitrary bytes as a dataset file: opening and reading every block and
//! page must give an error or valid pages, never a panic, with memory
//! bounded by the input (every section is read from the bytes themselves).
//! TOC pages go through the zero-copy view (and its decode tree), pages of
//! the other formats through `Block::page`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tocpile::dataset::Dataset;
use tocpile::DecodeTree;
use tocpile_fuzz::{check_validated, decode_budget};

fuzz_target!(|data: &[u8]| {
    let Ok(ds) = Dataset::from_memory(data.to_vec(), "fuzz.toc") else {
        return;
    };
    let info = ds.info().clone();
    let _ = info.summary();
    let mut tree = DecodeTree::default();
    for b in 0..ds.n_blocks() {
        let Ok(block) = ds.read_block(b) else {
            continue;
        };
        assert_eq!(block.n_rows() as u64, ds.block_rows(b));
        for p in 0..block.n_pages() {
            if info.format.level().is_some() {
                if let Ok(view) = block.toc_view(p, &mut tree) {
                    assert_eq!(view.labels.len(), view.batch.n_rows());
                    check_validated(&view.batch, decode_budget(data.len()));
                }
            } else if let Ok(page) = block.page(p) {
                assert_eq!(page.labels().len(), page.batch().n_rows());
            }
        }
    }
});
