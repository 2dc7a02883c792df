//! Resident pages: each block's pages, once validated (TOC decode trees
//! built), kept in memory for the next epochs while they fit a byte budget
//! ([`LoaderOptions::memory`](super::LoaderOptions::memory)), so an epoch
//! reads, checksums, validates and builds nothing it has seen before.
//! Blocks over the budget are read from the file every epoch, as without
//! a cache (streaming).
//!
//! The budget counts what a page really holds in memory
//! ([`Page::heap_bytes`]: for TOC the decode tree, 5 to 12 times the
//! encoded bytes, as well as the bytes and labels). Blocks are admitted
//! first come, first kept: the first epoch's first blocks stay, and a
//! block never leaves once admitted, so later epochs do the same work.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::page::Page;

/// The loaded pages of one block, shared by the cache and the epochs.
pub(crate) type BlockPages = Arc<[Page]>;

/// The cache of one loader (one dataset file), shared by its epochs.
#[derive(Debug)]
pub(crate) struct Resident {
    budget: usize,
    used: AtomicUsize,
    blocks: Vec<OnceLock<BlockPages>>,
}

impl Resident {
    /// An empty cache for `n_blocks` blocks and `budget` bytes.
    pub(crate) fn new(n_blocks: usize, budget: usize) -> Self {
        Resident {
            budget,
            used: AtomicUsize::new(0),
            blocks: (0..n_blocks).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Block `b`'s pages, if resident.
    pub(crate) fn get(&self, b: usize) -> Option<BlockPages> {
        self.blocks.get(b)?.get().cloned()
    }

    /// Keeps block `b`'s pages if they fit what is left of the budget.
    pub(crate) fn offer(&self, b: usize, pages: &BlockPages) {
        let Some(slot) = self.blocks.get(b) else {
            return;
        };
        if slot.get().is_some() || self.budget == 0 {
            return;
        }
        let bytes = block_heap_bytes(pages);
        let reserved = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes)
                    .filter(|&total| total <= self.budget)
            });
        if reserved.is_ok() && slot.set(Arc::clone(pages)).is_err() {
            // Another epoch kept the block first: give the bytes back.
            self.used.fetch_sub(bytes, Ordering::AcqRel);
        }
    }

    /// Bytes held by resident pages.
    pub(crate) fn bytes(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Blocks resident.
    pub(crate) fn n_resident(&self) -> usize {
        self.blocks.iter().filter(|s| s.get().is_some()).count()
    }
}

/// Heap bytes of a block's pages: every page's own, plus the slice of
/// page handles.
pub(crate) fn block_heap_bytes(pages: &[Page]) -> usize {
    pages.iter().map(Page::heap_bytes).sum::<usize>()
        + std::mem::size_of_val(pages)
        + 2 * std::mem::size_of::<usize>()
}
