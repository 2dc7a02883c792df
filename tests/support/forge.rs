//! Forged dataset files for the resource-limit regression tests: valid
//! checksums, hostile sizes. Written byte by byte from `docs/FORMAT.md`
//! (no library writer would produce them) and shared, by path, with the
//! command-line tests and the fuzz crate; it depends on nothing but std.

#![allow(dead_code)]

/// The page format code of TOC_FULL pages.
pub const TOC_FULL: u8 = 9;

/// Unsigned LEB128.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bits needed to hold `max` (at least 1).
pub fn bits(max: u64) -> u8 {
    (64 - max.leading_zeros()).max(1) as u8
}

/// A `packed` array: count, width, values as a little-endian bit stream.
pub fn packed(out: &mut Vec<u8>, values: &[u64], width: u8) {
    varint(out, values.len() as u64);
    out.push(width);
    let (mut acc, mut n) = (0u128, 0u32);
    for &v in values {
        acc |= u128::from(v) << n;
        n += u32::from(width);
        while n >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            n -= 8;
        }
    }
    if n > 0 {
        out.push(acc as u8);
    }
}

/// A TOC batch (version 1, TREE + INDEXED) of `rows` rows whose codes
/// chain every row onto the node the previous row created: row `k` is
/// columns `0..=k`, so `rows` rows of two codes each decode to
/// `rows * (rows + 1) / 2` non-zeros (2^31 for 65,536 rows, from about
/// 280 KB). Every validity rule of the format holds.
pub fn bomb_batch(rows: u64) -> Vec<u8> {
    assert!(rows >= 2);
    let mut out = b"TOCB".to_vec();
    out.push(1); // version
    out.push(0b11); // TREE | INDEXED
    varint(&mut out, rows); // n_cols
    let lengths: Vec<u64> = (0..rows).map(|k| if k == 0 { 1 } else { 2 }).collect();
    packed(&mut out, &lengths, 2);
    // First layer: pair p is (column p, value 1.0); node p + 1.
    let cols: Vec<u64> = (0..rows).collect();
    packed(&mut out, &cols, bits(rows - 1));
    packed(&mut out, &vec![0; rows as usize], 0); // value ids, all 0
    out.push(0x00); // float dictionary
    varint(&mut out, 1);
    out.extend_from_slice(&1.0f64.to_le_bytes());
    // Row 0: node 1. Row 1: nodes 1, 2 (creates node rows + 1 = cols 0..=1).
    // Row k >= 2: node rows + k - 1 (cols 0..k, made by row k - 1), then
    // node k + 1 (col k); creates node rows + k.
    let mut codes = vec![1, 1, 2];
    for k in 2..rows {
        codes.extend([rows + k - 1, k + 1]);
    }
    packed(&mut out, &codes, bits(2 * rows));
    out
}

/// Non-zeros of [`bomb_batch`]`(rows)`.
pub fn bomb_nnz(rows: u64) -> u64 {
    rows * (rows + 1) / 2
}

/// What a forged footer claims.
#[derive(Debug, Clone, Copy)]
pub struct Claims {
    /// Column count.
    pub n_cols: u64,
    /// Rows (also written as the block's rows).
    pub n_rows: u64,
    /// Non-zeros.
    pub nnz: u64,
}

/// A dataset file of one block holding one page of `rows` rows (labels all
/// 0.0) with `payload` in page format `format`, its footer claiming
/// `claims`; every checksum is right.
pub fn dataset(format: u8, rows: u64, payload: &[u8], claims: Claims) -> Vec<u8> {
    dataset_of(format, &[(rows, payload.to_vec())], 1, claims)
}

/// A dataset file of `pages` (rows, payload in page format `format`;
/// labels all 0.0), `per_block` pages to a block, its footer claiming
/// `claims` (the last block's rows make up the claimed row total); every
/// checksum is right.
pub fn dataset_of(
    format: u8,
    pages: &[(u64, Vec<u8>)],
    per_block: usize,
    claims: Claims,
) -> Vec<u8> {
    dataset_labelled(format, pages, per_block, claims, 0.0)
}

/// [`dataset_of`] with every label `label` (any bits: a NaN for the tests
/// of the finite-number rule).
pub fn dataset_labelled(
    format: u8,
    pages: &[(u64, Vec<u8>)],
    per_block: usize,
    claims: Claims,
    label: f64,
) -> Vec<u8> {
    let pages: Vec<(u64, Vec<u8>, Vec<u8>)> = pages
        .iter()
        .map(|(rows, payload)| (*rows, float_labels(*rows, label), payload.clone()))
        .collect();
    dataset_versioned(format, 1, &pages, per_block, claims)
}

