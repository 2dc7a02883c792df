//! The records listed from their steps are the records written: every
//! layout an arena can take (fillers, long rows, rows past a byte's
//! step, codes rewritten wide, labels rewritten inline, traced rows).

use proptest::prelude::*;

use super::{CodeArena, RowCodes};

/// Each block's rows: (label, codes).
type Rows = Vec<Vec<(f64, Vec<u32>)>>;

/// An arena of `form` holding `blocks`, its rows numbered in push order.
fn arena_of(form: RowCodes, trace: bool, blocks: &Rows) -> CodeArena {
    let mut a = CodeArena::new(form, trace);
    let mut row = 0;
    for (number, rows) in blocks.iter().enumerate() {
        a.open_block(number).unwrap();
        for (label, codes) in rows {
            a.push_row(7, *label, row, codes).unwrap();
            row += 1;
        }
    }
    a
}

/// Every block's records listed from the steps, each read back: its
/// label, codes and (traced) row number must be the rows pushed.
fn check(form: RowCodes, trace: bool, blocks: &Rows) {
    let a = arena_of(form, trace, blocks);
    let mut row = 0;
    for (i, rows) in blocks.iter().enumerate() {
        let mut offsets = Vec::new();
        a.block_records(i, &mut offsets);
        assert_eq!(offsets.len(), rows.len(), "block {i}");
        for (&o, (label, codes)) in offsets.iter().zip(rows) {
            let (head, _) = a.widths.head(&a.words, &a.label_values, o as usize);
            let mut got = Vec::new();
            a.widths.codes_into(&a.words, &head, &mut got);
            assert_eq!((head.label, &got), (*label, codes), "row {row}");
            if trace {
                assert_eq!(head.row, row);
            }
            row += 1;
        }
    }
}

fn rows_of(lengths: &[usize], code: impl Fn(usize) -> u32, label: impl Fn(usize) -> f64) -> Rows {
    let mut k = 0;
    let mut blocks = Vec::new();
    for chunk in lengths.chunks(5) {
        let mut rows = Vec::new();
        for &n in chunk {
            rows.push((label(k), (0..n).map(|j| code(k + j)).collect()));
            k += 1;
        }
        blocks.push(rows);
    }
    blocks
}

#[test]
fn long_rows_and_rows_past_a_bytes_step_are_listed() {
    // 0 codes, rows that pad to the next line, a step of 255 words and
    // more, a count that takes three words.
    let lengths = [0, 3, 28, 29, 30, 253, 254, 255, 300, 1, 70_000, 2, 0, 31];
    for form in [RowCodes::Pairs, RowCodes::Nodes] {
        for trace in [false, true] {
            check(
                form,
                trace,
                &rows_of(&lengths, |k| k as u32 % 500, |k| (k % 3) as f64),
            );
        }
    }
}

#[test]
fn rows_rewritten_wide_or_with_inline_labels_are_listed() {
    // A code past 16 bits after the first rows: the arena is rewritten.
    let lengths: Vec<usize> = (0..40).map(|k| k % 9).collect();
    let wide = rows_of(
        &lengths,
        |k| if k > 60 { 70_000 + k as u32 } else { 5 },
        |_| 1.0,
    );
    check(RowCodes::Pairs, false, &wide);
    // More distinct labels than ids: labels inline.
    let lengths = vec![2; 66_000];
    let labels = rows_of(&lengths, |k| k as u32 % 100, |k| k as f64 + 0.5);
    check(RowCodes::Pairs, false, &labels);
}

proptest! {
    #[test]
    fn listed_records_are_the_rows_pushed(
        lengths in prop::collection::vec(prop_oneof![0usize..12, 12usize..40, 240usize..300], 0..40),
        trace in any::<bool>(),
        seed in any::<u32>(),
    ) {
        let code = |k: usize| (k as u32).wrapping_mul(seed | 1) % 4000;
        check(RowCodes::Pairs, trace, &rows_of(&lengths, code, |k| (k % 2) as f64));
    }
}
