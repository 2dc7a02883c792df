//! The buffer's rows as codes into resident dictionaries: what the row
//! pipeline shuffles when the file's pages are TOC (`rows.rs`).
//!
//! Each row is one record of 16-bit words, one after the other:
//!
//! ```text
//! record = count slot label [row] codes
//! count  = n (one word, below 0xFFFF) | 0xFFFF lo hi (n as 32 bits)
//! slot   = the dictionary's index in the arena
//! label  = an id into the arena's label values | 4 words, the f64's bits
//! row    = 4 words, the row's number in the file (only when tracing)
//! codes  = n words | 2n words (lo, hi) when the arena is wide
//! ```
//!
//! A record is found by the offset of its first word, which is all the
//! epoch's order holds: a shuffled mini-batch reads each of its rows with
//! one access where it lies (on flights3m 10 bytes a row, against 72 for
//! decoded values), and the labels of a classifier (a handful of values)
//! cost a word. Codes are 16 bits while every dictionary's ids fit, which
//! on the shared sets they do; the arena widens itself (rewriting what it
//! holds) when one does not.
//!
//! Two forms of codes, chosen per loader by the form rule measured on
//! sampled mini-batches (`rows.rs`): [`RowCodes::Nodes`] keeps a row's
//! codes as its page has them (page nodes resolved, `codec/code_rows.rs`),
//! for batches whose tree saves the kernels work; [`RowCodes::Pairs`]
//! writes each row out against its dictionary's first layer (one code, a
//! pair, per entry) once, when the rows are the kernels' cheaper form:
//! each epoch's batches then expand without walking a tree (on flights3m,
//! whose batches all go to their rows, 180 ns a row walked against a few
//! for the pairs).

mod append;
#[cfg(test)]
mod append_tests;
mod gather;
mod record;
#[cfg(test)]
mod seen_tests;
#[cfg(test)]
mod tests;

use record::{split4, Head, Widths, PLAIN_PAIRS};

use hashbrown::HashMap;

use super::huge::reserve_huge;
use crate::codec::{DecodeTree, RowDict};
use crate::dataset::{PackedBlock, PageDecoder};
use crate::error::{Error, Result};
use crate::formats::{Pair, PairTable};
use crate::limits::try_reserve;

const ARENA: &str = "the code rows of a buffer";
/// The first word of a record whose code count takes two more words.
const LONG_ROW: u16 = u16::MAX;
/// A word of padding between records (see [`CodeArena::push_row`]).
const FILLER: u16 = u16::MAX - 1;
/// Bytes of a cache line: a record no longer than this never straddles
/// two.
const LINE: usize = 64;
/// A record's step (see [`CodeArena::steps`]) too long for a byte.
const FAR: u8 = u8::MAX;
/// Most distinct labels an arena keeps as ids (more: each row's label
/// inline).
const MAX_LABELS: usize = u16::MAX as usize;

/// How an arena writes a row's codes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowCodes {
    /// The page's codes, page nodes resolved into the dictionary's.
    Nodes,
    /// One first-layer code (a pair) per entry.
    Pairs,
}

/// Where a block's rows are in an arena.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockSpan {
    /// The block's number in its file.
    pub(crate) block: usize,
    /// The first word of its first record.
    pub(crate) start: u32,
    /// Its rows.
    pub(crate) rows: u32,
}

