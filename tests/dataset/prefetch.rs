//! Read-ahead of blocks: order kept, errors delivered in place, early
//! drops never hang, and every page format loads in parallel as it loads
//! one page at a time.

use std::sync::Arc;

use super::small_file;
use tocpile::dataset::Dataset;
use tocpile::Error;

#[test]
fn blocks_arrive_in_the_requested_order() {
    let (path, _) = small_file();
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let n = ds.n_blocks();
    assert!(n >= 4, "the small file has several blocks");
    let order: Vec<usize> = (0..n).rev().chain([1, 1, 0]).collect();
    for ahead in [0, 1, 3] {
        let got: Vec<usize> = ds
            .prefetch(order.clone(), ahead)
            .unwrap()
            .map(|b| b.unwrap().number())
            .collect();
        assert_eq!(got, order, "ahead {ahead}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn prefetched_blocks_equal_direct_reads() {
    let (path, _) = small_file();
    let ds = Arc::new(Dataset::open(&path).unwrap());
    for block in ds.prefetch((0..ds.n_blocks()).collect(), 2).unwrap() {
        let block = block.unwrap();
        let direct = ds.read_block(block.number()).unwrap();
        let pages = block.pages().unwrap();
        assert_eq!(pages.len(), direct.n_pages());
        for (j, page) in pages.iter().enumerate() {
            let p = direct.page(j).unwrap();
            assert_eq!(
                (page.labels(), page.batch().decode()),
                (p.labels(), p.batch().decode())
            );
        }
        let rows: Vec<usize> = block.page_rows().collect();
        assert_eq!(rows.iter().sum::<usize>(), block.n_rows());
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_corrupt_block_is_an_error_in_place_and_ends_the_stream() {
    let (path, mut bytes) = small_file();
    bytes[20] ^= 0x40; // inside block 0
    std::fs::write(&path, &bytes).unwrap();
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let mut it = ds.prefetch(vec![1, 0, 2], 2).unwrap();
    assert_eq!(it.next().unwrap().unwrap().number(), 1);
    match it.next() {
        Some(Err(Error::ChecksumMismatch { section, .. })) => assert_eq!(section, "block 0"),
        other => panic!("expected block 0's checksum error, got {other:?}"),
    }
    assert!(it.next().is_none(), "nothing after an error");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_orders_are_rejected_and_early_drops_do_not_hang() {
    let (path, _) = small_file();
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let n = ds.n_blocks();
    assert!(matches!(
        ds.prefetch(vec![0, n], 1),
        Err(Error::BadArgument { .. })
    ));
    // Take one block of many, then drop: the thread must stop.
    let order: Vec<usize> = (0..n).cycle().take(10 * n).collect();
    let mut it = ds.prefetch(order, 0).unwrap();
    assert!(it.next().unwrap().is_ok());
    drop(it);
    assert!(ds.prefetch(Vec::new(), 1).unwrap().next().is_none());
    std::fs::remove_file(&path).unwrap();
}
