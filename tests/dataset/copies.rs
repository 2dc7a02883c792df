//! Page copies (dataset file version 5): a page equal to the previous
//! page of its block, rows, labels and payload, is stored as one zero
//! byte; in version 6 a run of copies is one zero byte and their count. Round trips through every reading path (owned pages, the
//! loader's packed blocks, the verifier) on random rows with many
//! repeats; one forged file per rule, every checksum right; every
//! truncation detected.

use proptest::prelude::*;

use crate::support::forge::{crc32, seal_footer, varint};
use crate::support::{runs, temp_path};
use tocpile::dataset::{Dataset, DatasetWriter, PageDecoder, WriterOptions};
use tocpile::SparseBatch;

fn write_bytes(rows: &SparseBatch, labels: &[f64], options: WriterOptions) -> Vec<u8> {
    let path = temp_path("copies");
    let mut w = DatasetWriter::create(&path, rows.n_cols(), options).unwrap();
    w.push(rows, labels).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// Rows as (columns, values).
type Rows = Vec<(Vec<u32>, Vec<f64>)>;

/// Every row and label of the file through owned pages, and the same
/// through the loader's packed blocks (trusted decode); the count of
/// page copies.
fn read_back(bytes: Vec<u8>) -> Result<(Rows, Vec<f64>, usize), String> {
    let ds = Dataset::from_memory(bytes, "copies.toc").map_err(|e| e.to_string())?;
    let (mut rows, mut labels, mut copies) = (Vec::new(), Vec::new(), 0);
    let mut decoder = PageDecoder::new();
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).map_err(|e| e.to_string())?;
        copies += (0..block.n_pages())
            .filter(|&j| block.page_is_copy(j))
            .count();
        labels.extend_from_slice(block.labels());
        let mut owned = Vec::new();
        for page in block.pages().map_err(|e| e.to_string())? {
            for (c, v) in page.batch().decode().rows() {
                owned.push((c.to_vec(), v.to_vec()));
            }
        }
        let packed = block.pack().map_err(|e| e.to_string())?;
        let mut trusted = Vec::new();
        for j in 0..packed.n_pages() {
            packed
                .decode_page(j, &mut decoder)
                .map_err(|e| e.to_string())?;
            for i in 0..decoder.n_rows() {
                let (s, e) = decoder.row_range(i);
                trusted.push((decoder.cols()[s..e].to_vec(), decoder.vals()[s..e].to_vec()));
            }
        }
        assert_eq!(owned, trusted, "block {b}: packed and owned pages");
        rows.extend(owned);
    }
    ds.verify(|_| {}).map_err(|e| e.to_string())?;
    Ok((rows, labels, copies))
}

fn as_rows(batch: &SparseBatch) -> Rows {
    batch
        .rows()
        .map(|(c, v)| (c.to_vec(), v.to_vec()))
        .collect()
}

#[test]
fn repeated_pages_are_stored_as_copies_and_read_back() {
    let (rows, labels) = runs(4, 400, 2000, 12);
    let bytes = write_bytes(&rows, &labels, WriterOptions::default());
    assert_eq!(bytes[4], 8, "version 8");
    let len = bytes.len();
    let (read, read_labels, copies) = read_back(bytes).unwrap();
    assert_eq!(read, as_rows(&rows));
    assert_eq!(read_labels, labels);
    // Runs of 400 rows are 8 pages of 50: all but the first of each run
    // (and of each block) are copies.
    assert!(copies >= 20, "{copies} copies");
    // The same rows with every page different (no two consecutive rows
    // alike) take far more bytes.
    let (mixed, mixed_labels) = runs(4, 1, 2000, 12);
    let other = write_bytes(&mixed, &mixed_labels, WriterOptions::default());
    let (_, _, none) = read_back(other.clone()).unwrap();
    assert_eq!(none, 0);
    assert!(len * 3 < other.len(), "{len} bytes against {}", other.len());
}

