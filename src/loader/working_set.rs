//! The default resident budget of a loader over a given file
//! ([`memory_budget_for`]): what [`budget`](super::budget) reads of the
//! memory available, less the loader's own working set, estimated from its
//! options and a few sampled blocks.

use std::path::Path;

use super::budget::{
    available_under, fit_file, MemoryBudget, DEFAULT_MEMORY, PROCESS_BYTES, WHOLE_FILE_SHARE,
};
use super::options::{Buffer, LoaderOptions, Mode, Strategy};
use super::resident::packed_bytes;
use crate::dataset::{Dataset, Source};

/// Heap bytes per encoded byte assumed when no block can be sampled
/// (above the 10 to 13 of TOC decode trees, the largest measured).
const FALLBACK_EXPANSION: f64 = 16.0;

/// The default budget for a loader over `dataset` with `options` (whose
/// `memory` is not read). What `tocpile train` and `tocpile bench train`
/// use when `--memory` is not given. Of the memory available:
///
/// 1. the loader's own working set and [`PROCESS_BYTES`] are set aside;
/// 2. of what is left, half at most (see the module docs), and at most
///    [`DEFAULT_MEMORY`](super::DEFAULT_MEMORY);
/// 3. when the whole file fits what is left but not beside that budget
///    of resident blocks, 0: the file is kept in the page cache and every
///    block streams. Resident blocks take `e` heap bytes per byte of file
///    they replace in the cache (`e` measured on sampled blocks: about
///    1.05, the block's bytes and a page index, since resident blocks stay
///    compressed), so they could share the room only as `R + (file - R /
///    e) <= left`: little saved, and a small misestimate evicts part of
///    the file, re-read from the disk every epoch. (Measured on flights3m
///    in a cgroup of twice the TOC file when resident pages were decode
///    trees, `e` 10 to 13: 52 MiB of trees pushed the file out of the
///    cache, 42% of it re-read every epoch.)
///
/// The working set is what the loader holds while streaming, resident
/// pages or not: the CorgiPile (Block-Only, Sliding-Window, MRS) buffer,
/// twice with double buffering (the producer fills the next buffer while
/// the current one drains), the worker's whole share for Epoch Shuffle,
/// plus the read-ahead groups (a buffer's worth for CorgiPile and Epoch
/// Shuffle, validated while the current buffer trains), as compressed
/// blocks; and what the buffer decodes to: in exact mode the buffer's rows
/// decoded into one arena (12 bytes a non-zero, 12 a row, up to 1.5
/// times that while its two halves are joined), twice with double
/// buffering (the next buffer is decoded while this one drains), in page
/// mode its pages' decode trees. Both are measured on a few sampled blocks. On flights3m
/// with the defaults (2 KiB blocks, a 10% buffer, exact mode; 270,000
/// rows and 1.6M non-zeros a buffer) that is about 79 MiB: 34 for each
/// of the two decoded buffers, 10 for three buffers' worth of
/// compressed blocks.
pub fn memory_budget_for<S: Source>(dataset: &Dataset<S>, options: &LoaderOptions) -> MemoryBudget {
    budget_within(dataset, options, available_under(Path::new("/")))
}

/// [`memory_budget_for`] for `available` bytes of memory.
pub(crate) fn budget_within<S: Source>(
    dataset: &Dataset<S>,
    options: &LoaderOptions,
    available: Option<(u64, super::MemorySource)>,
) -> MemoryBudget {
    let e = estimate(dataset, options);
    let budget = fit_file(
        MemoryBudget::after_working_set(available, e.working_set + PROCESS_BYTES),
        e.file_bytes,
        e.expansion,
    );
    whole_file(budget, dataset, options, &e)
}

/// Step 4 of [`memory_budget_for`]: with [`Buffer::Auto`], a budget
/// raised to the whole file's buffer when that fits [`WHOLE_FILE_SHARE`]
/// of the memory available less [`PROCESS_BYTES`] and the whole-file
/// build's read-ahead (the buffer's form and size measured as the loader
/// will: `sample::choose_rows`). One worker only: workers in separate
/// processes each read the same memory available, and their shares
/// together would take it several times over.
fn whole_file<S: Source>(
    mut budget: MemoryBudget,
    dataset: &Dataset<S>,
    o: &LoaderOptions,
    e: &Estimate,
) -> MemoryBudget {
    let row_pipeline = !matches!(o.strategy, Strategy::SlidingWindow | Strategy::Mrs)
        && o.mode.choose(dataset.info(), o.batch_rows).mode == Mode::Exact;
    let Some(available) = budget.available else {
        return budget;
    };
    if o.buffer != Buffer::Auto || o.workers > 1 || !row_pipeline || dataset.n_blocks() == 0 {
        return budget;
    }
    let rows = super::sample::choose_rows(dataset, (o.batch_rows, o.trace), o.rows);
    let whole = (rows.bytes_per_row * dataset.info().n_rows as f64) as u64;
    if whole <= budget.bytes as u64 {
        return budget;
    }
    // The build reads ahead `feed::WHOLE_FILE_GROUPS` groups (and one per
    // read-ahead thread) of at least 64 KiB, validated (`e.expansion` heap
    // bytes per byte).
    let mean_block = e.file_bytes as f64 / dataset.n_blocks() as f64;
    let group = mean_block.max(super::ahead::GROUP_BYTES as f64);
    let groups = (super::feed::WHOLE_FILE_GROUPS.max(o.read_ahead) + 4) as f64;
    let ahead = (groups * group * e.expansion.max(1.0)) as u64;
    let room = available.saturating_sub(PROCESS_BYTES + ahead) as f64 * WHOLE_FILE_SHARE;
    if whole as f64 <= room && whole <= DEFAULT_MEMORY as u64 {
        budget.bytes = whole as usize;
        budget.whole_file = whole;
        budget.file_cache = 0;
    }
    budget
}

