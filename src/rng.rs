//! A small deterministic random number generator for shuffles and model
//! initialisation.
//!
//! Reproducibility is a feature here (one seed plus the epoch number fixes
//! every permutation, whatever the thread count), so the generator is ours
//! and frozen: SplitMix64 (Steele, Lea and Flood, "Fast splittable
//! pseudorandom number generators", 2014), which passes BigCrush and needs
//! eight bytes of state. Independent streams come from hashing the seed
//! with stream labels ([`Rng::stream`]) rather than from one sequence, so
//! the permutation of epoch 7 does not depend on how many numbers epochs
//! 0 to 6 drew.
//!
//! It is public so that programs around the library (the command line's
//! `--shuffle SEED`, experiments, benches) shuffle rows the same way
//! instead of each writing its own generator:
//!
//! ```
//! use tocpile::rng::Rng;
//!
//! // The one shuffle of rows before cutting mini-batches (TOC paper).
//! let order = Rng::new(42).permutation(5);
//! assert_eq!(order.len(), 5);
//! assert_eq!(order, Rng::new(42).permutation(5)); // the seed fixes it
//! let u = Rng::stream(42, &[1, 7]).unit();
//! assert!((0.0..1.0).contains(&u));
//! ```

/// SplitMix64: a seeded, frozen generator (the same seed gives the same
/// numbers on every platform and in every version).
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// An independent generator for the stream named by `labels` (for
    /// example `[PURPOSE, epoch, worker]`) under `seed`.
    pub fn stream(seed: u64, labels: &[u64]) -> Rng {
        let mut h = mix(seed ^ GOLDEN);
        for &l in labels {
            h = mix(h ^ mix(l.wrapping_add(GOLDEN)));
        }
        Rng::new(h)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// A uniform integer in `0..n`, without modulo bias (Lemire's
    /// multiply-and-reject).
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        // The threshold (`2^64 mod n`) is below `n`: a draw whose low half
        // is at least `n` is accepted without the division that computes
        // it (Lemire's "nearly divisionless" form; the same draws are
        // accepted as with the threshold always computed).
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// A uniform `f64` in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Shuffles `items` uniformly (Fisher-Yates).
    ///
    /// The swaps of a large slice land anywhere in it: each waited for a
    /// cache miss in turn (a row order of 3M entries, 12 MB, took 8 to 13
    /// ns an element). The random positions do not depend on the items,
    /// so they are drawn 16 swaps early
    /// and prefetched; the draws, hence the permutation, are the same.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        const AHEAD: usize = crate::prefetch::AHEAD;
        let n = items.len();
        if n < 1 << 16 {
            for i in (1..n).rev() {
                let j = self.below(i as u64 + 1) as usize;
                items.swap(i, j);
            }
            return;
        }
        // `ring[i % AHEAD]` holds the draw of the swap at `i`, made when
        // the swap at `i + AHEAD` was.
        let mut ring = [0usize; AHEAD];
        let mut drawn = n - 1;
        while drawn + AHEAD > n - 1 && drawn >= 1 {
            let j = self.below(drawn as u64 + 1) as usize;
            crate::prefetch::prefetch(items, j);
            ring[drawn % AHEAD] = j;
            drawn -= 1;
        }
        for i in (1..n).rev() {
            let j = ring[i % AHEAD];
            if drawn >= 1 {
                // The slot just read is the one of `drawn = i - AHEAD`.
                let k = self.below(drawn as u64 + 1) as usize;
                crate::prefetch::prefetch(items, k);
                ring[drawn % AHEAD] = k;
                drawn -= 1;
            }
            items.swap(i, j);
        }
    }

    /// A uniform random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        self.shuffle(&mut p);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut rng = Rng::new(7);
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            seen[rng.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn streams_differ_and_repeat() {
        let a: Vec<u64> = (0..4).map(|_| Rng::stream(1, &[2, 3]).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::stream(1, &[2, 3]).next_u64(),
            Rng::stream(1, &[3, 2]).next_u64()
        );
    }

    #[test]
    fn permutation_is_a_permutation() {
        let mut p = Rng::new(3).permutation(1000);
        assert_ne!(p, (0..1000).collect::<Vec<_>>());
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<_>>());
    }

    /// The prefetching shuffle of a large slice draws as Fisher-Yates
    /// does: the same permutation for a seed.
    #[test]
    fn a_large_shuffle_is_fisher_yates() {
        for n in [65_536usize, 65_537, 100_003] {
            let mut fast: Vec<u32> = (0..n as u32).collect();
            Rng::new(n as u64).shuffle(&mut fast);
            let mut plain: Vec<u32> = (0..n as u32).collect();
            let mut rng = Rng::new(n as u64);
            for i in (1..n).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                plain.swap(i, j);
            }
            assert_eq!(fast, plain, "{n} items");
        }
    }

    #[test]
    fn unit_has_the_right_mean() {
        let mut rng = Rng::new(11);
        let n = 20_000;
        let u: f64 = (0..n).map(|_| rng.unit()).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.01, "{u}");
    }
}
