//! Not part of the API (hidden): used by the workspace's front ends and
//! tests; may change in any release.
//!
//! [`bench_train`]: what training from a dataset file costs against the
//! practical limit, an SGD loop over mini-batches already built in memory,
//! all measured in one run so the figures are ratios (issue 11's targets,
//! the TOC paper's Table 6 question asked end to end).
//!
//! The settings, each training a fresh model with the same options:
//!
//! | [`Setting::name`] | what an epoch does |
//! |---|---|
//! | `toc-stream` | reads and checksums every block of the file every epoch and decodes it into a buffer of a tenth of the file (the next buffer decoded while this one trains; a file kept as code rows validates each block the first time only): [`LoaderOptions::memory`] 0 |
//! | `toc-resident` | the same file with the default budget: the loader's default buffer (the whole file when its buffer form fits, each row decoded once; else resident blocks within the budget) |
//! | `toc-code-rows`, `toc-pair-codes`, `toc-values` | `toc-resident` with the buffer's rows kept as the pages' codes (trees built per batch where they pay), as pair codes, or as decoded values, whatever the file would choose |
//! | `toc-pages` | `toc-resident` in page mode: the file's pages shuffled whole, their trees built by the loader |
//! | `csr-stream`, `csr-resident` | the same rows written as CSR pages (same page and block sizes), read the two ways |
//! | `memory-toc-pages` | no loader: mini-batches of `batch_rows` consecutive rows built before timing, each cut into the file's pages in the file's format, visited in a random order of batches each epoch |
//! | `memory-csr-pages` | the same with CSR pages: with `memory-toc-pages`, what the page split and the format cost apart from the loader |
//! | `memory-pair-codes` | no loader: one mini-batch of pair codes per batch of rows (one table of the distinct pairs of every row, as the loader's buffer of pair codes shares), built before timing: with `toc-pair-codes`, what the loader costs apart from the form its batches take |
//! | `memory-csr` | no loader: the rows as one CSR page per mini-batch, built before timing, visited in a random order of batches each epoch, the model's CSR kernels (the practical limit every ratio is against) |
//!
//! Each setting runs `epochs + 1` epochs; the first (which fills the
//! resident cache and the page cache) is reported apart and the figure is
//! the median of the others. Numbers only: the command line
//! (`tocpile bench train`) renders them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::core;
use super::{train, TrainOptions};
use crate::dataset::{Dataset, DatasetWriter, WriterOptions};
use crate::error::{Error, Result};
use crate::formats::{Batch, CodedRows, FormatKind, Pair, PairTable};
use crate::loader::{default_memory, Loader, LoaderOptions, Mode, RowForm, Strategy};
use crate::model::{Model, ModelKind, Optimizer};
use crate::page::Page;
use crate::rng::Rng;
use crate::sparse::SparseBatch;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainBenchOptions {
    /// The model trained in every setting.
    pub model: ModelKind,
    /// Timed epochs after the first (default 3).
    pub epochs: usize,
    /// Rows per mini-batch (default 250).
    pub batch_rows: usize,
    /// Learning rate (default 0.1; decay 0.95 per epoch as in training).
    pub learning_rate: f64,
    /// The step rule of every setting, the in-memory loops included
    /// (default [`Optimizer::Sgd`], as [`TrainOptions`]; the command line
    /// uses `train`'s default, Adam).
    pub optimizer: Optimizer,
    /// The loader's strategy (default CorgiPile).
    pub strategy: Strategy,
    /// The loader's mode (default [`Mode::Auto`]).
    pub mode: Mode,
    /// The resident settings' budget (default [`default_memory`]: half the
    /// memory available, at most [`DEFAULT_MEMORY`](crate::loader::DEFAULT_MEMORY)).
    pub memory: usize,
    /// Seed of the model and every shuffle.
    pub seed: u64,
    /// Where the CSR copy is written (default: beside the file); it is
    /// removed afterwards.
    pub scratch_dir: Option<PathBuf>,
}

