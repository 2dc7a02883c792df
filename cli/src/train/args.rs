//! The arguments of `tocpile train`, their parsers (a bad value is a
//! usage error naming it), and the one place they become the library's
//! [`Trainer`] ([`TrainArgs::trainer`]), for a single process and for
//! each rank alike.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use tocpile::dataset::{Dataset, Source};
use tocpile::loader::{Buffer, LoaderOptions, Mode, Strategy};
use tocpile::model::{ModelKind, Optimizer};
use tocpile::scale::ScaleKind;
use tocpile::train::{infer_kind, Scale, TrainOptions, Trainer};

use crate::Failure;

/// Train a model by mini-batch SGD on a dataset file.
///
/// Reads FILE.toc (written by `tocpile encode`) epoch by epoch in the
/// order of the --shuffle strategy (CorgiPile by default: a random
/// permutation of the blocks, a buffer of --buffer of the blocks at a time,
/// its rows shuffled) and takes one SGD step per mini-batch, with the
/// gradient computed on the encoded batch, by Adam unless --optimizer
/// says otherwise, in the coordinates of the scaled data when the file
/// stores a scaling (see --scale). The learning rate decays as
/// lr * decay^epoch. Each epoch's loss and accuracy (R^2 for linreg) are
/// the running figures of the mini-batches as the model met them; --eval
/// adds exact figures on another file after each epoch. Epochs are
/// numbered from 0.
///
/// A comma list of strategies (--shuffle corgipile,none,once) trains one
/// model per strategy, from the same initial model, for comparison.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile encode train.libsvm.gz -o train.toc --block-bytes 65536\n  \
    tocpile train train.toc\n  \
    tocpile train train.toc --model svm --epochs 20 --lr 0.05 --save svm.model\n  \
    tocpile train train.toc --eval test.toc --json\n  \
    tocpile train train.toc --holdout 0.1 --save lr.model\n  \
    tocpile train train.toc --optimizer sgd --lr 0.5 --scale none\n  \
    tocpile train train.toc --shuffle corgipile,none,once,epoch --plot shuffles.svg\n  \
    tocpile train digits.toc --model softmax --buffer 0.2\n  \
    mpirun -np 4 tocpile train train.toc --save lr.model   # built with --features mpi\n  \
    tocpile train train.toc --ranks 4                      # 4 ranks as threads")]
