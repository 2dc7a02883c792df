//! Blocks packed without their pages checked again
//! ([`Block::pack_seen`](crate::dataset::Block), what a streamed epoch
//! after the first reads): pushed into an arena they give the records the
//! checked block gives, and bytes changed behind the checksum give
//! records or an error, never a panic.

use std::path::PathBuf;

use proptest::prelude::*;

use super::{ArenaScratch, CodeArena, RowCodes};
use crate::codec::RowDict;
use crate::dataset::{Dataset, DatasetWriter, PageDecoder, WriterOptions};
use crate::SparseBatch;

/// A file of `n` rows in small blocks, its pages coded against shared
/// dictionaries (rows that repeat prefixes, so the trees have depth).
pub(super) fn shared_file(name: &str, n: u64) -> PathBuf {
    let path = std::env::temp_dir().join(format!("tocpile-seen-{name}-{}.toc", std::process::id()));
    let rows: Vec<[f64; 6]> = (0..n)
        .map(|i| {
            [
                1.0,
                (i % 3) as f64,
                0.0,
                (i * 7919 % 13) as f64,
                (i % 5 == 0) as u8 as f64,
                (i * 104_729 % 97) as f64 / 8.0,
            ]
        })
        .collect();
    let labels: Vec<f64> = (0..n).map(|i| (i % 3 == 0) as u8 as f64).collect();
    let layout = WriterOptions {
        page_rows: 20,
        block_bytes: 256,
        segment_rows: 400,
        ..WriterOptions::default()
    };
    let mut writer = DatasetWriter::create(&path, 6, layout).unwrap();
    writer
        .push(&SparseBatch::from_dense_rows(6, &rows).unwrap(), &labels)
        .unwrap();
    writer.finish().unwrap();
    path
}

/// Block `b` pushed into a fresh arena of pair codes.
fn arena_of(block: &crate::dataset::PackedBlock) -> crate::error::Result<CodeArena> {
    let mut arena = CodeArena::new(RowCodes::Pairs, true);
    arena.push_block(block, 0, &mut ArenaScratch::default())?;
    Ok(arena)
}

/// Every record of `a`'s blocks: label, row number, codes.
fn records(a: &CodeArena) -> Vec<(f64, u64, Vec<u32>)> {
    let read = a.read_back().into_iter();
    read.map(|(head, codes)| (head.label, head.row, codes))
        .collect()
}

#[test]
fn a_block_packed_as_seen_gives_the_records_of_the_checked_block() {
    let path = shared_file("same", 2_000);
    let ds = Dataset::open(&path).unwrap();
    assert!(ds.n_blocks() > 4, "{} blocks", ds.n_blocks());
    let mut shared_pages = 0;
    for b in 0..ds.n_blocks() {
        let checked = ds.read_block(b).unwrap().pack().unwrap();
        let nnz: Vec<u64> = checked.page_nnz().collect();
        let seen = ds.read_block(b).unwrap().pack_seen(&nnz).unwrap();
        assert_eq!(
            (seen.n_rows(), seen.nnz()),
            (checked.n_rows(), checked.nnz())
        );
        let (a, s) = (arena_of(&checked).unwrap(), arena_of(&seen).unwrap());
        assert_eq!(records(&a).len(), checked.n_rows());
        assert_eq!(records(&a), records(&s), "block {b}");
        assert_eq!(a.pairs, s.pairs, "block {b}");
        for j in 0..checked.n_pages() {
            let mut d = PageDecoder::default();
            let mut out = (Vec::new(), Vec::new(), Vec::new());
            let dict = seen
                .decode_page_codes(j, &mut d, (&mut out.0, &mut out.1, &mut out.2))
                .unwrap();
            shared_pages += usize::from(matches!(dict, RowDict::Shared(_)));
        }
    }
    // The pages the check is skipped for: coded against a dictionary.
    assert!(shared_pages > 0);
    // A page count that is not the block's: checked as before.
    let block = ds.read_block(0).unwrap();
    assert!(block.pack_seen(&[]).is_ok());
    std::fs::remove_file(&path).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A file changed behind its checksum after its first epoch: the
    /// block, packed with the counts found then, decodes into an arena
    /// (pages coded against a dictionary, through the decoder that
    /// checks every index), to values and to pages (every page checked
    /// first) with an error or rows, never a panic.
    #[test]
    fn bytes_changed_behind_the_checksum_never_panic(
        block in 0usize..8,
        changes in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..6),
    ) {
        let path = shared_file(&format!("forged-{block}-{}", changes.len()), 1_200);
        let ds = Dataset::open(&path).unwrap();
        let b = block % ds.n_blocks();
        let nnz: Vec<u64> = ds.read_block(b).unwrap().pack().unwrap().page_nnz().collect();
        let mut forged = ds.read_block(b).unwrap();
        let bytes = forged.bytes_mut();
        for &(at, byte) in &changes {
            let at = at as usize % bytes.len();
            bytes[at] ^= byte.max(1);
        }
        if let Ok(packed) = forged.pack_seen(&nnz) {
            let _ = arena_of(&packed);
            let mut d = PageDecoder::default();
            for j in 0..packed.n_pages() {
                let _ = packed.decode_page(j, &mut d);
                let _ = packed.page(j);
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}
