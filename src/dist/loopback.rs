//! A whole shuffle session in one process: the server and `n` workers as
//! threads of an [`InProcess`] group, the blocks moving through the same
//! code as under a real transport.

use super::comm::Communicator;
use super::in_process::InProcess;
use super::shuffle::{ShuffleOptions, ShuffleReport, ShuffleServer, ShuffleWorker};
use crate::error::{Error, Result};

/// Runs `epochs` shuffles of `blocks` among `n_workers` worker threads and
/// a server (this thread), returning the server's report of each. After
/// every shuffle each worker checks that it holds every block of its new
/// assignment, byte for byte equal to the server's, and no more blocks
/// than the session's capacity.
///
/// # Errors
/// As [`ShuffleServer::start`] and [`ShuffleServer::shuffle`]; the first
/// worker's error; [`Error::Shuffle`] if a worker's check fails.
pub fn loopback(
    blocks: Vec<Vec<u8>>,
    n_workers: usize,
    options: &ShuffleOptions,
    epochs: u64,
) -> Result<Vec<ShuffleReport>> {
    let mut ranks = InProcess::group(n_workers + 1)?.into_iter();
    let server_rank = ranks.next().expect("rank 0");
    let reference = &blocks;
    std::thread::scope(|scope| {
        let workers: Vec<_> = ranks
            .map(|comm| scope.spawn(move || run_worker(&comm, reference, epochs)))
            .collect();
        let served = serve(&server_rank, reference.clone(), options, epochs);
        // Stop the server's rank before joining, so that workers waiting on
        // it after a failure see it gone instead of waiting forever.
        drop(server_rank);
        let mut first_error = None;
        for handle in workers {
            // A worker's panic is a bug: pass it on.
            let outcome = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if let Err(e) = outcome {
                first_error.get_or_insert(e);
            }
        }
        match (served, first_error) {
            (Ok(reports), None) => Ok(reports),
            (Err(e), _) | (Ok(_), Some(e)) => Err(e),
        }
    })
}

fn serve(
    comm: &InProcess,
    blocks: Vec<Vec<u8>>,
    options: &ShuffleOptions,
    epochs: u64,
) -> Result<Vec<ShuffleReport>> {
    let mut server = ShuffleServer::start(comm, blocks, options)?;
    (0..epochs).map(|_| server.shuffle()).collect()
}

fn run_worker(comm: &InProcess, reference: &[Vec<u8>], epochs: u64) -> Result<()> {
    let mut worker = ShuffleWorker::join(comm)?;
    for _ in 0..epochs {
        worker.shuffle()?;
        let holds_all = worker
            .blocks()
            .iter()
            .all(|&b| worker.block(b) == Some(reference[b].as_slice()));
        if !holds_all || worker.cached().len() > worker.session().capacity {
            return Err(Error::Shuffle {
                worker: comm.rank() - 1,
                epoch: worker.epoch(),
                message: "the cache lacks an assigned block or exceeds its capacity".into(),
            });
        }
    }
    Ok(())
}
