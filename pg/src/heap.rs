//! Block-level random access over a table's heap pages: the CorgiPile
//! paper's BlockShuffle operator (section 6.2), here through the table
//! access method's TID range scan (`table_beginscan_tidrange`, PostgreSQL
//! 14 on) rather than the executor.
//!
//! A block is `block_pages` contiguous heap pages (the paper: "each block
//! corresponds to a batch of contiguous table pages"); reading block `b`
//! rescans the one open scan over the TIDs of its pages, so the heap AM
//! reads those pages and no others, through the shared buffer pool and
//! under the statement's snapshot. One scan serves every block of an
//! epoch: no query, plan or portal per block (one SPI query per block
//! costs about 8 times a sequential scan of the same pages).
//!
//! A TOC page table packs some twenty stored pages (a thousand rows) in a
//! heap page, twenty times an ordinary table's rows: blocks of whole heap
//! pages would be that much coarser, and a 10% buffer of them too few to
//! mix a label-sorted table. Its blocks are therefore runs of
//! consecutive stored pages ([`BlockScan::by_tuples`]): TID ranges found
//! by one pass over the tuples, read the same way.
//!
//! Everything the tuples' conversion allocates in PostgreSQL memory
//! (detoasted arrays and bytea, numeric conversions) goes to a memory
//! context reset before each block, so a scan of any length holds one
//! block's garbage at most.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgMemoryContexts;

use crate::failure::{reserve, Result};

/// Highest line pointer number of a heap page (`MaxOffsetNumber`).
const MAX_OFFSET: u16 = (pg_sys::BLCKSZ / 4) as u16;

/// An open TID range scan over one relation, reading it block by block.
pub struct BlockScan {
    rel: pg_sys::Relation,
    scan: pg_sys::TableScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    n_pages: u32,
    blocks: Blocks,
    memory: PgMemoryContexts,
}

/// What a block is.
enum Blocks {
    /// Runs of this many heap pages.
    Pages(u32),
    /// Inclusive TID ranges.
    Ranges(Vec<(Tid, Tid)>),
}

/// A tuple's position (`ctid`), for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tid {
    /// Heap page number.
    pub page: u32,
    /// Line pointer number within the page.
    pub line: u16,
}

impl std::fmt::Display for Tid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.page, self.line)
    }
}