/// Rows as code records (see the module docs).
#[derive(Debug)]
pub(crate) struct CodeArena {
    words: Vec<u16>,
    widths: Widths,
    dicts: Vec<RowDict>,
    /// Pair codes: the distinct pairs of every dictionary's first layer,
    /// once each, and each dictionary's pair ids into it (`global[s][p]`
    /// for slot `s`'s pair `p`). A shuffled batch's rows name
    /// dictionaries all over the file; the segments of a file share most
    /// of their pairs, so one small table serves them all from the cache
    /// (flights3m: its 46 dictionaries' 72,404 pairs are N distinct), where
    /// looking entries up in each dictionary's arrays was half of the
    /// gather. Codes of this form are ids into it. The table outlives
    /// [`clear`](Self::clear) (a buffer's last rows, waiting for the next
    /// buffer's first in a mini-batch, keep their ids), and batches share
    /// it as a snapshot ([`table`](Self::table)).
    pairs: Vec<Pair>,
    pair_ids: HashMap<(u32, u64), u32>,
    snapshot: Option<PairTable>,
    global: Vec<Vec<u32>>,
    /// Slot of each dictionary held, by address.
    slot_of: HashMap<usize, u16>,
    label_values: Vec<f64>,
    label_ids: HashMap<u64, u16>,
    /// The last label looked up and its id: labels repeat from row to
    /// row (two on a binary task); checking it before the table's hash
    /// took a sixth off writing records (history section 45).
    last_label: Option<(u64, u16)>,
    form: RowCodes,
    rows: usize,
    /// Codes held (not counting the records' other words).
    codes: usize,
    blocks: Vec<BlockSpan>,
    /// Each record's step: where it starts less where the record before
    /// it in its block starts (the block's first: less the block's
    /// start), or [`FAR`] where that is [`FAR`] words or more. Listing a
    /// whole-file buffer's records is what the trainer waits for at the
    /// start of every epoch; walked from the records themselves it read
    /// the whole arena as a chain of dependent loads (flights3m: 10-16
    /// ms an epoch, 3M records in 61 MiB), read from here it reads a byte
    /// a record (`docs/archive/RESULTS-HISTORY.md`, section 44).
    steps: Vec<u8>,
    /// The index in `steps` of each block's first record.
    block_first: Vec<u32>,
    /// Where the last record written starts (its block's start before
    /// the block's first record).
    last_start: usize,
}

/// Scratch of one thread that decodes pages into an arena.
#[derive(Debug, Default)]
pub(crate) struct ArenaScratch {
    decoder: PageDecoder,
    codes: Vec<u32>,
    ends: Vec<u32>,
    labels: Vec<f64>,
    expanded: Vec<u32>,
}

impl ArenaScratch {
    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.decoder.heap_bytes()
            + 4 * (self.codes.capacity() + self.ends.capacity() + self.expanded.capacity())
            + 8 * self.labels.capacity()
    }
}

impl CodeArena {
    /// An empty arena writing rows as `form`, with each row's number in
    /// the file when `trace`.
    pub(crate) fn new(form: RowCodes, trace: bool) -> CodeArena {
        CodeArena {
            words: Vec::new(),
            widths: Widths {
                slots: form == RowCodes::Nodes,
                wide: false,
                inline_labels: false,
                trace,
            },
            dicts: Vec::new(),
            pairs: Vec::new(),
            pair_ids: HashMap::new(),
            snapshot: None,
            global: Vec::new(),
            slot_of: HashMap::new(),
            label_values: Vec::new(),
            label_ids: HashMap::new(),
            last_label: None,
            form,
            rows: 0,
            codes: 0,
            blocks: Vec::new(),
            steps: Vec::new(),
            block_first: Vec::new(),
            last_start: 0,
        }
    }

    /// Empties the arena, keeping its capacity and its settings.
    pub(crate) fn clear(&mut self) {
        self.words.clear();
        // Pair codes keep the segments' dictionaries and their ids into
        // the table, which outlives the rows: a buffer of the next blocks
        // would map every pair of each dictionary again (46 dictionaries
        // of about 1,600 pairs, per half of each of flights3m's 10
        // buffers an epoch). Slots matter to no record of this form. A
        // page's own first layer is one page's: those go.
        let keep = self.form == RowCodes::Pairs
            && self.dicts.iter().all(|d| matches!(d, RowDict::Shared(_)));
        if !keep {
            self.dicts.clear();
            self.global.clear();
            self.slot_of.clear();
        }
        self.label_values.clear();
        self.label_ids.clear();
        self.last_label = None;
        self.rows = 0;
        self.codes = 0;
        self.blocks.clear();
        self.steps.clear();
        self.block_first.clear();
    }

    /// Rows held.
    pub(crate) fn n_rows(&self) -> usize {
        self.rows
    }

    /// The table of pair codes as batches share it, taken anew when pairs
    /// were added since the last call.
    pub(crate) fn freeze(&mut self) {
        if self.snapshot.as_ref().map_or(0, |t| t.len()) != self.pairs.len() {
            self.snapshot = Some(self.pairs.as_slice().into());
        }
    }

