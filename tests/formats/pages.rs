//! Page bytes of every format from untrusted input: every truncation and
//! every single-byte change of small pages is an error or a valid batch
//! (never a panic), and a table of specific errors, one per rule, built
//! from hand-written pages (`docs/FORMAT.md`, "Comparison-format pages").

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use ndarray::Array1;
use tocpile::formats::FormatKind;
use tocpile::{Error, SparseBatch, Workspace};

use crate::support::figure3;

/// Small batches: the paper's Figure 3, a batch with repeated values, an
/// empty row and a wide id, and an empty batch.
fn small_batches() -> Vec<SparseBatch> {
    let mut mixed = SparseBatch::with_cols(6).unwrap();
    mixed.push_row(&[0, 2, 5], &[1.5, -2.0, 1.5]).unwrap();
    mixed.push_row(&[], &[]).unwrap();
    mixed.push_row(&[1, 5], &[-1e300, 3.0]).unwrap();
    vec![figure3(), mixed, SparseBatch::with_cols(3).unwrap()]
}

/// Loads `bytes` as `kind`; when it loads, the page must be a valid batch
/// of its announced shape whose bytes are exactly `bytes` and whose
/// kernels run.
fn load_checked(kind: FormatKind, bytes: &[u8]) -> Result<(), Error> {
    let page = kind.load(bytes)?;
    assert_eq!(page.kind(), kind);
    assert_eq!(page.encoded_len(), bytes.len(), "{kind}: encoded_len");
    assert_eq!(page.to_bytes(), bytes, "{kind}: rewritten bytes");
    let batch = page.decode();
    assert_eq!(
        (batch.n_rows(), batch.n_cols()),
        (page.n_rows(), page.n_cols())
    );
    let mut out = Array1::zeros(page.n_rows());
    page.matvec_into(
        Array1::ones(page.n_cols()).view(),
        out.view_mut(),
        &mut Workspace::new(),
    );
    // Re-encoding the decoded batch round-trips.
    let again = kind.encode(&batch).unwrap().to_bytes();
    assert_eq!(kind.load(&again).unwrap().decode(), batch, "{kind}: again");
    Ok(())
}

#[test]
fn every_truncation_is_an_error() {
    for batch in small_batches() {
        for kind in FormatKind::ALL {
            let bytes = kind.encode(&batch).unwrap().to_bytes();
            load_checked(kind, &bytes).unwrap();
            for len in 0..bytes.len() {
                assert!(
                    kind.load(&bytes[..len]).is_err(),
                    "{kind}: {len} of {} bytes loaded",
                    bytes.len()
                );
            }
        }
    }
}

#[test]
fn every_byte_change_is_an_error_or_a_valid_batch() {
    for batch in small_batches() {
        for kind in FormatKind::ALL {
            let bytes = kind.encode(&batch).unwrap().to_bytes();
            let mut loaded = 0;
            for i in 0..bytes.len() {
                for x in [0x01, 0x02, 0x10, 0x80, 0xff] {
                    let mut bad = bytes.clone();
                    bad[i] ^= x;
                    loaded += usize::from(load_checked(kind, &bad).is_ok());
                }
            }
            // Value bytes are free, so some changes load; headers do not.
            assert!(loaded < 5 * bytes.len(), "{kind}: every change loaded");
        }
    }
}

/// Appends `v` as a varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A page header: magic, version 1, dimensions and `extra` varints.
fn header(magic: &[u8; 4], n_rows: u64, n_cols: u64, extra: &[u64]) -> Vec<u8> {
    let mut out = magic.to_vec();
    out.push(1);
    for v in [n_rows, n_cols].iter().chain(extra) {
        varint(&mut out, *v);
    }
    out
}

fn u32s(out: &mut Vec<u8>, values: &[u32]) {
    values
        .iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

fn f64s(out: &mut Vec<u8>, values: &[f64]) {
    values
        .iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

/// A CSR page of `n_cols` columns from raw arrays.
fn csr(n_cols: u64, offsets: &[u32], cols: &[u32], values: &[f64]) -> Vec<u8> {
    let mut out = header(b"TCSR", offsets.len() as u64 - 1, n_cols, &[]);
    u32s(&mut out, offsets);
    u32s(&mut out, cols);
    f64s(&mut out, values);
    out
}

/// gzip of `raw`.
fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::new(6));
    enc.write_all(raw).unwrap();
    enc.finish().unwrap()
}

