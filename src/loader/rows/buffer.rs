//! A buffer of rows in the loader's form (code rows or pair codes in an
//! arena, or decoded values) and how blocks are decoded into it: a
//! buffer of blocks after its decode budget is checked, or the whole
//! file once.

use std::sync::Arc;

use super::super::arena::{ArenaScratch, BlockSpan, CodeArena, RowCodes};
use super::super::feed::Feed;
use super::super::resident::Packed;
use super::super::values::ValueRows;
use super::super::Plan;
use crate::dataset::{PackedBlock, PageDecoder, Source};
use crate::error::{Error, Result};

/// What a buffer keeps of each row (decided per loader, `make_plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowsKind {
    /// Decoded values (`values.rs`).
    Values,
    /// Codes into resident dictionaries, in the given form (`arena.rs`).
    Codes(RowCodes),
}

/// A buffer of rows in the loader's form.
#[derive(Debug)]
pub(crate) enum Buffer {
    Values(ValueRows),
    /// Boxed: an arena's bookkeeping is twice a value buffer's.
    Codes(Box<CodeArena>),
}

/// A thread's scratch for decoding blocks into a [`Buffer`].
#[derive(Debug, Default)]
pub(crate) struct BufferScratch {
    decoder: PageDecoder,
    arena: ArenaScratch,
}

impl BufferScratch {
    pub(crate) fn heap_bytes(&self) -> usize {
        self.decoder.heap_bytes() + self.arena.heap_bytes()
    }
}

impl Buffer {
    /// An empty buffer of `kind`.
    pub(crate) fn new(kind: RowsKind, trace: bool) -> Buffer {
        match kind {
            RowsKind::Values => Buffer::Values(ValueRows::new(trace)),
            RowsKind::Codes(form) => Buffer::Codes(Box::new(CodeArena::new(form, trace))),
        }
    }

    pub(crate) fn clear(&mut self) {
        match self {
            Buffer::Values(v) => v.clear(),
            Buffer::Codes(c) => c.clear(),
        }
    }

    /// Rows held.
    pub(crate) fn n_rows(&self) -> usize {
        match self {
            Buffer::Values(v) => v.n_rows(),
            Buffer::Codes(c) => c.n_rows(),
        }
    }

    pub(crate) fn blocks(&self) -> &[BlockSpan] {
        match self {
            Buffer::Values(v) => v.blocks(),
            Buffer::Codes(c) => c.blocks(),
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Buffer::Values(v) => v.heap_bytes(),
            Buffer::Codes(c) => std::mem::size_of::<CodeArena>() + c.heap_bytes(),
        }
    }

    /// Room for `blocks`' rows (an estimate for code rows).
    pub(crate) fn reserve(&mut self, blocks: &[(usize, Packed)]) -> Result<()> {
        let rows: usize = blocks.iter().map(|(_, b)| b.n_rows()).sum();
        let nnz: u64 = blocks.iter().map(|(_, b)| b.nnz()).sum();
        self.reserve_rows(rows, nnz as usize)
    }

    /// Room for `rows` rows of `nnz` entries in all (an estimate for
    /// code rows, which grow past it as needed).
    pub(crate) fn reserve_rows(&mut self, rows: usize, nnz: usize) -> Result<()> {
        match self {
            Buffer::Values(v) => v.reserve(rows, nnz),
            Buffer::Codes(c) => match c.form() {
                RowCodes::Pairs => c.reserve(rows, nnz),
                // About a code for every three entries (flights3m 2.0
                // codes for 6.0 entries, census 1.1 for 6.5).
                RowCodes::Nodes => c.reserve(rows, nnz / 3),
            },
        }
    }

    pub(crate) fn push_block(
        &mut self,
        block: &PackedBlock,
        first_row: u64,
        s: &mut BufferScratch,
    ) -> Result<()> {
        match self {
            Buffer::Values(v) => v.push_block(block, first_row, &mut s.decoder),
            Buffer::Codes(c) => c.push_block(block, first_row, &mut s.arena),
        }
    }

    pub(crate) fn append(&mut self, other: &Buffer) -> Result<()> {
        match (self, other) {
            (Buffer::Values(a), Buffer::Values(b)) => a.append(b),
            (Buffer::Codes(a), Buffer::Codes(b)) => a.append(b),
            _ => unreachable!("the buffers of one loader are of one kind"),
        }
    }