    /// The table of pair codes as of the last [`freeze`](Self::freeze).
    pub(crate) fn table(&self) -> Option<&PairTable> {
        self.snapshot.as_ref()
    }

    /// Codes held, in all rows.
    pub(crate) fn code_words(&self) -> usize {
        self.codes
    }

    /// The blocks held, in the order they were pushed.
    pub(crate) fn blocks(&self) -> &[BlockSpan] {
        &self.blocks
    }

    /// The form of its codes.
    pub(crate) fn form(&self) -> RowCodes {
        self.form
    }

    /// Heap bytes held: the records, the dictionary list (a page's own
    /// first layer counted; a segment's dictionary is the dataset's) and
    /// the tables.
    pub(crate) fn heap_bytes(&self) -> usize {
        let dicts: usize = self.dicts.iter().map(RowDict::own_bytes).sum();
        2 * self.words.capacity()
            + dicts
            + std::mem::size_of::<RowDict>() * self.dicts.capacity()
            + std::mem::size_of::<Pair>()
                * (self.pairs.capacity() + self.snapshot.as_ref().map_or(0, |t| t.len()))
            + 24 * self.pair_ids.capacity()
            + 4 * self.global.iter().map(Vec::capacity).sum::<usize>()
            + 16 * (self.slot_of.capacity() + self.label_ids.capacity())
            + 8 * self.label_values.capacity()
            + std::mem::size_of::<BlockSpan>() * self.blocks.capacity()
            + self.steps.capacity()
            + 4 * self.block_first.capacity()
    }

    /// Reserves room for about `rows` rows of `codes` codes in all (an
    /// estimate: the arena grows past it as needed).
    pub(crate) fn reserve(&mut self, rows: usize, codes: usize) -> Result<()> {
        let per_row = self.widths.record_words(0);
        let width = if self.widths.wide { 2 } else { 1 };
        let words = rows
            .saturating_mul(per_row)
            .saturating_add(codes.saturating_mul(width));
        // The padding that keeps records within cache lines, about a
        // word in 16 (flights3m's pair codes: one estimated exactly, the
        // padding made the arena grow by half at its last block, a copy
        // of the whole file's rows at the loader's peak).
        let padding = words / 16 + LINE;
        try_reserve(&mut self.steps, rows, ARENA)?;
        reserve_huge(&mut self.words, words.saturating_add(padding), ARENA)
    }

    /// Appends every row of `block` (validated, TOC pages), whose first
    /// row is row `first_row` of the file.
    ///
    /// # Errors
    /// As [`PackedBlock::decode_page_codes`]; [`Error::TooLarge`] past
    /// 2^32 words or 2^16 dictionaries; [`Error::OutOfMemory`].
    pub(crate) fn push_block(
        &mut self,
        block: &PackedBlock,
        first_row: u64,
        s: &mut ArenaScratch,
    ) -> Result<()> {
        self.open_block(block.number())?;
        let mut row = first_row;
        for j in 0..block.n_pages() {
            s.codes.clear();
            s.ends.clear();
            s.labels.clear();
            let out = (&mut s.codes, &mut s.ends, &mut s.labels);
            let dict = block.decode_page_codes(j, &mut s.decoder, out)?;
            let slot = self.slot(dict)?;
            let mut from = 0usize;
            for (i, &end) in s.ends.iter().enumerate() {
                let codes = &s.codes[from..end as usize];
                from = end as usize;
                let codes = match self.form {
                    RowCodes::Nodes => codes,
                    RowCodes::Pairs => {
                        let t = self.dicts[slot as usize].tree();
                        // A row's codes name nodes anywhere in a dictionary
                        // larger than the cache: the walks waited for a
                        // miss per code and per parent (half of a
                        // streamed epoch on flights3m). The nodes of the
                        // row `PREFETCH_ROWS` ahead are fetched meanwhile,
                        // and the parents of those of the row half as far
                        // ahead (fetched by then).
                        for (k, parents) in [(PREFETCH_ROWS, false), (PREFETCH_ROWS / 2, true)] {
                            let row = |r: usize| s.ends.get(r).map(|&e| e as usize);
                            let (Some(lo), Some(hi)) = (row(i + k - 1), row(i + k)) else {
                                continue;
                            };
                            for &c in s.codes.get(lo..hi).unwrap_or(&[]) {
                                let node = if parents { t.key_and_parent(c).1 } else { c };
                                t.prefetch_node(node);
                            }
                        }
                        let global = &self.global[slot as usize];
                        expand_pairs(t, global, codes, &mut s.expanded)?;
                        &s.expanded[..]
                    }
                };
                self.push_row(slot, s.labels[i], row, codes)?;
                row += 1;
            }
        }
        Ok(())
    }

