//! Reusable measurements: the kernel table of the TOC paper's Figure 8
//! (time of each matrix operation for each format, as a ratio to CSR
//! measured in the same run).
//!
//! Timing is interleaved: every round times each (format, op) pair once
//! over all batches, and the reported time is the median over rounds, so a
//! burst of noise on a shared machine hits all formats alike. Times are
//! wall-clock and belong in reports, never in test assertions.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ndarray::{Array1, Array2};

use crate::error::Result;
use crate::formats::{EncodedBatch, FormatKind};
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
    let mut encoded: Vec<(FormatKind, Vec<Box<dyn EncodedBatch>>)> = Vec::new();
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
    pages: &mut [Box<dyn EncodedBatch>],
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
