//! The planner's vocabulary: what each worker needs ([`Demand`]) and what
//! a plan sends ([`Packet`]s of [`Part`]s). Items are opaque numbers:
//! unit-size data points in the paper's simulation, equal-size chunks of
//! dataset blocks in the transport ([`super::chunks`]).

use super::set::WorkerSet;
use crate::error::{Error, Result};

/// Worker `worker` needs `item` for the next epoch, and `holders` are the
/// workers whose cache holds it now.
///
/// A demand whose worker is among the holders needs no transmission; the
/// planner skips it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    /// The item (a data point, or a chunk of a block).
    pub item: usize,
    /// The worker that needs it.
    pub worker: usize,
    /// The workers that cache it.
    pub holders: WorkerSet,
}

/// One summand of a packet: `item`, destined for `worker`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Part {
    /// The worker that decodes this item from the packet.
    pub worker: usize,
    /// The item.
    pub item: usize,
}

/// One transmission: the XOR of its parts' items, sent to the parts'
/// workers (at most one part per worker). An uncoded packet has one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The parts, by ascending worker.
    pub parts: Vec<Part>,
}

impl Packet {
    /// The workers the packet goes to.
    pub fn destinations(&self) -> WorkerSet {
        self.parts.iter().map(|p| p.worker).collect()
    }

    /// The part `worker` decodes, if the packet is for it.
    pub fn part_for(&self, worker: usize) -> Option<Part> {
        self.parts.iter().copied().find(|p| p.worker == worker)
    }
}

/// Checks that every demand names workers below `n_workers` (at most
/// [`WorkerSet::MAX_WORKERS`]).
pub(super) fn check_demands(n_workers: usize, demands: &[Demand]) -> Result<()> {
    if n_workers == 0 || n_workers > WorkerSet::MAX_WORKERS {
        return Err(Error::BadArgument {
            what: "n_workers",
            expected: "between 1 and 64",
        });
    }
    let all = WorkerSet::all(n_workers);
    if demands
        .iter()
        .any(|d| d.worker >= n_workers || !d.holders.is_subset(all))
    {
        return Err(Error::BadArgument {
            what: "demand",
            expected: "workers and holders below n_workers",
        });
    }
    Ok(())
}
