//! An entropy stage for a stream of small integers (a page's codes or row
//! lengths): static rANS with two interleaved states and a table-driven
//! decoder (`docs/FORMAT.md`, "Entropy-coded streams").
//!
//! The model ([`AnsModel`]) is learned once over many pages (a segment)
//! and stored once; each page's stream is coded alone against it, so a
//! page stays decodable given its model. A model gives a slot in `2^L`
//! (`L` at most [`MAX_PRECISION`]) to each of its symbols and to an
//! escape; a value outside the model is coded as the escape plus its
//! bits in a packed side array, so the decode table stays `2^L` entries
//! of 8 bytes (32 KiB at `L = 12`: an L1 data cache) however many
//! distinct values a segment holds.
//!
//! Decoding is one table lookup, a multiply and a shift per value, and a
//! byte read when a state drops below its lower bound; the two states
//! are independent, so their lookups overlap. The rANS construction is
//! J. Duda, "Asymmetric numeral systems: entropy coding combining speed
//! of Huffman coding with compression rate of arithmetic coding" (2013),
//! section 3 with byte-wise renormalisation, as in F. Giesen's
//! interleaved rANS ("Interleaved entropy coders", 2014).
//!
//! The stage is measured, not part of the dataset file format: see
//! `docs/archive/RESULTS-HISTORY.md` section 38 ("An entropy stage with a
//! table-driven decoder") for what it saves (0.4 to 8.8% of a default
//! file) and what it costs the loader's decode (9 to 23% more per row).

mod model;
mod rans;
#[cfg(test)]
mod tests;

pub use model::{AnsModel, LearnOptions, MAX_PRECISION};