#[test]
fn a_block_of_copies_closes_at_8_rows_a_target_byte() {
    let (rows, labels) = runs(1, 10_000, 10_000, 4);
    let options = WriterOptions::default().with_block_bytes(100);
    let ds = Dataset::from_memory(write_bytes(&rows, &labels, options), "one.toc").unwrap();
    for b in 0..ds.n_blocks() {
        assert!(ds.read_block(b).unwrap().n_rows() <= 800, "block {b}");
    }
    assert!(ds.n_blocks() >= 10_000 / 850);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random rows with many repeats (a few distinct rows in runs of any
    /// length), any page, block and segment sizes: every row and label
    /// comes back through every path.
    #[test]
    fn files_of_repeated_rows_round_trip(
        pool in 1usize..6,
        run in 1usize..90,
        n_rows in 0usize..700,
        n_cols in 1u32..20,
        page_rows in 1usize..40,
        block_bytes in 1usize..400,
        segment_rows in 0usize..300,
    ) {
        let (rows, labels) = runs(pool, run, n_rows, n_cols);
        let options = WriterOptions::default()
            .with_page_rows(page_rows)
            .with_block_bytes(block_bytes)
            .with_segment_rows(segment_rows);
        let bytes = write_bytes(&rows, &labels, options);
        let (read, read_labels, copies) = read_back(bytes).unwrap();
        prop_assert_eq!(read, as_rows(&rows));
        prop_assert_eq!(read_labels, labels);
        if segment_rows == 0 {
            prop_assert_eq!(copies, 0, "version 2 has no copies");
        }
    }
}

/// The file's footer fields, parsed to be rewritten (the grammar of
/// `docs/FORMAT.md`; sections after the index kept as bytes).
struct Footer {
    head: Vec<u64>,
    format: u8,
    rest: Vec<u64>,
    schema: Vec<u8>,
    entries: Vec<(u64, u64, u64, u32)>,
    sections: Vec<u8>,
    at: usize,
}

fn read_varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn parse_footer(file: &[u8]) -> Footer {
    let n = file.len();
    let at = u64::from_le_bytes(file[n - 16..n - 8].try_into().unwrap()) as usize;
    let f = &file[at..n - 16];
    assert_eq!(&f[..4], b"TOCF");
    let mut i = 4;
    let head = (0..3).map(|_| read_varint(f, &mut i)).collect();
    let format = f[i];
    i += 1;
    let rest = (0..4).map(|_| read_varint(f, &mut i)).collect();
    let schema_len = read_varint(f, &mut i) as usize;
    let schema = f[i..i + schema_len].to_vec();
    i += schema_len;
    let n_blocks = read_varint(f, &mut i);
    let entries = (0..n_blocks)
        .map(|_| {
            let (len, rows, pages) = (
                read_varint(f, &mut i),
                read_varint(f, &mut i),
                read_varint(f, &mut i),
            );
            let crc = u32::from_le_bytes(f[i..i + 4].try_into().unwrap());
            i += 4;
            (len, rows, pages, crc)
        })
        .collect();
    Footer {
        head,
        format,
        rest,
        schema,
        entries,
        sections: f[i..].to_vec(),
        at,
    }
}

/// The file with its blocks `blocks` (in order) and `footer`, every
/// checksum and length recomputed.
fn rebuild(blocks: &[Vec<u8>], footer: &Footer, version: u8) -> Vec<u8> {
    let mut out = b"TOCD".to_vec();
    out.extend_from_slice(&[version, 0, 0, 0]);
    let mut f = b"TOCF".to_vec();
    for &v in &footer.head {
        varint(&mut f, v);
    }
    f.push(footer.format);
    for &v in &footer.rest {
        varint(&mut f, v);
    }
    varint(&mut f, footer.schema.len() as u64);
    f.extend_from_slice(&footer.schema);
    varint(&mut f, blocks.len() as u64);
    for (block, &(_, rows, pages, _)) in blocks.iter().zip(&footer.entries) {
        varint(&mut f, block.len() as u64);
        varint(&mut f, rows);
        varint(&mut f, pages);
        f.extend_from_slice(&crc32(block).to_le_bytes());
        out.extend_from_slice(block);
    }
    f.extend_from_slice(&footer.sections);
    seal_footer(&mut out, &f);
    out
}

fn blocks_of(file: &[u8], footer: &Footer) -> Vec<Vec<u8>> {
    let mut at = 8;
    footer
        .entries
        .iter()
        .map(|&(len, ..)| {
            let b = file[at..at + len as usize].to_vec();
            at += len as usize;
            b
        })
        .collect()
}

/// `runs(50, 1, 500, 6)` with labels -1 and 1: pages whose labels take
/// the integer form (their scaled form is larger), which every version
/// from 2 reads, so that the file's blocks may be called version 5.
fn runs_of_two_labels() -> (SparseBatch, Vec<f64>) {
    let (rows, labels) = runs(50, 1, 500, 6);
    let labels = labels
        .iter()
        .map(|&l| if l == 0.0 { -1.0 } else { 1.0 })
        .collect();
    (rows, labels)
}

/// A version-8 file of one block: a stored page, then a run of copies of
/// it.
fn one_block_of_copies() -> Vec<u8> {
    let (rows, labels) = runs_of_two_labels();
    let options = WriterOptions::default().with_segment_rows(500);
    let file = write_bytes(&rows, &labels, options);
    let footer = parse_footer(&file);
    assert_eq!(footer.entries.len(), 1);
    assert_eq!(footer.entries[0].2, 10, "ten pages");
    let block = &blocks_of(&file, &footer)[0];
    assert_eq!(&block[block.len() - 2..], &[0, 9], "a run of nine copies");
    file
}

#[test]
fn forged_page_copies_break_one_rule_each() {
    let good = one_block_of_copies();
    let footer = parse_footer(&good);
    assert_eq!(footer.at, 8 + footer.entries[0].0 as usize);
    let block = blocks_of(&good, &footer).remove(0);
    // Rebuilt as it was, the file is the same.
    assert_eq!(rebuild(std::slice::from_ref(&block), &footer, 8), good);
    read_back(good.clone()).unwrap();
    let run_at = block.len() - 2;

    // A block that starts with a copy: there is no page to copy.
    let mut first = vec![0u8, 1];
    first.extend_from_slice(&block);
    let mut f = parse_footer(&good);
    f.entries[0].1 += 50;
    f.entries[0].2 += 1;
    f.head[1] += 50;
    f.rest[2] += 1;
    let e = read_back(rebuild(&[first], &f, 8)).unwrap_err();
    assert!(
        e.contains("block 0") && e.contains("needs a page before it") && e.contains("byte 0"),
        "{e}"
    );

    // A copy past the rows the index gives the block (the run's last).
    let mut f = parse_footer(&good);
    f.entries[0].1 -= 1;
    f.head[1] -= 1;
    let e = read_back(rebuild(std::slice::from_ref(&block), &f, 8)).unwrap_err();
    assert!(
        e.contains("rows of a page copy") && e.contains(&format!("byte {run_at}")),
        "{e}"
    );

    // A run of no copies.
    let mut zero = block.clone();
    zero[run_at + 1] = 0;
    let e = read_back(rebuild(&[zero], &footer, 8)).unwrap_err();
    assert!(
        e.contains("page copies in a run") && e.contains(&format!("byte {}", run_at + 1)),
        "{e}"
    );

    // A run longer than the pages the index gives the block.
    let mut long = block.clone();
    long[run_at + 1] = 10;
    let e = read_back(rebuild(&[long], &footer, 8)).unwrap_err();
    assert!(
        e.contains("page copies in a run") && e.contains(&format!("byte {}", run_at + 1)),
        "{e}"
    );

    // A run of 2^40 copies and a footer that claims them: the footer's
    // rows are held to the decode limit before anything is read.
    let mut huge = block[..run_at + 1].to_vec();
    varint(&mut huge, 1 << 40);
    let mut f = parse_footer(&good);
    f.entries[0].1 = 50 + 50 * (1 << 40);
    f.entries[0].2 = 1 + (1 << 40);
    f.head[1] = f.entries[0].1;
    f.rest[2] = f.entries[0].2;
    let e = read_back(rebuild(&[huge], &f, 8)).unwrap_err();
    assert!(e.contains("rows one block holds"), "{e}");

    // 2^26 pages of one row each in a block of a few bytes: their spans
    // (56 bytes a page) are held to an eighth of the decode limit.
    let mut f = parse_footer(&good);
    f.entries[0].1 = 1 << 26;
    f.entries[0].2 = 1 << 26;
    f.head[1] = 1 << 26;
    f.rest[2] = 1 << 26;
    let e = read_back(rebuild(std::slice::from_ref(&block), &f, 8)).unwrap_err();
    assert!(e.contains("pages one block holds"), "{e}");

    // More pages than rows: refused at open.
    let mut f = parse_footer(&good);
    f.entries[0].2 = f.entries[0].1 + 1;
    f.rest[2] = f.entries[0].2;
    let e = read_back(rebuild(std::slice::from_ref(&block), &f, 8)).unwrap_err();
    assert!(e.contains("block pages"), "{e}");

    // More rows than 8 a byte: held to the decode limit (a footer of
    // 2^40 rows is refused before anything is read).
    let mut f = parse_footer(&good);
    f.entries[0].1 = 1 << 40;
    f.head[1] = 1 << 40;
    let e = read_back(rebuild(std::slice::from_ref(&block), &f, 8)).unwrap_err();
    assert!(e.contains("rows one block holds"), "{e}");
    // In version 4 the same claim is a field out of range.
    let e = read_back(rebuild(std::slice::from_ref(&block), &f, 4)).unwrap_err();
    assert!(e.contains("8 per byte of the block"), "{e}");

    // A version-8 file called version 5 or 4: its run is no single copy
    // (version 5 reads the count as the next page's rows) and no page
    // (in a version-4 file, a zero byte is a page of no rows).
    for version in [5, 4] {
        let mut old = good.clone();
        old[4] = version;
        assert!(read_back(old).is_err(), "version {version}");
    }
}

// Version 5's copies, one zero byte each, still read: the committed
// version-5 golden file (`golden_v5_dataset_file_reads`, its rows and
// its three copies). A file written now cannot be called version 5: its
// dictionary may gap-code its ids, a version-8 form.

#[test]
fn every_truncation_of_a_file_of_copies_is_an_error() {
    let good = one_block_of_copies();
    for len in 0..good.len() {
        let e = Dataset::from_memory(good[..len].to_vec(), "cut.toc")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("cut at {len} opened"));
        if len >= 8 {
            assert!(e.contains("truncated"), "cut at {len}: {e}");
        }
    }
}
