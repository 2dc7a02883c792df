//! The shuffle planner's interface: what each worker needs ([`Demand`]),
//! the three schemes the UberShuffle paper compares ([`Scheme`]), and
//! their output, a list of [`Packet`]s a transport only has to move.
//!
//! Items are opaque numbers: unit-size data points in the paper's
//! simulation, equal-size chunks of dataset blocks in the transport
//! ([`super::chunks`]). A packet is the XOR of its parts' items, sent to
//! the parts' workers; each of them caches every other part's item and so
//! cancels it (paper Algorithm 3).

use std::collections::HashMap;

use super::packet::{check_demands, Demand, Packet, Part};
use super::set::WorkerSet;
use super::tables::Tables;
use crate::error::{Error, Result};

/// A shuffling scheme (UberShuffle sections 2.1, 2.2 and 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Unicast every missing item to the worker that needs it (2.1).
    Uncoded,
    /// Lee et al.'s coded shuffling: an encoding table per subset of
    /// workers, one XOR packet per row (2.2, Algorithms 1 and 2).
    Coded,
    /// Coded shuffling with the carpool flow that moves items from a
    /// table to a subset's table to fill its empty slots, searching up to
    /// `depth` levels of supersets (3, Algorithm 4; the paper's
    /// simulations use depth 2).
    UberShuffle {
        /// The paper's nu.
        depth: usize,
    },
}

impl Scheme {
    /// The depth of the paper's Figure 5.
    pub const PAPER_DEPTH: usize = 2;

    /// The three schemes of the paper, UberShuffle at the paper's depth.
    pub const ALL: [Scheme; 3] = [
        Scheme::Uncoded,
        Scheme::Coded,
        Scheme::UberShuffle {
            depth: Self::PAPER_DEPTH,
        },
    ];

    /// "uncoded", "coded" or "ubershuffle".
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Uncoded => "uncoded",
            Scheme::Coded => "coded",
            Scheme::UberShuffle { .. } => "ubershuffle",
        }
    }

    /// Looks a scheme up by [`Scheme::name`] (UberShuffle at the paper's
    /// depth), ignoring case.
    pub fn from_name(name: &str) -> Option<Scheme> {
        Self::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The packets of one shuffle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The scheme that made them.
    pub scheme: Scheme,
    /// Workers of the shuffle.
    pub n_workers: usize,
    /// The transmissions, in the order they are sent.
    pub packets: Vec<Packet>,
}

impl Plan {
    /// Number of transmissions (the paper's packet count).
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether nothing needs sending.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Items delivered: the parts of all packets.
    pub fn parts(&self) -> usize {
        self.packets.iter().map(|p| p.parts.len()).sum()
    }

    /// Checks that the plan serves `demands` exactly: every demand not
    /// already cached is one part of one packet, nothing else is sent, no
    /// packet has two parts for one worker, and every worker of a packet
    /// caches the other parts' items (so it can decode its own).
    ///
    /// # Errors
    /// [`Error::BadArgument`] naming the first violation.
    pub fn verify(&self, demands: &[Demand]) -> Result<()> {
        let bad = |expected| {
            Err(Error::BadArgument {
                what: "shuffle plan",
                expected,
            })
        };
        let mut holders: HashMap<usize, WorkerSet> = HashMap::new();
        let mut open: HashMap<Part, bool> = HashMap::new();
        for d in demands.iter().filter(|d| !d.holders.contains(d.worker)) {
            holders.insert(d.item, d.holders);
            open.insert(
                Part {
                    worker: d.worker,
                    item: d.item,
                },
                false,
            );
        }
        for packet in &self.packets {
            if packet.parts.is_empty() {
                return bad("no empty packet");
            }
            if packet.destinations().len() != packet.parts.len() {
                return bad("at most one part per worker in a packet");
            }
            for part in &packet.parts {
                match open.get_mut(part) {
                    Some(seen @ false) => *seen = true,
                    Some(true) => return bad("each demand sent once"),
                    None => return bad("only demanded items sent"),
                }
                let cancels = packet
                    .parts
                    .iter()
                    .filter(|o| o.worker != part.worker)
                    .all(|o| holders[&o.item].contains(part.worker));
                if !cancels {
                    return bad("every worker of a packet caching the other parts");
                }
            }
        }
        if open.values().any(|&seen| !seen) {
            return bad("every demand sent");
        }
        Ok(())
    }
}

/// Plans a shuffle of `n_workers` workers: the packets that deliver every
/// demand under `scheme`. Deterministic: the same demands in the same
/// order give the same packets.
///
/// # Errors
/// [`Error::BadArgument`] for no workers or more than
/// [`WorkerSet::MAX_WORKERS`], or a demand naming a worker (or holder)
/// not below `n_workers`.
pub fn plan(scheme: Scheme, n_workers: usize, demands: &[Demand]) -> Result<Plan> {
    check_demands(n_workers, demands)?;
    let packets = match scheme {
        Scheme::Uncoded => demands
            .iter()
            .filter(|d| !d.holders.contains(d.worker))
            .map(|d| Packet {
                parts: vec![Part {
                    worker: d.worker,
                    item: d.item,
                }],
            })
            .collect(),
        Scheme::Coded => Tables::index(n_workers, demands)?.encode(),
        Scheme::UberShuffle { depth } => {
            let mut tables = Tables::index(n_workers, demands)?;
            tables.carpool(depth);
            tables.encode()
        }
    };
    Ok(Plan {
        scheme,
        n_workers,
        packets,
    })
}
