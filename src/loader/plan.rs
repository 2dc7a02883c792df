//! A loader's plan: what its buffer is (the whole file, or a share of it
//! as CorgiPile's Algorithm 1 has it), what each row is kept as, and the
//! warnings a user should see, decided once when the loader opens.

use super::options::{Buffer, LoaderOptions, Mode, Strategy};
use super::rows::RowsKind;
use super::sample::{choose_rows, RowsChoice};
use super::{arena, BufferChoice, Plan};
use crate::dataset::{Dataset, Source};
use crate::formats::FormatKind;

/// The fewest blocks a [`Buffer::Fraction`] buffer holds (fewer when the
/// worker has fewer): below it the loader warns that one block's tuples
/// dominate each buffer (a small file, whose 10% is a block or two; the
/// memory it adds is a few blocks).
const MIN_FRACTION_BUFFER_BLOCKS: usize = 4;

/// Fraction of the file [`Buffer::Auto`] buffers when the whole file does
/// not fit the memory budget (the CorgiPile paper's default).
pub(super) const AUTO_FRACTION: f64 = 0.1;

pub(super) fn make_plan<T: Source>(
    ds: &Dataset<T>,
    o: &LoaderOptions,
    memory: usize,
) -> ((Plan, BufferChoice), Vec<String>) {
    let n_blocks = ds.n_blocks();
    let mut block_first_row = Vec::with_capacity(n_blocks);
    let mut row = 0u64;
    for b in 0..n_blocks {
        block_first_row.push(row);
        row += ds.block_rows(b);
    }
    let worker_blocks = (o.worker + 1) * n_blocks / o.workers - o.worker * n_blocks / o.workers;
    let fraction = |f: f64| {
        ((f * n_blocks as f64).ceil() as usize)
            .max(MIN_FRACTION_BUFFER_BLOCKS.min(worker_blocks))
            .max(1)
    };
    let choice = o.mode.choose(ds.info(), o.batch_rows);
    let mode = choice.mode;
    let row_pipeline =
        mode == Mode::Exact && !matches!(o.strategy, Strategy::SlidingWindow | Strategy::Mrs);
    let rows: RowsChoice = match row_pipeline {
        true => choose_rows(ds, (o.batch_rows, o.trace), o.rows),
        false => RowsChoice {
            kind: RowsKind::Values,
            bytes_per_row: 0.0,
            packed_per_row: 0.0,
        },
    };
    let whole_bytes = (rows.bytes_per_row * row as f64) as u64;
    // Decoded rows held at once are the decode budget's too (a buffer of
    // code rows decodes a mini-batch at a time, `limits::check_batch_nnz`):
    // a whole file past it is buffered as a fraction, or refused.
    let decoded_fit = !matches!(rows.kind, RowsKind::Values)
        || ds.info().nnz <= crate::limits::limits().max_decode_nnz;
    let fits = whole_bytes <= memory as u64 && decoded_fit;
    let buffer_blocks = match (o.strategy, o.buffer) {
        (Strategy::EpochShuffle, _) => worker_blocks.max(1),
        (_, Buffer::Auto) if row_pipeline && fits => worker_blocks.max(1),
        (_, Buffer::Auto) => fraction(AUTO_FRACTION),
        (_, Buffer::Blocks(b)) => b,
        // A fraction of the file, but at least MIN_FRACTION_BUFFER_BLOCKS
        // (or every block of the worker): on a small file 10% is one or two
        // blocks, a buffer in which one block's tuples dominate.
        (_, Buffer::Fraction(f)) => fraction(f),
    };
    // The row pipeline keeps the whole file when it fits, where that
    // leaves the order's law as asked: for the strategies whose order
    // does not depend on the buffer, and for a buffer of every block.
    let order_kept = !matches!(o.strategy, Strategy::CorgiPile);
    let whole = row_pipeline
        && fits
        && (order_kept || o.buffer == Buffer::Auto || buffer_blocks >= worker_blocks);
    // Sliding-Window and MRS hold a share of the units (rows, or pages).
    let units = |b: usize| match mode {
        Mode::Page => ds.block_pages(b),
        _ => ds.block_rows(b),
    };
    let total_units: u64 = (0..n_blocks).map(units).sum();
    let window_units = match o.buffer {
        Buffer::Auto => (AUTO_FRACTION * total_units as f64 / o.workers as f64).ceil() as usize,
        Buffer::Fraction(f) => (f * total_units as f64 / o.workers as f64).ceil() as usize,
        Buffer::Blocks(b) => (b as u64 * total_units / n_blocks.max(1) as u64) as usize,
    }
    .max(1);
    let mut warnings = Vec::new();
    // A buffer that holds every block of the worker shuffles all its rows
    // (one block of a one-block file is a full shuffle): nothing to warn.
    if o.strategy == Strategy::CorgiPile
        && buffer_blocks < worker_blocks
        && buffer_blocks < MIN_FRACTION_BUFFER_BLOCKS
    {
        warnings.push(format!(
            "the CorgiPile buffer holds {} of this worker's {worker_blocks} blocks: with a \
             handful of blocks, tuples of one block dominate each buffer and accuracy can \
             suffer; write the file with smaller blocks (block_bytes) or use a larger buffer",
            buffer_blocks
        ));
    }
    if mode == Mode::Page && ds.info().page_rows * 2 > o.batch_rows {
        warnings.push(format!(
            "page mode with {}-row pages and {}-row mini-batches: a mini-batch holds a single \
             page, so its rows all come from one block; write the file with pages of at most \
             half a mini-batch (page_rows), or use exact mode",
            ds.info().page_rows,
            o.batch_rows
        ));
    }
    let plan = Plan {
        strategy: o.strategy,
        mode,
        mode_choice: choice,
        batch_rows: o.batch_rows,
        buffer_blocks,
        window_units,
        seed: o.seed,
        worker: o.worker,
        double_buffer: o.double_buffer,
        read_ahead: o.read_ahead,
        trace: o.trace,
        format: o.format.unwrap_or(FormatKind::Csr),
        format_asked: o.format,
        rows: rows.kind,
        whole,
        n_cols: ds.info().n_cols,
        n_rows: row,
        nnz: ds.info().nnz,
        block_first_row,
        row_origin: None,
    };
    let buffer = BufferChoice {
        whole_file: whole,
        blocks: if whole { worker_blocks } else { buffer_blocks },
        rows: match rows.kind {
            RowsKind::Values => "decoded values",
            RowsKind::Codes(arena::RowCodes::Nodes) => "code rows",
            RowsKind::Codes(arena::RowCodes::Pairs) => "pair codes",
        },
        whole_bytes,
        memory,
    };
    ((plan, buffer), warnings)
}
