//! Beyond one machine: the communicator, the UberShuffle planner and the
//! shuffle transport (`tocpile::dist`).

mod comm;
mod planner;
mod transport;