pub struct TrainArgs {
    /// The dataset file to train on (see `tocpile encode`).
    #[arg(value_name = "FILE.toc")]
    pub file: PathBuf,
    /// The model: lr (logistic regression), svm, linreg (linear
    /// regression), softmax (multinomial LR) or mlp (the TOC paper's
    /// network, hidden layers 200 and 50).
    #[arg(long, value_name = "MODEL", default_value = "lr", value_parser = parse_model)]
    pub model: String,
    /// Shuffling strategy, or a comma list of them to compare: corgipile,
    /// none, once, epoch, window, mrs, block.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "corgipile",
          value_parser = parse_strategy)]
    pub shuffle: Vec<Strategy>,
    /// Retired from the help (kept so that scripts still run, and for
    /// comparisons; `tocpile bench train` measures it as toc-pages): what
    /// the buffer shuffles: rows (exact, auto: the one row pipeline, rows
    /// kept as codes, mini-batches as TOC batches or rows) or whole
    /// encoded pages (page: 0.07-0.08x memory-csr on shuffled flights3m
    /// where the default is 0.8-1.2x, and a shuffle as good only on files
    /// whose pages are as mixed as random rows).
    #[arg(long, value_enum, default_value = "auto", hide = true)]
    pub mode: ModeArg,
    /// Epochs to run.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub epochs: u64,
    /// Rows per mini-batch.
    #[arg(long, value_name = "N", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// Learning rate of the first epoch [default: 0.03 for adam, 0.1 for
    /// adagrad and sgd].
    #[arg(long, value_name = "X", allow_negative_numbers = true,
          value_parser = parse_positive)]
    pub lr: Option<f64>,
    /// Factor applied to the learning rate after each epoch, in (0, 1].
    #[arg(long, value_name = "X", default_value_t = 0.95, allow_negative_numbers = true,
          value_parser = parse_decay)]
    pub decay: f64,
    /// L2 regularisation strength.
    #[arg(long, value_name = "X", default_value_t = 0.0, allow_negative_numbers = true,
          value_parser = parse_l2)]
    pub l2: f64,
    /// Buffer size as a fraction of the dataset, in (0, 1] (CorgiPile,
    /// block, window, mrs); a CorgiPile or block buffer holds at least
    /// 4 blocks (or all of them). Default: the whole file when its rows,
    /// kept as codes into the file's dictionaries (or decoded, for files
    /// without, then within --max-decode-nnz), fit the memory budget
    /// (--memory): a full shuffle every epoch, each row decoded once;
    /// else 0.1. The header says which.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true,
          value_parser = parse_fraction)]
    pub buffer: Option<f64>,
    /// Memory in MiB for loaded pages kept across epochs: pages (with
    /// their decode trees) that fit are validated once and stay resident;
    /// the rest are read from the file every epoch. 0 streams every
    /// block every epoch. Default: half of what the memory available to
    /// the process (MemAvailable, and the limit of its memory cgroups
    /// less their usage) leaves once the loader's buffers are set aside,
    /// less when the file fits the page cache (to keep it there), at most
    /// 1024; with the default --buffer, up to three quarters of it when
    /// that holds the whole file's rows (nothing streams then); the
    /// header says when it was lowered. Ranks (--ranks,
    /// mpirun) share the default and take --memory each.
    #[arg(long, value_name = "MIB")]
    pub memory: Option<u64>,
    /// Seed of the shuffles and of the initial model.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Number of classes (softmax, mlp); default: the largest label + 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=65_536))]
    pub classes: Option<u64>,
    /// A dataset file to evaluate the model on after each epoch.
    #[arg(long, value_name = "FILE.toc")]
    pub eval: Option<PathBuf>,
    /// Where Shuffle Once (--shuffle once) writes its shuffled copy and
    /// bucket files. Default: beside FILE.toc, whose file system held the
    /// data once (the temporary directory is often a small in-memory
    /// one). They are removed on every exit, an error, SIGINT or SIGTERM
    /// included; copies of killed runs are removed by the next run.
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Write the trained model to this file (atomically; one strategy
    /// only; `-` for standard output, the table then on standard error).
    #[arg(long, value_name = "MODEL_FILE")]
    pub save: Option<PathBuf>,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also draw loss and accuracy per epoch (one line per strategy) as an
    /// SVG chart: the running training figures, and the held-out ones
    /// below them with --eval or --holdout.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The step rule: adam (default), adagrad or sgd (plain SGD, the
    /// papers' rule). The learning rate decays by --decay for each.
    #[arg(long, value_enum, default_value = "adam")]
    pub optimizer: OptimizerArg,
    /// Input scaling, applied to the model's parameters (the data is not
    /// changed): auto (the scaling stored in the file by `encode`, none
    /// if it has none), none, maxabs or standard (fitted by a pass over
    /// the file unless it stores that kind).
    #[arg(long, value_enum, default_value = "auto")]
    pub scale: ScaleArg,
    /// Threads computing a linear model's gradient when no loader thread
    /// runs beside the trainer: 2 shares each mini-batch's pages with a
    /// second thread (on machines of two cores or more), 1 keeps the
    /// one-thread sums (the same steps up to rounding). `train` always
    /// runs the loader on a thread of its own (it decodes every epoch's
    /// rows from the compressed blocks), so this applies to `bench train`'s
    /// single-buffered settings; it never depends on the memory budget.
    #[arg(long, value_name = "N", default_value_t = 2, hide = true,
          value_parser = clap::value_parser!(u64).range(1..=2))]
    pub gradient_threads: u64,
    /// Hold out this share of the rows (picked by a hash of the row number
    /// under --seed) as a test set: training runs on the others, and the
    /// held-out figures are reported after each epoch and first in the
    /// summary.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true,
          value_parser = parse_holdout, conflicts_with = "eval")]
    pub holdout: Option<f64>,
    /// Several ranks: --distributed, --ranks, --average-every.
    #[command(flatten)]
    pub dist: super::distributed::DistArgs,
}

impl TrainArgs {
    /// The learning rate: --lr, or the step rule's default.
    pub fn learning_rate(&self) -> f64 {
        self.lr.unwrap_or(self.optimizer.default_lr())
    }

    /// The loader's buffer: `--buffer`, or the library's default (the
    /// whole file when it fits).
    pub fn buffer_option(&self) -> Buffer {
        match self.buffer {
            Some(f) => Buffer::Fraction(f),
            None => Buffer::Auto,
        }
    }

    /// The library's trainer for these arguments on `dataset`: the model
    /// kind (classes inferred from every row's labels for softmax and
    /// mlp unless --classes, [`model_kind`]), the training options, the
    /// loader's (--mode, --batch-size, --buffer, --scratch-dir, --memory
    /// if given; the library's default budget otherwise), the seed and
    /// the strategies (--shuffle). --eval and --holdout are the caller's
    /// (a rank evaluates on rank 0 only).
    pub fn trainer(&self, dataset: &Dataset) -> Result<Trainer, Failure> {
        let kind = model_kind(&self.model, self.classes, dataset, &self.file)?;
        let options = TrainOptions::default()
            .with_optimizer(self.optimizer.rule())
            .with_epochs(usize::try_from(self.epochs).unwrap_or(usize::MAX))
            .with_learning_rate(self.learning_rate())
            .with_decay(self.decay)
            .with_l2(self.l2)
            .with_split_gradient(self.gradient_threads > 1)
            .with_scale(self.scale.choice());
        let mut loader = LoaderOptions::default()
            .with_mode(self.mode.mode())
            .with_batch_rows(usize::try_from(self.batch_size).unwrap_or(usize::MAX))
            .with_buffer(self.buffer_option())
            .with_scratch_dir(self.scratch_dir.clone());
        loader.memory = self.memory.map(mib_bytes);
        Ok(Trainer::new(kind)
            .options(options)
            .loader(loader)
            .seed(self.seed)
            .strategies(self.shuffle.iter().copied()))
    }
}