/// A labels section in the float form (version 1; after a kind byte 0 in
/// version 2): one label, `rows` ids of one bit.
pub fn float_labels(rows: u64, label: f64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, 1); // label dictionary: one label
    out.extend_from_slice(&label.to_le_bytes());
    packed(&mut out, &vec![0; rows as usize], 1);
    out
}

/// A labels section in the integer form of version 2 (kind byte 1
/// included): `values` as zigzag varints (written as given, in any order),
/// then `ids` at `bits(values.len() - 1)` bits with no header.
pub fn int_labels(values: &[i64], ids: &[u64]) -> Vec<u8> {
    let mut out = vec![1];
    varint(&mut out, values.len() as u64);
    for &v in values {
        varint(&mut out, ((v << 1) ^ (v >> 63)) as u64);
    }
    let mut ids_packed = Vec::new();
    let width = bits(values.len().saturating_sub(1) as u64);
    packed(&mut ids_packed, ids, width);
    // Drop the count and width: the integer form has neither.
    let header = {
        let mut h = Vec::new();
        varint(&mut h, ids.len() as u64);
        h.len() + 1
    };
    out.extend_from_slice(&ids_packed[header..]);
    out
}

/// A stored page of a forged file: rows, labels section bytes, payload.
pub type StoredPage = (u64, Vec<u8>, Vec<u8>);

/// A dataset file of format `version` (the header's byte, written as
/// given) of `pages` (rows, labels section bytes, payload), `per_block`
/// pages to a block, its footer claiming `claims`; every checksum is right.
pub fn dataset_versioned(
    format: u8,
    version: u8,
    pages: &[StoredPage],
    per_block: usize,
    claims: Claims,
) -> Vec<u8> {
    let pages: Vec<Option<StoredPage>> = pages.iter().cloned().map(Some).collect();
    dataset_with_copies(format, version, &pages, per_block, claims)
}

/// [`dataset_versioned`] where a page may be a copy (`None`: one zero
/// byte, version 5's copy of the block's previous page, whose rows it
/// counts again; a copy first in its block counts none). From version 6
/// on, consecutive copies are written as one run (a zero byte, a count).
pub fn dataset_with_copies(
    format: u8,
    version: u8,
    pages: &[Option<StoredPage>],
    per_block: usize,
    claims: Claims,
) -> Vec<u8> {
    let mut file = b"TOCD\x01\x00\x00\x00".to_vec();
    file[4] = version;
    let mut entries = Vec::new();
    let mut stored = Vec::new();
    for group in pages.chunks(per_block.max(1)) {
        let mut block = Vec::new();
        let (mut rows, mut last) = (0u64, None);
        // Version 6 writes consecutive copies as one run: a zero byte and
        // their count.
        let runs = version >= 6;
        let mut run = 0u64;
        for (i, page) in group.iter().enumerate() {
            if runs && page.is_none() {
                run += 1;
                rows += last.unwrap_or(0);
                if group.get(i + 1).is_none_or(|p| p.is_some()) {
                    block.push(0);
                    varint(&mut block, run);
                    run = 0;
                }
                continue;
            }
            match page {
                Some((n, labels, payload)) => {
                    varint(&mut block, *n);
                    block.extend_from_slice(labels);
                    varint(&mut block, payload.len() as u64);
                    block.extend_from_slice(payload);
                    rows += n;
                    last = Some(*n);
                    stored.push((*n, payload.len() as u64));
                }
                None => {
                    block.push(0);
                    rows += last.unwrap_or(0);
                }
            }
        }
        entries.push((block.len() as u64, rows, group.len() as u64, crc32(&block)));
        file.extend_from_slice(&block);
    }
    let others: u64 = entries.iter().rev().skip(1).map(|e| e.1).sum();
    if let Some(last) = entries.last_mut() {
        last.1 = claims.n_rows.saturating_sub(others);
    }
    let mut footer = b"TOCF".to_vec();
    for v in [claims.n_cols, claims.n_rows, claims.nnz] {
        varint(&mut footer, v);
    }
    footer.push(format);
    let page_rows = stored.iter().map(|p| p.0).max().unwrap_or(0);
    let payload: u64 = stored.iter().map(|p| p.1).sum();
    // page_rows, block_bytes, n_pages, payload bytes, schema length.
    for v in [page_rows, 1 << 22, pages.len() as u64, payload, 0] {
        varint(&mut footer, v);
    }
    varint(&mut footer, entries.len() as u64);
    for (len, rows, n, crc) in entries {
        for v in [len, rows, n] {
            varint(&mut footer, v);
        }
        footer.extend_from_slice(&crc.to_le_bytes());
    }
    seal_footer(&mut file, &footer);
    file
}