impl Default for TrainBenchOptions {
    fn default() -> Self {
        TrainBenchOptions {
            model: ModelKind::Logistic,
            epochs: 3,
            batch_rows: 250,
            learning_rate: 0.1,
            optimizer: Optimizer::Sgd,
            strategy: Strategy::CorgiPile,
            mode: Mode::Auto,
            memory: default_memory(),
            seed: 0,
            scratch_dir: None,
        }
    }
}

/// One setting's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// `toc-stream`, `toc-resident`, `csr-stream`, `csr-resident` or
    /// `memory-csr` (see the module docs).
    pub name: &'static str,
    /// Seconds of the first epoch.
    pub first_epoch_seconds: f64,
    /// Median seconds of the later epochs.
    pub epoch_seconds: f64,
    /// Rows trained per second in those epochs.
    pub examples_per_second: f64,
    /// `epoch_seconds` over `memory-csr`'s (below 1 is faster than the
    /// in-memory loop).
    pub time_ratio_to_memory: f64,
    /// Share of the later epochs spent waiting for the loader (0 for
    /// `memory-csr`).
    pub wait_share: f64,
    /// Most heap bytes the data took: the loader's buffer peak plus its
    /// resident pages, or the pre-built batches of `memory-csr`.
    pub peak_bytes: usize,
    /// Bytes of the file read (0 for `memory-csr`).
    pub file_bytes: u64,
    /// Training loss of the last epoch (the settings see the rows in
    /// different orders, so these agree only roughly).
    pub final_loss: f64,
    /// What the loader did: "page" (page mode), or the buffer's form of
    /// rows ("pair codes", "code rows", "decoded values") and whether the
    /// buffer was the whole file; "memory" for the in-memory loops.
    pub mode: String,
    /// Share of the later epochs' mini-batches the trainer computed on in
    /// their TOC form (on a decode tree) rather than as rows.
    pub tree_share: f64,
    /// Threads that computed the gradients in the later epochs (2 when
    /// the trainer shared them with a helper thread: resident epochs of
    /// a linear model, see [`TrainOptions::split_gradient`]; the
    /// in-memory loops use one).
    pub gradient_threads: usize,
}

/// Every setting of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainBench {
    /// The file measured.
    pub path: PathBuf,
    /// Rows per epoch.
    pub rows: u64,
    /// Blocks of the file.
    pub blocks: usize,
    /// Rows per page of the file.
    pub page_rows: usize,
    /// The settings, in the order of the module docs.
    pub settings: Vec<Setting>,
}

