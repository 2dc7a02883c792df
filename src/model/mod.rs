//! Models trained by mini-batch SGD on encoded batches (work in progress).
