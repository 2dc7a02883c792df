//! Who trains on which blocks each epoch ([`Assignment`]) and what each
//! worker caches ([`Caches`]) under the storage constraint (UberShuffle
//! section 2: `q` blocks, `n` workers, each caching at most
//! `s = floor(alpha q)` of them).
//!
//! The assignment of an epoch is the loader's: worker `i` of `n` takes the
//! `i`-th of `n` contiguous slices of the epoch's block permutation
//! (CorgiPile section 5.1, [`crate::loader::Loader::block_order`]), so a
//! shuffle delivers exactly the blocks the workers' loaders will read.
//!
//! A cache always holds its worker's current blocks; the rest of its room
//! holds other blocks chosen at random. That is the model of Lee et al.'s
//! analysis (paper Theorem 2: a block outside a worker's assignment is
//! cached there with probability `p = (s - q/n) / (q - q/n)`), and the
//! update keeps it: after a shuffle a worker keeps its new blocks and a
//! uniform random choice of its other cached blocks, as many as fit.
//! Every choice comes from the seed, the epoch and the worker, so the
//! server mirrors each worker's cache without being told.

use super::packet::Demand;
use super::set::WorkerSet;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// The loader's stream for the block permutation (src/loader, pinned by
/// a test against `Loader::block_order`).
const STREAM_BLOCKS: u64 = 1;
/// The stream of cache eviction after the shuffle of an epoch.
const STREAM_CACHE: u64 = 20;
/// The stream of the initial cache placement.
const STREAM_PLACE: u64 = 21;

/// The blocks each worker trains on in one epoch: a partition of the
/// blocks into contiguous slices of a permutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Each worker's blocks, in the order it visits them.
    blocks: Vec<Vec<usize>>,
    /// Each block's worker.
    owner: Vec<usize>,
}

impl Assignment {
    /// Worker `i` of `n_workers` takes `order[i q / n .. (i + 1) q / n]`.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if `n_workers` is 0 or above 64, or `order`
    /// is not a permutation of `0..order.len()`.
    pub fn from_order(order: &[usize], n_workers: usize) -> Result<Assignment> {
        if n_workers == 0 || n_workers > WorkerSet::MAX_WORKERS {
            return Err(Error::BadArgument {
                what: "n_workers",
                expected: "between 1 and 64",
            });
        }
        let q = order.len();
        let mut owner = vec![usize::MAX; q];
        let mut blocks = Vec::with_capacity(n_workers);
        for w in 0..n_workers {
            let slice = &order[w * q / n_workers..(w + 1) * q / n_workers];
            for &b in slice {
                match owner.get_mut(b) {
                    Some(o) if *o == usize::MAX => *o = w,
                    _ => {
                        return Err(Error::BadArgument {
                            what: "block order",
                            expected: "a permutation of the block numbers",
                        })
                    }
                }
            }
            blocks.push(slice.to_vec());
        }
        Ok(Assignment { blocks, owner })
    }

    /// The assignment of `epoch`: the slices of the permutation the
    /// CorgiPile loader draws for `seed` and `epoch`.
    ///
    /// # Errors
    /// As [`Assignment::from_order`].
    pub fn epoch(seed: u64, epoch: u64, n_blocks: usize, n_workers: usize) -> Result<Assignment> {
        let order = Rng::stream(seed, &[STREAM_BLOCKS, epoch]).permutation(n_blocks);
        Assignment::from_order(&order, n_workers)
    }

    /// Number of workers.
    pub fn n_workers(&self) -> usize {
        self.blocks.len()
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.owner.len()
    }

    /// The blocks of `worker`, in visiting order.
    ///
    /// # Panics
    /// If `worker >= n_workers()`.
    pub fn blocks(&self, worker: usize) -> &[usize] {
        &self.blocks[worker]
    }

    /// The worker of `block`.
    ///
    /// # Panics
    /// If `block >= n_blocks()`.
    pub fn owner(&self, block: usize) -> usize {
        self.owner[block]
    }

    /// The most blocks a worker has.
    pub fn largest_share(&self) -> usize {
        self.blocks.iter().map(Vec::len).max().unwrap_or(0)
    }
}

/// The cache capacity `s = floor(alpha q)` of the paper, in blocks.
pub fn capacity_for(alpha: f64, n_blocks: usize) -> usize {
    (alpha * n_blocks as f64).floor().max(0.0) as usize
}

/// Every worker's cache, as the parameter server tracks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caches {
    capacity: usize,
    /// Each worker's cached blocks, ascending.
    members: Vec<Vec<usize>>,
    /// Each block's holders.
    holders: Vec<WorkerSet>,
}

impl Caches {
    /// The initial placement: each worker caches its blocks of `current`
    /// and a uniform random choice of the others, `capacity` in all.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if `capacity` is below a worker's share of
    /// `current` or above the number of blocks.
    pub fn place(current: &Assignment, capacity: usize, seed: u64) -> Result<Caches> {
        check_capacity(current, capacity)?;
        let q = current.n_blocks();
        let sets = (0..current.n_workers())
            .map(|w| placement(current, capacity, seed, w))
            .collect();
        Caches::from_sets(q, capacity, sets)
    }

