mod datasets;
mod errors;
mod golden;
mod paper_example;
pub mod roundtrip;
