//! `tocpile shuffle`: coded shuffling of a dataset file's blocks between
//! a parameter server (rank 0, holding the file) and workers that cache a
//! share of the blocks (UberShuffle, `tocpile::dist`), epoch after epoch,
//! under `mpirun` (the `mpi` feature) or with the workers as threads of
//! this process (`--workers N`). Prints the bytes and time of each
//! shuffle per scheme; every worker checks every block it receives
//! against its checksum and, with --verify, against the file byte for
//! byte.

use std::path::PathBuf;

use clap::Args;
use tocpile::dist::{
    read_blocks, Communicator, InProcess, Scheme, ShuffleOptions, ShuffleReport, ShuffleServer,
    ShuffleWorker,
};

use crate::output::emit;
use crate::{Failure, Outcome};

mod fit;

/// Shuffle a dataset's blocks among workers with coded multicasts.
///
/// Rank 0 is the parameter server and holds FILE.toc; each worker caches
/// --alpha of the blocks. Every epoch each worker needs the blocks of its
/// slice of the epoch's block permutation (what its loader reads in a
/// data-parallel run), and the server sends what its cache lacks:
/// uncoded (one block per transmission), coded (Lee et al.: XORs of
/// blocks each receiver can cancel) or ubershuffle (coded, with the empty
/// slots of the coding tables filled). Packets are multicast with the
/// relay of the UberShuffle paper (section 4.2).
///
/// Under mpirun (built with the `mpi` feature) the world's ranks 1.. are
/// the workers; otherwise --workers N threads.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile shuffle train.toc --workers 4 --scheme uncoded,coded,ubershuffle\n  \
    mpirun -np 5 tocpile shuffle train.toc --alpha 0.5 --epochs 3 --verify   # built with --features mpi")]
pub struct ShuffleArgs {
    /// The dataset file whose blocks are shuffled.
    #[arg(value_name = "FILE.toc")]
    pub file: PathBuf,
    /// Schemes to run, one session each: uncoded, coded, ubershuffle (and
    /// none, with --train).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "uncoded,coded,ubershuffle",
          value_parser = parse_scheme)]
    pub scheme: Vec<Option<Scheme>>,
    /// Share of the blocks each worker caches (the paper's alpha), at
    /// least 1/workers.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.5)]
    pub alpha: f64,
    /// Shuffles (epochs) per scheme.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub epochs: u64,
    /// Bytes per chunk and packet.
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=1 << 26))]
    pub chunk: u64,
    /// Seed of the assignments (the loader's) and caches.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Workers as threads of this process (ignored under mpirun).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=63))]
    pub workers: u64,
    /// Each worker also compares every block it holds with the file, byte
    /// for byte, after each shuffle.
    #[arg(long)]
    pub verify: bool,
    /// Train this model (lr, svm or linreg) on the workers' cached blocks,
    /// the server summing gradients, with a shuffle before every epoch
    /// after the first (the UberShuffle paper's Figure 8 setting); the
    /// scheme list may then include `none` (workers keep their first
    /// blocks). Prints time and loss per epoch instead of byte counts.
    #[arg(long, value_name = "MODEL")]
    pub train: Option<String>,
    /// Learning rate of the first epoch with --train (decay 0.95 per epoch).
    #[arg(long, value_name = "X", default_value_t = 0.1)]
    pub lr: f64,
    /// Rows per mini-batch per worker with --train.
    #[arg(long, value_name = "N", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// With --train: report the time until the loss on the whole file
    /// first falls to this.
    #[arg(long, value_name = "LOSS")]
    pub target_loss: Option<f64>,
}

fn parse_scheme(s: &str) -> Result<Option<Scheme>, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    Scheme::from_name(s)
        .map(Some)
        .ok_or_else(|| format!("unknown scheme {s:?} (uncoded, coded, ubershuffle, none)"))
}

pub fn run(args: &ShuffleArgs) -> Outcome {
    #[cfg(feature = "mpi")]
    if tocpile::dist::Mpi::launched_size().is_some_and(|n| n > 1) {
        return crate::mpi::on_mpi(|comm| on_rank(args, comm));
    }
    let ranks = InProcess::group(args.workers as usize + 1)?;
    std::thread::scope(|s| {
        let mut ranks = ranks.into_iter();
        let server = ranks.next().expect("rank 0");
        let workers: Vec<_> = ranks
            .map(|comm| s.spawn(move || on_rank(args, &comm)))
            .collect();
        let outcome = on_rank(args, &server);
        drop(server);
        let mut first = outcome;
        for h in workers {
            let o = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            if first.is_ok() {
                first = o;
            }
        }
        first
    })
}

