//! [`WorkerSet`]: a set of workers as the bits of a `u64`, the key of the
//! coded shuffle's encoding tables (UberShuffle section 2.2: one table per
//! subset of the `n` workers).

use std::fmt;

/// A set of workers `0..64`: worker `w` is bit `w`.
///
/// Sets order by their bits, which is the order the planner visits tables
/// of one size in (the paper leaves that order arbitrary).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerSet(u64);

impl WorkerSet {
    /// Most workers a set (and so a shuffle) can have.
    pub const MAX_WORKERS: usize = 64;
    /// The empty set.
    pub const EMPTY: WorkerSet = WorkerSet(0);

    /// The set whose bits are `bits`.
    pub fn from_bits(bits: u64) -> WorkerSet {
        WorkerSet(bits)
    }

    /// Workers `0..n`.
    ///
    /// # Panics
    /// If `n > 64`.
    pub fn all(n: usize) -> WorkerSet {
        assert!(n <= Self::MAX_WORKERS, "at most 64 workers");
        WorkerSet(if n == 64 { u64::MAX } else { (1u64 << n) - 1 })
    }

    /// The set `{worker}`.
    ///
    /// # Panics
    /// If `worker >= 64`.
    pub fn single(worker: usize) -> WorkerSet {
        assert!(worker < Self::MAX_WORKERS, "worker {worker} >= 64");
        WorkerSet(1 << worker)
    }

    /// The bits.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// This set with `worker` added.
    ///
    /// # Panics
    /// If `worker >= 64`.
    pub fn with(self, worker: usize) -> WorkerSet {
        WorkerSet(self.0 | WorkerSet::single(worker).0)
    }

    /// This set without `worker`.
    pub fn without(self, worker: usize) -> WorkerSet {
        match worker < Self::MAX_WORKERS {
            true => WorkerSet(self.0 & !(1 << worker)),
            false => self,
        }
    }

    /// Whether `worker` is in the set.
    pub fn contains(self, worker: usize) -> bool {
        worker < Self::MAX_WORKERS && self.0 >> worker & 1 == 1
    }

    /// Number of workers.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every worker of `self` is in `other`.
    pub fn is_subset(self, other: WorkerSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// The number of members below `worker`: the column of `worker` in
    /// the encoding table of this set.
    pub fn position(self, worker: usize) -> usize {
        let below = match worker {
            0 => 0,
            w if w >= 64 => self.0,
            w => self.0 & ((1u64 << w) - 1),
        };
        below.count_ones() as usize
    }

    /// The members, ascending.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let w = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                w
            })
        })
    }
}

impl fmt::Debug for WorkerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<usize> for WorkerSet {
    /// # Panics
    /// If a worker is 64 or more.
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        iter.into_iter().fold(WorkerSet::EMPTY, WorkerSet::with)
    }
}

#[cfg(test)]
mod tests {
    use super::WorkerSet;

    #[test]
    fn members_positions_and_subsets() {
        let s: WorkerSet = [5, 0, 3].into_iter().collect();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 3, 5]);
        assert_eq!((s.position(0), s.position(3), s.position(5)), (0, 1, 2));
        assert_eq!(s.len(), 3);
        assert!(WorkerSet::single(3).is_subset(s));
        assert!(!WorkerSet::single(4).is_subset(s));
        assert_eq!(s.without(3).with(63).iter().collect::<Vec<_>>(), [0, 5, 63]);
        assert_eq!(WorkerSet::all(64).len(), 64);
        assert_eq!(format!("{s:?}"), "{0, 3, 5}");
    }
}
