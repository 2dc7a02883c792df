//! `tocpile train` on several ranks: under `mpirun` (the `mpi` feature),
//! or as threads of this process (`--ranks N`, no MPI needed). Each rank
//! reads its slice of every epoch's block permutation; gradients are
//! averaged every step (or models every `--average-every K` steps); rank 0
//! prints the table and writes the model (`Prepared::fit_distributed`).

use std::sync::Arc;

use clap::Args;
use tocpile::dist::{Averaging, Communicator, DistributedReport, InProcess};
use tocpile::loader::Mode;
use tocpile::train::Prepared;

use super::{Table, TrainArgs};
use crate::output::emit;
use crate::{Failure, Outcome};

/// Most ranks `--ranks` runs as threads: each is a thread with its own
/// loader (a read-ahead thread or two) and model, and the in-process
/// group holds a channel between every two ranks; 256 ranks of a
/// 100,000-row file peak at 380 MB, 1,000 took 2 GB.
const MAX_RANKS: u64 = 256;

/// The options of `tocpile train` that concern several ranks.
#[derive(Debug, Args)]
pub struct DistArgs {
    /// Train data-parallel on the ranks of `mpirun` (needs the `mpi`
    /// feature). Without it, a build with the feature still trains
    /// data-parallel when started by a launcher with more than one rank.
    #[arg(long)]
    pub distributed: bool,
    /// Train data-parallel on N ranks run as threads of this process (the
    /// same model, bit for bit, as N ranks under mpirun). At most 256 (a
    /// rank is a thread and its loader's threads, about 2 MB each) and at
    /// most the file's blocks (each rank reads whole blocks).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_RANKS), conflicts_with = "distributed")]
    pub ranks: Option<u64>,
    /// With several ranks: average the models every K steps (and at the
    /// end of each epoch) instead of the gradients every step.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub average_every: Option<u64>,
}

/// Runs `train` on several ranks when asked to (or when started by a
/// launcher with more than one rank); `None` for the single-process path.
pub fn train(args: &TrainArgs) -> Option<Outcome> {
    let dist = &args.dist;
    if let Some(n) = dist.ranks {
        return Some(in_process(args, n as usize));
    }
    #[cfg(feature = "mpi")]
    {
        let launched = tocpile::dist::Mpi::launched_size().is_some_and(|n| n > 1);
        if dist.distributed || launched {
            return Some(crate::mpi::on_mpi(|comm| on_rank(args, comm)));
        }
    }
    if dist.distributed {
        return Some(Err(Failure(
            "--distributed needs a tocpile built with the `mpi` feature \
             (cargo install --path cli --features mpi); --ranks N runs ranks as threads"
                .into(),
        )));
    }
    if dist.average_every.is_some() {
        return Some(Err(Failure(
            "--average-every needs several ranks (--ranks N, or mpirun)".into(),
        )));
    }
    None
}

fn in_process(args: &TrainArgs, n: usize) -> Outcome {
    // Each rank reads whole blocks of every epoch's permutation: more ranks
    // than blocks would leave some with nothing to read.
    let blocks = crate::input::open_dataset(&args.file)?.n_blocks();
    check_ranks(n, blocks, &args.file)?;
    let ranks = InProcess::group(n)?;
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(n);
        let mut spawned = Ok(());
        for comm in ranks {
            let rank = comm.rank();
            let thread = std::thread::Builder::new().name(format!("tocpile-rank-{rank}"));
            match thread.spawn_scoped(s, move || on_rank(args, &comm)) {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    // The ranks not started are dropped with the loop: the
                    // started ones fail at their first message to them.
                    spawned = Err(Failure(format!(
                        "could not start the thread of rank {rank} of {n}: {e}; give fewer \
                         --ranks"
                    )));
                    break;
                }
            }
        }
        let outcomes: Vec<Outcome> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        spawned?;
        // Every rank fails together: the run's error is the first that
        // is not a peer's having stopped (the cause, on whichever rank),
        // else rank 0's.
        let cause = outcomes
            .iter()
            .position(|o| matches!(o, Err(Failure(m)) if !m.contains("the peer has stopped")));
        let mut outcomes = outcomes;
        outcomes.swap_remove(cause.unwrap_or(0))
    })
}

/// More ranks than blocks is an error: some ranks would read nothing.
fn check_ranks(ranks: usize, blocks: usize, file: &std::path::Path) -> Outcome {
    if ranks <= blocks.max(1) {
        return Ok(());
    }
    Err(Failure::about(
        file,
        format!(
            "{ranks} ranks for {blocks} blocks: each rank reads whole blocks, so at most \
             {blocks} ranks can share this file (give fewer ranks, or encode it with smaller \
             --block-bytes)"
        ),
    ))
}

