//! [`Mpi`]: the [`Communicator`] over MPI (feature `mpi`, through rsmpi),
//! for ranks started by `mpirun`. Each method is one or a few MPI calls
//! (the table in [`Communicator`]'s module): the allreduce gathers to
//! rank 0 and sums there in rank order, so a run under `mpirun` gives the
//! same bits as the same ranks as threads ([`InProcess`](super::InProcess)).
//!
//! The multicast is the trait's default, UberShuffle section 4.2's relay
//! over point-to-point messages, not `MPI_Bcast` on a communicator per
//! group: a shuffle of `n` workers multicasts to up to `2^n - 1` groups,
//! and making a communicator is collective over its members (or the
//! world), so every group would cost a collective call and a cache of
//! communicators; the relay needs none, sends each byte once from the
//! server (Theorem 4), and is the code the in-process transport runs and
//! the tests check.
//!
//! MPI's default error handler aborts the job on a communication error, so
//! a peer that dies takes the others down with it (`mpirun` reports it)
//! rather than returning [`Error::Communication`]; mismatched allreduce
//! lengths are checked first and are an error on every rank.

use std::cell::Cell;

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::environment::Universe;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator as _, SimpleCommunicator};
use mpi::Threading;

use super::comm::{Communicator, Tag, Traffic, RESERVED_TAGS};
use crate::error::{Error, Result};

/// Tags below this are passed to MPI as they are; the module's reserved
/// tags follow them. MPI guarantees tags up to 32,767 (`MPI_TAG_UB`).
const USER_TAGS: Tag = 1 << 14;

/// This process's rank of the MPI world. Made once per process by
/// [`Mpi::init`]; MPI is finalized when it is dropped.
pub struct Mpi {
    // Dropped last: MPI_Finalize.
    world: SimpleCommunicator,
    traffic: Cell<Traffic>,
    _universe: Universe,
}

impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpi")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

impl Mpi {
    /// Initializes MPI (funneled: the loader's threads never call it) and
    /// returns this process's rank of the world. Outside `mpirun`, MPI
    /// starts a world of one.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if MPI was initialized before in this
    /// process.
    pub fn init() -> Result<Mpi> {
        let Some((universe, _)) = mpi::initialize_with_threading(Threading::Funneled) else {
            return Err(Error::BadArgument {
                what: "MPI",
                expected: "initialized once per process",
            });
        };
        Ok(Mpi {
            world: universe.world(),
            traffic: Cell::new(Traffic::default()),
            _universe: universe,
        })
    }

    /// The world size `mpirun` announced to this process in its
    /// environment (Open MPI's `OMPI_COMM_WORLD_SIZE`, or `PMI_SIZE` of
    /// MPICH and Slurm), without initializing MPI; `None` when the process
    /// was not started by a launcher.
    pub fn launched_size() -> Option<usize> {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
    }

    /// Ends every process of the job with exit code `code`
    /// (`MPI_Abort`): for an error on one rank that the others, waiting
    /// in a collective or a receive, cannot learn about (a file missing
    /// on one machine, say). Returning instead would leave them waiting,
    /// and `MPI_Finalize` with them.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    fn count(&self, bytes: usize, messages: usize) {
        let t = self.traffic.get();
        self.traffic.set(Traffic {
            bytes_sent: t.bytes_sent + bytes as u64,
            messages_sent: t.messages_sent + messages as u64,
        });
    }

    fn check_rank(&self, rank: usize) -> Result<i32> {
        if rank < self.size() {
            Ok(rank as i32)
        } else {
            Err(Error::BadArgument {
                what: "rank",
                expected: "below the communicator's size",
            })
        }
    }
}

