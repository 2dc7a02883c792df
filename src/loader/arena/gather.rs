//! Reading a buffer's records back (`super`'s layout): a block's records
//! in file order, and the shuffled mini-batch's rows gathered as code
//! batches, pair-coded rows or plain rows, with the prefetches that let
//! the next batch's records arrive while this one is expanded.

use super::{past_fillers, CodeArena, Head, ARENA, FAR, PLAIN_PAIRS};
use crate::codec::CodeBatch;
use crate::error::{Error, Result};
use crate::limits::try_reserve;

impl CodeArena {
    /// Makes `codes` (pair codes into `from`'s table) codes into this
    /// arena's, adding the pairs it lacks, and takes its table anew: the
    /// rows a mini-batch took from one buffer before the rest of it
    /// comes from this one.
    ///
    /// # Errors
    /// [`Error::CodeOutOfRange`] for a code outside `from`'s table (a
    /// bug); [`Error::OutOfMemory`] if the table cannot grow.
    pub(crate) fn adopt_pair_codes(&mut self, from: &CodeArena, codes: &mut [u32]) -> Result<()> {
        for (position, c) in codes.iter_mut().enumerate() {
            let Some(&pair) = from.pairs.get(*c as usize) else {
                return Err(Error::CodeOutOfRange {
                    row: 0,
                    position,
                    code: u64::from(*c),
                    limit: from.pairs.len() as u64,
                });
            };
            *c = self.pair_id(pair)?;
        }
        self.freeze();
        Ok(())
    }

    /// The offsets of the records of the `i`-th block pushed, appended to
    /// `out` in file order: from the records' steps (see
    /// [`CodeArena::steps`]), each record read only where its step is
    /// too long for a byte.
    pub(crate) fn block_records(&self, i: usize, out: &mut Vec<u32>) {
        let (b, first) = (self.blocks[i], self.block_first[i] as usize);
        let steps = &self.steps[first..first + b.rows as usize];
        let w = &self.words[..];
        let mut at = b.start as usize;
        if !steps.contains(&FAR) {
            // The usual block: a running sum, with no branch per record.
            out.extend(steps.iter().map(|&step| {
                at += step as usize;
                at as u32
            }));
            return;
        }
        out.extend(steps.iter().enumerate().map(|(k, &step)| {
            at = match (step, k) {
                (FAR, 0) => past_fillers(w, at),
                (FAR, _) => self.widths.head(w, &self.label_values, at).1,
                (step, _) => at + step as usize,
            };
            at as u32
        }));
    }

    /// Appends the rows at `offsets` (records of this arena) to `batch`
    /// with their labels (and, when tracing, their numbers in the file).
    /// `map` is scratch: for each of this arena's slots, the batch's slot
    /// plus one of its dictionary (all zero between calls).
    pub(crate) fn gather_codes(
        &self,
        offsets: &[u32],
        batch: &mut CodeBatch,
        map: &mut Vec<u32>,
        (labels, trace): (&mut Vec<f64>, &mut Vec<u64>),
    ) -> Result<()> {
        if map.len() < self.dicts.len() {
            map.resize(self.dicts.len(), 0);
        }
        self.touch(offsets);
        try_reserve(labels, offsets.len(), ARENA)?;
        try_reserve(&mut batch.slots, offsets.len(), ARENA)?;
        try_reserve(&mut batch.starts, offsets.len(), ARENA)?;
        let mut used: Vec<u16> = Vec::new();
        for &o in offsets {
            let head = self.labelled_head(o, labels, trace);
            let m = &mut map[head.slot as usize];
            if *m == 0 {
                batch.dicts.push(self.dicts[head.slot as usize].clone());
                *m = batch.dicts.len() as u32;
                used.push(head.slot);
            }
            batch.slots.push(*m - 1);
            try_reserve(&mut batch.codes, head.n, ARENA)?;
            self.widths.codes_into(&self.words, &head, &mut batch.codes);
            batch.starts.push(batch.codes.len() as u32);
        }
        for slot in used {
            map[slot as usize] = 0;
        }
        Ok(())
    }

