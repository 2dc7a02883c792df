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

/// SplitMix64.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
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
    pub(crate) fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// An independent generator for the stream named by `labels` (for
    /// example `[PURPOSE, epoch, worker]`) under `seed`.
    pub(crate) fn stream(seed: u64, labels: &[u64]) -> Rng {
        let mut h = mix(seed ^ GOLDEN);
        for &l in labels {
            h = mix(h ^ mix(l.wrapping_add(GOLDEN)));
        }
        Rng::new(h)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// A uniform integer in `0..n` (`n > 0`), without modulo bias
    /// (Lemire's multiply-and-reject).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform `f64` in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal sample (Box-Muller).
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: ln is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Shuffles `items` uniformly (Fisher-Yates).
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// A uniform random permutation of `0..n`.
    pub(crate) fn permutation(&mut self, n: usize) -> Vec<usize> {
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

    #[test]
    fn unit_and_normal_have_the_right_moments() {
        let mut rng = Rng::new(11);
        let n = 20_000;
        let u: f64 = (0..n).map(|_| rng.unit()).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.01, "{u}");
        let xs: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }
}