    /// Done with pushing: padding for the value gather, the table of pair
    /// codes for the batches.
    pub(crate) fn finish(&mut self) -> Result<()> {
        match self {
            Buffer::Values(v) => v.finish(),
            Buffer::Codes(c) => {
                c.freeze();
                Ok(())
            }
        }
    }

    /// The units (row indices, or record offsets) of the `i`-th block
    /// held, appended to `out` in file order.
    pub(crate) fn block_units(&self, i: usize, out: &mut Vec<u32>) {
        match self {
            Buffer::Values(v) => v.block_rows(i, out),
            Buffer::Codes(c) => c.block_records(i, out),
        }
    }

    /// Decodes `blocks` (in order) into this buffer, cleared first.
    pub(crate) fn decode(
        &mut self,
        blocks: &[(usize, Packed)],
        plan: &Plan,
        s: &mut BufferScratch,
    ) -> Result<()> {
        self.clear();
        self.reserve(blocks)?;
        for (b, block) in blocks {
            self.push_block(block, plan.block_first_row[*b], s)?;
        }
        Ok(())
    }
}

/// Checks what decoding `blocks` at once may take against the decode
/// budget and the buffer's `u32` offsets, before anything is decoded.
pub(super) fn check_buffer(blocks: &[(usize, Packed)], path: &std::path::Path) -> Result<()> {
    let n: usize = blocks.iter().map(|(_, b)| b.n_rows()).sum();
    let nnz: u64 = blocks.iter().map(|(_, b)| b.nnz()).sum();
    // Known before anything is decoded: the pages' counts were validated
    // with the block.
    crate::limits::check_decode_nnz(nnz, "non-zeros one buffer's pages decode to").map_err(
        |error| {
            let (first, last) = (blocks[0].0, blocks[blocks.len() - 1].0);
            Error::InFile {
                path: path.display().to_string(),
                section: format!("a buffer of {} blocks ({first} to {last})", blocks.len()),
                offset: 0,
                error: Box::new(error),
            }
        },
    )?;
    if u32::try_from(n).is_err() || u32::try_from(nnz).is_err() {
        return Err(Error::TooLarge {
            what: "rows or non-zeros of one buffer (u32 offsets)",
            value: (n as u64).max(nnz),
            max: u32::MAX as u64,
        });
    }
    Ok(())
}

/// Decodes a buffer's `blocks`: the two halves at once, the second on
/// another thread of the library's pool ([`crate::parallel`], which a
/// forked DataLoader worker starts again for itself): when the trainer
/// waits for the loader, its core is free for that half.
pub(super) fn decode_buffer(
    blocks: &[(usize, Packed)],
    (buffer, side): (&mut Buffer, &mut Buffer),
    scratch: &mut (BufferScratch, BufferScratch),
    plan: &Plan,
    path: &std::path::Path,
) -> Result<()> {
    if blocks.is_empty() {
        buffer.clear();
        return Ok(());
    }
    check_buffer(blocks, path)?;
    let (first, second) = blocks.split_at(blocks.len() / 2);
    let (s0, s1) = (&mut scratch.0, &mut scratch.1);
    let (a, b) = crate::parallel::join(
        || buffer.decode(first, plan, s0),
        || side.decode(second, plan, s1),
    );
    a?;
    b?;
    buffer.append(side)?;
    buffer.finish()
}

/// The whole file decoded into one buffer, its blocks read from `feed`
/// (every block, in file order).
pub(super) fn whole_file<S: Source + 'static>(
    feed: Option<&mut Feed<S>>,
    plan: &Plan,
    path: &std::path::Path,
) -> Result<Buffer> {
    let mut buffer = Buffer::new(plan.rows, plan.trace);
    let Some(feed) = feed else {
        return Ok(buffer);
    };
    let mut scratch = BufferScratch::default();
    let mut first = true;
    while let Some(next) = feed.next() {
        let (b, block, _) = next?;
        if first {
            buffer.reserve_rows(plan.n_rows as usize, plan.nnz as usize)?;
            first = false;
        }
        check_buffer(&[(b, Arc::clone(&block))], path)?;
        buffer.push_block(&block, plan.block_first_row[b], &mut scratch)?;
    }
    buffer.finish()?;
    Ok(buffer)
}