/// The model kind for `name` on `dataset`, inferring the number of classes
/// from the labels for softmax and mlp unless `classes` is given (the
/// library's [`infer_kind`], its error said in the command line's words).
pub fn model_kind(
    name: &str,
    classes: Option<u64>,
    dataset: &Dataset,
    path: &Path,
) -> Result<ModelKind, Failure> {
    let classes = classes.map(|c| usize::try_from(c).unwrap_or(usize::MAX));
    match infer_kind(name, classes, dataset) {
        Err(tocpile::Error::BadValue { row, found, .. }) => {
            // A label of 1e300 said as such, not as 301 digits.
            let found = found.parse::<f64>().map_or(found, crate::output::number);
            Err(Failure::about(
                path,
                format!(
                    "row {row}: label {found} is not a class index (an integer in 0..{}): \
                 {name} needs labels 0, 1, 2, ...; give --classes N if some classes are absent, \
                 or --model linreg for a regression target",
                    tocpile::train::MAX_CLASSES
                ),
            ))
        }
        other => Ok(other?),
    }
}

/// `--memory MIB` in bytes.
fn mib_bytes(mib: u64) -> usize {
    usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
}

/// `--memory MIB` in bytes, or the default budget of a loader over
/// `dataset` with `options` for the memory available
/// (`tocpile::loader::memory_budget_for`, as the trainer's) with the
/// reason it is below 1 GiB (`bench train`).
pub fn memory_budget<S: Source>(
    mib: Option<u64>,
    dataset: &Dataset<S>,
    options: &LoaderOptions,
) -> (usize, Option<String>) {
    match mib {
        Some(m) => (mib_bytes(m), None),
        None => {
            let budget = tocpile::loader::memory_budget_for(dataset, options);
            (budget.bytes, budget.reason())
        }
    }
}

fn parse_holdout(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!("{text} is not a fraction in (0, 1)")),
    }
}

/// `--scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScaleArg {
    /// The scaling stored in the file (none if it has none).
    Auto,
    /// No scaling.
    None,
    /// Max-abs scaling (fitted by a pass over the file if it stores
    /// another or none).
    Maxabs,
    /// Standard scaling without centering (likewise).
    Standard,
}

impl ScaleArg {
    /// The library's choice for this argument (a fresh model has no
    /// scaling of its own, so `auto` is the file's).
    fn choice(self) -> Scale {
        match self {
            ScaleArg::Auto => Scale::Stored,
            ScaleArg::None => Scale::None,
            ScaleArg::Maxabs => Scale::Fit(ScaleKind::MaxAbs),
            ScaleArg::Standard => Scale::Fit(ScaleKind::Standard),
        }
    }
}

/// `--optimizer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptimizerArg {
    /// Adam (the default).
    Adam,
    /// AdaGrad.
    Adagrad,
    /// Plain SGD.
    Sgd,
}

impl OptimizerArg {
    pub fn rule(self) -> Optimizer {
        match self {
            OptimizerArg::Adam => Optimizer::Adam,
            OptimizerArg::Adagrad => Optimizer::AdaGrad,
            OptimizerArg::Sgd => Optimizer::Sgd,
        }
    }

    /// The learning rate when `--lr` is not given (the library's,
    /// [`Optimizer::default_learning_rate`]).
    pub fn default_lr(self) -> f64 {
        self.rule().default_learning_rate()
    }
}

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Shuffle decoded rows; gather each mini-batch into CSR.
    Exact,
    /// Shuffle whole encoded pages.
    Page,
    /// Exact mode; the header says what the file's label mix shows.
    Auto,
}

impl ModeArg {
    /// The library's mode.
    pub fn mode(self) -> Mode {
        match self {
            ModeArg::Exact => Mode::Exact,
            ModeArg::Page => Mode::Page,
            ModeArg::Auto => Mode::Auto,
        }
    }
}

fn parse_model(name: &str) -> Result<String, String> {
    let lower = name.to_ascii_lowercase();
    if ModelKind::NAMES.contains(&lower.as_str()) {
        Ok(lower)
    } else {
        Err(format!(
            "unknown model {name:?} (one of {})",
            ModelKind::NAMES.join(", ")
        ))
    }
}

fn parse_strategy(name: &str) -> Result<Strategy, String> {
    Strategy::from_name(name.trim()).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        format!(
            "unknown shuffling strategy {name:?} (one of {})",
            names.join(", ")
        )
    })
}

fn parse_number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| format!("{text:?} is not a number"))
}

fn parse_positive(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("{text} is not a positive finite number")),
    }
}

fn parse_decay(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!("{text} is not in (0, 1]")),
    }
}

fn parse_l2(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x >= 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("{text} is not a non-negative finite number")),
    }
}

fn parse_fraction(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!("{text} is not a fraction in (0, 1]")),
    }
}
