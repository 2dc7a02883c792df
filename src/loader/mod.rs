//! The CorgiPile loader (work in progress).
