//! Shared dictionaries as hostile input (issue 34, item 1): a page's
//! state is bounded by the page, not by its segment's dictionary, and
//! the pages of a block held at once are bounded as its decoded rows
//! are (`Limits::max_decode_nnz`).

use super::is_limit;
use crate::support::forge::{chain_deepest, chain_file, dict_bomb_file};
use tocpile::dataset::Dataset;

#[test]
fn the_chain_dictionary_generator_builds_a_valid_file() {
    let depth = 10;
    // Page 0: a pair node (column 0), the deepest node (columns 0..10),
    // a shared node in the middle (depth + 1 + 3: columns 0..5).
    let file = chain_file(depth, &[vec![1, chain_deepest(depth), depth + 4]], 1);
    let ds = Dataset::from_memory(file, "chain.toc").unwrap();
    assert_eq!(ds.info().version, 4);
    ds.verify(|_| {}).unwrap();
    let block = ds.read_block(0).unwrap();
    let rows = block.page(0).unwrap().batch().decode();
    let cols: Vec<Vec<u32>> = rows.rows().map(|(c, _)| c.to_vec()).collect();
    assert_eq!(cols, vec![vec![0], (0..10).collect(), (0..5).collect()]);
    assert!(rows.values().iter().all(|&v| v == 1.0));
    let packed = block.pack().unwrap();
    assert_eq!(packed.nnz(), 1 + 10 + 5);
}

/// A dictionary-sized map in every page's tree made a one-row page of a
/// 262,144-node dictionary hold over 1 MiB (and census at one row a
/// page 7 times the memory of its version-2 file in page mode).
#[test]
fn a_page_of_a_large_dictionary_holds_memory_bounded_by_the_page() {
    let depth = 1 << 17;
    let pages: Vec<Vec<u64>> = (1..=8).map(|c| vec![c, c + 1]).collect();
    let ds = Dataset::from_memory(chain_file(depth, &pages, 8), "wide.toc").unwrap();
    let block = ds.read_block(0).unwrap();
    for page in block.pages().unwrap() {
        assert_eq!(page.batch().decode().nnz(), 2);
        // A tree reused from the pool keeps up to 64 KiB of capacity.
        assert!(page.heap_bytes() < 128 << 10, "{} bytes", page.heap_bytes());
    }
}

#[test]
fn the_shared_dictionary_bomb_is_an_error_naming_the_block() {
    // 682 KB: 5,000 one-row pages, each row 131,072 non-zeros.
    let bytes = dict_bomb_file(5000, 5000, 1 << 17);
    assert_eq!(bytes.len(), 682_243);
    let ds = Dataset::from_memory(bytes, "bomb.toc").unwrap();
    for e in [
        ds.verify(|_| {}).unwrap_err(),
        ds.read_block(0).unwrap().pack().unwrap_err(),
    ] {
        assert!(is_limit(&e, "one block's pages decode to"), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("bomb.toc")
                && text.contains("block 0")
                && text.contains("--max-decode-nnz"),
            "{text}"
        );
        assert!(!text.contains("--buffer"), "{text}");
    }
    // A page at a time is within the limits.
    let block = ds.read_block(0).unwrap();
    assert_eq!(block.page(4999).unwrap().batch().decode().nnz(), 1 << 17);
}
