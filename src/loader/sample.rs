//! What the row pipeline keeps of each row, chosen when a loader opens
//! from a few blocks spread over the file: codes into the segments'
//! dictionaries where every segment has one (TOC pages of a version-3 or
//! version-4 file), else decoded values; and, for codes, which form
//! (`arena.rs`). Sampled batches of the file's rows are made into TOC
//! batches as the loader would make them, and the kernels' form rule
//! (`kernels/form.rs`) says which of a tree or the rows costs them less
//! work: where the rows win on every sampled batch, each row is written
//! out against its dictionary's first layer once, when the buffer is
//! made, rather than walked out of the tree for every batch of every
//! epoch. The same sample gives the buffer's bytes per row, from which
//! the loader decides whether the whole file fits its memory budget.

use std::sync::Arc;

use super::arena::{ArenaScratch, CodeArena, RowCodes};
use super::options::RowForm;
use super::resident::packed_bytes;
use super::rows::RowsKind;
use crate::codec::{BatchForm, CodeBatch, CodeBatchBuilder, DecodeTree, RowsOut};
use crate::dataset::{Dataset, Source};
use crate::rng::Rng;

/// Most blocks read to decide, spread over the file: enough for
/// [`SAMPLE_ROWS`] batches' worth of rows, so that a sampled batch mixes
/// rows as a shuffled one does (from 8 blocks, census batches found trees
/// that whole-file batches did not).
const SAMPLE_BLOCKS: usize = 64;
/// Rows to sample, in mini-batches.
const SAMPLE_ROWS: usize = 8;
/// Mini-batches made from their rows.
const SAMPLE_BATCHES: usize = 8;
/// Rows are kept as codes of the pages (for trees) only where the sampled
/// batches' trees cost the kernels at most this share of their entries;
/// otherwise as pair codes. The kernels' own rule weighs the tree's work
/// against the entries alone (`kernels/form.rs`), but keeping trees also
/// costs building one for every batch: on census, whose batches' trees
/// cost 0.92 to 1.05 times their entries, the builder was half of the
/// loader's time, and the loader three times the trainer's.
const TREE_SHARE: f64 = 0.75;

/// What a loader's buffers keep, and what that costs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowsChoice {
    pub(crate) kind: RowsKind,
    /// Heap bytes a row takes in a buffer of that kind (its share of the
    /// records or arrays, and of the epoch's order).
    pub(crate) bytes_per_row: f64,
    /// Heap bytes a block takes while resident (compressed), per row.
    pub(crate) packed_per_row: f64,
}

/// Chooses what the buffers of a loader over `ds` keep (see the module
/// docs), or takes what `asked` names; `batch_rows` and `trace` as the
/// loader's.
pub(crate) fn choose_rows<S: Source>(
    ds: &Dataset<S>,
    (batch_rows, trace): (usize, bool),
    asked: RowForm,
) -> RowsChoice {
    let info = ds.info();
    let (dicts, segments) = ds.n_segments();
    let rows = info.n_rows.max(1) as f64;
    // Decoded values: a column and a value per entry, an offset and a
    // label per row, and a row's place in the order.
    let values = RowsChoice {
        kind: RowsKind::Values,
        bytes_per_row: (12 * info.nnz) as f64 / rows + 16.0 + if trace { 8.0 } else { 0.0 },
        packed_per_row: info.file_bytes as f64 / rows,
    };
    let toc = info.format.level().is_some();
    let auto_values = segments == 0 || dicts < segments;
    match asked {
        RowForm::Values => return values,
        _ if !toc => return values,
        RowForm::Auto if auto_values => return values,
        _ => {}
    }
    let n = ds.n_blocks();
    let mut arena = CodeArena::new(RowCodes::Nodes, trace);
    let mut scratch = ArenaScratch::default();
    let (mut packed, mut first_row) = (0usize, 0u64);
    let per_block = (info.n_rows as usize).div_ceil(n.max(1)).max(1);
    let blocks = (SAMPLE_ROWS * batch_rows)
        .div_ceil(per_block)
        .clamp(1, SAMPLE_BLOCKS.min(n));
    for k in 0..blocks {
        // Spread over the file.
        let b = k * n / blocks;
        let block = match ds.read_block(b).and_then(|block| block.pack()) {
            Ok(block) => Arc::new(block),
            // The epoch will report it; codes are the form of such files.
            Err(_) => continue,
        };
        packed += packed_bytes(&block);
        if arena.push_block(&block, first_row, &mut scratch).is_err() {
            continue;
        }
        first_row += block.n_rows() as u64;
    }
    let sampled = arena.n_rows();
    if sampled == 0 {
        let form = match asked {
            RowForm::PairCodes => RowCodes::Pairs,
            _ => RowCodes::Nodes,
        };
        return RowsChoice {
            kind: RowsKind::Codes(form),
            ..values
        };
    }
    let form = match asked {
        RowForm::Codes => RowCodes::Nodes,
        RowForm::PairCodes => RowCodes::Pairs,
        _ if rows_win(&arena, batch_rows) => RowCodes::Pairs,
        _ => RowCodes::Nodes,
    };
    // A record's words: three of header (four more when tracing), then
    // its codes, or one pair per entry; its step (a byte, `arena.rs`) and
    // its place in the epoch's order (4 bytes).
    let header = if trace { 7.0 } else { 3.0 };
    let code_words = match form {
        RowCodes::Nodes => arena.code_words() as f64 / sampled as f64,
        RowCodes::Pairs => info.nnz as f64 / rows,
    };
    RowsChoice {
        kind: RowsKind::Codes(form),
        bytes_per_row: 2.0 * (header + code_words) + 5.0,
        packed_per_row: packed as f64 / sampled as f64,
    }
}

/// Whether the trees of [`SAMPLE_BATCHES`] sampled mini-batches of the
/// arena's rows cost the kernels more than [`TREE_SHARE`] of their
/// entries.
fn rows_win(arena: &CodeArena, batch_rows: usize) -> bool {
    let mut records = Vec::new();
    for i in 0..arena.blocks().len() {
        arena.block_records(i, &mut records);
    }
    let mut rng = Rng::new(0x005a_3b1e);
    let mut builder = CodeBatchBuilder::default();
    let (mut tree, mut rows) = (DecodeTree::default(), RowsOut::default());
    let (mut batch, mut map) = (CodeBatch::default(), Vec::new());
    let (mut labels, mut trace) = (Vec::new(), Vec::new());
    let (mut work, mut entries) = (0u64, 0u64);
    for _ in 0..SAMPLE_BATCHES {
        rng.shuffle(&mut records);
        let take = batch_rows.min(records.len());
        batch.clear();
        let out = (&mut labels, &mut trace);
        if arena
            .gather_codes(&records[..take], &mut batch, &mut map, out)
            .is_err()
        {
            return false;
        }
        let n_cols = tree.n_cols();
        if builder
            .build(
                &mut batch,
                n_cols,
                Some(BatchForm::Rows),
                (&mut tree, &mut rows),
            )
            .is_err()
        {
            return false;
        }
        let (w, e) = builder.work();
        work += w;
        entries += e;
    }
    work as f64 > TREE_SHARE * entries as f64
}
