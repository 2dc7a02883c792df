//! Beyond one machine: UberShuffle's coded shuffling of dataset blocks
//! (Chung, Lee, Pedarsani, Papailiopoulos and Ramchandran, "UberShuffle:
//! communication-efficient data shuffling for SGD via coding theory",
//! 2017), starting with the pure planner.
//!
//! | paper | here |
//! |---|---|
//! | 2, system model: `q` points, `n` workers, caches of `floor(alpha q)` | [`Assignment`], [`Caches`], [`capacity_for`] |
//! | 2.1, uncoded shuffling (Theorem 1) | [`Scheme::Uncoded`] |
//! | 2.2, coded shuffling: indexing, encoding, decoding (Algorithms 1-3, Theorem 2) | [`Tables::index`], [`Tables::encode`], [`Decoder`], [`sim::coded_theory`] |
//! | 3, UberShuffle: the DAG of columns and the greedy flow (Algorithm 4) | [`Tables::carpool`], [`Scheme::UberShuffle`] |
//! | 3, Figure 5: packets per epoch | [`sim::figure5`] |

mod assign;
mod chunks;
mod plan;
mod set;
pub mod sim;
mod tables;

pub use assign::{capacity_for, next_cache, placement, Assignment, Caches};
pub use chunks::{xor_into, ChunkLayout, Decoder};
pub use plan::{plan, Demand, Packet, Part, Plan, Scheme};
pub use set::WorkerSet;
pub use tables::Tables;