fn on_rank<C: Communicator>(args: &ShuffleArgs, comm: &C) -> Outcome {
    if comm.size() < 2 {
        return Err(Failure(
            "shuffle needs a server and at least one worker (mpirun -np 2 or more)".into(),
        ));
    }
    if args.train.is_none() && args.scheme.iter().any(Option::is_none) {
        return Err(Failure("--scheme none needs --train".into()));
    }
    if let Some(model) = &args.train {
        let blocks = match comm.rank() {
            0 => Some(read_blocks(&args.file)?),
            _ => None,
        };
        if comm.rank() == 0 {
            emit(&format!(
                "training {model} on {} among {} workers from their caches; alpha {}, \
                 lr {}, {}-row mini-batches per worker, seed {}\n\n{}",
                args.file.display(),
                comm.size() - 1,
                args.alpha,
                args.lr,
                args.batch_size,
                args.seed,
                fit::header()
            ))?;
        }
        for &scheme in &args.scheme {
            fit::run(args, comm, model, scheme, blocks.as_deref())?;
        }
        return Ok(());
    }
    if comm.rank() == 0 {
        serve(args, comm)
    } else {
        work(args, comm)
    }
}

fn options(args: &ShuffleArgs, scheme: Scheme) -> ShuffleOptions {
    ShuffleOptions {
        scheme,
        alpha: args.alpha,
        chunk_bytes: usize::try_from(args.chunk).unwrap_or(usize::MAX),
        seed: args.seed,
    }
}

fn serve<C: Communicator>(args: &ShuffleArgs, comm: &C) -> Outcome {
    let blocks = read_blocks(&args.file)?;
    let total: u64 = blocks.iter().map(|b| b.len() as u64).sum();
    emit(&format!(
        "shuffling {}: {} blocks, {total} bytes, among {} workers; alpha {}, {}-byte chunks, \
         seed {}{}\n\n| scheme | epoch | packets | blocks | block bytes | padding | server payload | \
         server bytes | relay bytes | seconds |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        args.file.display(),
        blocks.len(),
        comm.size() - 1,
        args.alpha,
        args.chunk,
        args.seed,
        if args.verify { ", verified byte for byte" } else { "" },
    ))?;
    let mut means = Vec::new();
    for &scheme in args.scheme.iter().flatten() {
        let mut server = ShuffleServer::start(comm, blocks.clone(), &options(args, scheme))?;
        let mut reports = Vec::new();
        for _ in 0..args.epochs {
            let report = server.shuffle()?;
            let mut failed = [0.0];
            comm.allreduce_sum(&mut failed)?;
            if failed[0] != 0.0 {
                return Err(Failure(format!(
                    "{scheme}, epoch {}: {} worker(s) hold a block that differs from the file",
                    report.epoch, failed[0]
                )));
            }
            emit(&row(&report))?;
            reports.push(report);
        }
        means.push((scheme, reports));
    }
    emit(&summary(&means))
}

fn row(r: &ShuffleReport) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {:.1}% | {} | {} | {} | {:.4} |\n",
        r.scheme,
        r.epoch,
        r.packets,
        r.blocks,
        r.block_bytes,
        100.0 * r.padding_overhead(),
        r.payload_bytes,
        r.server.bytes_sent,
        r.workers.bytes_sent,
        r.seconds
    )
}

fn summary(runs: &[(Scheme, Vec<ShuffleReport>)]) -> String {
    let mean = |rs: &[ShuffleReport], f: &dyn Fn(&ShuffleReport) -> f64| {
        rs.iter().map(f).sum::<f64>() / rs.len().max(1) as f64
    };
    let uncoded = runs
        .iter()
        .find(|(s, _)| *s == Scheme::Uncoded)
        .map(|(_, rs)| mean(rs, &|r| r.server.bytes_sent as f64));
    let mut text = String::from("\nmean per shuffle:\n");
    for (scheme, rs) in runs {
        let bytes = mean(rs, &|r| r.server.bytes_sent as f64);
        text.push_str(&format!(
            "  {scheme}: server bytes {bytes:.0}, relay bytes {:.0}, {:.4} s",
            mean(rs, &|r| r.workers.bytes_sent as f64),
            mean(rs, &|r| r.seconds)
        ));
        if let Some(u) = uncoded {
            text.push_str(&format!(
                ", uncoded / {scheme} server bytes {:.2}",
                u / bytes
            ));
        }
        text.push('\n');
    }
    text
}

fn work<C: Communicator>(args: &ShuffleArgs, comm: &C) -> Outcome {
    let reference = if args.verify {
        Some(read_blocks(&args.file)?)
    } else {
        None
    };
    for _ in &args.scheme {
        let mut worker = ShuffleWorker::join(comm)?;
        for _ in 0..args.epochs {
            worker.shuffle()?;
            let differs = reference.as_ref().is_some_and(|blocks| {
                worker
                    .cached()
                    .iter()
                    .any(|&b| worker.block(b) != Some(blocks[b].as_slice()))
            }) || worker.blocks().iter().any(|&b| worker.block(b).is_none());
            let mut failed = [if differs { 1.0 } else { 0.0 }];
            comm.allreduce_sum(&mut failed)?;
            if failed[0] != 0.0 {
                return Err(Failure(format!(
                    "worker {}: a worker holds a block that differs from the file",
                    worker.worker()
                )));
            }
        }
    }
    Ok(())
}