/// A page of `magic` declaring `n_rows x n_cols` around a compressed
/// `payload`.
fn compressed(magic: &[u8; 4], n_rows: u64, n_cols: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = header(magic, n_rows, n_cols, &[]);
    out.extend_from_slice(payload);
    out
}

fn err(kind: FormatKind, bytes: &[u8]) -> Error {
    match kind.load(bytes) {
        Ok(_) => panic!("{kind}: loaded"),
        Err(e) => {
            assert!(!e.to_string().is_empty());
            e
        }
    }
}

#[test]
fn page_errors() {
    let good = csr(4, &[0, 2, 3], &[0, 3, 1], &[1.0, 2.0, 3.0]);
    assert_eq!(
        FormatKind::Csr.load(&good).unwrap().decode(),
        SparseBatch::from_csr(4, vec![0, 2, 3], vec![0, 3, 1], vec![1.0, 2.0, 3.0]).unwrap()
    );
    let toc = FormatKind::TocSparse.encode(&figure3()).unwrap().to_bytes();
    let mut gzip_trailing = compressed(b"TGZP", 1, 1, &gzip(&[7; 8]));
    gzip_trailing.push(0);
    let mut trailing = good.clone();
    trailing.push(0);
    let mut version = good.clone();
    version[4] = 2;
    // A gzip bomb: 16 MiB of zeros in about 16 KiB, declared as 1 x 1.
    let bomb = gzip(&vec![0; 16 << 20]);
    assert!(bomb.len() < 64 << 10);

    let cases: Vec<(&str, FormatKind, Vec<u8>, Error)> = vec![
        (
            "empty input",
            FormatKind::Den,
            vec![],
            Error::BadMagic {
                expected: *b"TDEN",
                found: vec![],
            },
        ),
        (
            "unknown magic",
            FormatKind::Csr,
            [b"XCSR".as_slice(), &good[4..]].concat(),
            Error::BadMagic {
                expected: *b"TCSR",
                found: b"XCSR".to_vec(),
            },
        ),
        (
            "another format's magic",
            FormatKind::Den,
            good.clone(),
            Error::WrongFormat {
                expected: "DEN",
                found: "CSR",
            },
        ),
        (
            "a TOC batch as a page",
            FormatKind::Cvi,
            toc.clone(),
            Error::WrongFormat {
                expected: "CVI",
                found: "TOC",
            },
        ),
        (
            "a TOC batch of another level",
            FormatKind::TocFull,
            toc,
            Error::WrongFormat {
                expected: "TOC_FULL",
                found: "TOC_SPARSE",
            },
        ),
        (
            "version",
            FormatKind::Csr,
            version,
            Error::UnsupportedVersion {
                what: "page format",
                found: 2,
                supported: 1,
            },
        ),
        (
            "n_rows above 2^32 - 1",
            FormatKind::Den,
            header(b"TDEN", 1 << 32, 0, &[]),
            Error::FieldOutOfRange {
                what: "n_rows",
                offset: 5,
                value: 1 << 32,
                max: u32::MAX as u64,
            },
        ),
        (
            "truncated payload",
            FormatKind::Csr,
            good[..good.len() - 1].to_vec(),
            Error::Truncated {
                what: "values",
                offset: 7 + 12 + 12,
                needed: 24,
                available: 23,
            },
        ),
        (
            "trailing bytes",
            FormatKind::Csr,
            trailing,
            Error::TrailingBytes {
                what: "the page's last array",
                offset: good.len(),
                len: 1,
            },
        ),
        (
            "CSR first offset",
            FormatKind::Csr,
            csr(4, &[1, 2, 3], &[0, 3, 1], &[1.0, 2.0, 3.0]),
            Error::BadOffsets {
                index: 0,
                offset: 1,
                expected: "0",
            },
        ),
        (
            "CSR descending offsets",
            FormatKind::Csr,
            csr(4, &[0, 2, 1, 3], &[0, 3, 1], &[1.0, 2.0, 3.0]),
            Error::BadOffsets {
                index: 2,
                offset: 1,
                expected: "non-decreasing",
            },
        ),
        (
            "CSR column >= n_cols",
            FormatKind::Csr,
            csr(4, &[0, 2, 3], &[0, 4, 1], &[1.0, 2.0, 3.0]),
            Error::ColumnOutOfRange {
                row: 0,
                position: 1,
                col: 4,
                n_cols: 4,
            },
        ),
        (
            "CSR columns not ascending",
            FormatKind::Csr,
            csr(4, &[0, 1, 3], &[0, 2, 2], &[1.0, 2.0, 3.0]),
            Error::ColumnsNotAscending {
                row: 1,
                position: 1,
                prev: 2,
                col: 2,
            },
        ),
        (
            "CVI id out of range",
            FormatKind::Cvi,
            {
                let mut p = header(b"TCVI", 1, 3, &[2]);
                u32s(&mut p, &[0, 3]);
                u32s(&mut p, &[0, 1, 2]);
                p.extend_from_slice(&[0, 1, 2]);
                f64s(&mut p, &[1.0, 2.0]);
                p
            },
            Error::ValueIdOutOfRange {
                position: 2,
                id: 2,
                dict_len: 2,
            },
        ),
        (
            "DVI id out of range (the implicit zero counts)",
            FormatKind::Dvi,
            {
                let mut p = header(b"TDVI", 2, 2, &[1]);
                p.extend_from_slice(&[0, 1, 2, 0]);
                f64s(&mut p, &[4.0]);
                p
            },
            Error::ValueIdOutOfRange {
                position: 2,
                id: 2,
                dict_len: 2,
            },
        ),
        (
            "DEN payload too short",
            FormatKind::Den,
            {
                let mut p = header(b"TDEN", 2, 2, &[]);
                f64s(&mut p, &[1.0, 2.0, 3.0]);
                p
            },
            Error::LengthMismatch {
                what: "DEN payload bytes (8 * n_rows * n_cols)",
                expected: 32,
                found: 24,
            },
        ),
        (
            "DEN payload too long",
            FormatKind::Den,
            {
                let mut p = header(b"TDEN", 1, 2, &[]);
                f64s(&mut p, &[1.0, 2.0, 3.0]);
                p
            },
            Error::LengthMismatch {
                what: "DEN payload bytes (8 * n_rows * n_cols)",
                expected: 16,
                found: 24,
            },
        ),
        (
            "gzip bomb: inflates beyond the declared size",
            FormatKind::Gzip,
            compressed(b"TGZP", 1, 1, &bomb),
            Error::LengthMismatch {
                what: "decompressed bytes of a gzip page (8 * n_rows * n_cols)",
                expected: 8,
                found: 9,
            },
        ),
        (
            "gzip inflating short of the declared size",
            FormatKind::Gzip,
            compressed(b"TGZP", 1, 2, &gzip(&[7; 8])),
            Error::LengthMismatch {
                what: "decompressed bytes of a gzip page (8 * n_rows * n_cols)",
                expected: 16,
                found: 8,
            },
        ),
        (
            "gzip declaring more than deflate can hold",
            FormatKind::Gzip,
            compressed(b"TGZP", 1 << 16, 1 << 10, &bomb[..100]),
            Error::TooLarge {
                what: "dense bytes declared by a compressed page (at most u32::MAX and the codec's ratio times the payload)",
                value: 8 << 26,
                max: 103_200,
            },
        ),
        (
            "bytes after the gzip member",
            FormatKind::Gzip,
            gzip_trailing.clone(),
            Error::TrailingBytes {
                what: "the gzip member",
                offset: gzip_trailing.len() - 1,
                len: 1,
            },
        ),
        (
            "snappy declaring another size",
            FormatKind::Snappy,
            compressed(
                b"TSNP",
                1,
                2,
                &snap::raw::Encoder::new().compress_vec(&[7; 8]).unwrap(),
            ),
            Error::LengthMismatch {
                what: "decompressed bytes of a snappy page (8 * n_rows * n_cols)",
                expected: 16,
                found: 8,
            },
        ),
        (
            "lz4 bomb",
            FormatKind::Lz4,
            compressed(b"TLZ4", 1, 1, &lz4_block_of_zeros(4096)),
            Error::LengthMismatch {
                what: "decompressed bytes of an lz4 page (8 * n_rows * n_cols)",
                expected: 8,
                found: 9,
            },
        ),
    ];
    for (name, kind, bytes, want) in cases {
        assert_eq!(err(kind, &bytes), want, "{name}");
    }

    // Corrupt streams are errors naming the page.
    let mut corrupt = compressed(b"TGZP", 1, 1, &gzip(&[7; 8]));
    let n = corrupt.len();
    corrupt[n - 5] ^= 1; // the CRC
    assert!(matches!(
        err(FormatKind::Gzip, &corrupt),
        Error::Io { path, .. } if path == "gzip page"
    ));
}