impl BlockScan {
    /// Opens a scan over `rel` (opened and locked by the caller, and open
    /// for as long as the scan) with blocks of `block_pages` heap pages,
    /// under the active snapshot.
    ///
    /// # Safety
    /// `rel` must be an open table; the scan must be dropped before it is
    /// closed, and used on the backend's thread only.
    pub unsafe fn open(rel: pg_sys::Relation, block_pages: u32) -> BlockScan {
        let n_pages =
            pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM);
        let mut min = tid(0, 1);
        let mut max = tid(0, MAX_OFFSET);
        let snapshot = pg_sys::GetActiveSnapshot();
        let scan = pg_sys::table_beginscan_tidrange(rel, snapshot, &mut min, &mut max);
        let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
        BlockScan {
            rel,
            scan,
            slot,
            n_pages,
            blocks: Blocks::Pages(block_pages.max(1)),
            memory: PgMemoryContexts::new("tocpile block"),
        }
    }

    /// Makes the blocks runs of `tuples` consecutive visible tuples that
    /// `keep` keeps (in TID order; the last may be shorter; a block may
    /// hold tuples `keep` skips between its first and last, which its
    /// reader skips again), found by one pass over the table.
    pub fn by_tuples(
        mut self,
        tuples: usize,
        mut keep: impl FnMut(*mut pg_sys::TupleTableSlot, Tid) -> Result<bool>,
    ) -> Result<BlockScan> {
        let tuples = tuples.max(1);
        self.blocks = Blocks::Pages(1);
        let mut ranges: Vec<(Tid, Tid)> = Vec::new();
        let mut run: Option<(Tid, Tid, usize)> = None;
        for page in 0..self.n_blocks() {
            self.read_block(page, |slot, at| {
                if !keep(slot, at)? {
                    return Ok(());
                }
                run = match run {
                    None => Some((at, at, 1)),
                    Some((first, _, n)) => Some((first, at, n + 1)),
                };
                if let Some((first, last, n)) = run {
                    if n == tuples {
                        reserve(&mut ranges, 1, "the blocks of a page table")?;
                        ranges.push((first, last));
                        run = None;
                    }
                }
                Ok(())
            })?;
        }
        if let Some((first, last, _)) = run {
            reserve(&mut ranges, 1, "the blocks of a page table")?;
            ranges.push((first, last));
        }
        self.blocks = Blocks::Ranges(ranges);
        Ok(self)
    }

    /// Heap pages of the relation when the scan was opened.
    pub fn n_pages(&self) -> u32 {
        self.n_pages
    }

    /// Blocks: the heap pages in runs of `block_pages` (the last may be
    /// shorter), or the tuple runs of [`by_tuples`](Self::by_tuples).
    pub fn n_blocks(&self) -> usize {
        match &self.blocks {
            Blocks::Pages(k) => self.n_pages.div_ceil(*k) as usize,
            Blocks::Ranges(r) => r.len(),
        }
    }

    /// The relation scanned.
    pub fn relation(&self) -> pg_sys::Relation {
        self.rel
    }

    /// Calls `each` with every visible tuple of block `block` (its slot,
    /// attributes not yet deformed, and its position), in page and line
    /// order; returns the tuples seen. Checks for query cancellation
    /// before the block. The memory context of the previous block is
    /// reset first, and is current while `each` runs.
    pub fn read_block(
        &mut self,
        block: usize,
        mut each: impl FnMut(*mut pg_sys::TupleTableSlot, Tid) -> Result<()>,
    ) -> Result<usize> {
        check_for_interrupts!();
        let (mut min, mut max) = match &self.blocks {
            Blocks::Pages(k) => {
                let first = block as u64 * *k as u64;
                if first >= self.n_pages as u64 {
                    return Ok(0);
                }
                let last = (first + *k as u64).min(self.n_pages as u64) - 1;
                (tid(first as u32, 1), tid(last as u32, MAX_OFFSET))
            }
            Blocks::Ranges(r) => match r.get(block) {
                Some((a, b)) => (tid(a.page, a.line), tid(b.page, b.line)),
                None => return Ok(0),
            },
        };
        let (scan, slot) = (self.scan, self.slot);
        // SAFETY: the scan and slot are open (see `open`); the context
        // is ours, and nothing allocated in it outlives the block.
        unsafe {
            self.memory.reset();
            pg_sys::table_rescan_tidrange(scan, &mut min, &mut max);
            self.memory.switch_to(|_| {
                let mut n = 0;
                while pg_sys::table_scan_getnextslot_tidrange(
                    scan,
                    pg_sys::ScanDirection::ForwardScanDirection,
                    slot,
                ) {
                    let t = (*slot).tts_tid;
                    let at = Tid {
                        page: ((t.ip_blkid.bi_hi as u32) << 16) | t.ip_blkid.bi_lo as u32,
                        line: t.ip_posid,
                    };
                    each(slot, at)?;
                    n += 1;
                }
                Ok(n)
            })
        }
    }
}

impl Drop for BlockScan {
    fn drop(&mut self) {
        // On an error the transaction's abort releases the scan's buffer
        // pins and memory; ending a scan mid-error is not needed and not
        // safe, so only a scan that finished cleanly is ended here.
        if std::thread::panicking() {
            return;
        }
        // SAFETY: opened by `open`, not yet ended.
        unsafe {
            pg_sys::ExecDropSingleTupleTableSlot(self.slot);
            pg_sys::table_endscan(self.scan);
        }
    }
}

/// The item pointer `(page, line)`.
fn tid(page: u32, line: u16) -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData {
            bi_hi: (page >> 16) as u16,
            bi_lo: (page & 0xffff) as u16,
        },
        ip_posid: line,
    }
}

/// The attributes `0..n` of `slot`'s tuple, deformed.
///
/// # Safety
/// `slot` holds a tuple with at least `n` attributes.
pub unsafe fn deform(slot: *mut pg_sys::TupleTableSlot, n: usize) {
    if ((*slot).tts_nvalid as usize) < n {
        pg_sys::slot_getsomeattrs_int(slot, n as i32);
    }
}

/// Attribute `index` (0-based) of a deformed slot: its datum, or `None`
/// for NULL.
///
/// # Safety
/// `slot` is deformed up to at least `index + 1` attributes.
pub unsafe fn attribute(slot: *mut pg_sys::TupleTableSlot, index: usize) -> Option<pg_sys::Datum> {
    if *(*slot).tts_isnull.add(index) {
        None
    } else {
        Some(*(*slot).tts_values.add(index))
    }
}
