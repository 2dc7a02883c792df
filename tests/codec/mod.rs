mod check;
mod datasets;
mod errors;
mod errors_v2;
mod golden;
mod integrity;
mod paper_example;
pub mod roundtrip;
mod shared;
