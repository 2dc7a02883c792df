//! The kernel table of the TOC paper's Figure 8 ([`kernel_table`]: time
//! of each matrix operation for each format, as a ratio to CSR measured in
//! the same run), for `tocpile bench kernels` and the demo.
//!
//! Timing is interleaved: every round times each (format, op) pair once
//! over all batches, and the reported time is the median over rounds, so a
//! burst of noise on a shared machine hits all formats alike. Times are
//! wall-clock, or the thread's CPU time with [`Clock::Cpu`]; they belong in
//! reports, never in test assertions.

use std::hint::black_box;
use std::time::{Duration, Instant};

use tocpile::ndarray::{s, Array1, Array2};

use tocpile::formats::{Batch, FormatKind};
use tocpile::{DecodeTree, Error, Result, SparseBatch, Workspace};

use tocpile_bench_data::median;

mod pairs;
mod shared;
pub use shared::KernelFormat;

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
    /// A linear model's gradient added into a vector: `s . A` with
    /// `s[r] = (A.v)[r] - y[r]` (squared loss), as the model runs it
    /// (`Batch::linear_gradient_add`: one fused kernel on TOC).
    Grad,
    /// The same gradient from two kernel calls and a loop between them
    /// (`Batch::linear_gradient_add_separate`): the scalar path the fused
    /// kernel is measured against.
    GradSeparate,
}

impl Op {
    /// Every op, in table order.
    pub const ALL: [Op; 7] = [
        Op::Scale,
        Op::MatVec,
        Op::VecMat,
        Op::MatMat,
        Op::LeftMatMat,
        Op::Grad,
        Op::GradSeparate,
    ];

    /// The op's name as the paper writes it ("A*c", "A.v", ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Scale => "A*c",
            Op::MatVec => "A.v",
            Op::VecMat => "v.A",
            Op::MatMat => "A.M",
            Op::LeftMatMat => "M.A",
            Op::Grad => "grad",
            Op::GradSeparate => "grad (A.v, v.A)",
        }
    }
}

/// Settings of a kernel measurement.
#[derive(Debug, Clone)]
pub struct KernelBenchConfig {
    /// Formats to measure; CSR is added if missing (it is the baseline).
    pub formats: Vec<KernelFormat>,
    /// Columns of `M` in `A.M`, rows of `M` in `M.A`.
    pub p: usize,
    /// Interleaved rounds; the median round is reported.
    pub rounds: usize,
    /// Each (format, op) pair repeats its pass over the batches until at
    /// least this long has passed on `clock`, within a round.
    pub min_time: Duration,
    /// What is timed.
    pub clock: Clock,
}

/// What a kernel measurement times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// The wall clock (`Instant`).
    #[default]
    Wall,
    /// The measuring thread's CPU time (`clock_gettime` of
    /// `CLOCK_THREAD_CPUTIME_ID`, Unix), so that other processes on a busy
    /// machine do not count: on shared 2-core machines the wall-clock
    /// table moved by 2x between runs under load, this one by about 10%.
    Cpu,
}

impl Clock {
    /// Seconds on this clock since an arbitrary origin.
    fn now(self) -> Result<f64> {
        match self {
            Clock::Wall => {
                static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                Ok(ORIGIN.get_or_init(Instant::now).elapsed().as_secs_f64())
            }
            Clock::Cpu => thread_cpu_seconds(),
        }
    }
}

/// This thread's CPU time in seconds, to the nanosecond. Not
/// `/proc/thread-self/schedstat`, read here before: on kernels that
/// account a running thread's time at the scheduler tick it moves in
/// steps of 4 ms, 40% of a 10 ms measurement, which made ratios of small
/// integers (2.00, 1.67, 0.75) of the kernel table.
#[cfg(unix)]
fn thread_cpu_seconds() -> Result<f64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Ok(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
}

#[cfg(not(unix))]
fn thread_cpu_seconds() -> Result<f64> {
    Err(Error::BadArgument {
        what: "clock",
        expected: "cpu only where clock_gettime gives a thread's CPU time (Unix)",
    })
}

impl Default for KernelBenchConfig {
    fn default() -> Self {
        KernelBenchConfig {
            formats: FormatKind::ALL.map(KernelFormat::Batch).to_vec(),
            p: 20,
            rounds: 5,
            min_time: Duration::from_millis(20),
            clock: Clock::Wall,
        }
    }
}

/// One cell of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTiming {
    /// The format.
    pub format: KernelFormat,
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
    /// Encoded size of all batches, per format (version-3 pages: with
    /// their segments' dictionaries).
    pub encoded_bytes: Vec<(KernelFormat, usize)>,
    /// Every (format, op) cell.
    pub timings: Vec<KernelTiming>,
}