    /// Appends the rows at `offsets` (records of an arena of
    /// [`RowCodes::Pairs`](super::RowCodes::Pairs)) to CSR arrays, with their labels (and, when
    /// tracing, their numbers in the file).
    pub(crate) fn gather_rows(
        &self,
        offsets: &[u32],
        (row_ends, cols, vals): (&mut Vec<u32>, &mut Vec<u32>, &mut Vec<f64>),
        (labels, trace): (&mut Vec<f64>, &mut Vec<u64>),
    ) -> Result<()> {
        if self.widths == PLAIN_PAIRS {
            return self.gather_plain_rows(offsets, (row_ends, cols, vals), labels);
        }
        self.touch(offsets);
        try_reserve(labels, offsets.len(), ARENA)?;
        try_reserve(row_ends, offsets.len(), ARENA)?;
        let pairs = &self.pairs[..];
        let pair = |p: usize| pairs.get(p).copied().unwrap_or_default();
        for &o in offsets {
            let head = self.labelled_head(o, labels, trace);
            let w = &self.words[head.codes..];
            crate::limits::check_batch_nnz((cols.len() + head.n) as u64)?;
            try_reserve(cols, head.n, ARENA)?;
            try_reserve(vals, head.n, ARENA)?;
            if self.widths.wide {
                let ids = || {
                    w[..2 * head.n]
                        .chunks_exact(2)
                        .map(|c| c[0] as usize | (c[1] as usize) << 16)
                };
                cols.extend(ids().map(|p| pair(p).col));
                vals.extend(ids().map(|p| pair(p).val));
            } else {
                let ids = &w[..head.n];
                cols.extend(ids.iter().map(|&p| pair(p as usize).col));
                vals.extend(ids.iter().map(|&p| pair(p as usize).val));
            }
            row_ends.push(cols.len() as u32);
        }
        Ok(())
    }

    /// Appends the rows at `offsets` (records of an arena of
    /// [`RowCodes::Pairs`](super::RowCodes::Pairs)) to a batch of coded rows: their codes into
    /// the arena's table of pairs to `codes`, each row's end to `ends`,
    /// their labels (and, when tracing, their numbers in the file).
    pub(crate) fn gather_coded(
        &self,
        offsets: &[u32],
        (ends, codes): (&mut Vec<u32>, &mut Vec<u32>),
        (labels, trace): (&mut Vec<f64>, &mut Vec<u64>),
    ) -> Result<()> {
        if self.widths == PLAIN_PAIRS {
            return self.gather_plain_coded(offsets, (ends, codes), labels);
        }
        self.touch(offsets);
        try_reserve(labels, offsets.len(), ARENA)?;
        try_reserve(ends, offsets.len(), ARENA)?;
        // Room for rows of the arena's average length (grown past it as
        // needed).
        let average = self.codes.div_ceil(self.rows.max(1));
        try_reserve(codes, offsets.len().saturating_mul(average + 1), ARENA)?;
        let w = &self.words[..];
        for &o in offsets {
            let head = self.labelled_head(o, labels, trace);
            // A pair code per entry: the batch's rows decoded, the decode
            // budget's; grown fallibly past the average.
            crate::limits::check_batch_nnz((codes.len() + head.n) as u64)?;
            try_reserve(codes, head.n, ARENA)?;
            self.widths.codes_into(w, &head, codes);
            ends.push(codes.len() as u32);
        }
        Ok(())
    }

    /// [`gather_rows`](Self::gather_rows) for the usual records of pair
    /// codes (one-word codes and counts, label ids, no row numbers): the
    /// shuffled gather is most of the loader's work on files whose
    /// batches go to their rows, so the parse is as short as the record.
    fn gather_plain_rows(
        &self,
        offsets: &[u32],
        (row_ends, cols, vals): (&mut Vec<u32>, &mut Vec<u32>, &mut Vec<f64>),
        labels: &mut Vec<f64>,
    ) -> Result<()> {
        let (w, pairs) = (&self.words[..], &self.pairs[..]);
        let total = self.plain_entries(offsets);
        // The batch's rows decoded: the decode budget's, as a buffer's.
        crate::limits::check_batch_nnz((cols.len() + total) as u64)?;
        try_reserve(cols, total, ARENA)?;
        try_reserve(vals, total, ARENA)?;
        try_reserve(labels, offsets.len(), ARENA)?;
        try_reserve(row_ends, offsets.len(), ARENA)?;
        for &o in offsets {
            let (codes, label, end) = plain_record(w, o as usize);
            labels.push(self.label_values.get(label).copied().unwrap_or(0.0));
            for &p in &w[codes..end] {
                let pair = pairs.get(p as usize).copied().unwrap_or_default();
                cols.push(pair.col);
                vals.push(pair.val);
            }
            row_ends.push(cols.len() as u32);
        }
        Ok(())
    }

