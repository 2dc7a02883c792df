//! The streaming readers of `tocpile::ingest`: round trips of random
//! LIBSVM and CSV text (plain and gzip, random chunk sizes), one test per
//! error, and the real datasets read in chunks against `support::load`.

mod csv;
mod errors;
mod helpers;
mod libsvm;
mod missing;

pub use helpers::{bits, gzip_bytes, read_all, TempFile};
