//! One integration test binary (links once), one module per area.

mod support;

mod codec;
mod sparse;
