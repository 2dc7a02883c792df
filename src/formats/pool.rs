//! Decode trees of dropped TOC pages, kept for the next pages to be
//! loaded: a streamed epoch loads and drops every page of the file, and
//! building each tree into fresh arrays made malloc, realloc and free
//! about a quarter of a streamed epoch (flights3m profile). Worse, trees
//! are built on the read-ahead thread and dropped on the trainer's, and
//! every cross-thread free waited on the builder's malloc arena lock.
//! With the pool, a tree's arrays are reused at their capacity and
//! nothing is freed in steady state.
//!
//! The pool is small and bounded ([`POOL_TREES`] trees of at most
//! [`POOL_TREE_BYTES`] each); [`pooled_bytes`] tells what it holds, and
//! the loader counts it in its memory figures. Build scratch (unpacked
//! lengths, escape-coded gaps) is per thread and never part of a page.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::codec::DecodeTree;

/// Most trees kept.
pub(crate) const POOL_TREES: usize = 256;
/// Largest tree kept (heap bytes): bigger ones are rare and would pin
/// memory for pages that do not need it.
pub(crate) const POOL_TREE_BYTES: usize = 64 << 10;

static POOL: Mutex<Vec<DecodeTree>> = Mutex::new(Vec::new());
static POOLED_BYTES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SCRATCH: RefCell<(Vec<u32>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A tree to build into: a pooled one if any, else an empty one.
pub(crate) fn take() -> DecodeTree {
    let tree = POOL.lock().ok().and_then(|mut pool| pool.pop());
    match tree {
        Some(tree) => {
            POOLED_BYTES.fetch_sub(tree.heap_bytes(), Ordering::AcqRel);
            tree
        }
        None => DecodeTree::default(),
    }
}

/// Gives a tree back for reuse (dropped if the pool is full or the tree
/// large).
pub(crate) fn give(tree: DecodeTree) {
    let bytes = tree.heap_bytes();
    if bytes == 0 || bytes > POOL_TREE_BYTES {
        return;
    }
    let Ok(mut pool) = POOL.lock() else {
        return;
    };
    if pool.len() < POOL_TREES {
        POOLED_BYTES.fetch_add(bytes, Ordering::AcqRel);
        pool.push(tree);
    }
}

/// Heap bytes held by pooled trees (all loaders of the process share the
/// pool).
pub fn pooled_bytes() -> usize {
    POOLED_BYTES.load(Ordering::Acquire)
}

/// Frees every pooled tree (the memory of [`pooled_bytes`]): for a
/// process done with streaming that wants the memory back, and for
/// measurements that start from nothing.
pub fn release_pooled() {
    if let Ok(mut pool) = POOL.lock() {
        let trees = std::mem::take(&mut *pool);
        for tree in &trees {
            POOLED_BYTES.fetch_sub(tree.heap_bytes(), Ordering::AcqRel);
        }
    }
}

/// Runs `build` with this thread's build scratch lent to `tree`, then
/// takes it back, so no page keeps (or frees) scratch arrays.
pub(crate) fn with_scratch<T>(
    tree: &mut DecodeTree,
    build: impl FnOnce(&mut DecodeTree) -> T,
) -> T {
    SCRATCH.with(|cell| {
        let mut scratch = cell.borrow_mut();
        tree.swap_scratch(&mut scratch);
        let out = build(tree);
        tree.swap_scratch(&mut scratch);
        out
    })
}

#[cfg(test)]
mod tests {
    use crate::formats::FormatKind;
    use crate::sparse::SparseBatch;

    /// Rows with shared prefixes (a real tree), of `n` rows and a shape
    /// that changes with `seed`, so consecutive pages differ in size.
    fn rows(n: usize, seed: usize) -> SparseBatch {
        let cols = 8 + seed % 13;
        let dense: Vec<Vec<f64>> = (0..n)
            .map(|r| {
                (0..cols)
                    .map(|c| match (r * 5 + c * (seed % 7 + 1) + r / 3) % 5 {
                        0 | 1 => 0.0,
                        k => (k + seed % 3) as f64 * 0.25,
                    })
                    .collect()
            })
            .collect();
        SparseBatch::from_dense_rows(cols, &dense).unwrap()
    }

    #[test]
    fn pages_loaded_into_reused_trees_decode_to_their_own_rows() {
        // Load and drop pages of changing sizes and formats: each later
        // page is built into a tree a previous page left in the pool.
        let kinds = [
            FormatKind::TocFull,
            FormatKind::TocLogical,
            FormatKind::TocSparse,
        ];
        for i in 0..60 {
            let expected = rows(1 + (i * 37) % 90, i);
            let kind = kinds[i % kinds.len()];
            let bytes = kind.encode(&expected).unwrap().to_bytes();
            let loaded = kind.load(&bytes).unwrap();
            assert_eq!(loaded.decode(), expected, "page {i} ({kind:?})");
            // Garbage between pages: a failed build leaves a tree in the
            // pool in some half-built state.
            let mut bad = bytes.clone();
            let last = bad.len() - 1;
            bad[last] ^= 0x5a;
            let _ = kind.load(&bad);
        }
    }
}
