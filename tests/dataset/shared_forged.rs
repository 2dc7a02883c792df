//! Forged shared-dictionary sections (dataset file version 3), every
//! checksum right: one file per rule the section can break, each an
//! error naming the footer, a segment or the page.

use crate::support::forge::{crc32, varint};
use crate::support::{load, temp_path};
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::{EncodeOptions, Encoder, SparseBatch};

/// A version-3 file of mushrooms rows: two segments, each with its
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
    out.extend_from_slice(&new_footer);
    out.extend_from_slice(&(footer_at as u64).to_le_bytes());
    out.extend_from_slice(&crc32(&new_footer).to_le_bytes());
    out.extend_from_slice(b"TOCD");
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
        // The pages are coded against dictionaries that are gone.
        (
            "no dictionary for version-3 pages",
            section(1, &[(n_blocks, vec![])]),
            "version-3 page",
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
