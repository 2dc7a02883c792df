//! Records written again: one arena's rows appended to another's (how
//! the second half of a buffer, decoded on another thread into an arena
//! of its own, joins the first: `rows/buffer.rs`), and an arena's rows
//! rewritten wider when a code or a label outgrows its word.
//!
//! The two arenas number their dictionaries, pairs and labels each in
//! the order they met them, so the records' slots, labels and pair codes
//! must be renumbered. Written again one record at a time, through
//! [`CodeArena::push_row`], the half cost half a buffer's records twice
//! (on flights3m streamed, 8% of a drained epoch's CPU samples: history
//! section 46); copied as one run of words and renumbered in place, it
//! costs the copy and a pass over the words that name tables.

use super::{
    past_fillers, BlockSpan, CodeArena, Head, RowCodes, Widths, ARENA, FILLER, LINE, LONG_ROW,
};
use crate::error::{Error, Result};
use crate::limits::try_reserve;
use crate::loader::huge::reserve_huge;

impl CodeArena {
    /// Appends `other`'s blocks (its dictionaries and labels merged into
    /// this arena's).
    ///
    /// # Errors
    /// As [`push_block`](Self::push_block).
    pub(crate) fn append(&mut self, other: &CodeArena) -> Result<()> {
        let (slots, pair_ids) = self.merge_tables(other)?;
        if !self.append_copy(other, &slots, &pair_ids)? {
            self.append_records(other, &slots, &pair_ids)?;
        }
        Ok(())
    }

    /// `other`'s slots and pair codes as this arena's, registered here
    /// where new.
    pub(super) fn merge_tables(&mut self, other: &CodeArena) -> Result<(Vec<u16>, Vec<u32>)> {
        let mut slots: Vec<u16> = Vec::new();
        try_reserve(&mut slots, other.dicts.len(), ARENA)?;
        for d in &other.dicts {
            slots.push(self.slot(d.clone())?);
        }
        // Pair codes are ids into the arena's own table.
        let mut pair_ids: Vec<u32> = Vec::new();
        try_reserve(&mut pair_ids, other.pairs.len(), ARENA)?;
        for &pair in &other.pairs {
            pair_ids.push(self.pair_id(pair)?);
        }
        Ok((slots, pair_ids))
    }

    /// The append as every record written again (any widths).
    pub(super) fn append_records(
        &mut self,
        other: &CodeArena,
        slots: &[u16],
        pair_ids: &[u32],
    ) -> Result<()> {
        let pairs = self.form == RowCodes::Pairs;
        let from = (&other.words[..], other.widths, &other.label_values[..]);
        self.push_records(from, &other.blocks, |head, codes| {
            if pairs {
                let to = |p: &mut u32| *p = pair_ids.get(*p as usize).copied().unwrap_or(0);
                codes.iter_mut().for_each(to);
            }
            head.slot = slots.get(head.slot as usize).copied().unwrap_or(0);
        })
    }

    /// Writes again, through [`push_row`](Self::push_row), the records of
    /// `blocks` in `words` (written with `widths`, labels by id into
    /// `labels`), each block a block of this arena, each record first
    /// given to `remap` (its slot and codes into this arena's numbering).
    fn push_records(
        &mut self,
        (words, widths, labels): (&[u16], Widths, &[f64]),
        blocks: &[BlockSpan],
        mut remap: impl FnMut(&mut Head, &mut Vec<u32>),
    ) -> Result<()> {
        let mut codes = Vec::new();
        for b in blocks {
            self.open_block(b.block)?;
            let mut at = past_fillers(words, b.start as usize);
            for _ in 0..b.rows {
                let (mut head, next) = widths.head(words, labels, at);
                codes.clear();
                widths.codes_into(words, &head, &mut codes);
                remap(&mut head, &mut codes);
                self.push_row(head.slot, head.label, head.row, &codes)?;
                at = next;
            }
        }
        Ok(())
    }

