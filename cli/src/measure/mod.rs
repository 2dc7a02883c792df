//! Measuring and rendering the paper's experiments on the user's data: the
//! compression ratios of the TOC paper's Figures 5 to 7 ([`ratios`]) and
//! the kernel table of its Figure 8 ([`kernels`]), and the sizes of TOC's
//! layout variants with the codec's speed ([`codec`]), and the default dataset file against the
//! input text compressed ([`file`]). They live in the
//! command line, not the library: they time, pick medians and print
//! tables, which a library user does not need; `tocpile ratio`,
//! `tocpile bench` and `tocpile demo` share them.

pub mod codec;
pub mod file;
pub mod kernels;
pub mod ratios;
