//! Resident blocks: each block's bytes, checked once (checksum, page
//! list, every page validated) and kept as they are in the file
//! ([`PackedBlock`]), for the next epochs while they fit a byte budget
//! ([`LoaderOptions::memory`](super::LoaderOptions::memory)). An epoch then
//! reads, checksums and validates nothing it has seen before; it decodes
//! the resident bytes again without the checks. Blocks over the budget
//! are read from the file every epoch (streaming).
//!
//! What stays is the compressed form, about the block's size in the file
//! (its bytes and a page index of 24 bytes a page), not decode trees (5
//! to 27 times the bytes): under a memory limit, TOC keeps as many more
//! rows resident than CSR as it compresses better (TOC paper, Table 6).
//! Blocks are admitted first come, first kept: the first epoch's first
//! blocks stay, and a block never leaves once admitted, so later epochs
//! do the same work.
//!
//! A block read from the file again (not resident) is checksummed every
//! time. Where the loader keeps code rows, its pages are validated only
//! the first time: the cache remembers what each block's pages decode to
//! ([`Resident::pack`], [`Block::pack_seen`]), 8 bytes a page.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::dataset::{Block, PackedBlock};
use crate::error::Result;

/// A block's validated bytes, shared by the cache and the epochs.
pub(crate) type Packed = Arc<PackedBlock>;

/// The cache of one loader (one dataset file), shared by its epochs.
#[derive(Debug)]
pub(crate) struct Resident {
    budget: usize,
    used: AtomicUsize,
    blocks: Vec<OnceLock<Packed>>,
    /// Per block validated before, its pages' non-zeros; empty when
    /// blocks are validated every time they are read.
    seen: Vec<OnceLock<Box<[u64]>>>,
}

impl Resident {
    /// An empty cache for `n_blocks` blocks and `budget` bytes; with
    /// `check_once`, a block read again is not validated again
    /// ([`pack`](Self::pack)).
    pub(crate) fn new(n_blocks: usize, budget: usize, check_once: bool) -> Self {
        Resident {
            budget,
            used: AtomicUsize::new(0),
            blocks: (0..n_blocks).map(|_| OnceLock::new()).collect(),
            seen: (0..if check_once { n_blocks } else { 0 })
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// `block` (just read and checksummed) packed: validated if this
    /// cache has not seen it validated, else packed with the counts
    /// found then ([`Block::pack_seen`]: its pages checked where they
    /// are decoded).
    ///
    /// Re-checking bytes that passed the same checksum an epoch before
    /// was 11% of a streamed epoch's CPU (shuffled flights3m, the
    /// read-ahead threads' `check_rows`), for no rows the loader keeps
    /// (pair codes are decoded through the checked decoder either way).
    ///
    /// # Errors
    /// As [`Block::pack`].
    pub(crate) fn pack(&self, block: Block) -> Result<PackedBlock> {
        let Some(slot) = self.seen.get(block.number()) else {
            return block.pack();
        };
        if let Some(nnz) = slot.get() {
            return block.pack_seen(nnz);
        }
        let packed = block.pack()?;
        let _ = slot.set(packed.page_nnz().collect());
        Ok(packed)
    }

    /// Block `b`, if resident.
    pub(crate) fn get(&self, b: usize) -> Option<Packed> {
        self.blocks.get(b)?.get().cloned()
    }

    /// Keeps block `b` if it fits what is left of the budget.
    pub(crate) fn offer(&self, b: usize, block: &Packed) {
        let Some(slot) = self.blocks.get(b) else {
            return;
        };
        if slot.get().is_some() || self.budget == 0 {
            return;
        }
        let bytes = packed_bytes(block);
        let reserved = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes)
                    .filter(|&total| total <= self.budget)
            });
        if reserved.is_ok() && slot.set(Arc::clone(block)).is_err() {
            // Another epoch kept the block first: give the bytes back.
            self.used.fetch_sub(bytes, Ordering::AcqRel);
        }
    }

    /// Bytes held by resident blocks.
    pub(crate) fn bytes(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Blocks resident.
    pub(crate) fn n_resident(&self) -> usize {
        self.blocks.iter().filter(|s| s.get().is_some()).count()
    }
}

/// Heap bytes of a packed block and its shared allocation.
pub(crate) fn packed_bytes(block: &PackedBlock) -> usize {
    block.heap_bytes() + 2 * std::mem::size_of::<usize>()
}
