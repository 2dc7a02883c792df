//! Beyond one machine: the communicator, the UberShuffle planner and the
//! shuffle transport (`tocpile::dist`).

mod comm;
mod data_parallel;
mod planner;
mod transport;
