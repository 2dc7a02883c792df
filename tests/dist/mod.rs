//! Beyond one machine: the UberShuffle planner (`tocpile::dist`).

mod planner;
