//! Running a command on this process's MPI rank (the `mpi` feature), for
//! `tocpile train --distributed` and `tocpile shuffle` under `mpirun`.

use tocpile::dist::{Communicator, Mpi};

use crate::{Failure, Outcome};

/// Runs `f` on this process's MPI rank. An error ends the whole job
/// (`MPI_Abort`, exit code 1) after printing it with the rank: the other
/// ranks may be waiting for this one and would wait forever.
pub fn on_mpi(f: impl FnOnce(&Mpi) -> Outcome) -> Outcome {
    let comm = Mpi::init()?;
    let outcome = f(&comm);
    if let (Err(Failure(message)), true) = (&outcome, comm.size() > 1) {
        eprintln!("tocpile: rank {}: {message}", comm.rank());
        comm.abort(1);
    }
    outcome
}