/// An LZ4 block of `n` zero bytes, written by hand: a literal zero, then a
/// match at offset 1 of `n - 6` bytes, then five literal zeros.
fn lz4_block_of_zeros(n: usize) -> Vec<u8> {
    let mut out = vec![0x1f, 0x00, 0x01, 0x00];
    let mut rest = n - 6 - 4 - 15;
    while rest >= 255 {
        out.push(255);
        rest -= 255;
    }
    out.push(rest as u8);
    out.extend_from_slice(&[0x50, 0, 0, 0, 0, 0]);
    assert_eq!(lz4_flex::block::decompress(&out, n).unwrap(), vec![0; n]);
    out
}

#[test]
fn stored_zeros_load_and_decode_away() {
    // A CSR page scaled by zero holds zeros: they load and decode away.
    let page = FormatKind::Csr
        .load(&csr(3, &[0, 2], &[0, 2], &[0.0, -0.0]))
        .unwrap();
    assert_eq!(page.decode().nnz(), 0);
    // Repeated and zero dictionary entries in CVI.
    let mut p = header(b"TCVI", 1, 3, &[3]);
    u32s(&mut p, &[0, 3]);
    u32s(&mut p, &[0, 1, 2]);
    p.extend_from_slice(&[0, 1, 2]);
    f64s(&mut p, &[5.0, 0.0, 5.0]);
    let page = FormatKind::Cvi.load(&p).unwrap();
    assert_eq!(
        page.decode(),
        SparseBatch::from_csr(3, vec![0, 2], vec![0, 2], vec![5.0, 5.0]).unwrap()
    );
}

