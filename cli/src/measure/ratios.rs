//! The compression ratios of the TOC paper's Figures 5 to 7
//! ([`ratio_table`]: encoded size of every format against DEN, per
//! mini-batch size), for `tocpile ratio` and the demo. Ratios are sizes
//! and exactly repeatable.

use rayon::prelude::*;
use tocpile::formats::{den_len, FormatKind};
use tocpile::{Error, Result, SparseBatch};

/// Settings of a compression-ratio measurement ([`ratio_table`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RatioConfig {
    /// Formats to measure, in report order (default: every format).
    pub formats: Vec<FormatKind>,
    /// Decode every encoded batch and compare it with the original
    /// (default true); the result is [`RatioCell::exact`].
    pub verify: bool,
    /// The formats that build the dense matrix of a batch (DEN, DVI,
    /// snappy, gzip, lz4) are skipped on batches whose dense `f64` size is
    /// larger than this many bytes (default 1 GiB), so that a batch of a
    /// large share of a big dataset does not exhaust memory. DEN's size
    /// itself is computed, never built.
    pub max_dense_bytes: u64,
}

impl Default for RatioConfig {
    fn default() -> Self {
        RatioConfig {
            formats: FormatKind::ALL.to_vec(),
            verify: true,
            max_dense_bytes: 1 << 30,
        }
    }
}

/// One format's size at one batch size.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioCell {
    /// The format.
    pub format: FormatKind,
    /// Encoded bytes of all batches (the exact page lengths); `None` if the
    /// format was skipped (see [`RatioConfig::max_dense_bytes`]).
    pub bytes: Option<u64>,
    /// DEN bytes of the same batches divided by `bytes`.
    pub ratio_vs_den: Option<f64>,
    /// Whether every batch decoded back exactly (`None` if not verified or
    /// skipped).
    pub exact: Option<bool>,
}

/// Sizes of every format for batches of one size.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioRow {
    /// Rows per batch (the last batch may hold fewer).
    pub batch_rows: usize,
    /// Number of batches.
    pub n_batches: usize,
    /// Bytes of all batches as DEN pages (the ratios' numerator).
    pub den_bytes: u64,
    /// One cell per format of the config, in its order.
    pub cells: Vec<RatioCell>,
}

impl RatioRow {
    /// The cell of `format`, if measured.
    pub fn get(&self, format: FormatKind) -> Option<&RatioCell> {
        self.cells.iter().find(|c| c.format == format)
    }
}

/// Compression ratios against DEN (the TOC paper's Figures 5 to 7): `rows`
/// cut, in order, into consecutive batches of each of `batch_sizes` rows
/// (the last batch of a size may be shorter), each batch encoded in every
/// format of `config`; a format's ratio is the DEN bytes of all batches
/// over its encoded bytes. Batches are encoded in parallel (rayon). Shuffle
/// `rows` first for the paper's setting (it shuffles once, then cuts).
///
/// # Errors
/// [`Error::BadArgument`] for a batch size of 0; an encoding error of a batch that does not fit a format.
pub fn ratio_table(
    rows: &SparseBatch,
    batch_sizes: &[usize],
    config: &RatioConfig,
) -> Result<Vec<RatioRow>> {
    batch_sizes
        .iter()
        .map(|&batch_rows| ratio_row(rows, batch_rows, config))
        .collect()
}

/// Whether a format builds the dense matrix of a batch to encode it.
fn densifies(format: FormatKind) -> bool {
    matches!(
        format,
        FormatKind::Den | FormatKind::Dvi | FormatKind::Snappy | FormatKind::Gzip | FormatKind::Lz4
    )
}

