//! CorgiPile's tuple shuffle (Algorithm 1, line "shuffle the buffer's
//! tuples") run a mini-batch at a time, so that the first mini-batch of
//! a buffer leaves as soon as its rows are drawn rather than after the
//! whole buffer is permuted.
//!
//! A whole buffer's Fisher-Yates shuffle made the trainer wait for it at
//! the start of every buffer: on a whole-file buffer of flights3m, 3M
//! swaps (12 MB of row order, each swap a cache miss) before the first
//! mini-batch, a tenth to a fifth of an epoch of training. Run front to
//! back (position `i` swapped with a uniform position of `i..n`), the
//! shuffle fixes the order's positions in the order mini-batches take
//! them, so each gather first draws only the positions it takes. The
//! permutation is uniform either way (the law is the same); the draws
//! come from the same stream, and they do not depend on how the steps are
//! split, so a seed still fixes the order.

use crate::prefetch::{prefetch, AHEAD};
use crate::rng::Rng;

/// A front-to-back Fisher-Yates shuffle of one slice, done in steps (see
/// the module docs).
#[derive(Debug)]
pub(crate) struct StepShuffle {
    rng: Rng,
    /// Positions before this are final.
    done: usize,
    /// Draws made: `ring[k % AHEAD]` is step `k`'s, made up to [`AHEAD`]
    /// steps early and prefetched (the positions do not depend on the
    /// items, so the cache misses of the swaps overlap).
    drawn: usize,
    ring: [usize; AHEAD],
}

impl StepShuffle {
    /// A shuffle drawing from `rng`, nothing done yet.
    pub(crate) fn new(rng: Rng) -> StepShuffle {
        StepShuffle {
            rng,
            done: 0,
            drawn: 0,
            ring: [0; AHEAD],
        }
    }

    /// Makes `items[..to]` final (all of `items` from `to >= len - 1`).
    /// `items` must be the same slice, unchanged but by these calls,
    /// every time.
    pub(crate) fn fix<T>(&mut self, items: &mut [T], to: usize) {
        let n = items.len();
        // Step `i` swaps position `i` with one of `i..n`: the last
        // position is final once every other is.
        let steps = n.saturating_sub(1);
        let to = to.min(steps);
        while self.done < to {
            let i = self.done;
            while self.drawn < steps && self.drawn < i + AHEAD {
                let k = self.drawn;
                let j = k + self.rng.below((n - k) as u64) as usize;
                prefetch(items, j);
                self.ring[k % AHEAD] = j;
                self.drawn += 1;
            }
            items.swap(i, self.ring[i % AHEAD]);
            self.done += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StepShuffle;
    use crate::rng::Rng;
    use proptest::prelude::*;

    /// The shuffle written plainly, in one go: the reference.
    fn reference(seed: u64, n: usize) -> Vec<usize> {
        let mut rng = Rng::new(seed);
        let mut items: Vec<usize> = (0..n).collect();
        for i in 0..n.saturating_sub(1) {
            let j = i + rng.below((n - i) as u64) as usize;
            items.swap(i, j);
        }
        items
    }

    proptest! {
        /// Any split into steps gives the reference's permutation.
        #[test]
        fn steps_give_the_one_go_permutation(
            seed in any::<u64>(),
            n in 0usize..300,
            cuts in prop::collection::vec(0usize..320, 0..12),
        ) {
            let mut items: Vec<usize> = (0..n).collect();
            let mut s = StepShuffle::new(Rng::new(seed));
            let mut cuts = cuts;
            cuts.sort_unstable();
            for c in cuts {
                s.fix(&mut items, c);
            }
            s.fix(&mut items, n);
            prop_assert_eq!(items, reference(seed, n));
        }
    }

    /// Every position is about as likely to hold every item (a uniform
    /// shuffle): 3 items, 6,000 shuffles, each of the 6 orders near 1,000.
    #[test]
    fn orders_are_uniform() {
        let mut counts = std::collections::HashMap::new();
        let mut rng = Rng::new(3);
        for _ in 0..6000 {
            let mut items = [0u8, 1, 2];
            let mut s = StepShuffle::new(Rng::new(rng.next_u64()));
            s.fix(&mut items, 1);
            s.fix(&mut items, 3);
            *counts.entry(items).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 6);
        assert!(
            counts.values().all(|&c| (850..1150).contains(&c)),
            "{counts:?}"
        );
    }
}