/// Measures training from the dataset file at `path` in every setting of
/// the module docs.
///
/// # Errors
/// Errors of reading the file or writing its CSR copy; training errors
/// (a label the model cannot use, divergence); [`Error::BadArgument`] for
/// zero epochs or batch rows, or a file with no rows.
pub fn bench_train(path: &Path, options: &TrainBenchOptions) -> Result<TrainBench> {
    if options.epochs == 0 || options.batch_rows == 0 {
        return Err(Error::BadArgument {
            what: "epochs and batch rows of a training benchmark",
            expected: "at least 1 each",
        });
    }
    let dataset = Arc::new(Dataset::open(path)?);
    let info = dataset.info().clone();
    if info.n_rows == 0 {
        return Err(Error::BadArgument {
            what: "dataset of a training benchmark",
            expected: "at least one row",
        });
    }
    let dir = options.scratch_dir.clone().unwrap_or_else(|| {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(std::env::temp_dir, Path::to_path_buf)
    });
    let csr_path = dir.join(format!(".tocpile-bench-csr-{}.toc", std::process::id()));
    let result: Result<Vec<Setting>> = (|| {
        let (rows, labels) = read_all(&dataset)?;
        write_copy(&csr_path, &rows, &labels, &info, FormatKind::Csr)?;
        let csr = Arc::new(Dataset::open(&csr_path)?);
        let (memory, default) = (options.memory, |o: LoaderOptions| o);
        let form = |rows: RowForm| move |o: LoaderOptions| o.with_rows(rows);
        let pages = |o: LoaderOptions| o.with_mode(Mode::Page);
        let mut settings = vec![
            from_file("toc-stream", &dataset, (0, default), options)?,
            from_file("toc-resident", &dataset, (memory, default), options)?,
            from_file(
                "toc-code-rows",
                &dataset,
                (memory, form(RowForm::Codes)),
                options,
            )?,
            from_file(
                "toc-pair-codes",
                &dataset,
                (memory, form(RowForm::PairCodes)),
                options,
            )?,
            from_file(
                "toc-values",
                &dataset,
                (memory, form(RowForm::Values)),
                options,
            )?,
            from_file("toc-pages", &dataset, (memory, pages), options)?,
            from_file("csr-stream", &csr, (0, default), options)?,
            from_file("csr-resident", &csr, (memory, default), options)?,
            in_memory("memory-toc-pages", &rows, &labels, pages_of(&info), options)?,
            in_memory(
                "memory-csr-pages",
                &rows,
                &labels,
                csr_pages_of(&info),
                options,
            )?,
            in_memory(
                "memory-pair-codes",
                &rows,
                &labels,
                Cut {
                    form: PageForm::PairCodes,
                    ..whole(options)
                },
                options,
            )?,
            in_memory("memory-csr", &rows, &labels, whole(options), options)?,
        ];
        let base = settings.last().map_or(1.0, |s| s.epoch_seconds);
        for s in &mut settings {
            s.time_ratio_to_memory = s.epoch_seconds / base;
        }
        Ok(settings)
    })();
    let _ = std::fs::remove_file(&csr_path);
    Ok(TrainBench {
        path: path.to_path_buf(),
        rows: info.n_rows,
        blocks: info.n_blocks,
        page_rows: info.page_rows,
        settings: result?,
    })
}

/// Every row of the file, in file order, and its labels.
fn read_all(dataset: &Arc<Dataset>) -> Result<(SparseBatch, Vec<f64>)> {
    let mut rows = SparseBatch::with_cols(dataset.info().n_cols)?;
    let mut labels = Vec::new();
    for block in dataset.prefetch((0..dataset.n_blocks()).collect(), 2)? {
        for page in block?.pages()? {
            let decoded = page.batch().try_decode()?;
            for (cols, values) in decoded.rows() {
                rows.push_row(cols, values)?;
            }
            labels.extend_from_slice(page.labels());
        }
    }
    Ok((rows, labels))
}

/// The rows written again with the file's layout in `format`.
fn write_copy(
    path: &Path,
    rows: &SparseBatch,
    labels: &[f64],
    info: &crate::dataset::DatasetInfo,
    format: FormatKind,
) -> Result<()> {
    let layout = WriterOptions {
        page_rows: info.page_rows,
        block_bytes: info.block_bytes,
        format,
        ..WriterOptions::default()
    };
    let mut writer = DatasetWriter::create(path, info.n_cols, layout)?;
    writer.push(rows, labels)?;
    writer.finish()?;
    Ok(())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => 0.5 * (xs[n / 2 - 1] + xs[n / 2]),
    }
}

fn train_options(options: &TrainBenchOptions) -> TrainOptions {
    TrainOptions {
        epochs: options.epochs + 1,
        learning_rate: options.learning_rate,
        optimizer: options.optimizer,
        // The model's scaling as the harness set it.
        scale: super::Scale::Model,
        ..TrainOptions::default()
    }
}