/// What [`memory_budget_for`] measures of a loader over a file.
struct Estimate {
    /// The loader's own working set in heap bytes.
    working_set: u64,
    /// The file's blocks in bytes.
    file_bytes: u64,
    /// Heap bytes of resident blocks per encoded byte.
    expansion: f64,
}

/// The loader's own working set in heap bytes (see [`memory_budget_for`]).
#[cfg(test)]
pub(crate) fn working_set_bytes<S: Source>(dataset: &Dataset<S>, o: &LoaderOptions) -> u64 {
    estimate(dataset, o).working_set
}

fn estimate<S: Source>(dataset: &Dataset<S>, o: &LoaderOptions) -> Estimate {
    let n_blocks = dataset.n_blocks();
    let file_bytes: u64 = (0..n_blocks).map(|b| dataset.block_bytes(b)).sum();
    if n_blocks == 0 {
        return Estimate {
            working_set: 0,
            file_bytes,
            expansion: 1.0,
        };
    }
    let mean_block = file_bytes as f64 / n_blocks as f64;
    let worker_blocks = n_blocks.div_ceil(o.workers.max(1));
    let buffer = match (o.strategy, o.buffer) {
        (Strategy::NoShuffle | Strategy::ShuffleOnce, _) => 0,
        (Strategy::EpochShuffle, _) => worker_blocks,
        (_, Buffer::Blocks(b)) => b,
        // The buffer when the whole file does not fit (when it does, the
        // whole file is what the budget holds).
        (_, Buffer::Auto) => {
            ((super::plan::AUTO_FRACTION * n_blocks as f64).ceil() as usize).max(1)
        }
        (_, Buffer::Fraction(f)) => ((f * n_blocks as f64).ceil() as usize).max(1),
    }
    .min(worker_blocks);
    let buffers = if o.double_buffer { 2 } else { 1 };
    // Read-ahead groups hold at least 64 KiB of the file each; CorgiPile
    // and Epoch Shuffle read a whole buffer ahead (`epoch::ahead_depth`),
    // and each read-ahead thread has one more group in the making.
    let group = (65536.0 / mean_block).ceil().max(1.0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4)) as f64;
    let ahead_groups = match o.strategy {
        // No read-ahead thread without double buffering.
        _ if !o.double_buffer => 0.0,
        Strategy::CorgiPile | Strategy::EpochShuffle => {
            (o.read_ahead as f64).max((buffer as f64 / group).ceil() + 1.0) + threads
        }
        _ => o.read_ahead as f64 + threads,
    };
    let mode = o.mode.choose(dataset.info(), o.batch_rows).mode;
    let e = sample(dataset, mode == Mode::Page);
    // Blocks held compressed (the buffers, the read-ahead), and what one
    // buffer (at least a block) decodes to.
    let held = ((buffers * buffer) as f64 + ahead_groups * group).min(n_blocks as f64);
    // With double buffering, exact mode decodes the next buffer while
    // the current one drains (`rows/fill.rs`): two decoded at once.
    let decoded_buffers = if o.double_buffer && mode == Mode::Exact {
        2.0
    } else {
        1.0
    };
    let decoded = decoded_buffers * (buffer.max(1) as f64).min(n_blocks as f64) * mean_block;
    Estimate {
        working_set: (held * mean_block * e.packed + decoded * e.decoded) as u64,
        file_bytes,
        expansion: e.packed,
    }
}

/// Heap bytes per encoded byte, from blocks spread over the file.
struct Expansion {
    /// Of a block kept compressed (resident, or read ahead).
    packed: f64,
    /// Of what a buffer of blocks is decoded to: exact mode's row arena,
    /// or page mode's decode trees.
    decoded: f64,
}

/// Samples up to 8 blocks spread over the file (or 1 MiB of it).
fn sample<S: Source>(dataset: &Dataset<S>, pages: bool) -> Expansion {
    let fallback = Expansion {
        packed: FALLBACK_EXPANSION,
        decoded: FALLBACK_EXPANSION,
    };
    let n = dataset.n_blocks();
    let samples = n.min(8);
    let (mut packed, mut decoded, mut bytes) = (0f64, 0f64, 0u64);
    for k in 0..samples {
        let b = k * n / samples;
        let Ok(block) = dataset.read_block(b) else {
            return fallback;
        };
        if pages {
            let Ok(pages) = block.pages() else {
                return fallback;
            };
            decoded += pages.iter().map(|p| p.heap_bytes()).sum::<usize>() as f64;
        }
        let Ok(block) = block.pack() else {
            return fallback;
        };
        packed += packed_bytes(&block) as f64;
        if !pages {
            // The row arena: a column id and a value per non-zero, an
            // offset and a label per row; the join of the two halves
            // holds half of it twice.
            decoded += 1.5 * (12.0 * block.nnz() as f64 + 12.0 * block.n_rows() as f64);
        }
        bytes += dataset.block_bytes(b);
        if bytes >= 1 << 20 {
            break;
        }
    }
    if bytes == 0 {
        return fallback;
    }
    Expansion {
        packed: packed / bytes as f64,
        decoded: decoded / bytes as f64,
    }
}
