//! Physical encoding of a [`Level::Full`](super::Level::Full) batch (TOC
//! paper 3.2) and the per-batch choice of its logical form.
//!
//! Two candidates are sized exactly, and the smaller is written:
//! - the prefix tree: codes per row, the first layer (columns and value
//!   ids), the dictionary, the codes;
//! - flat rows (with [`Adaptive::flat_pages`](super::Adaptive)): pairs per
//!   row, every entry's column and value id, the same dictionary. This is
//!   CVI with bit packing (TOC paper section 5's CVI), so a batch is never
//!   larger than that form.
//!
//! For either, columns are stored as they are or, when smaller, as
//! escape-coded gaps (`gaps.rs`). The tree wins where rows share sequences
//! (one-hot data: the tree is 1.5 to 2.5 times smaller than flat rows);
//! flat rows win where they do not (mnist5k's pixels: the first layer holds
//! 60% of the entries, and the codes cost more than they save).

use super::encoder::Encoder;
use super::gaps::{best_width, write_escaped};
use super::layout::{FLAG_GAPS, FLAG_ID_GAPS, FLAG_INDEXED, FLAG_TREE};
use super::values::{packed_len, varint_len, Allowed};
use super::Packing;
use crate::sparse::SparseBatch;
use crate::wire::{bits_needed, write_packed, write_varint};

/// How one candidate stores its pair columns.
#[derive(Debug, Clone, Copy)]
enum Columns {
    /// Packed at this width.
    Plain(u8),
    /// Escape-coded gaps at this width.
    Gaps(u8),
}

impl Encoder {
    /// Writes `batch` (whose logical encoding is done) at `Level::Full`,
    /// after the version byte written by `encode_into`.
    pub(super) fn full(&mut self, batch: &SparseBatch, out: &mut Vec<u8>) {
        let adaptive = self.options.adaptive;
        let bytes = self.options.packing == Packing::Bytes;
        let version_at = out.len() - 1;
        self.index_values(bytes);

        // Tree candidate.
        let tree_cols = self.columns_of_tree(adaptive.gaps, bytes);
        let w_lens = self.width_of(&self.row_lens, 1);
        let w_ids = self.width_of(&self.ids, 0);
        let w_codes = self.width_of(&self.codes, 1);
        let n_first = self.first_cols.len() as u64;
        let tree_len = packed_len(self.row_lens.len() as u64, w_lens)
            + columns_len(tree_cols, &self.first_cols, &self.gaps)
            + packed_len(n_first, w_ids)
            + packed_len(self.codes.len() as u64, w_codes);

        // Flat candidate.
        let flat = adaptive.flat_pages.then(|| {
            let max_len = batch.offsets().windows(2).map(|w| w[1] - w[0]).max();
            let w_lens = self.width_for(max_len.unwrap_or(0) as u32, 1, batch.n_rows());
            let w_flat_ids =
                self.width_for(self.dict.len().saturating_sub(1) as u32, 0, batch.nnz());
            let cols = self.columns_of_rows(batch, adaptive.gaps, bytes);
            let len = packed_len(batch.n_rows() as u64, w_lens)
                + columns_len(cols, batch.cols(), &self.flat_gaps)
                + packed_len(batch.nnz() as u64, w_flat_ids);
            (len, w_lens, w_flat_ids, cols)
        });

        let v2 = |cols: Columns| matches!(cols, Columns::Gaps(_)) || self.dict.needs_v2();
        match flat {
            Some((flat_len, w_lens, w_ids, cols)) if flat_len < tree_len => {
                if v2(cols) {
                    out[version_at] = 2;
                }
                out.push(FLAG_INDEXED | gaps_flag(cols));
                write_varint(out, batch.n_cols() as u64);
                self.scratch.clear();
                self.scratch
                    .extend(batch.offsets().windows(2).map(|w| (w[1] - w[0]) as u32));
                write_packed(out, &self.scratch, w_lens);
                self.write_columns(out, cols, batch.cols(), true);
                self.scratch.clear();
                // Every entry's value id, through its first-layer pair.
                let ids = &self.ids;
                self.scratch
                    .extend(self.seq.iter().map(|&p| ids[p as usize - 1]));
                write_packed(out, &self.scratch, w_ids);
                self.dict.write(out);
            }
            _ => {
                if v2(tree_cols) {
                    out[version_at] = 2;
                }
                let flags_at = out.len();
                out.push(FLAG_TREE | FLAG_INDEXED | gaps_flag(tree_cols));
                write_varint(out, batch.n_cols() as u64);
                write_packed(out, &self.row_lens, w_lens);
                let first_cols = std::mem::take(&mut self.first_cols);
                self.write_columns(out, tree_cols, &first_cols, false);
                self.first_cols = first_cols;
                match self.id_gap_width(w_ids) {
                    Some(width) => {
                        // A version-2 flag.
                        out[version_at] = 2;
                        out[flags_at] |= FLAG_ID_GAPS;
                        write_escaped(out, &self.id_gaps, width, &mut self.scratch);
                    }
                    None => write_packed(out, &self.ids, w_ids),
                }
                self.dict.write(out);
                write_packed(out, &self.codes, w_codes);
            }
        }
    }

