//! `tocpile`: the command line of the tocpile crate.
//!
//! Every command is a thin layer over the library: arguments in, a library
//! call, a table or JSON out. Errors are one line on stderr,
//! `tocpile: <message>`, exit code 1 for runtime errors and 2 for usage
//! errors.

mod bench;
mod bench_train;
mod demo;
mod encode;
mod input;
mod output;
mod ratio;
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
        tocpile train train.toc --eval test.toc --save model.bin\n\n\
        Run `tocpile <command> --help` for each command's options and examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
}

fn run(command: Command) -> Outcome {
    match command {
        Command::Demo(args) => demo::run(&args),
        Command::Encode(args) => encode::run_encode(&args),
        Command::Inspect(args) => encode::run_inspect(&args),
        Command::Ratio(args) => ratio::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Train(args) => train::run(&args),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if !e.use_stderr() {
                // --help and --version: to stdout, success.
                print!("{e}");
                return ExitCode::SUCCESS;
            }
            let text = e.to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            eprint!("tocpile: {text}");
            return ExitCode::from(2);
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            eprintln!("tocpile: {message}");
            ExitCode::from(1)
        }
    }
}
