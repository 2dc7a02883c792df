//! Beyond one machine: a [`Communicator`] for ranks that exchange
//! messages, and UberShuffle's coded shuffling of dataset blocks (Chung,
//! Lee, Pedarsani, Papailiopoulos and Ramchandran, "UberShuffle:
//! communication-efficient data shuffling for SGD via coding theory",
//! 2017), from the pure planner to a transport that moves real blocks.
//!
//! ```text
//! Assignment (loader's slices of the epoch's block permutation)  Caches (alpha q blocks each)
//!        \________________________  ________________________/
//!                                 \/
//!            demands: (item, worker, holders)          items = chunks of blocks   [chunks]
//!                                 |
//!      plan(Scheme): Uncoded | Coded (Tables::index, encode) | UberShuffle (+ carpool)
//!                                 |
//!            packets: XOR of parts, one part per worker                             [plan]
//!                                 |
//! ShuffleServer --Communicator (broadcast plan, multicast packets)--> ShuffleWorker::Decoder
//!                                                      CRC-32 per block, cache update [shuffle]
//! ```
//!
//! | paper | here |
//! |---|---|
//! | 2, system model: `q` points, `n` workers, caches of `floor(alpha q)` | `Assignment`, `Caches`, `capacity_for` |
//! | 2.1, uncoded shuffling (Theorem 1) | `Scheme::Uncoded` |
//! | 2.2, coded shuffling: indexing, encoding, decoding (Algorithms 1-3, Theorem 2) | `Tables::index`, `Tables::encode`, `Decoder`, `sim::coded_theory` |
//! | 3, UberShuffle: the DAG of columns and the greedy flow (Algorithm 4) | `Tables::carpool`, `Scheme::UberShuffle` |
//! | 3, Figure 5: packets per epoch | `sim::figure5` |
//! | 4.1, parameter server and compute nodes | `ShuffleServer`, `ShuffleWorker`, `loopback` |
//! | 4.2, efficient multicast (Theorem 4) | [`Communicator::multicast`] (default) |
//! | data-parallel SGD (CorgiPile 5.1's worker slices, gradients allreduced) | [`train_distributed`], [`train_lockstep`] |
//!
//! **Communicator.** Rank, size, an allreduce that sums in rank order (so
//! results are bit-identical whatever the timing), broadcast, barrier,
//! tagged point-to-point messages and a multicast to a group. The
//! in-process implementation, [`InProcess`], runs ranks as threads for
//! tests and the single-process path; the trait maps one-to-one onto MPI
//! (see [`Communicator`]); `Mpi` (cargo feature `mpi`) is that
//! implementation, for ranks started by `mpirun`.
//!
//! **What is public.** The data-parallel trainers ([`train_distributed`],
//! [`train_lockstep`]), their report and averaging, and the
//! [`Communicator`] with its implementations. The coded shuffle (planner,
//! packets, transport, simulation), which `tocpile shuffle` drives, is
//! not part of the API: its items are hidden and may change in any
//! release.
//!
//! **Where this departs from the paper.**
//! - Items are equal-size chunks of blocks, not unit-size points; a packet
//!   is as long as its longest chunk (`ChunkLayout` says why).
//! - The assignment is the CorgiPile loader's: contiguous slices of the
//!   epoch's block permutation (the paper draws a random equal partition:
//!   the same distribution), so a shuffle delivers exactly what each
//!   worker's loader reads.
//! - The cache update is the paper's unstated choice made explicit: keep
//!   the new blocks and a uniform random choice of the other cached
//!   blocks; it keeps Theorem 2's model (a non-assigned block is cached
//!   with probability `p`) and is drawn from the seed, so the server
//!   mirrors every cache without messages.
//! - The server broadcasts the plan (each packet's parts) instead of the
//!   cache matrix and assignment for every worker to index itself; its
//!   size is reported (`ShuffleReport::plan_bytes`).
//! - A table row goes only to the workers with a part in it (rows with
//!   empty slots skip the members of short columns), not to the whole
//!   subset.
//! - Tables of one size are visited in ascending order of their members'
//!   bits, and so are supersets (the paper leaves both orders arbitrary).
//! - The multicast is Theorem 4's relay over point-to-point messages, not
//!   MPI communicators per subset, so no communicator merging (4.3) is
//!   needed; shuffling is not pipelined with training (4.1).

mod assign;
mod chunks;
mod collective;
mod comm;
mod in_process;
mod loopback;
#[cfg(feature = "mpi")]
mod mpi_comm;
mod packet;
mod plan;
mod set;
mod shuffle;
#[doc(hidden)]
pub mod sim;
mod tables;
mod train;
mod wire;

pub use collective::Averaging;
pub use comm::Communicator;
pub use in_process::InProcess;
#[cfg(feature = "mpi")]
pub use mpi_comm::Mpi;
pub use train::{train_distributed, train_lockstep, train_on_batches, DistributedReport};

// Not part of the API (hidden): the coded shuffle's planner, packets and
// transport, used by the command line (`tocpile shuffle`), the benches and
// the tests; may change in any release.
#[doc(hidden)]
pub use assign::{capacity_for, next_cache, placement, Assignment, Caches};
#[doc(hidden)]
pub use chunks::{xor_into, ChunkLayout, Decoder};
#[doc(hidden)]
pub use comm::{Tag, Traffic, RESERVED_TAGS};
#[doc(hidden)]
pub use loopback::loopback;
#[doc(hidden)]
pub use packet::{Demand, Packet, Part};
#[doc(hidden)]
pub use plan::{plan, Plan, Scheme};
#[doc(hidden)]
pub use set::WorkerSet;
#[doc(hidden)]
pub use shuffle::{read_blocks, ShuffleOptions, ShuffleReport, ShuffleServer, ShuffleWorker};
#[doc(hidden)]
pub use tables::Tables;
#[doc(hidden)]
pub use train::sgd_epoch;
#[doc(hidden)]
pub use wire::{plan_from_bytes, plan_to_bytes, Session};