    /// [`gather_coded`](Self::gather_coded) for the usual records of pair
    /// codes (as [`gather_plain_rows`](Self::gather_plain_rows)): the
    /// batch's entries counted first (which touches every record, as
    /// [`touch`](Self::touch) does), checked and reserved once, then each
    /// record's codes copied with no per-row check.
    fn gather_plain_coded(
        &self,
        offsets: &[u32],
        (ends, codes): (&mut Vec<u32>, &mut Vec<u32>),
        labels: &mut Vec<f64>,
    ) -> Result<()> {
        let w = &self.words[..];
        let total = self.plain_entries(offsets);
        crate::limits::check_batch_nnz((codes.len() + total) as u64)?;
        try_reserve(codes, total, ARENA)?;
        try_reserve(labels, offsets.len(), ARENA)?;
        try_reserve(ends, offsets.len(), ARENA)?;
        let label_values = &self.label_values[..];
        for &o in offsets {
            let (start, label, end) = plain_record(w, o as usize);
            labels.push(label_values.get(label).copied().unwrap_or(0.0));
            codes.extend(w[start..end].iter().map(|&c| u32::from(c)));
            ends.push(codes.len() as u32);
        }
        Ok(())
    }

    /// The entries of the records at `offsets` (of [`PLAIN_PAIRS`] widths).
    fn plain_entries(&self, offsets: &[u32]) -> usize {
        let w = &self.words[..];
        offsets
            .iter()
            .map(|&o| {
                let (start, _, end) = plain_record(w, o as usize);
                end - start
            })
            .sum()
    }

    /// The head of the record at `o`, its label appended to `labels` (and,
    /// when tracing, its row's number to `trace`).
    #[inline]
    fn labelled_head(&self, o: u32, labels: &mut Vec<f64>, trace: &mut Vec<u64>) -> Head {
        let (head, _) = self
            .widths
            .head_at(&self.words, &self.label_values, o as usize);
        labels.push(head.label);
        if self.widths.trace {
            trace.push(head.row);
        }
        head
    }

    /// Touches the first word of each record at `offsets`. A shuffled
    /// batch's records lie anywhere in the arena: loads that depend on
    /// nothing but the offsets let the processor have many misses in
    /// flight at once, where reading each record in turn waited for each
    /// (the records are then read from the cache). Where the epoch
    /// prefetched them ([`prefetch`](Self::prefetch)) they are there
    /// already.
    fn touch(&self, offsets: &[u32]) {
        let mut touched = 0u16;
        for &o in offsets {
            touched ^= self.words.get(o as usize).copied().unwrap_or(0);
        }
        std::hint::black_box(touched);
    }

    /// Prefetches the records at `offsets`: the epoch's next batch, while
    /// this one is gathered and expanded, so that the two overlap.
    pub(crate) fn prefetch(&self, offsets: &[u32]) {
        for &o in offsets {
            crate::prefetch::prefetch(&self.words, o as usize);
        }
    }
}

/// A record of [`PLAIN_PAIRS`] widths at `at`: where its codes start, its
/// label's id and where its codes end (the next record or filler). The
/// general [`Widths::head_at`](super::record::Widths::head_at) branches
/// on every width; this is the shuffled gather's inner step.
#[inline(always)]
fn plain_record(w: &[u16], at: usize) -> (usize, usize, usize) {
    let (n, at) = match w[at] {
        super::LONG_ROW => (w[at + 1] as usize | (w[at + 2] as usize) << 16, at + 3),
        n => (n as usize, at + 1),
    };
    (at + 1, w[at] as usize, at + 1 + n)
}