    /// Caches given as sets of blocks (the paper's examples, tests).
    ///
    /// # Errors
    /// [`Error::BadArgument`] for more than 64 workers, a block number not
    /// below `n_blocks`, a repeated block, or a cache above `capacity`.
    pub fn from_sets(n_blocks: usize, capacity: usize, sets: Vec<Vec<usize>>) -> Result<Caches> {
        if sets.len() > WorkerSet::MAX_WORKERS {
            return Err(Error::BadArgument {
                what: "caches",
                expected: "at most 64 workers",
            });
        }
        let mut holders = vec![WorkerSet::EMPTY; n_blocks];
        let mut members = Vec::with_capacity(sets.len());
        for (w, mut set) in sets.into_iter().enumerate() {
            set.sort_unstable();
            let repeated = set.windows(2).any(|p| p[0] == p[1]);
            if repeated || set.len() > capacity || set.last().is_some_and(|&b| b >= n_blocks) {
                return Err(Error::BadArgument {
                    what: "cache",
                    expected: "distinct block numbers below the block count, at most capacity",
                });
            }
            for &b in &set {
                holders[b] = holders[b].with(w);
            }
            members.push(set);
        }
        Ok(Caches {
            capacity,
            members,
            holders,
        })
    }

    /// Blocks each cache may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of workers.
    pub fn n_workers(&self) -> usize {
        self.members.len()
    }

    /// The blocks `worker` caches, ascending.
    ///
    /// # Panics
    /// If `worker >= n_workers()`.
    pub fn blocks(&self, worker: usize) -> &[usize] {
        &self.members[worker]
    }

    /// The workers caching `block`.
    ///
    /// # Panics
    /// If `block` is not below the block count.
    pub fn holders(&self, block: usize) -> WorkerSet {
        self.holders[block]
    }

    /// What `next` needs that the caches miss, one demand per block of
    /// `next` in ascending block order (the indexing order of the paper's
    /// Algorithm 1); blocks already cached at their worker are left out.
    ///
    /// # Panics
    /// If `next` has another block count or more workers.
    pub fn demands(&self, next: &Assignment) -> Vec<Demand> {
        assert_eq!(next.n_blocks(), self.holders.len(), "block counts differ");
        assert!(next.n_workers() <= self.n_workers(), "more workers");
        (0..next.n_blocks())
            .filter(|&b| !self.holders[b].contains(next.owner(b)))
            .map(|b| Demand {
                item: b,
                worker: next.owner(b),
                holders: self.holders[b],
            })
            .collect()
    }

    /// The caches after the shuffle into `next` (epoch `epoch`): each
    /// worker keeps its blocks of `next` and, as [`next_cache`] picks,
    /// some of its other blocks.
    ///
    /// # Errors
    /// As [`Caches::place`].
    pub fn update(&mut self, next: &Assignment, seed: u64, epoch: u64) -> Result<()> {
        check_capacity(next, self.capacity)?;
        let sets = (0..self.n_workers())
            .map(|w| {
                next_cache(
                    &self.members[w],
                    next.blocks(w),
                    self.capacity,
                    seed,
                    epoch,
                    w,
                )
            })
            .collect();
        *self = Caches::from_sets(self.holders.len(), self.capacity, sets)?;
        Ok(())
    }
}

/// The initial cache of `worker` ([`Caches::place`]), ascending: what
/// the worker computes for itself.
///
/// # Panics
/// If `worker` is out of range or `capacity` below its share.
pub fn placement(current: &Assignment, capacity: usize, seed: u64, worker: usize) -> Vec<usize> {
    let own = current.blocks(worker);
    let mut others: Vec<usize> = (0..current.n_blocks())
        .filter(|&b| current.owner(b) != worker)
        .collect();
    let extra = capacity - own.len();
    choose(
        &mut others,
        extra,
        Rng::stream(seed, &[STREAM_PLACE, worker as u64]),
    );
    others.truncate(extra);
    others.extend_from_slice(own);
    others.sort_unstable();
    others
}

/// A worker's cache after the shuffle of `epoch`: its `assigned` blocks
/// plus a uniform random choice of its other `current` blocks, `capacity`
/// in all (fewer if it held fewer). Ascending. The server and the worker
/// call this with the same arguments and get the same cache.
pub fn next_cache(
    current: &[usize],
    assigned: &[usize],
    capacity: usize,
    seed: u64,
    epoch: u64,
    worker: usize,
) -> Vec<usize> {
    let mut assigned_sorted = assigned.to_vec();
    assigned_sorted.sort_unstable();
    let mut others: Vec<usize> = current
        .iter()
        .copied()
        .filter(|b| assigned_sorted.binary_search(b).is_err())
        .collect();
    others.sort_unstable();
    let room = capacity.saturating_sub(assigned.len()).min(others.len());
    choose(
        &mut others,
        room,
        Rng::stream(seed, &[STREAM_CACHE, epoch, worker as u64]),
    );
    others.truncate(room);
    others.extend_from_slice(&assigned_sorted);
    others.sort_unstable();
    others
}

/// Moves a uniform random choice of `k` items to the front (a partial
/// Fisher-Yates shuffle).
fn choose(items: &mut [usize], k: usize, mut rng: Rng) {
    for i in 0..k.min(items.len()) {
        let j = i + rng.below((items.len() - i) as u64) as usize;
        items.swap(i, j);
    }
}

fn check_capacity(assignment: &Assignment, capacity: usize) -> Result<()> {
    if capacity < assignment.largest_share() || capacity > assignment.n_blocks() {
        return Err(Error::BadArgument {
            what: "cache capacity",
            expected:
                "at least a worker's share of the blocks (alpha >= 1/n) and at most all blocks",
        });
    }
    Ok(())
}
