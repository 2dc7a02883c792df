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

/// A dataset file of format `version` (the header's byte, written as
/// given) of `pages` (rows, labels section bytes, payload), `per_block`
/// pages to a block, its footer claiming `claims`; every checksum is right.
pub fn dataset_versioned(
    format: u8,
    version: u8,
    pages: &[(u64, Vec<u8>, Vec<u8>)],
    per_block: usize,
    claims: Claims,
) -> Vec<u8> {
    let mut file = b"TOCD\x01\x00\x00\x00".to_vec();
    file[4] = version;
    let mut entries = Vec::new();
    for group in pages.chunks(per_block.max(1)) {
        let mut block = Vec::new();
        for (rows, labels, payload) in group {
            varint(&mut block, *rows);
            block.extend_from_slice(labels);
            varint(&mut block, payload.len() as u64);
            block.extend_from_slice(payload);
        }
        let rows: u64 = group.iter().map(|p| p.0).sum();
        entries.push((block.len() as u64, rows, group.len() as u64, crc32(&block)));
        file.extend_from_slice(&block);
    }
    let others: u64 = entries.iter().rev().skip(1).map(|e| e.1).sum();
    if let Some(last) = entries.last_mut() {
        last.1 = claims.n_rows.saturating_sub(others);
    }
    let footer_at = file.len() as u64;
    let mut footer = b"TOCF".to_vec();
    for v in [claims.n_cols, claims.n_rows, claims.nnz] {
        varint(&mut footer, v);
    }
    footer.push(format);
    let page_rows = pages.iter().map(|p| p.0).max().unwrap_or(0);
    let payload: u64 = pages.iter().map(|p| p.2.len() as u64).sum();
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
    file.extend_from_slice(&footer);
    file.extend_from_slice(&footer_at.to_le_bytes());
    file.extend_from_slice(&crc32(&footer).to_le_bytes());
    file.extend_from_slice(b"TOCD");
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