impl KernelReport {
    /// The cell for `format` and `op`, if measured.
    pub fn get(&self, format: KernelFormat, op: Op) -> Option<&KernelTiming> {
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
                    .get(CSR, op)
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
/// [`Error::BadArgument`] if `batches` is empty or the batches differ in
/// column count; an encoding error of a batch that does not fit a format;
/// an error reading the CPU clock.
pub fn kernel_table(batches: &[SparseBatch], config: &KernelBenchConfig) -> Result<KernelReport> {
    let Some(first) = batches.first() else {
        return Err(Error::BadArgument {
            what: "batches",
            expected: "at least one batch to time",
        });
    };
    let n_cols = first.n_cols();
    if batches.iter().any(|b| b.n_cols() != n_cols) {
        return Err(Error::BadArgument {
            what: "batches",
            expected: "batches of one column count",
        });
    }
    let mut formats = config.formats.clone();
    if !formats.contains(&CSR) {
        formats.insert(0, CSR);
    }
    // The matrices of A.M and M.A are checked before any page is encoded.
    tocpile::limits::check_matrix(n_cols.saturating_mul(config.p), MATRIX)?;
    let mut encoded: Vec<(KernelFormat, Vec<Subject>, usize)> = Vec::new();
    for &format in &formats {
        let (pages, bytes) = match format {
            KernelFormat::Batch(kind) => {
                let pages = batches
                    .iter()
                    .map(|b| kind.encode(b).map(|b| Subject::Batch(Box::new(b))))
                    .collect::<Result<Vec<_>>>()?;
                let bytes = pages.iter().map(Subject::encoded_len).sum();
                (pages, bytes)
            }
            KernelFormat::Shared {
                pages,
                apart,
                tree_only,
            } => {
                let (trees, bytes) = shared::encode_shared(batches, pages, apart, tree_only)?;
                let subject = |tree| match apart {
                    true => Subject::Page(tree),
                    false => Subject::Tree(tree),
                };
                (trees.into_iter().map(subject).collect(), bytes)
            }
            KernelFormat::Pairs => {
                let (coded, bytes) = pairs::encode_pairs(batches)?;
                let subject = |b| Subject::Batch(Box::new(b));
                (coded.into_iter().map(subject).collect(), bytes)
            }
        };
        encoded.push((format, pages, bytes));
    }
    let mut operands = Operands::new(batches, n_cols, config.p)?;
    let mut ws = Workspace::new();
    let mut samples = vec![Vec::with_capacity(config.rounds); formats.len() * Op::ALL.len()];
    for _ in 0..config.rounds.max(1) {
        for (f, (_, pages, _)) in encoded.iter_mut().enumerate() {
            for (o, &op) in Op::ALL.iter().enumerate() {
                let secs = time_op(pages, op, &mut operands, &mut ws, config)?;
                samples[f * Op::ALL.len() + o].push(secs);
            }
        }
    }
    let n = batches.len() as f64;
    let mut timings = Vec::new();
    let mut encoded_bytes = Vec::new();
    for (f, &(kind, _, bytes)) in encoded.iter().enumerate() {
        encoded_bytes.push((kind, bytes));
        for (o, &op) in Op::ALL.iter().enumerate() {
            let per_pass = median(std::mem::take(&mut samples[f * Op::ALL.len() + o]));
            timings.push(KernelTiming {
                format: kind,
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
            .find(|t| t.format == CSR && t.op == Op::ALL[o])
            .map(|t| t.seconds_per_batch)
            .unwrap_or(f64::NAN);
        for t in timings.iter_mut().filter(|t| t.op == Op::ALL[o]) {
            t.ratio_to_csr = t.seconds_per_batch / csr;
        }
    }
    Ok(KernelReport {
        n_batches: batches.len(),
        batch_rows: first.n_rows(),
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

/// What the limit on the matrices of `A.M` and `M.A` is about.
const MATRIX: &str = "cells of the matrices of A.M and M.A (columns x p)";

impl Operands {
    /// The vectors and matrices of the kernels, allocated fallibly: the
    /// `n_cols x p` matrices of `A.M` and `M.A` are as large as a model's
    /// first layer of `p` outputs, so they answer to the parameter limit
    /// (a 4-row file with column 6,000,000 asked for 120 million cells
    /// each, and more copies of them, 4.8 GB).
    fn new(batches: &[SparseBatch], n_cols: usize, p: usize) -> Result<Self> {
        let cells = n_cols.saturating_mul(p);
        tocpile::limits::check_matrix(cells, MATRIX)?;
        let rows = batches.iter().map(|b| b.n_rows()).max().unwrap_or(0);
        // Values in [-0.5, 0.5) from the library's seeded generator.
        let mut rng = tocpile::rng::Rng::new(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.unit() - 0.5;
        let mut random = |len: usize, what: &'static str| -> Result<Vec<f64>> {
            let mut v = tocpile::limits::try_filled(len, 0.0, what)?;
            v.iter_mut().for_each(|x| *x = next());
            Ok(v)
        };
        let zeros = |len: usize, what: &'static str| tocpile::limits::try_filled(len, 0.0, what);
        let shaped = |shape: (usize, usize), v: Vec<f64>| {
            Array2::from_shape_vec(shape, v).expect("rows x columns values")
        };
        Ok(Operands {
            v_cols: Array1::from_vec(random(n_cols, "the vector of A.v")?),
            v_rows: Array1::from_vec(random(rows, "the vector of v.A")?),
            m_right: shaped((n_cols, p), random(cells, "the matrix of A.M")?),
            m_left: shaped((p, rows), random(p * rows, "the matrix of M.A")?),
            out_rows: Array1::from_vec(zeros(rows, "the result of A.v")?),
            out_cols: Array1::from_vec(zeros(n_cols, "the result of v.A")?),
            out_right: shaped((rows, p), zeros(rows * p, "the result of A.M")?),
            out_left: shaped((p, n_cols), zeros(cells, "the result of M.A")?),
        })
    }
}

/// The baseline format.
const CSR: KernelFormat = KernelFormat::Batch(FormatKind::Csr);

/// What one batch is timed on: an encoded batch, the tree of a batch's
/// version-3 pages, or the tree of one of them (`v.A` then adds into the
/// batch's result, as pages of one batch must; `M.A` writes it, an
/// under-estimate: a batch would sum its pages' matrices).
enum Subject {
    Batch(Box<Batch>),
    Tree(DecodeTree),
    Page(DecodeTree),
}

impl Subject {
    fn encoded_len(&self) -> usize {
        match self {
            Subject::Batch(b) => b.encoded_len(),
            Subject::Tree(_) | Subject::Page(_) => 0,
        }
    }
}

/// Seconds for one pass of `op` over every page, repeating passes until
/// at least `config.min_time` has passed on `config.clock`.
fn time_op(
    pages: &mut [Subject],
    op: Op,
    x: &mut Operands,
    ws: &mut Workspace,
    config: &KernelBenchConfig,
) -> Result<f64> {
    x.out_rows.fill(0.0);
    x.out_cols.fill(0.0);
    x.out_right.fill(0.0);
    x.out_left.fill(0.0);
    let min_time = config.min_time.as_secs_f64();
    let start = config.clock.now()?;
    let mut passes = 0u64;
    // The clock is read after groups of 1, 2, 4, ... passes: reading the
    // CPU clock is a file read, which would otherwise dominate the short
    // operations (`A*c` on small batches).
    let mut group = 1u64;
    loop {
        let n_pages = pages.len();
        for i in (0..group).flat_map(|_| 0..n_pages) {
            match &mut pages[i] {
                Subject::Batch(page) => run_batch(page, op, x, ws),
                Subject::Tree(tree) => run_tree(tree, op, x, ws),
                Subject::Page(tree) if op == Op::VecMat => {
                    let n = tree.n_rows();
                    let (v, out) = (slice(&x.v_rows), &mut x.out_cols);
                    let out = out.as_slice_mut().expect("a contiguous vector");
                    tree.vecmat_add(&v[..n], out, ws)
                }
                Subject::Page(tree) => run_tree(tree, op, x, ws),
            }
        }
        black_box((&x.out_rows, &x.out_cols, &x.out_right, &x.out_left));
        passes += group;
        let elapsed = config.clock.now()? - start;
        if elapsed >= min_time {
            return Ok(elapsed / passes as f64);
        }
        group = group.saturating_mul(2);
    }
}

/// `op` once on an encoded batch (results zeroed once per measurement,
/// not per call: the matrices are as large as the data is wide).
fn run_batch(page: &mut Batch, op: Op, x: &mut Operands, ws: &mut Workspace) {
    let n = page.n_rows();
    match op {
        // Scaling by 1 changes nothing, so repeated passes measure the
        // same data.
        Op::Scale => page.scale(black_box(1.0)),
        Op::MatVec => page.matvec_into(x.v_cols.view(), x.out_rows.slice_mut(s![..n]), ws),
        Op::VecMat => page.vecmat_into(x.v_rows.slice(s![..n]), x.out_cols.view_mut(), ws),
        Op::MatMat => page.matmat_into(x.m_right.view(), x.out_right.slice_mut(s![..n, ..]), ws),
        Op::LeftMatMat => {
            page.left_matmat_into(x.m_left.slice(s![.., ..n]), x.out_left.view_mut(), ws)
        }
        Op::Grad | Op::GradSeparate => {
            let (w, y) = (slice(&x.v_cols), slice(&x.v_rows));
            let out = x.out_cols.as_slice_mut().expect("a contiguous vector");
            let slope = |r: usize, z: f64| z - y[r];
            if op == Op::Grad {
                page.linear_gradient_add(w, slope, out, ws)
            } else {
                page.linear_gradient_add_separate(w, slope, out, ws)
            }
        }
    }
}

/// `op` once on the tree of a batch's version-3 pages, as
/// [`run_batch`] runs it on a TOC batch's tree; the separate gradient as
/// `Batch::linear_gradient_add_separate` runs it (`A.w`, the slopes in
/// place, `v.A` added).
fn run_tree(tree: &mut DecodeTree, op: Op, x: &mut Operands, ws: &mut Workspace) {
    let n = tree.n_rows();
    match op {
        Op::Scale => tree.scale(black_box(1.0)),
        Op::MatVec => tree.matvec_into(x.v_cols.view(), x.out_rows.slice_mut(s![..n]), ws),
        Op::VecMat => tree.vecmat_into(x.v_rows.slice(s![..n]), x.out_cols.view_mut(), ws),
        Op::MatMat => tree.matmat_into(x.m_right.view(), x.out_right.slice_mut(s![..n, ..]), ws),
        Op::LeftMatMat => {
            tree.left_matmat_into(x.m_left.slice(s![.., ..n]), x.out_left.view_mut(), ws)
        }
        Op::Grad => {
            let (w, y) = (slice(&x.v_cols), slice(&x.v_rows));
            let out = x.out_cols.as_slice_mut().expect("a contiguous vector");
            tree.linear_gradient_add(w, |r, z| z - y[r], out, ws)
        }
        Op::GradSeparate => {
            let y = slice(&x.v_rows);
            tree.matvec_into(x.v_cols.view(), x.out_rows.slice_mut(s![..n]), ws);
            let margins = x.out_rows.as_slice_mut().expect("a contiguous vector");
            for (r, z) in margins[..n].iter_mut().enumerate() {
                *z -= y[r];
            }
            let out = x.out_cols.as_slice_mut().expect("a contiguous vector");
            tree.vecmat_add(&margins[..n], out, ws);
        }
    }
}

/// A new vector's elements.
fn slice(a: &Array1<f64>) -> &[f64] {
    a.as_slice().expect("a new vector is contiguous")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> SparseBatch {
        SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0], [0.0, 1.5, 2.0], [1.0, 1.5, 0.0]])
            .unwrap()
    }

    fn quick(clock: Clock) -> KernelBenchConfig {
        KernelBenchConfig {
            formats: vec![
                KernelFormat::Batch(FormatKind::TocFull),
                KernelFormat::Shared {
                    pages: 2,
                    apart: false,
                    tree_only: false,
                },
                KernelFormat::Shared {
                    pages: 2,
                    apart: true,
                    tree_only: true,
                },
            ],
            rounds: 1,
            min_time: Duration::from_micros(50),
            clock,
            ..KernelBenchConfig::default()
        }
    }

    #[test]
    fn every_cell_is_measured_on_either_clock() {
        for clock in [Clock::Wall, Clock::Cpu] {
            let report = kernel_table(&[batch(), batch()], &quick(clock)).unwrap();
            assert_eq!(report.n_batches, 2);
            // CSR is added as the baseline.
            assert_eq!(report.timings.len(), 4 * Op::ALL.len());
            for op in Op::ALL {
                assert_eq!(report.get(CSR, op).unwrap().ratio_to_csr, 1.0);
                for format in &quick(clock).formats {
                    let toc = report.get(*format, op).unwrap();
                    assert!(toc.seconds_per_batch > 0.0 && toc.ratio_to_csr.is_finite());
                }
            }
            let table = report.to_markdown();
            assert!(table.contains("| TOC_FULL |") && table.contains("| TOC_V3x2 |"));
        }
    }

    #[test]
    fn no_batches_or_mixed_widths_are_errors_not_panics() {
        let none = kernel_table(&[], &quick(Clock::Wall));
        assert!(matches!(none, Err(Error::BadArgument { .. })));
        let wide = SparseBatch::from_dense_rows(4, &[[1.0, 0.0, 2.0, 3.0]]).unwrap();
        let mixed = kernel_table(&[batch(), wide], &quick(Clock::Wall));
        assert!(matches!(mixed, Err(Error::BadArgument { .. })));
    }
}
