//! Not part of the API (hidden): used by the workspace's front ends and
//! tests; may change in any release.
//!
//! The packet-count simulation of UberShuffle's Figure 5: how many
//! transmissions uncoded shuffling, coded shuffling and UberShuffle need
//! for one epoch, against the closed forms of Theorems 1 and 2.
//!
//! Each run places the caches for a random assignment ([`Caches::place`]),
//! draws the next epoch's assignment, and counts the packets of each
//! scheme with the planner the transport uses ([`Tables`]). The paper does
//! not give its random draws, so counts are averaged over seeds.

use rayon::prelude::*;

use super::assign::{capacity_for, Assignment, Caches};
use super::tables::Tables;
use crate::error::{Error, Result};

/// The storage fractions of the simulation table. The paper's text quotes
/// points at 0.325 and 0.55; both lie on this grid of step 0.075 (its
/// figure's own x values are not in the text).
pub const FIGURE5_ALPHAS: [f64; 12] = [
    0.1, 0.175, 0.25, 0.325, 0.4, 0.475, 0.55, 0.625, 0.7, 0.775, 0.85, 0.925,
];

/// Packets of one epoch's shuffle under each scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketCounts {
    /// Unicasts of uncoded shuffling.
    pub uncoded: f64,
    /// Broadcasts of coded shuffling (Lee et al.).
    pub coded: f64,
    /// Broadcasts of UberShuffle.
    pub ubershuffle: f64,
}

/// One point of the simulation: the mean counts over the seeds and the
/// theory.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPoint {
    /// Workers (the paper's n).
    pub n_workers: usize,
    /// Blocks (data points; the paper's q).
    pub n_blocks: usize,
    /// Storage fraction (the paper's alpha): each cache holds
    /// `floor(alpha q)` blocks.
    pub alpha: f64,
    /// Seeds averaged over.
    pub seeds: usize,
    /// Mean packet counts.
    pub mean: PacketCounts,
    /// Theorem 1: `q (1 - s/q)` unicasts.
    pub uncoded_theory: f64,
    /// Theorem 2: coded shuffling's broadcasts as `q` grows without
    /// bound.
    pub coded_theory: f64,
}

impl SimPoint {
    /// Coded shuffling's packets over UberShuffle's (the paper's quoted
    /// "reduction factor").
    pub fn coded_over_uber(&self) -> f64 {
        self.mean.coded / self.mean.ubershuffle
    }

    /// Uncoded shuffling's packets over UberShuffle's.
    pub fn uncoded_over_uber(&self) -> f64 {
        self.mean.uncoded / self.mean.ubershuffle
    }
}

/// Counts the packets of one epoch: caches placed for the assignment of
/// epoch 0, shuffled into epoch 1, all drawn from `seed`. UberShuffle
/// searches `depth` levels of supersets.
///
/// # Errors
/// [`Error::BadArgument`] for no workers or more than 64, or an `alpha`
/// whose cache cannot hold a worker's share (`alpha < 1/n`) or exceeds 1.
pub fn simulate(
    n_workers: usize,
    n_blocks: usize,
    alpha: f64,
    depth: usize,
    seed: u64,
) -> Result<PacketCounts> {
    let current = Assignment::epoch(seed, 0, n_blocks, n_workers)?;
    let caches = Caches::place(&current, capacity_for(alpha, n_blocks), seed)?;
    let next = Assignment::epoch(seed, 1, n_blocks, n_workers)?;
    let demands = caches.demands(&next);
    let mut tables = Tables::index(n_workers, &demands)?;
    let coded = tables.packet_count();
    tables.carpool(depth);
    Ok(PacketCounts {
        uncoded: demands.len() as f64,
        coded: coded as f64,
        ubershuffle: tables.packet_count() as f64,
    })
}

/// The simulation table: every `n_blocks` by every `alpha`, the counts
/// averaged over `seeds` (seeds 0, 1, ...), the runs in parallel.
///
/// # Errors
/// As [`simulate`]; [`Error::BadArgument`] for no seeds.
pub fn figure5(
    n_workers: usize,
    n_blocks: &[usize],
    alphas: &[f64],
    seeds: usize,
    depth: usize,
) -> Result<Vec<SimPoint>> {
    if seeds == 0 {
        return Err(Error::BadArgument {
            what: "seeds",
            expected: "at least 1",
        });
    }
    // Every (q, alpha, seed) run is independent: in parallel (rayon).
    let runs: Vec<(usize, f64, u64)> = n_blocks
        .iter()
        .flat_map(|&q| {
            alphas
                .iter()
                .flat_map(move |&a| (0..seeds as u64).map(move |s| (q, a, s)))
        })
        .collect();
    let counts: Vec<PacketCounts> = crate::parallel::install(|| {
        runs.par_iter()
            .map(|&(q, alpha, seed)| simulate(n_workers, q, alpha, depth, seed))
            .collect::<Result<_>>()
    })?;
    let points = runs
        .chunks(seeds)
        .zip(counts.chunks(seeds))
        .map(|(run, counts)| {
            let (q, alpha, _) = run[0];
            let k = seeds as f64;
            let mean = |f: fn(&PacketCounts) -> f64| counts.iter().map(f).sum::<f64>() / k;
            let s = capacity_for(alpha, q) as f64;
            SimPoint {
                n_workers,
                n_blocks: q,
                alpha,
                seeds,
                mean: PacketCounts {
                    uncoded: mean(|c| c.uncoded),
                    coded: mean(|c| c.coded),
                    ubershuffle: mean(|c| c.ubershuffle),
                },
                uncoded_theory: q as f64 - s,
                coded_theory: coded_theory(n_workers, q, s),
            }
        })
        .collect();
    Ok(points)
}

/// Theorem 2 (Lee et al.): coded shuffling's broadcasts per epoch as `q`
/// grows, for `n` workers each caching `s` of `q` points:
/// `sum over i = 2..n of C(n, i) (q/n) ((i-1)/n) p^(i-2) (1-p)^(n-i+1)`
/// with `p = (s - q/n) / (q - q/n)`.
pub fn coded_theory(n_workers: usize, n_blocks: usize, capacity: f64) -> f64 {
    let (n, q) = (n_workers as f64, n_blocks as f64);
    if n_workers < 2 {
        return 0.0;
    }
    let p = (capacity - q / n) / (q - q / n);
    let mut binomial = n * (n - 1.0) / 2.0; // C(n, 2)
    let mut total = 0.0;
    for i in 2..=n_workers {
        let i_f = i as f64;
        total += binomial
            * (q / n)
            * ((i_f - 1.0) / n)
            * p.powi(i as i32 - 2)
            * (1.0 - p).powi((n_workers - i + 1) as i32);
        binomial *= (n - i_f) / (i_f + 1.0);
    }
    total
}