#[test]
fn zero_column_pages_keep_their_rows() {
    let batch = SparseBatch::from_dense_rows(0, &[[0.0; 0]; 5]).unwrap();
    for kind in FormatKind::ALL {
        let page = kind.load(&kind.encode(&batch).unwrap().to_bytes()).unwrap();
        assert_eq!((page.n_rows(), page.n_cols()), (5, 0), "{kind}");
        assert_eq!(page.decode(), batch, "{kind}");
    }
}

/// Issue 23, 2: a checksum-valid page holding a NaN value loaded, `inspect`
/// called its file valid, and every score it touched was NaN. Every
/// format rejects a stored value that is NaN or infinite, naming it.
#[test]
fn values_that_are_not_finite_are_rejected_by_every_format() {
    // 0.1 + 0.2 is no short decimal: TOC keeps it in a raw f64
    // dictionary, as the other formats keep every value.
    let odd = 0.1 + 0.2;
    let batch = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, odd], [0.0, 2.0, 1.0]]).unwrap();
    let den = FormatKind::Den.encode(&batch).unwrap().to_bytes();
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for kind in FormatKind::ALL {
            let bytes = match kind {
                FormatKind::Snappy | FormatKind::Gzip | FormatKind::Lz4 => {
                    let mut raw = Vec::new();
                    f64s(&mut raw, &[1.0, 0.0, bad, 0.0, 2.0, 1.0]);
                    let payload = match kind {
                        FormatKind::Snappy => snap::raw::Encoder::new().compress_vec(&raw).unwrap(),
                        FormatKind::Gzip => gzip(&raw),
                        _ => lz4_flex::block::compress(&raw),
                    };
                    let magic = &kind.encode(&batch).unwrap().to_bytes()[..4];
                    compressed(magic.try_into().unwrap(), 2, 3, &payload)
                }
                _ => {
                    let mut bytes = kind.encode(&batch).unwrap().to_bytes();
                    let pattern = odd.to_le_bytes();
                    let at: Vec<usize> = (0..bytes.len() - 7)
                        .filter(|&i| bytes[i..i + 8] == pattern)
                        .collect();
                    assert_eq!(at.len(), 1, "{kind}: the value stored once");
                    bytes[at[0]..at[0] + 8].copy_from_slice(&bad.to_le_bytes());
                    bytes
                }
            };
            let e = err(kind, &bytes);
            assert!(
                matches!(&e, Error::InvalidNumber { value, expected: "a finite number", .. }
                    if value.to_bits() == bad.to_bits()),
                "{kind}: {e:?}"
            );
            let text = e.to_string();
            assert!(
                text.contains("(at byte ") && text.contains(", expected a finite number"),
                "{kind}: {text}"
            );
        }
    }
    assert!(FormatKind::Den.load(&den).is_ok());
}