/// Training through the loader from `dataset` with a resident budget,
/// the loader's options as `setting` leaves them.
fn from_file(
    name: &'static str,
    dataset: &Arc<Dataset>,
    (memory, setting): (usize, impl Fn(LoaderOptions) -> LoaderOptions),
    options: &TrainBenchOptions,
) -> Result<Setting> {
    let loader = Loader::new(
        Arc::clone(dataset),
        setting(LoaderOptions {
            strategy: options.strategy,
            mode: options.mode,
            batch_rows: options.batch_rows,
            seed: options.seed,
            memory: Some(memory),
            ..LoaderOptions::default()
        }),
    )?;
    let mut model = Model::new(options.model.clone(), dataset.info().n_cols, options.seed)?;
    let reports = train(&mut model, &loader, &train_options(options), None, |_| {})?;
    let later = &reports[1..];
    let epoch_seconds = median(later.iter().map(|r| r.seconds).collect());
    let wait: f64 = later.iter().map(|r| r.wait_seconds).sum();
    let total: f64 = later.iter().map(|r| r.seconds).sum();
    let peak = reports
        .iter()
        .map(|r| r.buffer_peak_bytes)
        .max()
        .unwrap_or(0);
    Ok(Setting {
        name,
        first_epoch_seconds: reports[0].seconds,
        epoch_seconds,
        examples_per_second: dataset.info().n_rows as f64 / epoch_seconds,
        time_ratio_to_memory: f64::NAN,
        wait_share: if total > 0.0 { wait / total } else { 0.0 },
        peak_bytes: peak + loader.resident_bytes(),
        file_bytes: dataset.info().file_bytes,
        final_loss: reports.last().map_or(f64::NAN, |r| r.train.loss),
        mode: match loader.mode() {
            Mode::Page => "page".to_string(),
            _ => {
                let c = loader.buffer_choice();
                let whole = if c.whole_file {
                    "whole file"
                } else {
                    "buffers"
                };
                format!("{}, {whole}", c.rows)
            }
        },
        tree_share: {
            let tree: usize = later.iter().map(|r| r.tree_batches).sum();
            let rows: usize = later.iter().map(|r| r.row_batches).sum();
            tree as f64 / (tree + rows).max(1) as f64
        },
        gradient_threads: later.iter().map(|r| r.gradient_threads).max().unwrap_or(1),
    })
}

/// How the in-memory settings cut a mini-batch into pages.
#[derive(Debug, Clone, Copy)]
struct Cut {
    form: PageForm,
    /// Rows per page (the whole mini-batch for `memory-csr`).
    page_rows: usize,
}

/// How [`in_memory`] writes its pages.
#[derive(Debug, Clone, Copy)]
enum PageForm {
    Format(FormatKind),
    /// Pair codes into one table of every row's distinct pairs.
    PairCodes,
}

/// Rows written as pair codes into one shared table, as the loader's
/// buffer of pair codes writes them (`memory-pair-codes`).
struct PairCoder {
    ids: std::collections::HashMap<(u32, u64), u32>,
    table: PairTable,
}

impl PairCoder {
    /// The table of the distinct `(column, value)` pairs of `rows`.
    fn of(rows: &SparseBatch) -> PairCoder {
        let (mut ids, mut pairs) = (std::collections::HashMap::new(), Vec::new());
        for (cols, vals) in rows.rows() {
            for (&col, &val) in cols.iter().zip(vals) {
                ids.entry((col, val.to_bits())).or_insert_with(|| {
                    pairs.push(Pair { val, col });
                    pairs.len() as u32 - 1
                });
            }
        }
        PairCoder {
            ids,
            table: PairTable::new(pairs),
        }
    }

    /// The table's bytes (held once, shared by every page).
    fn table_bytes(&self) -> usize {
        std::mem::size_of::<Pair>() * self.table.len()
    }

    /// `rows` (rows of the table's) as a page of pair codes.
    fn page(&self, rows: &SparseBatch, labels: &[f64]) -> Result<Page> {
        let (mut ends, mut codes) = (Vec::new(), Vec::new());
        for (cols, vals) in rows.rows() {
            for (&col, &val) in cols.iter().zip(vals) {
                let code = self.ids.get(&(col, val.to_bits())).copied();
                codes.push(code.ok_or(Error::BadArgument {
                    what: "rows of a benchmark page of pair codes",
                    expected: "pairs of the table made from every row",
                })?);
            }
            ends.push(codes.len() as u32);
        }
        let coded = CodedRows::new(rows.n_cols(), self.table.clone(), ends, codes)?;
        Page::new(Batch::Coded(coded), labels)
    }
}

/// `memory-csr`: one CSR page per mini-batch.
fn whole(options: &TrainBenchOptions) -> Cut {
    Cut {
        form: PageForm::Format(FormatKind::Csr),
        page_rows: options.batch_rows,
    }
}