fn ratio_row(rows: &SparseBatch, batch_rows: usize, config: &RatioConfig) -> Result<RatioRow> {
    if batch_rows == 0 {
        return Err(Error::BadArgument {
            what: "batch size",
            expected: "at least 1 row",
        });
    }
    let n = rows.n_rows();
    let starts: Vec<usize> = (0..n).step_by(batch_rows).collect();
    let den_bytes: u64 = starts
        .iter()
        .map(|&s| den_len((s + batch_rows).min(n) - s, rows.n_cols()))
        .sum();
    let dense_batch = 8 * batch_rows.min(n) as u64 * rows.n_cols() as u64;
    let mut cells = Vec::with_capacity(config.formats.len());
    for &format in &config.formats {
        if densifies(format) && dense_batch > config.max_dense_bytes {
            cells.push(RatioCell {
                format,
                bytes: None,
                ratio_vs_den: None,
                exact: None,
            });
            continue;
        }
        let measured = tocpile::parallel::install(|| {
            starts
                .par_iter()
                .map(|&s| {
                    let batch = rows.slice_rows(s..(s + batch_rows).min(n));
                    let page = format.encode(&batch)?;
                    let exact = !config.verify || page.decode() == batch;
                    Ok((page.encoded_len() as u64, exact))
                })
                .collect::<Result<Vec<(u64, bool)>>>()
        })?;
        let bytes: u64 = measured.iter().map(|m| m.0).sum();
        cells.push(RatioCell {
            format,
            bytes: Some(bytes),
            ratio_vs_den: Some(den_bytes as f64 / bytes.max(1) as f64),
            exact: config.verify.then(|| measured.iter().all(|m| m.1)),
        });
    }
    Ok(RatioRow {
        batch_rows,
        n_batches: starts.len(),
        den_bytes,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 23 rows of 5 columns with repeated values and an empty row.
    fn rows() -> SparseBatch {
        let mut b = SparseBatch::with_cols(5).unwrap();
        for i in 0..23u32 {
            if i == 7 {
                b.push_row(&[], &[]).unwrap();
                continue;
            }
            let cols = [0, 1 + i % 3, 4];
            b.push_row(&cols, &[1.5, f64::from(i % 4 + 1), -2.0])
                .unwrap();
        }
        b
    }

    #[test]
    fn den_len_matches_den_pages() {
        for (r, c) in [(0, 0), (1, 1), (23, 5), (200, 130)] {
            let mut b = SparseBatch::with_cols(c).unwrap();
            for _ in 0..r {
                b.push_row(&[], &[]).unwrap();
            }
            let page = FormatKind::Den.encode(&b).unwrap();
            assert_eq!(den_len(r, c), page.encoded_len() as u64, "{r} x {c}");
        }
    }

    #[test]
    fn ratio_table_sums_exact_page_lengths() {
        let all = rows();
        let table = ratio_table(&all, &[5, 23, 100], &RatioConfig::default()).unwrap();
        assert_eq!(table.len(), 3);
        for row in &table {
            let batches: Vec<SparseBatch> = (0..all.n_rows())
                .step_by(row.batch_rows)
                .map(|s| all.slice_rows(s..(s + row.batch_rows).min(all.n_rows())))
                .collect();
            assert_eq!(row.n_batches, batches.len());
            assert_eq!(row.cells.len(), FormatKind::ALL.len());
            for cell in &row.cells {
                let want: u64 = batches
                    .iter()
                    .map(|b| cell.format.encode(b).unwrap().encoded_len() as u64)
                    .sum();
                assert_eq!(cell.bytes, Some(want), "{}", cell.format);
                assert_eq!(cell.exact, Some(true), "{}", cell.format);
                let ratio = cell.ratio_vs_den.unwrap();
                assert_eq!(ratio, row.den_bytes as f64 / want as f64);
            }
            assert_eq!(row.get(FormatKind::Den).unwrap().ratio_vs_den, Some(1.0));
        }
        // Batch sizes 23 and 100 both give one batch of every row.
        assert_eq!(table[1].n_batches, 1);
        assert_eq!(table[1].cells, table[2].cells);
    }

    #[test]
    fn ratio_table_skips_dense_formats_past_the_limit() {
        let config = RatioConfig {
            formats: vec![FormatKind::Csr, FormatKind::Gzip, FormatKind::TocFull],
            verify: false,
            max_dense_bytes: 8 * 5 * 10,
        };
        let table = ratio_table(&rows(), &[10, 11], &config).unwrap();
        let gzip = |r: &RatioRow| r.get(FormatKind::Gzip).unwrap().clone();
        assert!(gzip(&table[0]).bytes.is_some());
        assert_eq!(gzip(&table[1]).bytes, None);
        assert_eq!(gzip(&table[1]).ratio_vs_den, None);
        for row in &table {
            let toc = row.get(FormatKind::TocFull).unwrap();
            assert!(toc.bytes.is_some() && toc.exact.is_none());
            assert!(row.get(FormatKind::Den).is_none());
        }
    }

    #[test]
    fn ratio_table_rejects_zero_rows_per_batch() {
        assert!(matches!(
            ratio_table(&rows(), &[0], &RatioConfig::default()),
            Err(Error::BadArgument { .. })
        ));
    }
}