/// The decompression bomb as a dataset file: one page of
/// [`bomb_batch`]`(rows)`. With `honest` the footer claims the true
/// non-zeros; otherwise a small count, so only decoding the page can tell.
pub fn bomb_file(rows: u64, honest: bool) -> Vec<u8> {
    let nnz = if honest { bomb_nnz(rows) } else { rows };
    let claims = Claims {
        n_cols: rows,
        n_rows: rows,
        nnz,
    };
    dataset(TOC_FULL, rows, &bomb_batch(rows), claims)
}

/// A flat TOC page (version 1, INDEXED, no tree) of `rows` rows over
/// `n_cols` columns, row `k` holding column `k % n_cols` with value 1.0.
pub fn small_batch(rows: u64, n_cols: u64) -> Vec<u8> {
    valued_batch(rows, n_cols, 1.0)
}

/// [`small_batch`] with every value `value` (any bits: a NaN for the
/// tests of the finite-number rule).
pub fn valued_batch(rows: u64, n_cols: u64, value: f64) -> Vec<u8> {
    let mut out = b"TOCB".to_vec();
    out.push(1);
    out.push(0b10); // INDEXED
    varint(&mut out, n_cols);
    packed(&mut out, &vec![1; rows as usize], 1);
    let cols: Vec<u64> = (0..rows).map(|k| k % n_cols).collect();
    packed(&mut out, &cols, bits(n_cols - 1));
    packed(&mut out, &vec![0; rows as usize], 0);
    out.push(0x00);
    varint(&mut out, 1);
    out.extend_from_slice(&value.to_le_bytes());
    out
}

/// A small valid file (`rows` rows, 10 columns) whose checksum-valid
/// footer claims `claims` instead of the truth.
pub fn lying_footer(rows: u64, claims: Claims) -> Vec<u8> {
    dataset(TOC_FULL, rows, &small_batch(rows, 10), claims)
}

/// CRC-32 (IEEE), bit by bit.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Appends `section` (one or more whole footer sections, tags included)
/// to the footer of `file`, recomputing the footer's checksum.
pub fn with_footer_sections(file: &[u8], section: &[u8]) -> Vec<u8> {
    let n = file.len();
    let footer_at = u64::from_le_bytes(file[n - 16..n - 8].try_into().unwrap()) as usize;
    let mut footer = file[footer_at..n - 16].to_vec();
    footer.extend_from_slice(section);
    let mut out = file[..footer_at].to_vec();
    seal_footer(&mut out, &footer);
    out
}

/// Appends `footer` (from its `TOCF` tag) to `file`, whose blocks end
/// here, then the footer's offset, its checksum and the closing magic.
pub fn seal_footer(file: &mut Vec<u8>, footer: &[u8]) {
    let footer_at = file.len() as u64;
    file.extend_from_slice(footer);
    file.extend_from_slice(&footer_at.to_le_bytes());
    file.extend_from_slice(&crc32(footer).to_le_bytes());
    file.extend_from_slice(b"TOCD");
}

/// A shared-dictionary section (`SHRD`, version 1) of `segments` (blocks,
/// dictionary bytes).
pub fn shared_section(segments: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"SHRD\x01".to_vec();
    varint(&mut out, segments.len() as u64);
    for (blocks, dict) in segments {
        varint(&mut out, *blocks);
        varint(&mut out, dict.len() as u64);
        out.extend_from_slice(dict);
    }
    out
}

