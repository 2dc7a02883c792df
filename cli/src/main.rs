//! `tocpile`: the command line of the tocpile crate.
//!
//! Every command is a thin layer over the library: arguments in, a library
//! call, a table or JSON out. Errors are one line on stderr,
//! `tocpile: <message>`, exit code 1 for runtime errors and 2 for usage
//! errors; a run stopped by SIGINT or SIGTERM exits with 130 or 143 and
//! leaves no temporary file (`signals`).

mod bench;
mod bench_train;
mod demo;
mod encode;
mod evaluate;
mod input;
mod measure;
#[cfg(feature = "mpi")]
mod mpi;
mod output;
mod predict;
mod ratio;
mod rows;
mod shuffle;
mod signals;
mod train;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A failed command: the message printed after `tocpile: `.
#[derive(Debug)]
pub struct Failure(pub String);

impl From<tocpile::Error> for Failure {
    fn from(e: tocpile::Error) -> Self {
        Failure(e.to_string())
    }
}

impl Failure {
    /// A failure about `path` (named first unless the message already
    /// names it).
    pub fn about(path: &std::path::Path, message: impl std::fmt::Display) -> Self {
        let message = message.to_string();
        let name = path.display().to_string();
        if message.contains(&name) {
            Failure(message)
        } else {
            Failure(format!("{name}: {message}"))
        }
    }
}

impl Failure {
    /// A library error of a run reading `path`: one that names no file
    /// (memory refused, a limit on what is held at once) is about it.
    pub fn of_run(path: &std::path::Path, error: tocpile::Error) -> Self {
        match error {
            tocpile::Error::OutOfMemory { .. } | tocpile::Error::LimitExceeded { .. } => {
                Failure::about(path, error)
            }
            other => other.into(),
        }
    }
}

/// Set by [`Failure::usage`]: the run ends with exit code 2.
static USAGE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Failure {
    /// A usage error found after parsing (exit code 2, as clap's).
    pub fn usage(message: impl std::fmt::Display) -> Self {
        USAGE.store(true, std::sync::atomic::Ordering::SeqCst);
        Failure(message.to_string())
    }
}

/// What a command returns.
pub type Outcome = Result<(), Failure>;

#[derive(Debug, Parser)]
#[command(
    name = "tocpile",
    version,
    about = "Mini-batch SGD on compressed data: tuple-oriented compression (TOC) of \
             LIBSVM/CSV/Parquet data, CorgiPile shuffling, training, compression and kernel studies",
    after_help = "Examples:\n  \
        tocpile demo\n  \
        tocpile encode train.libsvm.gz -o train.toc\n  \
        tocpile inspect train.toc\n  \
        tocpile ratio train.libsvm.gz --plot ratio.svg\n  \
        tocpile bench kernels train.libsvm.gz\n  \
        tocpile train train.toc --eval test.toc --save model.bin\n  \
        tocpile evaluate model.bin test.toc\n  \
        tocpile predict model.bin new.toc -o predictions.txt\n\n\
        Run `tocpile <command> --help` for each command's options and examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Resource limit: most non-zeros one page may decode to (and most
    /// cells of a dense page); default 134217728 (2^27). Raise it only
    /// for trusted files.
    #[arg(long, global = true, value_name = "N")]
    max_page_nnz: Option<u64>,
    /// Resource limit: most non-zeros decoded at once from many pages (a
    /// block's pages, or a CorgiPile buffer's in exact mode); default
    /// 134217728 (2^27, 1.5 GiB decoded). Raise it only for trusted files.
    #[arg(long, global = true, value_name = "N")]
    max_decode_nnz: Option<u64>,
    /// Resource limit: most columns a model, a dense format or a kernel
    /// vector is allocated for; default 67108864 (2^26).
    #[arg(long, global = true, value_name = "N")]
    max_cols: Option<u64>,
    /// Resource limit: most parameters (weights and biases) of a model
    /// built for training, columns times the first layer's width and the
    /// rest; default 67108864 (2^26, 512 MiB per copy, about five copies
    /// while training).
    #[arg(long, global = true, value_name = "N")]
    max_params: Option<u64>,
    /// Replace an output file that is read-only (without --force such a
    /// file is refused: an atomic rename would ignore its mode).
    #[arg(long, global = true)]
    force: bool,
}

/// The commands. A new one is a variant here, its arguments struct, and
/// one arm in `run`.
#[derive(Debug, Subcommand)]
enum Command {
    Demo(demo::DemoArgs),
    Encode(encode::EncodeArgs),
    Inspect(encode::InspectArgs),
    Ratio(ratio::RatioArgs),
    Bench(bench::BenchArgs),
    Train(train::TrainArgs),
    Predict(predict::PredictArgs),
    Evaluate(evaluate::EvaluateArgs),
    Shuffle(shuffle::ShuffleArgs),
}

fn run(command: Command) -> Outcome {
    match command {
        Command::Demo(args) => demo::run(&args),
        Command::Encode(args) => encode::run_encode(&args),
        Command::Inspect(args) => encode::run_inspect(&args),
        Command::Ratio(args) => ratio::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Predict(args) => predict::run(&args),
        Command::Evaluate(args) => evaluate::run(&args),
        Command::Shuffle(args) => shuffle::run(&args),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if !e.use_stderr() {
                // --help and --version: to stdout, success; a reader that
                // stops early (`| head`) ends it quietly, as `emit` does.
                let _ = output::emit(&e.to_string());
                return ExitCode::SUCCESS;
            }
            let text = e.to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            eprint!("tocpile: {text}");
            return ExitCode::from(2);
        }
    };
    signals::install();
    // The library's thread pool, started now so that a limit on threads or
    // on address space is this error rather than a failure at first use.
    if let Err(e) = tocpile::parallel::start() {
        eprintln!(
            "tocpile: could not start the worker threads: {e} (a limit on threads or on \
             address space was reached)"
        );
        return ExitCode::from(1);
    }
    output::set_force(cli.force);
    let defaults = tocpile::limits::limits();
    tocpile::limits::set_limits(tocpile::limits::Limits {
        max_page_nnz: cli.max_page_nnz.unwrap_or(defaults.max_page_nnz),
        max_decode_nnz: cli.max_decode_nnz.unwrap_or(defaults.max_decode_nnz),
        max_cols: cli.max_cols.unwrap_or(defaults.max_cols),
        max_params: cli.max_params.unwrap_or(defaults.max_params),
    });
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) if tocpile::cleanup::interrupted() => {
            eprintln!(
                "tocpile: interrupted by {}; temporary files removed",
                signals::name()
            );
            ExitCode::from(signals::exit_code())
        }
        Err(Failure(message)) => {
            eprintln!("tocpile: {message}");
            let usage = USAGE.load(std::sync::atomic::Ordering::SeqCst);
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}