    /// Value indexing (3.2): a dictionary of the distinct first-layer
    /// values (every distinct value of the batch) and one id per
    /// first-layer pair.
    fn index_values(&mut self, bytes: bool) {
        self.dict.clear();
        self.ids.clear();
        for &v in &self.first_vals {
            let id = self.dict.id(v);
            self.ids.push(id);
        }
        let int = self.options.int_dictionary;
        self.dict.finish(Allowed {
            int,
            scaled: int && self.options.adaptive.scaled_dictionary,
            bytes,
            grouped: self.grouped_dictionary,
        });
        for id in &mut self.ids {
            *id = self.dict.final_id(*id);
        }
    }

    /// Width for `count` values of at most `max` under the packing policy.
    fn width_for(&self, max: u32, min_bits: u8, count: usize) -> u8 {
        if count == 0 {
            return 0;
        }
        let bits = bits_needed(max).max(min_bits);
        match self.options.packing {
            Packing::Bits => bits,
            Packing::Bytes => bits.div_ceil(8) * 8,
        }
    }

    /// The first layer's columns: plain, or gaps between consecutive
    /// (sorted) columns when allowed and smaller. Fills `gaps`.
    fn columns_of_tree(&mut self, allow_gaps: bool, bytes: bool) -> Columns {
        let plain = Columns::Plain(self.width_of(&self.first_cols, 1));
        let sorted = self.first_cols.windows(2).all(|w| w[0] <= w[1]);
        if !allow_gaps || !sorted || self.first_cols.is_empty() {
            return plain;
        }
        self.gaps.clear();
        let mut prev = 0u32;
        for &c in &self.first_cols {
            self.gaps.push((c - prev) as u64);
            prev = c;
        }
        smaller(plain, &self.first_cols, &self.gaps, bytes)
    }

    /// Every entry's column: plain, or gaps within each row. Fills
    /// `flat_gaps`.
    fn columns_of_rows(&mut self, batch: &SparseBatch, allow_gaps: bool, bytes: bool) -> Columns {
        let max = batch.cols().iter().copied().max().unwrap_or(0);
        let plain = Columns::Plain(self.width_for(max, 1, batch.nnz()));
        if !allow_gaps || batch.nnz() == 0 {
            return plain;
        }
        self.flat_gaps.clear();
        for (cols, _) in batch.rows() {
            let mut prev = 0u32;
            for &c in cols {
                self.flat_gaps.push((c - prev) as u64);
                prev = c;
            }
        }
        smaller(plain, batch.cols(), &self.flat_gaps, bytes)
    }

    /// Writes a column section in the chosen form (`gaps` or `flat_gaps`
    /// hold the gaps when it is `Gaps`).
    fn write_columns(&mut self, out: &mut Vec<u8>, cols: Columns, plain: &[u32], flat: bool) {
        match cols {
            Columns::Plain(w) => write_packed(out, plain, w),
            Columns::Gaps(w) => {
                let gaps = if flat { &self.flat_gaps } else { &self.gaps };
                write_escaped(out, gaps, w, &mut self.scratch);
            }
        }
    }
}

impl Encoder {
    /// For a shared dictionary's pairs of a version-8 file: the value ids
    /// as gaps within each column (into `id_gaps`) and their width, when
    /// every column's ids ascend and the escaped array is smaller than
    /// the ids packed at `w_ids`.
    fn id_gap_width(&mut self, w_ids: u8) -> Option<u8> {
        if !self.grouped_dictionary {
            return None;
        }
        self.id_gaps.clear();
        for (k, &id) in self.ids.iter().enumerate() {
            let same_column = k > 0 && self.first_cols[k] == self.first_cols[k - 1];
            if !same_column {
                self.id_gaps.push(id as u64);
            } else if id > self.ids[k - 1] {
                self.id_gaps.push((id - self.ids[k - 1]) as u64);
            } else {
                return None;
            }
        }
        let (width, bits) = best_width(&self.id_gaps, false);
        let escaped = varint_len(bits / width as u64) + 1 + bits.div_ceil(8);
        (escaped < packed_len(self.ids.len() as u64, w_ids)).then_some(width)
    }
}

fn gaps_flag(cols: Columns) -> u8 {
    match cols {
        Columns::Plain(_) => 0,
        Columns::Gaps(_) => FLAG_GAPS,
    }
}

/// Plain or gaps, whichever is smaller (plain on a tie: version 1).
fn smaller(plain: Columns, cols: &[u32], gaps: &[u64], bytes: bool) -> Columns {
    let (w, _) = best_width(gaps, bytes);
    let candidate = Columns::Gaps(w);
    if columns_len(candidate, cols, gaps) < columns_len(plain, cols, gaps) {
        candidate
    } else {
        plain
    }
}

/// Exact bytes of a column section.
fn columns_len(cols: Columns, plain: &[u32], gaps: &[u64]) -> u64 {
    match cols {
        Columns::Plain(w) => packed_len(plain.len() as u64, w),
        Columns::Gaps(w) => {
            let bits = super::gaps::exact_bits(gaps, w);
            varint_len(bits / w as u64) + 1 + bits.div_ceil(8)
        }
    }
}
