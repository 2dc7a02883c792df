//! The order in which an epoch reads blocks and hands their tuples to
//! SGD, for the three strategies of the CorgiPile paper's in-database
//! comparison (sections 3.1, 3.2, 4.1 and 7.3):
//!
//! | [`Shuffle`] | blocks | tuples |
//! |---|---|---|
//! | `CorgiPile` | a random permutation each epoch, `buffer` blocks at a time | shuffled within each buffer |
//! | `None` | table order | table order |
//! | `Once` | table order, over a copy made by `ORDER BY random()` first | table order |
//!
//! The permutations are the library's: the block order of epoch `e` is
//! the loader's (`Rng::stream(seed, [1, e])`), so one seed fixes every
//! epoch whatever the table.

use tocpile_lib::rng::Rng;

use crate::failure::{Failure, Result};

/// A shuffling strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shuffle {
    /// Block permutation, buffer of blocks, tuple shuffle in the buffer.
    CorgiPile,
    /// Table order.
    None,
    /// Table order over a copy shuffled once, up front.
    Once,
}

impl Shuffle {
    /// The strategy named `name` (`corgipile`, `none`, `once`).
    pub fn from_name(name: &str) -> Result<Shuffle> {
        match name.to_ascii_lowercase().as_str() {
            "corgipile" => Ok(Shuffle::CorgiPile),
            "none" => Ok(Shuffle::None),
            "once" => Ok(Shuffle::Once),
            _ => Err(Failure::argument(format!(
                "shuffle \"{name}\" is not one of corgipile, none, once"
            ))),
        }
    }

    /// The short name.
    pub fn name(self) -> &'static str {
        match self {
            Shuffle::CorgiPile => "corgipile",
            Shuffle::None => "none",
            Shuffle::Once => "once",
        }
    }
}

/// Stream label of the block order (the library loader's).
const STREAM_BLOCKS: u64 = 1;
/// Stream label of the tuple shuffle of a buffer.
const STREAM_TUPLES: u64 = 0x5047_5455_504c_4553; // "PGTUPLES"

/// The blocks of epoch `epoch` in reading order.
pub fn block_order(shuffle: Shuffle, n_blocks: usize, seed: u64, epoch: u64) -> Vec<usize> {
    match shuffle {
        Shuffle::CorgiPile => Rng::stream(seed, &[STREAM_BLOCKS, epoch]).permutation(n_blocks),
        Shuffle::None | Shuffle::Once => (0..n_blocks).collect(),
    }
}

/// Blocks a buffer holds: a fraction of the blocks, at least one.
pub fn buffer_blocks(fraction: f64, n_blocks: usize) -> usize {
    ((fraction * n_blocks as f64).ceil() as usize).clamp(1, n_blocks.max(1))
}

/// The generator of the tuple shuffle of buffer `buffer` of epoch
/// `epoch`.
pub fn tuple_rng(seed: u64, epoch: u64, buffer: u64) -> Rng {
    Rng::stream(seed, &[STREAM_TUPLES, epoch, buffer])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corgipile_permutes_blocks_and_repeats_with_the_seed() {
        let a = block_order(Shuffle::CorgiPile, 100, 7, 0);
        assert_eq!(a, block_order(Shuffle::CorgiPile, 100, 7, 0));
        assert_ne!(a, block_order(Shuffle::CorgiPile, 100, 7, 1));
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(block_order(Shuffle::None, 5, 7, 3), [0, 1, 2, 3, 4]);
        assert_eq!(block_order(Shuffle::Once, 5, 7, 3), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_buffer_holds_a_fraction_of_the_blocks_at_least_one() {
        assert_eq!(buffer_blocks(0.1, 3800), 380);
        assert_eq!(buffer_blocks(0.1, 5), 1);
        assert_eq!(buffer_blocks(1.0, 5), 5);
        assert_eq!(buffer_blocks(0.1, 0), 1);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for s in [Shuffle::CorgiPile, Shuffle::None, Shuffle::Once] {
            assert_eq!(Shuffle::from_name(s.name()).unwrap(), s);
        }
        assert!(Shuffle::from_name("epoch").is_err());
    }
}
