//! Reusable measurements: the compression ratios of the TOC paper's
//! Figures 5 to 7 ([`ratio_table`]: encoded size of every format against
//! DEN, per mini-batch size) and the kernel table of its Figure 8
//! ([`kernel_table`]: time of each matrix operation for each format, as a
//! ratio to CSR measured in the same run).
//!
//! Ratios are sizes and exactly repeatable.
//! Timing is interleaved: every round times each (format, op) pair once
//! over all batches, and the reported time is the median over rounds, so a
//! burst of noise on a shared machine hits all formats alike. Times are
//! wall-clock and belong in reports, never in test assertions.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ndarray::{Array1, Array2};
use rayon::prelude::*;

use crate::error::Result;
use crate::formats::{den_len, Batch, FormatKind};
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

/// A matrix operation of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `A * c` (sparse-safe element-wise).
    Scale,
    /// `A . v`.
    MatVec,
    /// `v . A`.
    VecMat,
    /// `A . M` with `M` of `p` columns.
    MatMat,
    /// `M . A` with `M` of `p` rows.
    LeftMatMat,
}

impl Op {
    /// Every op, in table order.
    pub const ALL: [Op; 5] = [
        Op::Scale,
        Op::MatVec,
        Op::VecMat,
        Op::MatMat,
        Op::LeftMatMat,
    ];

    /// The op's name as the paper writes it ("A*c", "A.v", ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Scale => "A*c",
            Op::MatVec => "A.v",
            Op::VecMat => "v.A",
            Op::MatMat => "A.M",
            Op::LeftMatMat => "M.A",
        }
    }
}

/// Settings of a kernel measurement.
#[derive(Debug, Clone)]
pub struct KernelBenchConfig {
    /// Formats to measure; CSR is added if missing (it is the baseline).
    pub formats: Vec<FormatKind>,
    /// Columns of `M` in `A.M`, rows of `M` in `M.A`.
    pub p: usize,
    /// Interleaved rounds; the median round is reported.
    pub rounds: usize,
    /// Each (format, op) pair repeats its pass over the batches until at
    /// least this long has passed, within a round.
    pub min_time: Duration,
}

impl Default for KernelBenchConfig {
    fn default() -> Self {
        KernelBenchConfig {
            formats: FormatKind::ALL.to_vec(),
            p: 20,
            rounds: 5,
            min_time: Duration::from_millis(20),
        }
    }
}

/// One cell of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTiming {
    /// The format.
    pub format: FormatKind,
    /// The operation.
    pub op: Op,
    /// Median time of one operation on one batch.
    pub seconds_per_batch: f64,
    /// `seconds_per_batch` divided by CSR's for the same op.
    pub ratio_to_csr: f64,
    /// Encoded bytes consumed per second.
    pub encoded_bytes_per_second: f64,
}

/// The measured table.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelReport {
    /// Batches measured.
    pub n_batches: usize,
    /// Rows per batch (the first batch's).
    pub batch_rows: usize,
    /// `p` of `A.M` and `M.A`.
    pub p: usize,
    /// Encoded size of all batches, per format.
    pub encoded_bytes: Vec<(FormatKind, usize)>,
    /// Every (format, op) cell.
    pub timings: Vec<KernelTiming>,
}

impl KernelReport {
    /// The cell for `format` and `op`, if measured.
    pub fn get(&self, format: FormatKind, op: Op) -> Option<&KernelTiming> {
        self.timings
            .iter()
            .find(|t| t.format == format && t.op == op)
    }

    /// The baseline's own times, one line: microseconds per batch for
    /// each op on CSR.
    pub fn csr_micros(&self) -> String {
        let cells: Vec<String> = Op::ALL
            .iter()
            .map(|&op| {
                let us = self
                    .get(FormatKind::Csr, op)
                    .map_or(f64::NAN, |t| t.seconds_per_batch * 1e6);
                format!("{} {us:.2}", op.name())
            })
            .collect();
        format!("CSR, microseconds per batch: {}", cells.join(", "))
    }