    /// The append as one copy of `other`'s words, renumbered in place;
    /// `false` (nothing appended) where the records' widths differ or
    /// would have to change.
    pub(super) fn append_copy(
        &mut self,
        other: &CodeArena,
        slots: &[u16],
        pair_ids: &[u32],
    ) -> Result<bool> {
        let Some(first) = other.blocks.first() else {
            return Ok(true);
        };
        let pairs = self.form == RowCodes::Pairs;
        if self.widths != other.widths
            || (pairs && !self.widths.wide && pair_ids.iter().any(|&p| p > u16::MAX as u32))
        {
            return Ok(false);
        }
        let mut labels: Vec<u16> = Vec::new();
        if !self.widths.inline_labels {
            try_reserve(&mut labels, other.label_values.len(), ARENA)?;
            for &l in &other.label_values {
                match self.label_id(l) {
                    Some(id) => labels.push(id),
                    None => return Ok(false),
                }
            }
        }
        let lo = first.start as usize;
        let src = &other.words[lo..];
        reserve_huge(&mut self.words, src.len() + LINE / 2, ARENA)?;
        try_reserve(&mut self.steps, other.steps.len(), ARENA)?;
        try_reserve(&mut self.blocks, other.blocks.len(), ARENA)?;
        try_reserve(&mut self.block_first, other.block_first.len(), ARENA)?;
        // Padding that puts every copied record where it was in its cache
        // line (the reason for the fillers: see `push_row`).
        let line = |at: usize| at % LINE;
        let dst_at = self.words.as_ptr() as usize + 2 * self.words.len();
        let src_at = other.words.as_ptr() as usize + 2 * lo;
        let pad = (line(src_at) + LINE - line(dst_at)) % LINE / 2;
        let base = self.words.len() + pad;
        if u32::try_from(base + src.len()).is_err() {
            return Err(Error::TooLarge {
                what: "words of a buffer's code rows (u32 offsets)",
                value: (base + src.len()) as u64,
                max: u32::MAX as u64,
            });
        }
        self.words.resize(base, FILLER);
        self.words.extend_from_slice(src);
        let rows = self.rows as u32;
        for (b, &f) in other.blocks.iter().zip(&other.block_first) {
            let mut span = *b;
            span.start = (b.start as usize - lo + base) as u32;
            self.blocks.push(span);
            self.block_first.push(rows + f);
        }
        self.steps.extend_from_slice(&other.steps);
        self.last_start = other.last_start - lo + base;
        self.rows += other.rows;
        self.codes += other.codes;
        let identity = |map: &[u32]| map.iter().enumerate().all(|(i, &p)| p as usize == i);
        let renumber_pairs = pairs && !identity(pair_ids);
        let mut offsets = Vec::new();
        for i in self.blocks.len() - other.blocks.len()..self.blocks.len() {
            offsets.clear();
            self.block_records(i, &mut offsets);
            for &at in &offsets {
                self.renumber(
                    at as usize,
                    slots,
                    &labels,
                    renumber_pairs.then_some(pair_ids),
                );
            }
        }
        Ok(true)
    }

    /// Rewrites the record at `at`: its slot, label id and (with
    /// `pair_ids`) pair codes into this arena's tables.
    fn renumber(&mut self, at: usize, slots: &[u16], labels: &[u16], pair_ids: Option<&[u32]>) {
        let widths = self.widths;
        let w = &mut self.words[..];
        let (n, mut at) = match w[at] {
            LONG_ROW => (w[at + 1] as usize | (w[at + 2] as usize) << 16, at + 3),
            n => (n as usize, at + 1),
        };
        if widths.slots {
            w[at] = slots.get(w[at] as usize).copied().unwrap_or(0);
            at += 1;
        }
        if widths.inline_labels {
            at += 4;
        } else {
            w[at] = labels.get(w[at] as usize).copied().unwrap_or(0);
            at += 1;
        }
        if widths.trace {
            at += 4;
        }
        let Some(map) = pair_ids else {
            return;
        };
        let to = |c: u32| map.get(c as usize).copied().unwrap_or(0);
        if widths.wide {
            for c in w[at..at + 2 * n].chunks_exact_mut(2) {
                let p = to(c[0] as u32 | (c[1] as u32) << 16);
                c[0] = p as u16;
                c[1] = (p >> 16) as u16;
            }
        } else {
            for c in &mut w[at..at + n] {
                *c = to(*c as u32) as u16;
            }
        }
    }

    /// Rewrites the records wider: codes of two words when `codes` (a
    /// code past a word), labels inline when the label table is full.
    /// Rare, so kept out of [`push_row`](Self::push_row)'s way.
    #[cold]
    #[inline(never)]
    pub(super) fn widen_for(&mut self, codes: bool, label: f64) -> Result<()> {
        if codes {
            self.rewrite(Widths {
                wide: true,
                ..self.widths
            })?;
        }
        if !self.widths.inline_labels && self.label_id(label).is_none() {
            self.rewrite(Widths {
                inline_labels: true,
                ..self.widths
            })?;
        }
        Ok(())
    }

    /// Writes every record again with the widths `to` (codes of two
    /// words, or labels inline: the rare arena whose codes or labels
    /// outgrow a word), the blocks' spans moved with their records.
    fn rewrite(&mut self, to: Widths) -> Result<()> {
        let (old, from) = (std::mem::take(&mut self.words), self.widths);
        let labels = match to.inline_labels {
            true => {
                self.label_ids.clear();
                self.last_label = None;
                std::mem::take(&mut self.label_values)
            }
            false => self.label_values.clone(),
        };
        self.widths = to;
        reserve_huge(&mut self.words, 2 * old.len(), ARENA)?;
        let blocks = std::mem::take(&mut self.blocks);
        self.rows = 0;
        self.codes = 0;
        self.steps.clear();
        self.block_first.clear();
        self.push_records((&old, from, &labels), &blocks, |_, _| {})
    }
}