/// One rank's part of the run: the single process's steps (`run` in
/// `train.rs`), on this rank's slice of every epoch's blocks; rank 0
/// evaluates, prints and writes the model.
fn on_rank<C: Communicator>(args: &TrainArgs, comm: &C) -> Outcome {
    let (rank, size) = (comm.rank(), comm.size());
    if args.shuffle.len() > 1 || args.json || args.plot.is_some() || args.holdout.is_some() {
        return Err(Failure(
            "training on several ranks takes one --shuffle strategy, and no --json, --plot \
             or --holdout (give the held-out rows as --eval FILE)"
                .into(),
        ));
    }
    let dataset = Arc::new(crate::input::open_dataset(&args.file)?);
    if dataset.info().n_rows == 0 {
        return Err(Failure::about(&args.file, "no rows to train on"));
    }
    // Under mpirun too.
    check_ranks(size, dataset.n_blocks(), &args.file)?;
    // The same model, scaling, step rule and loader as a single process,
    // the loader reading this rank's slice (and --memory per rank: the
    // default budget of the memory available is shared by the ranks,
    // threads of one process or processes that may share a machine).
    let mut trainer = args.trainer(&dataset)?;
    let slice = trainer
        .loader_options()
        .clone()
        .with_worker(rank)
        .with_workers(size);
    trainer = trainer.loader(slice);
    if let (Some(path), 0) = (&args.eval, rank) {
        let eval = crate::input::open_dataset(path)?;
        super::checks::eval_columns(&args.file, &dataset, path, &eval)?;
        trainer = trainer.eval(Arc::new(eval));
    }
    let prepared = trainer
        .prepare(&dataset)
        .map_err(|e| super::prepare_failure(args, e))?;
    let sync = match args.dist.average_every {
        Some(k) => Averaging::Models {
            every: usize::try_from(k).unwrap_or(usize::MAX),
        },
        None => Averaging::Gradients,
    };
    let table = Table {
        metric: if prepared.model().kind().is_regression() {
            "R^2"
        } else {
            "accuracy"
        },
        eval: args.eval.is_some(),
        strategy: false,
    };
    if rank == 0 {
        super::print_warnings(&prepared)?;
        emit(&header(args, &prepared, size, sync, &table))?;
    }
    let mut printed = Ok(());
    let strategy = args.shuffle[0];
    let (model, reports) = prepared.fit_distributed(comm, sync, |r| {
        if rank == 0 && printed.is_ok() {
            printed = emit(&table.row(strategy, &r.epoch));
        }
    })?;
    printed?;
    if rank != 0 {
        return Ok(());
    }
    if let Some(path) = &args.save {
        crate::output::save_model(&model, path)?;
    }
    emit(&summary(&reports, &table, args))
}

/// What the run will do on `size` ranks, and the table's header.
fn header(
    args: &TrainArgs,
    prepared: &Prepared,
    size: usize,
    sync: Averaging,
    table: &Table,
) -> String {
    let info = prepared.dataset().info();
    let loader = &prepared.loaders()[0];
    let mode = match args.mode.mode() {
        Mode::Auto => format!("{} (auto)", loader.mode().name()),
        _ => loader.mode().name().to_string(),
    };
    let sync_name = match sync {
        Averaging::Gradients => "gradients averaged every step".to_string(),
        Averaging::Models { every } => format!("models averaged every {every} steps"),
    };
    let options = prepared.options();
    format!(
        "training {} on {}: {} rows x {} columns in {} blocks, {size} ranks ({sync_name}); \
         {mode} mode, {}-row mini-batches per rank, buffer {}, {} lr {} (decay {}), l2 {}, \
         scaling {}, seed {}\n\n{}",
        prepared.model().kind(),
        args.file.display(),
        info.n_rows,
        info.n_cols,
        info.n_blocks,
        loader.options().batch_rows,
        super::buffer_phrase(args, loader),
        options.optimizer.name(),
        options.learning_rate,
        args.decay,
        args.l2,
        super::scaling_name(prepared.model()),
        args.seed,
        table.header(),
    )
}

fn summary(reports: &[DistributedReport], table: &Table, args: &TrainArgs) -> String {
    let mut text = String::from("\n");
    if let Some(last) = reports.last() {
        let steps: usize = reports.iter().map(|r| r.epoch.steps).sum();
        let comm: f64 = reports.iter().map(|r| r.communication_seconds).sum();
        let seconds: f64 = reports.iter().map(|r| r.epoch.seconds).sum();
        text.push_str(&format!(
            "final: loss {:.4}, {} {:.4}",
            last.epoch.train.loss, table.metric, last.epoch.train.accuracy
        ));
        if let Some(e) = last.epoch.eval {
            text.push_str(&format!(
                "; eval loss {:.4}, eval {} {:.4}",
                e.loss, table.metric, e.accuracy
            ));
        }
        text.push_str(&format!(
            "\n{steps} steps; rank 0 spent {comm:.3} of {seconds:.3} s in collectives; \
             mini-batches per rank in the last epoch: {:?}\n",
            last.batches_per_rank
        ));
    }
    if let Some(path) = &args.save {
        text.push_str(&format!("model written to {}\n", path.display()));
    }
    text
}