    /// The table as markdown: one row per format, `ratio to CSR` per op.
    pub fn to_markdown(&self) -> String {
        let mut s = String::from("| format | bytes |");
        for op in Op::ALL {
            s.push_str(&format!(" {} |", op.name()));
        }
        s.push_str("\n|---|---:|");
        s.push_str(&"---:|".repeat(Op::ALL.len()));
        s.push('\n');
        for &(format, bytes) in &self.encoded_bytes {
            s.push_str(&format!("| {} | {} |", format.name(), bytes));
            for op in Op::ALL {
                match self.get(format, op) {
                    Some(t) => s.push_str(&format!(" {:.3} |", t.ratio_to_csr)),
                    None => s.push_str(" - |"),
                }
            }
            s.push('\n');
        }
        s
    }
}

/// Measures every op of `config` on `batches` in every format.
///
/// # Errors
/// If a batch cannot be encoded in one of the formats.
///
/// # Panics
/// If `batches` is empty or the batches differ in column count.
pub fn kernel_table(batches: &[SparseBatch], config: &KernelBenchConfig) -> Result<KernelReport> {
    assert!(!batches.is_empty(), "kernel_table needs at least one batch");
    let n_cols = batches[0].n_cols();
    assert!(
        batches.iter().all(|b| b.n_cols() == n_cols),
        "batches differ in column count"
    );
    let mut formats = config.formats.clone();
    if !formats.contains(&FormatKind::Csr) {
        formats.insert(0, FormatKind::Csr);
    }
    let mut encoded: Vec<(FormatKind, Vec<Batch>)> = Vec::new();
    for &kind in &formats {
        let pages = batches
            .iter()
            .map(|b| kind.encode(b))
            .collect::<Result<Vec<_>>>()?;
        encoded.push((kind, pages));
    }
    let operands = Operands::new(batches, n_cols, config.p);
    let mut ws = Workspace::new();
    let mut samples = vec![Vec::with_capacity(config.rounds); formats.len() * Op::ALL.len()];
    for _ in 0..config.rounds.max(1) {
        for (f, (_, pages)) in encoded.iter_mut().enumerate() {
            for (o, &op) in Op::ALL.iter().enumerate() {
                let secs = time_op(pages, op, &operands, &mut ws, config.min_time);
                samples[f * Op::ALL.len() + o].push(secs);
            }
        }
    }
    let n = batches.len() as f64;
    let mut timings = Vec::new();
    let mut encoded_bytes = Vec::new();
    for (f, (kind, pages)) in encoded.iter().enumerate() {
        let bytes: usize = pages.iter().map(|p| p.encoded_len()).sum();
        encoded_bytes.push((*kind, bytes));
        for (o, &op) in Op::ALL.iter().enumerate() {
            let per_pass = median(&mut samples[f * Op::ALL.len() + o]);
            timings.push(KernelTiming {
                format: *kind,
                op,
                seconds_per_batch: per_pass / n,
                ratio_to_csr: 0.0,
                encoded_bytes_per_second: bytes as f64 / per_pass,
            });
        }
    }
    for o in 0..Op::ALL.len() {
        let csr = timings
            .iter()
            .find(|t| t.format == FormatKind::Csr && t.op == Op::ALL[o])
            .map(|t| t.seconds_per_batch)
            .unwrap_or(f64::NAN);
        for t in timings.iter_mut().filter(|t| t.op == Op::ALL[o]) {
            t.ratio_to_csr = t.seconds_per_batch / csr;
        }
    }
    Ok(KernelReport {
        n_batches: batches.len(),
        batch_rows: batches[0].n_rows(),
        p: config.p,
        encoded_bytes,
        timings,
    })
}

/// The dense operands, sized for the largest batch, with deterministic
/// contents.
struct Operands {
    v_cols: Array1<f64>,
    v_rows: Array1<f64>,
    m_right: Array2<f64>,
    m_left: Array2<f64>,
    out_rows: Array1<f64>,
    out_cols: Array1<f64>,
    out_right: Array2<f64>,
    out_left: Array2<f64>,
}

