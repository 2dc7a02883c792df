//! Helpers of the ingest tests, shared with the Arrow tests (tests/arrow.rs,
//! a binary of its own so that CI builds it without the other tests).

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tocpile::ingest::Chunk;
use tocpile::{Result, SparseBatch};

/// A file in the temporary directory, removed on drop.
pub struct TempFile(PathBuf);

impl TempFile {
    /// Writes `bytes`, gzip-compressed if `gzip`.
    pub fn new(tag: &str, bytes: &[u8], gzip: bool) -> TempFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("tocpile-ingest-{}-{n}-{tag}", std::process::id()));
        let data = if gzip {
            gzip_bytes(bytes)
        } else {
            bytes.to_vec()
        };
        std::fs::write(&path, data).unwrap();
        TempFile(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path as error messages name it.
    pub fn name(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn gzip_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The rows read, their labels, and each chunk's (first line, rows).
pub type ReadAll = (SparseBatch, Vec<f64>, Vec<(u64, usize)>);

/// All rows of a reader, read `sizes[i % sizes.len()]` rows at a time:
/// the rows as one batch, the labels, and each chunk's (first line, rows).
pub fn read_all(
    n_cols: usize,
    sizes: &[usize],
    mut next: impl FnMut(usize) -> Result<Option<Chunk>>,
) -> Result<ReadAll> {
    let mut batch = SparseBatch::with_cols(n_cols).unwrap();
    let mut labels = Vec::new();
    let mut chunks = Vec::new();
    for i in 0.. {
        let size = sizes[i % sizes.len()];
        let Some(chunk) = next(size)? else { break };
        assert!(chunk.batch.n_rows() >= 1 && chunk.batch.n_rows() <= size);
        assert_eq!(chunk.batch.n_rows(), chunk.labels.len());
        assert_eq!(chunk.batch.n_cols(), n_cols);
        chunks.push((chunk.first_line, chunk.batch.n_rows()));
        for (c, v) in chunk.batch.rows() {
            batch.push_row(c, v).unwrap();
        }
        labels.extend_from_slice(&chunk.labels);
    }
    // Every chunk but the last is full.
    for (i, &(_, rows)) in chunks.iter().enumerate().rev().skip(1) {
        assert_eq!(rows, sizes[i % sizes.len()], "chunk {i} not full");
    }
    assert!(next(1)?.is_none(), "end of file is sticky");
    Ok((batch, labels, chunks))
}

/// Label bits, for exact comparison.
pub fn bits(labels: &[f64]) -> Vec<u64> {
    labels.iter().map(|l| l.to_bits()).collect()
}