    /// Starts block `block`'s span at the next record.
    fn open_block(&mut self, block: usize) -> Result<()> {
        let start = u32::try_from(self.words.len()).map_err(|_| Error::TooLarge {
            what: "words of a buffer's code rows (u32 offsets)",
            value: self.words.len() as u64,
            max: u32::MAX as u64,
        })?;
        try_reserve(&mut self.blocks, 1, ARENA)?;
        try_reserve(&mut self.block_first, 1, ARENA)?;
        self.blocks.push(BlockSpan {
            block,
            start,
            rows: 0,
        });
        // Records take two words or more, so fewer than 2^31 of them
        // fit the offsets checked above.
        self.block_first.push(self.rows as u32);
        self.last_start = self.words.len();
        Ok(())
    }

    /// The id of `pair` in the table of pair codes, added if new.
    fn pair_id(&mut self, pair: Pair) -> Result<u32> {
        let next = self.pairs.len() as u32;
        let id = *self
            .pair_ids
            .entry((pair.col, pair.val.to_bits()))
            .or_insert(next);
        if id == next {
            try_reserve(&mut self.pairs, 1, ARENA)?;
            self.pairs.push(pair);
        }
        Ok(id)
    }

    /// The slot of `dict`, registering it if new.
    fn slot(&mut self, dict: RowDict) -> Result<u16> {
        let key = dict.key();
        if let Some(&slot) = self.slot_of.get(&key) {
            return Ok(slot);
        }
        let slot = u16::try_from(self.dicts.len()).map_err(|_| Error::TooLarge {
            what: "dictionaries in one buffer of code rows",
            value: self.dicts.len() as u64 + 1,
            max: u16::MAX as u64 + 1,
        })?;
        if self.form == RowCodes::Pairs {
            let (cols, vals) = dict.tree().pairs();
            let mut ids = Vec::new();
            try_reserve(&mut ids, cols.len(), ARENA)?;
            for (&col, &val) in cols.iter().zip(vals) {
                ids.push(self.pair_id(Pair { val, col })?);
            }
            try_reserve(&mut self.global, 1, ARENA)?;
            self.global.push(ids);
        }
        try_reserve(&mut self.dicts, 1, ARENA)?;
        self.dicts.push(dict);
        self.slot_of.insert(key, slot);
        Ok(slot)
    }

    /// Appends one record to the last block opened.
    #[inline]
    fn push_row(&mut self, slot: u16, label: f64, row: u64, codes: &[u32]) -> Result<()> {
        let widen = !self.widths.wide && codes.iter().fold(0, |m, &c| m | c) > u16::MAX as u32;
        let mut id = None;
        if !self.widths.inline_labels {
            id = self.label_id(label);
        }
        if widen || (id.is_none() && !self.widths.inline_labels) {
            self.widen_for(widen, label)?;
            if !self.widths.inline_labels {
                id = self.label_id(label);
            }
        }
        let n = codes.len();
        let words = self.widths.record_words(n);
        if self.words.capacity() - self.words.len() < words + LINE / 2
            || self.steps.len() == self.steps.capacity()
        {
            self.grow(words)?;
        }
        // A record that would straddle two cache lines starts on the next
        // line (it fits one): a shuffled batch then reads each row with
        // one miss, not two for a quarter of them (flights3m's 16-byte
        // records: 41 against 15 ns a row to read them, in the cache's
        // order of magnitude of the padding, 1.5 bytes a row on average).
        let at = self.words.as_ptr() as usize + 2 * self.words.len();
        if 2 * words <= LINE && at % LINE + 2 * words > LINE {
            let pad = (LINE - at % LINE) / 2;
            self.words.resize(self.words.len() + pad, FILLER);
        }
        let step = self.words.len() - self.last_start;
        self.steps.push(u8::try_from(step).unwrap_or(FAR));
        self.last_start = self.words.len();
        let w = &mut self.words;
        if n < FILLER as usize {
            w.push(n as u16);
        } else {
            w.extend_from_slice(&[LONG_ROW, n as u16, (n >> 16) as u16]);
        }
        if self.widths.slots {
            w.push(slot);
        }
        match id {
            Some(id) => w.push(id),
            None => w.extend_from_slice(&split4(label.to_bits())),
        }
        if self.widths.trace {
            w.extend_from_slice(&split4(row));
        }
        if self.widths.wide {
            for &c in codes {
                w.extend_from_slice(&[c as u16, (c >> 16) as u16]);
            }
        } else {
            w.extend(codes.iter().map(|&c| c as u16));
        }
        self.rows += 1;
        self.codes += n;
        if let Some(b) = self.blocks.last_mut() {
            b.rows += 1;
        }
        Ok(())
    }

