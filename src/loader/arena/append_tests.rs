//! An arena appended as one copy renumbered in place holds the records
//! that writing every record again gives: the same rows, labels, row
//! numbers and pairs, in every layout the copy takes (pairs or nodes,
//! traced or not, labels met in another order, long rows, codes wide).

use proptest::prelude::*;

use super::{ArenaScratch, CodeArena, RowCodes};
use crate::formats::Pair;

/// A record read back: label bits, row number, slot, and its pairs as
/// (column, value bits), or its codes as (code, 0).
type Held = (u64, u64, u16, Vec<(u32, u64)>);

/// Each record of `a`'s blocks as (label, row number, slot, pairs or
/// codes): pair codes read through the arena's table, so that two arenas
/// numbering their pairs apart compare by what the rows hold.
fn rows_of(a: &CodeArena) -> Vec<Held> {
    let held = |codes: Vec<u32>| -> Vec<(u32, u64)> {
        let pair = |c: u32| match a.form {
            RowCodes::Pairs => {
                let p = a.pairs[c as usize];
                (p.col, p.val.to_bits())
            }
            RowCodes::Nodes => (c, 0),
        };
        codes.into_iter().map(pair).collect()
    };
    let read = a.read_back().into_iter();
    read.map(|(h, codes)| (h.label.to_bits(), h.row, h.slot, held(codes)))
        .collect()
}

/// An arena of pair codes holding `rows` (label, pairs as (col, val)),
/// five to a block, its table numbered from pair `offset` on (so two
/// arenas number the same pairs apart).
fn arena(form: RowCodes, trace: bool, rows: &[(f64, Vec<(u32, u8)>)], offset: u32) -> CodeArena {
    let mut a = CodeArena::new(form, trace);
    for k in 0..40u32 {
        let c = (k + offset) % 40;
        a.pair_id(Pair {
            col: c,
            val: c as f64,
        })
        .unwrap();
    }
    for (i, (label, pairs)) in rows.iter().enumerate() {
        if i % 5 == 0 {
            a.open_block(i / 5).unwrap();
        }
        let codes: Vec<u32> = pairs
            .iter()
            .map(|&(col, v)| a.pair_id(Pair { col, val: v as f64 }).unwrap())
            .collect();
        a.push_row(0, *label, 1_000 + i as u64, &codes).unwrap();
    }
    a
}

/// Appends `second`'s arena to `first`'s both ways, checks they agree,
/// and tells whether the copy was taken.
fn both_ways(
    form: RowCodes,
    trace: bool,
    first: &[(f64, Vec<(u32, u8)>)],
    second: &[(f64, Vec<(u32, u8)>)],
) -> bool {
    let other = arena(form, trace, second, 17);
    let mut copied = arena(form, trace, first, 0);
    let mut written = arena(form, trace, first, 0);
    let (slots, pair_ids) = copied.merge_tables(&other).unwrap();
    let took = copied.append_copy(&other, &slots, &pair_ids).unwrap();
    if !took {
        // Widths that differ: what `append` does then.
        copied.append_records(&other, &slots, &pair_ids).unwrap();
    }
    let (slots, pair_ids) = written.merge_tables(&other).unwrap();
    written.append_records(&other, &slots, &pair_ids).unwrap();
    assert_eq!(rows_of(&copied), rows_of(&written));
    assert_eq!(copied.n_rows(), first.len() + second.len());
    assert_eq!(copied.code_words(), written.code_words());
    if took {
        // The next rows go on after the copied ones.
        copied.push_row(0, 9.0, 7, &[1, 2]).unwrap();
        written.push_row(0, 9.0, 7, &[1, 2]).unwrap();
        assert_eq!(rows_of(&copied), rows_of(&written));
    }
    took
}

fn row_strategy() -> impl Strategy<Value = (f64, Vec<(u32, u8)>)> {
    (
        prop_oneof![Just(0.0), Just(1.0), Just(-1.0), Just(2.5)],
        prop_oneof![
            proptest::collection::vec((0u32..60, 0u8..4), 0..12),
            proptest::collection::vec((0u32..60, 0u8..4), 240..300),
        ],
    )
}

proptest! {
    #[test]
    fn a_copy_renumbered_holds_the_records_written_again(
        first in proptest::collection::vec(row_strategy(), 0..30),
        second in proptest::collection::vec(row_strategy(), 0..30),
        trace in any::<bool>(),
        nodes in any::<bool>(),
    ) {
        let form = if nodes { RowCodes::Nodes } else { RowCodes::Pairs };
        // Few pairs, narrow codes, few labels: the copy is taken.
        prop_assert!(both_ways(form, trace, &first, &second));
    }
}

#[test]
fn wide_codes_and_long_rows_are_copied() {
    // More pairs than a word numbers: the second arena's codes are wide.
    let wide: Vec<(f64, Vec<(u32, u8)>)> = (0..12)
        .map(|i| {
            (
                i as f64 % 2.0,
                (0..7_000).map(|j| (i * 7_000 + j, 1)).collect(),
            )
        })
        .collect();
    let narrow = vec![(1.0, vec![(3, 1), (5, 2)]); 9];
    assert!(!both_ways(RowCodes::Pairs, false, &narrow, &wide));
    assert!(!both_ways(RowCodes::Pairs, true, &wide, &narrow));
    assert!(both_ways(RowCodes::Pairs, false, &wide, &wide));
}

#[test]
fn the_halves_of_a_real_buffer_append_alike() {
    let path = super::seen_tests::shared_file("append", 2_000);
    let ds = crate::dataset::Dataset::open(&path).unwrap();
    let n = ds.n_blocks();
    assert!(n > 6);
    for form in [RowCodes::Pairs, RowCodes::Nodes] {
        let mut s = ArenaScratch::default();
        let halves = [(0..n / 2).rev().collect::<Vec<_>>(), (n / 2..n).collect()];
        let [first, second] = halves.map(|blocks| {
            let mut a = CodeArena::new(form, true);
            for b in blocks {
                let block = ds.read_block(b).unwrap().pack().unwrap();
                a.push_block(&block, b as u64 * 1_000, &mut s).unwrap();
            }
            a
        });
        let fresh = || {
            let mut a = CodeArena::new(form, true);
            let (slots, pair_ids) = a.merge_tables(&first).unwrap();
            a.append_records(&first, &slots, &pair_ids).unwrap();
            a
        };
        let (mut copied, mut written) = (fresh(), fresh());
        let (slots, pair_ids) = copied.merge_tables(&second).unwrap();
        assert!(copied.append_copy(&second, &slots, &pair_ids).unwrap());
        let (slots, pair_ids) = written.merge_tables(&second).unwrap();
        written.append_records(&second, &slots, &pair_ids).unwrap();
        assert_eq!(rows_of(&copied), rows_of(&written), "{form:?}");
        assert_eq!(copied.n_rows(), 2_000);
    }
    std::fs::remove_file(&path).unwrap();
}
