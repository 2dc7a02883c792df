//! The Arrow input (feature `arrow`), in a test binary of its own: CI
//! builds and runs it in debug with `--features arrow` without building
//! the other tests again.

#![cfg(feature = "arrow")]

#[path = "ingest/helpers.rs"]
mod helpers;

use helpers::{bits, read_all, TempFile};

#[path = "ingest/arrow.rs"]
mod arrow;