    /// Room for a record of `words` words and its step (the growth of
    /// [`push_row`](Self::push_row), out of its way).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, words: usize) -> Result<()> {
        if self.words.capacity() - self.words.len() < words + LINE / 2 {
            let grow = (words + LINE / 2).max(self.words.len() / 2);
            reserve_huge(&mut self.words, grow, ARENA)?;
        }
        let more = (self.steps.len() / 2).max(64);
        try_reserve(&mut self.steps, more, ARENA)
    }

    /// The id of `label` in the table, added if new; `None` when the
    /// table is full.
    fn label_id(&mut self, label: f64) -> Option<u16> {
        let bits = label.to_bits();
        if let Some((last, id)) = self.last_label {
            if last == bits {
                return Some(id);
            }
        }
        if let Some(&id) = self.label_ids.get(&bits) {
            self.last_label = Some((bits, id));
            return Some(id);
        }
        if self.label_values.len() >= MAX_LABELS {
            return None;
        }
        let id = self.label_values.len() as u16;
        self.label_values.push(label);
        self.label_ids.insert(bits, id);
        self.last_label = Some((bits, id));
        Some(id)
    }
}

#[cfg(test)]
impl CodeArena {
    /// Every record of the arena's blocks read back, in order: its head
    /// and its codes (fillers, which depend on where the allocator put
    /// the words, left out).
    fn read_back(&self) -> Vec<(Head, Vec<u32>)> {
        let mut out = Vec::new();
        for i in 0..self.blocks.len() {
            let mut offsets = Vec::new();
            self.block_records(i, &mut offsets);
            for o in offsets {
                let (head, _) = self
                    .widths
                    .head(&self.words, &self.label_values, o as usize);
                let mut codes = Vec::new();
                self.widths.codes_into(&self.words, &head, &mut codes);
                out.push((head, codes));
            }
        }
        out
    }
}

/// Rows ahead whose dictionary nodes [`CodeArena::push_block`] prefetches.
const PREFETCH_ROWS: usize = 6;

/// A row's codes written out as pair codes (`global`'s ids of its
/// dictionary's first-layer pairs, in order). Each code's walk up the
/// tree writes its keys' ids as it goes, last first, and turns them
/// round: one pass, where writing the keys in place and then mapping
/// them took two and a fill of the room first.
fn expand_pairs(t: &DecodeTree, global: &[u32], codes: &[u32], out: &mut Vec<u32>) -> Result<()> {
    out.clear();
    for &c in codes {
        let d = t.depth_of(c);
        try_reserve(out, d, ARENA)?;
        let start = out.len();
        let mut node = c;
        for _ in 0..d {
            let (key, parent) = t.key_and_parent(node);
            out.push(global.get(key as usize).copied().unwrap_or(0));
            node = parent;
        }
        out[start..].reverse();
    }
    Ok(())
}

/// The first offset from `at` that is not filler: where a block's first
/// record starts.
fn past_fillers(words: &[u16], mut at: usize) -> usize {
    while words.get(at) == Some(&FILLER) {
        at += 1;
    }
    at
}