/// `memory-toc-pages`: the file's pages, in the file's format.
fn pages_of(info: &crate::dataset::DatasetInfo) -> Cut {
    Cut {
        form: PageForm::Format(info.format),
        page_rows: info.page_rows.max(1),
    }
}

/// `memory-csr-pages`: the file's page size, as CSR.
fn csr_pages_of(info: &crate::dataset::DatasetInfo) -> Cut {
    Cut {
        form: PageForm::Format(FormatKind::Csr),
        page_rows: info.page_rows.max(1),
    }
}

/// An SGD loop with no loader: mini-batches of `batch_rows` consecutive
/// rows built before timing (each cut into pages as `cut` says), one step
/// each, in a random order of the batches each epoch (rows inside a batch
/// stay together, as a shuffle-once loop over fixed batches does).
/// `memory-csr` is the practical limit; the two paged settings tell how
/// much of the loader's settings' gap is the page split and the format
/// rather than the loader, and `memory-pair-codes` how much is the form
/// of the loader's batches of pair codes.
fn in_memory(
    name: &'static str,
    rows: &SparseBatch,
    labels: &[f64],
    cut: Cut,
    options: &TrainBenchOptions,
) -> Result<Setting> {
    let n = rows.n_rows();
    let mut batches = Vec::new();
    let mut coder: Option<PairCoder> = None;
    let mut bytes = 0;
    for start in (0..n).step_by(options.batch_rows) {
        let end = (start + options.batch_rows).min(n);
        let mut pages = Vec::new();
        for from in (start..end).step_by(cut.page_rows) {
            let to = (from + cut.page_rows).min(end);
            let (slice, page_labels) = (rows.slice_rows(from..to), &labels[from..to]);
            let page = match cut.form {
                PageForm::Format(format) => Page::encode(format, &slice, page_labels)?,
                PageForm::PairCodes => coder
                    .get_or_insert_with(|| PairCoder::of(rows))
                    .page(&slice, page_labels)?,
            };
            bytes += page.heap_bytes();
            pages.push(page);
        }
        bytes += std::mem::size_of::<Page>() * pages.capacity();
        batches.push(pages);
    }
    let mut model = Model::new(options.model.clone(), rows.n_cols(), options.seed)?;
    let train = train_options(options);
    // The trainer's step and epoch loop on one thread, as `train` runs
    // it, tail mean included: only the source of the mini-batches differs.
    // Rows in memory, no dataset: the target as it is (a speed figure).
    let mut stepper = core::Stepper::new(&model, &train, core::TargetScale::UNIT)?;
    let mut times = Vec::new();
    let mut loss = f64::NAN;
    for epoch in 0..train.epochs {
        let lr = core::learning_rate(&train, epoch);
        let order =
            Rng::stream(options.seed, &[STREAM_MEMORY, epoch as u64]).permutation(batches.len());
        let start = Instant::now();
        let tail = core::TailMean::start(&model, &train, epoch)?;
        let steps = order.iter().map(|&b| {
            Ok(core::Step {
                pages: &batches[b][..],
                replay: false,
            })
        });
        let run = core::run_epoch(&mut model, &mut stepper, steps, lr, tail, None, drop)?;
        times.push(start.elapsed().as_secs_f64());
        loss = run.metrics.mean_loss();
    }
    let epoch_seconds = median(times[1..].to_vec());
    Ok(Setting {
        name,
        first_epoch_seconds: times[0],
        epoch_seconds,
        examples_per_second: n as f64 / epoch_seconds,
        time_ratio_to_memory: f64::NAN,
        wait_share: 0.0,
        peak_bytes: bytes
            + coder.as_ref().map_or(0, PairCoder::table_bytes)
            + std::mem::size_of::<Vec<Page>>() * batches.capacity(),
        file_bytes: 0,
        final_loss: loss,
        mode: "memory".to_string(),
        tree_share: 0.0,
        gradient_threads: 1,
    })
}

const STREAM_MEMORY: u64 = 0x4245_4e43_484d_454d; // "BENCHMEM"
