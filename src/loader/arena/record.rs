//! One record of the arena (`super`'s module docs give the layout): the
//! widths that vary per arena, and a record's head read back.

use super::{FILLER, LONG_ROW};

/// What a record holds, read back.
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    /// Where its codes start.
    pub(super) codes: usize,
    pub(super) n: usize,
    pub(super) slot: u16,
    pub(super) label: f64,
    pub(super) row: u64,
}

/// How records are written: the widths that vary (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Widths {
    /// Records name their dictionary (codes of [`RowCodes::Nodes`]; pair
    /// codes are ids into the arena's own table).
    pub(super) slots: bool,
    /// Codes take two words.
    pub(super) wide: bool,
    /// Labels are inline (4 words) rather than ids.
    pub(super) inline_labels: bool,
    /// Records carry their row's number.
    pub(super) trace: bool,
}

impl Widths {
    /// Words a record of `n` codes takes.
    pub(super) fn record_words(self, n: usize) -> usize {
        let count = if n < FILLER as usize { 1 } else { 3 };
        let slot = usize::from(self.slots);
        let label = if self.inline_labels { 4 } else { 1 };
        let row = if self.trace { 4 } else { 0 };
        let width = if self.wide { 2 } else { 1 };
        count + slot + label + row + width * n
    }

    /// The record at `at` of `words` (labels by id into `labels`) and the
    /// offset of the next (past any filler).
    #[inline]
    pub(super) fn head(self, words: &[u16], labels: &[f64], at: usize) -> (Head, usize) {
        let (head, mut next) = self.head_at(words, labels, at);
        while words.get(next) == Some(&FILLER) {
            next += 1;
        }
        (head, next)
    }

    /// The record at `at` and the offset of the word after it.
    #[inline]
    pub(super) fn head_at(self, words: &[u16], labels: &[f64], at: usize) -> (Head, usize) {
        let w = words;
        let (n, mut at) = match w[at] {
            LONG_ROW => (w[at + 1] as usize | (w[at + 2] as usize) << 16, at + 3),
            n => (n as usize, at + 1),
        };
        let slot = match self.slots {
            true => {
                at += 1;
                w[at - 1]
            }
            false => 0,
        };
        let label = if self.inline_labels {
            let bits = join4(&w[at..at + 4]);
            at += 4;
            f64::from_bits(bits)
        } else {
            let id = w[at] as usize;
            at += 1;
            labels.get(id).copied().unwrap_or(0.0)
        };
        let row = if self.trace {
            let r = join4(&w[at..at + 4]);
            at += 4;
            r
        } else {
            0
        };
        let width = if self.wide { 2 } else { 1 };
        let head = Head {
            codes: at,
            n,
            slot,
            label,
            row,
        };
        (head, at + width * n)
    }

    /// Appends a record's codes to `out`.
    #[inline]
    pub(super) fn codes_into(self, words: &[u16], head: &Head, out: &mut Vec<u32>) {
        let w = &words[head.codes..];
        if self.wide {
            let pairs = w[..2 * head.n].chunks_exact(2);
            out.extend(pairs.map(|c| c[0] as u32 | (c[1] as u32) << 16));
        } else {
            out.extend(w[..head.n].iter().map(|&c| c as u32));
        }
    }
}

/// The widths of the usual records of pair codes.
pub(super) const PLAIN_PAIRS: Widths = Widths {
    slots: false,
    wide: false,
    inline_labels: false,
    trace: false,
};

pub(super) fn split4(v: u64) -> [u16; 4] {
    [
        v as u16,
        (v >> 16) as u16,
        (v >> 32) as u16,
        (v >> 48) as u16,
    ]
}

pub(super) fn join4(w: &[u16]) -> u64 {
    w[0] as u64 | (w[1] as u64) << 16 | (w[2] as u64) << 32 | (w[3] as u64) << 48
}