/// The MPI tag of a [`Tag`]: user tags below 2^14 as they are, reserved
/// tags from 2^14 up (within MPI's guaranteed 32,767).
fn mpi_tag(tag: Tag) -> Result<i32> {
    let mapped = if tag >= RESERVED_TAGS {
        USER_TAGS + (tag - RESERVED_TAGS)
    } else if tag < USER_TAGS {
        tag
    } else {
        Tag::MAX
    };
    if mapped < 2 * USER_TAGS {
        Ok(mapped as i32)
    } else {
        Err(Error::BadArgument {
            what: "MPI message tag",
            expected: "below 16384, or one of the module's reserved tags",
        })
    }
}

impl Communicator for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn allreduce_sum(&self, values: &mut [f64]) -> Result<()> {
        let (size, rank) = (self.size(), self.rank());
        // Lengths first (max and complement of the min in one call), so
        // that a mismatch is an error on every rank, not a truncated
        // gather.
        let len = values.len() as u64;
        let mut extremes = [0u64; 2];
        self.world.all_reduce_into(
            &[len, u64::MAX - len],
            &mut extremes,
            SystemOperation::max(),
        );
        if extremes[0] != u64::MAX - extremes[1] {
            return Err(Error::Communication {
                rank,
                peer: 0,
                message: format!(
                    "allreduce lengths differ: from {} to {} values",
                    u64::MAX - extremes[1],
                    extremes[0]
                ),
            });
        }
        if size == 1 || values.is_empty() {
            return Ok(());
        }
        let root = self.world.process_at_rank(0);
        if rank == 0 {
            let mut all = vec![0.0; values.len() * size];
            root.gather_into_root(&*values, &mut all[..]);
            // Rank order: ((v0 + v1) + v2) + ...
            for other in all.chunks_exact(values.len()).skip(1) {
                values.iter_mut().zip(other).for_each(|(a, b)| *a += b);
            }
            self.count(values.len() * 8 * (size - 1), size - 1);
        } else {
            root.gather_into(&*values);
            self.count(values.len() * 8, 1);
        }
        root.broadcast_into(values);
        Ok(())
    }

    fn broadcast(&self, root: usize, bytes: &mut Vec<u8>) -> Result<()> {
        let root_rank = self.check_rank(root)?;
        let process = self.world.process_at_rank(root_rank);
        let mut len = [bytes.len() as u64];
        process.broadcast_into(&mut len[..]);
        if self.rank() == root {
            self.count(bytes.len() * (self.size() - 1), self.size() - 1);
        } else {
            *bytes = vec![0; len[0] as usize];
        }
        process.broadcast_into(&mut bytes[..]);
        Ok(())
    }

    fn barrier(&self) -> Result<()> {
        self.world.barrier();
        Ok(())
    }

    fn send(&self, to: usize, tag: Tag, bytes: &[u8]) -> Result<()> {
        let (to, tag) = (self.check_rank(to)?, mpi_tag(tag)?);
        self.world.process_at_rank(to).send_with_tag(bytes, tag);
        self.count(bytes.len(), 1);
        Ok(())
    }

    fn receive(&self, from: usize, tag: Tag) -> Result<Vec<u8>> {
        let (from, tag) = (self.check_rank(from)?, mpi_tag(tag)?);
        let (bytes, _) = self.world.process_at_rank(from).receive_vec_with_tag(tag);
        Ok(bytes)
    }

    /// A nonblocking send, a blocking receive, then the send's completion:
    /// `MPI_Sendrecv` needs the incoming length in advance.
    fn send_receive(&self, to: usize, bytes: &[u8], from: usize, tag: Tag) -> Result<Vec<u8>> {
        let (to, from, tag) = (self.check_rank(to)?, self.check_rank(from)?, mpi_tag(tag)?);
        let received = mpi::request::scope(|scope| {
            let sent = self
                .world
                .process_at_rank(to)
                .immediate_send_with_tag(scope, bytes, tag);
            let (received, _) = self.world.process_at_rank(from).receive_vec_with_tag(tag);
            sent.wait();
            received
        });
        self.count(bytes.len(), 1);
        Ok(received)
    }

    fn traffic(&self) -> Traffic {
        self.traffic.get()
    }
}