impl Operands {
    fn new(batches: &[SparseBatch], n_cols: usize, p: usize) -> Self {
        let rows = batches.iter().map(|b| b.n_rows()).max().unwrap_or(0);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        Operands {
            v_cols: Array1::from_shape_simple_fn(n_cols, &mut next),
            v_rows: Array1::from_shape_simple_fn(rows, &mut next),
            m_right: Array2::from_shape_simple_fn((n_cols, p), &mut next),
            m_left: Array2::from_shape_simple_fn((p, rows), &mut next),
            out_rows: Array1::zeros(rows),
            out_cols: Array1::zeros(n_cols),
            out_right: Array2::zeros((rows, p)),
            out_left: Array2::zeros((p, n_cols)),
        }
    }
}

/// Seconds for one pass of `op` over every page, repeating passes until
/// `min_time` has passed.
fn time_op(
    pages: &mut [Batch],
    op: Op,
    x: &Operands,
    ws: &mut Workspace,
    min_time: Duration,
) -> f64 {
    let mut out_rows = x.out_rows.clone();
    let mut out_cols = x.out_cols.clone();
    let mut out_right = x.out_right.clone();
    let mut out_left = x.out_left.clone();
    let start = Instant::now();
    let mut passes = 0u32;
    loop {
        for page in pages.iter_mut() {
            let n = page.n_rows();
            match op {
                // Scaling by 1 changes nothing, so repeated passes measure
                // the same data.
                Op::Scale => page.scale(black_box(1.0)),
                Op::MatVec => {
                    page.matvec_into(x.v_cols.view(), out_rows.slice_mut(ndarray::s![..n]), ws)
                }
                Op::VecMat => {
                    page.vecmat_into(x.v_rows.slice(ndarray::s![..n]), out_cols.view_mut(), ws)
                }
                Op::MatMat => page.matmat_into(
                    x.m_right.view(),
                    out_right.slice_mut(ndarray::s![..n, ..]),
                    ws,
                ),
                Op::LeftMatMat => page.left_matmat_into(
                    x.m_left.slice(ndarray::s![.., ..n]),
                    out_left.view_mut(),
                    ws,
                ),
            }
        }
        black_box((&out_rows, &out_cols, &out_right, &out_left));
        passes += 1;
        let elapsed = start.elapsed();
        if elapsed >= min_time {
            return elapsed.as_secs_f64() / passes as f64;
        }
    }
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

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
/// ```
/// use tocpile::bench::{ratio_table, RatioConfig};
/// use tocpile::formats::FormatKind;
/// use tocpile::SparseBatch;
///
/// let rows = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0]; 100])?;
/// let table = ratio_table(&rows, &[10, 50], &RatioConfig::default())?;
/// assert_eq!(table[0].n_batches, 10);
/// let den = table[1].get(FormatKind::Den).unwrap();
/// assert_eq!(den.ratio_vs_den, Some(1.0));
/// let toc = table[1].get(FormatKind::TocFull).unwrap();
/// assert!(toc.ratio_vs_den.unwrap() > 1.0 && toc.exact == Some(true));
/// # Ok::<(), tocpile::Error>(())
/// ```
///
/// # Errors
/// [`Error::BadArgument`](crate::Error::BadArgument) for a batch size of
/// 0; an encoding error of a batch that does not fit a format.
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
        return Err(crate::Error::BadArgument {
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
        let measured = starts
            .par_iter()
            .map(|&s| {
                let batch = rows.slice_rows(s..(s + batch_rows).min(n));
                let page = format.encode(&batch)?;
                let exact = !config.verify || page.decode() == batch;
                Ok((page.encoded_len() as u64, exact))
            })
            .collect::<Result<Vec<(u64, bool)>>>()?;
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
            Err(crate::Error::BadArgument { .. })
        ));
    }
}
