//! Beyond one machine: the communicator and the UberShuffle planner
//! (`tocpile::dist`).

mod comm;
mod planner;