/// A shared dictionary (`docs/FORMAT.md`, "Shared dictionaries") whose
/// nodes are one chain: `depth` pairs (column `k`, value 1.0), then
/// `depth - 1` shared nodes, node `depth + 1 + i` the child of the one
/// before it (of pair node 1 for the first) with key pair `i + 2`. Its
/// deepest node, [`chain_deepest`]`(depth)`, decodes to `depth`
/// non-zeros (columns `0..depth`); the dictionary has `2 * depth` nodes,
/// root included.
pub fn chain_dict(depth: u64) -> Vec<u8> {
    assert!(depth >= 2);
    // The pairs: a version-1 TREE | INDEXED batch of no rows.
    let mut pairs = b"TOCB\x01\x03".to_vec();
    varint(&mut pairs, depth); // n_cols
    packed(&mut pairs, &[], 1); // row lengths: none
    let cols: Vec<u64> = (0..depth).collect();
    packed(&mut pairs, &cols, bits(depth - 1));
    packed(&mut pairs, &vec![0; depth as usize], 0); // value ids, all 0
    pairs.push(0x00); // float dictionary of one value
    varint(&mut pairs, 1);
    pairs.extend_from_slice(&1.0f64.to_le_bytes());
    packed(&mut pairs, &[], 1); // codes: none
    let mut out = Vec::new();
    varint(&mut out, pairs.len() as u64);
    out.extend_from_slice(&pairs);
    // Parents as escape-coded gaps from the previous parent (from 0 for
    // the first): 1, then depth (node depth + 1 after node 1), then 1s.
    let n_first = depth + 1;
    let mut gaps = vec![1u64];
    if depth > 2 {
        gaps.push(n_first - 1);
        gaps.extend(std::iter::repeat_n(1, depth as usize - 3));
    }
    let width = 2u8;
    let escape = (1u64 << width) - 1;
    let mut symbols = Vec::new();
    for g in gaps {
        symbols.extend(std::iter::repeat_n(escape, (g / escape) as usize));
        symbols.push(g % escape);
    }
    packed(&mut out, &symbols, width);
    let keys: Vec<u64> = (2..=depth).collect();
    packed(&mut out, &keys, bits(depth));
    out
}

/// The deepest node of [`chain_dict`]`(depth)`.
pub fn chain_deepest(depth: u64) -> u64 {
    2 * depth - 1
}

/// A compact page (dataset file version 4) of one row per code in
/// `codes`, each row that one code.
pub fn compact_page(codes: &[u64]) -> Vec<u8> {
    let mut out = vec![0x01];
    let mut lens = Vec::new();
    packed(&mut lens, &vec![1; codes.len()], 1);
    // Drop the count: a compact page stores none.
    let skip = {
        let mut h = Vec::new();
        varint(&mut h, codes.len() as u64);
        h.len()
    };
    out.extend_from_slice(&lens[skip..]);
    let mut packed_codes = Vec::new();
    let max = codes.iter().copied().max().unwrap_or(1);
    packed(&mut packed_codes, codes, bits(max));
    out.extend_from_slice(&packed_codes[skip..]);
    out
}

/// A version-4 TOC_FULL file of one segment whose dictionary is
/// [`chain_dict`]`(depth)`: `pages` compact pages (each a list of rows of
/// one code: [`compact_page`]), `per_block` to a block, labels all 0.
/// Every checksum is right and the footer claims the true totals.
pub fn chain_file(depth: u64, pages: &[Vec<u64>], per_block: usize) -> Vec<u8> {
    // Node n's depth: a pair node is 1, shared node depth + 1 + i is i + 2.
    let node_depth = |n: u64| if n <= depth { 1 } else { n - depth + 1 };
    let all: Vec<(u64, Vec<u8>, Vec<u8>)> = pages
        .iter()
        .map(|codes| {
            let rows = codes.len() as u64;
            let labels = int_labels(&[0], &vec![0; codes.len()]);
            (rows, labels, compact_page(codes))
        })
        .collect();
    let claims = Claims {
        n_cols: depth,
        n_rows: pages.iter().map(|p| p.len() as u64).sum(),
        nnz: pages.iter().flatten().map(|&c| node_depth(c)).sum(),
    };
    let file = dataset_versioned(TOC_FULL, 4, &all, per_block, claims);
    let n_blocks = pages.len().div_ceil(per_block.max(1)) as u64;
    with_footer_sections(&file, &shared_section(&[(n_blocks, chain_dict(depth))]))
}

/// The shared-dictionary bomb: a version-4 TOC_FULL file of `pages`
/// one-row compact pages, `per_block` to a block, all in one segment
/// whose dictionary is [`chain_dict`]`(depth)`, every row the one code
/// naming the chain's deepest node (`depth` non-zeros a row from a few
/// bytes). 5,000 pages of depth 131,072 in one block make 682 KB that
/// decode to 655M non-zeros. Every checksum is right and every rule of
/// the format holds; the footer claims the true non-zeros.
pub fn dict_bomb_file(pages: u64, per_block: usize, depth: u64) -> Vec<u8> {
    let page = vec![chain_deepest(depth)];
    chain_file(depth, &vec![page; pages as usize], per_block)
}
