//! One integration test binary (links once), one module per area.

mod strategy;
mod support;

mod limits;

mod architecture;
mod atomic;
mod codec;
mod dataset;
mod dist;
mod formats;
mod ingest;
mod kernels;
mod loader;
mod model;
mod readme;
mod realdata;
mod sparse;
mod train;
