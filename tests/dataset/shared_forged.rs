//! Forged shared-dictionary sections (dataset file versions 3 and 4), every
//! checksum right: one file per rule the section can break, each an
//! error naming the footer, a segment or the page.

use crate::support::forge::{crc32, seal_footer, varint};
use crate::support::{load, temp_path};
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::{EncodeOptions, Encoder, SparseBatch};

/// A version-4 file of mushrooms rows: two segments, each with its
/// dictionary.
fn file() -> Vec<u8> {
    let (rows, labels) = load("mushrooms", 400);
    let path = temp_path("shared-forged");
    let options = WriterOptions::default().with_segment_rows(200);
    let mut w = DatasetWriter::create(&path, rows.n_cols(), options).unwrap();
    w.push(&rows, &labels).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// The file with its shared section replaced by `section` (the footer's
/// checksum recomputed).
fn with_section(file: &[u8], section: &[u8]) -> Vec<u8> {
    let n = file.len();
    let footer_at = u64::from_le_bytes(file[n - 16..n - 8].try_into().unwrap()) as usize;
    let footer = &file[footer_at..n - 16];
    let at = footer.windows(4).rposition(|w| w == b"SHRD").unwrap();
    let mut new_footer = footer[..at].to_vec();
    new_footer.extend_from_slice(section);
    let mut out = file[..footer_at].to_vec();
    seal_footer(&mut out, &new_footer);
    out
}

/// A shared section of `segments` (blocks, dictionary bytes).
fn section(version: u8, segments: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"SHRD".to_vec();
    out.push(version);
    varint(&mut out, segments.len() as u64);
    for (blocks, dict) in segments {
        varint(&mut out, *blocks);
        varint(&mut out, dict.len() as u64);
        out.extend_from_slice(dict);
    }
    out
}

/// Opens and reads every page; the first error as text.
fn read(bytes: Vec<u8>) -> Result<(), String> {
    let ds = Dataset::from_memory(bytes, "forged.toc").map_err(|e| e.to_string())?;
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).map_err(|e| e.to_string())?;
        block.pack().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn forged_shared_sections_break_one_rule_each() {
    let good = file();
    let ds = Dataset::from_memory(good.clone(), "good.toc").unwrap();
    assert_eq!(ds.n_segments(), (2, 2));
    let n_blocks = ds.n_blocks() as u64;
    read(good.clone()).unwrap();
    // The section as written, rebuilt by hand, reads.
    let n = good.len();
    let footer_at = u64::from_le_bytes(good[n - 16..n - 8].try_into().unwrap()) as usize;
    let at = good[..n - 16]
        .windows(4)
        .rposition(|w| w == b"SHRD")
        .unwrap();
    assert!(at > footer_at);
    let same = with_section(&good, &good[at..n - 16]);
    assert_eq!(same, good);

    let mut other_cols = SparseBatch::with_cols(3).unwrap();
    for _ in 0..4 {
        other_cols.push_row(&[0, 1], &[1.0, 1.0]).unwrap();
    }
    let narrow = Encoder::new(EncodeOptions::default())
        .learn_segment(&other_cols)
        .unwrap()
        .unwrap()
        .dict()
        .as_bytes()
        .to_vec();
    let cases = [
        (
            "a segment of no blocks",
            section(1, &[(0, vec![]), (n_blocks, vec![])]),
            "blocks of a segment",
        ),
        (
            "segments short of the blocks",
            section(1, &[(n_blocks - 1, vec![])]),
            "blocks of all segments",
        ),
        (
            "more blocks than the file",
            section(1, &[(n_blocks + 1, vec![])]),
            "blocks of a segment",
        ),
        (
            "section version 2",
            section(2, &[(n_blocks, vec![])]),
            "version",
        ),
        (
            "a dictionary of garbage",
            section(1, &[(n_blocks, vec![3, 1, 2, 3])]),
            "segment 0",
        ),
        (
            "a dictionary of other columns",
            section(1, &[(n_blocks, narrow)]),
            "columns of a shared dictionary",
        ),
        // The pages are coded against dictionaries that are gone: where
        // no dictionary is, a page must be a batch.
        (
            "no dictionary for compact pages",
            section(1, &[(n_blocks, vec![])]),
            "not its magic \"TOCB\"",
        ),
    ];
    for (name, section, expected) in cases {
        let e = read(with_section(&good, &section)).expect_err(name);
        assert!(e.contains(expected), "{name}: {e}");
    }
    // A version-2 file has no shared section.
    let mut v2 = good.clone();
    v2[4] = 2;
    let e = read(v2).unwrap_err();
    assert!(e.contains("file version"), "{e}");
}

/// `file` with `edit` applied to block 0's bytes (of unchanged length),
/// the block's checksum in the index and the footer's recomputed.
fn with_block0(file: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let ds = Dataset::from_memory(file.to_vec(), "edit.toc").unwrap();
    let len = ds.read_block(0).unwrap().bytes().len();
    let mut out = file.to_vec();
    let old = crc32(&out[8..8 + len]).to_le_bytes();
    edit(&mut out[8..8 + len]);
    let new = crc32(&out[8..8 + len]).to_le_bytes();
    let n = out.len();
    let footer_at = u64::from_le_bytes(out[n - 16..n - 8].try_into().unwrap()) as usize;
    let at = footer_at
        + out[footer_at..n - 16]
            .windows(4)
            .position(|w| w == old)
            .unwrap();
    out[at..at + 4].copy_from_slice(&new);
    let crc = crc32(&out[footer_at..n - 16]).to_le_bytes();
    out[n - 8..n - 4].copy_from_slice(&crc);
    out
}

/// Version 4's compact pages (in the version-8 files written now), every
/// checksum right: each page form is
/// read only in files of its version, and a compact page's form byte is
/// checked (the rules of its bytes: `tests/codec/compact.rs`).
#[test]
fn forged_compact_pages_and_versions_are_refused() {
    let good = file();
    let ds = Dataset::from_memory(good.clone(), "good.toc").unwrap();
    assert_eq!(ds.info().version, 8);
    let block = ds.read_block(0).unwrap();
    let mut tree = tocpile::DecodeTree::default();
    let view = block.toc_view(0, &mut tree).unwrap();
    assert_eq!(view.batch.version(), 4, "page 0 is compact");
    let at = view.batch.as_bytes().as_ptr() as usize - block.bytes().as_ptr() as usize;
    assert_eq!(block.bytes()[at], 1, "the form byte");
    // Rebuilt with the same bytes, the file is the same.
    assert_eq!(with_block0(&good, |_| {}), good);

    let form = with_block0(&good, |b| b[at] = 3);
    let e = read(form).unwrap_err();
    assert!(
        e.contains("block 0, page 0") && e.contains("compact page (first byte 1 or 2)"),
        "{e}"
    );
    // Form byte 2 is a page of row ids from version 7 on (its rules:
    // `tests/codec/row_ids.rs`); in a version-6 file it is refused by
    // name.
    let mut ids = with_block0(&good, |b| b[at] = 2);
    ids[4] = 6;
    let e = read(ids).unwrap_err();
    assert!(
        e.contains("block 0, page 0") && e.contains("found a page of row ids"),
        "{e}"
    );
    // A version-4 file called version 3: its compact pages are no
    // version-3 pages.
    let mut v3 = good.clone();
    v3[4] = 3;
    let e = read(v3).unwrap_err();
    assert!(e.contains("page 0") && e.contains("\"TOCB\""), "{e}");
    // A version-3 file (the golden one) called version 4: its version-3
    // pages are not compact pages.
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/v3/dataset/toc_full.toc");
    let mut v4 = std::fs::read(golden).unwrap();
    read(v4.clone()).unwrap();
    v4[4] = 4;
    let e = read(v4).unwrap_err();
    assert!(e.contains("a version-3 page"), "{e}");
    // A later version is refused by name.
    let mut v9 = good;
    v9[4] = 9;
    let e = read(v9).unwrap_err();
    assert!(e.contains('9'), "{e}");
}
