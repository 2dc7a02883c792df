//! Beyond one machine: a [`Communicator`] for ranks that exchange
//! messages (with [`InProcess`], ranks as threads), and UberShuffle's
//! coded shuffling of dataset blocks (Chung, Lee, Pedarsani,
//! Papailiopoulos and Ramchandran, "UberShuffle: communication-efficient
//! data shuffling for SGD via coding theory", 2017), starting with the
//! pure planner.
//!
//! | paper | here |
//! |---|---|
//! | 2, system model: `q` points, `n` workers, caches of `floor(alpha q)` | [`Assignment`], [`Caches`], [`capacity_for`] |
//! | 2.1, uncoded shuffling (Theorem 1) | [`Scheme::Uncoded`] |
//! | 2.2, coded shuffling: indexing, encoding, decoding (Algorithms 1-3, Theorem 2) | [`Tables::index`], [`Tables::encode`], [`Decoder`], [`sim::coded_theory`] |
//! | 3, UberShuffle: the DAG of columns and the greedy flow (Algorithm 4) | [`Tables::carpool`], [`Scheme::UberShuffle`] |
//! | 3, Figure 5: packets per epoch | [`sim::figure5`] |
//! | 4.2, efficient multicast (Theorem 4) | [`Communicator::multicast`] (default) |

mod assign;
mod chunks;
mod comm;
mod in_process;
mod plan;
mod set;
pub mod sim;
mod tables;

pub use assign::{capacity_for, next_cache, placement, Assignment, Caches};
pub use chunks::{xor_into, ChunkLayout, Decoder};
pub use comm::{Communicator, Tag, Traffic, RESERVED_TAGS};
pub use in_process::InProcess;
pub use plan::{plan, Demand, Packet, Part, Plan, Scheme};
pub use set::WorkerSet;
pub use tables::Tables;
