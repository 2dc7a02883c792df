//! The formats the TOC paper compares against (section 5), behind one
//! interface with TOC itself, so that benchmarks, the compression study and
//! the trainer compare formats on identical batches.
//!
//! | [`FormatKind`] | name | what is stored | kernels |
//! |---|---|---|---|
//! | `Den` | DEN | dense `f64` rows | dense loops |
//! | `Csr` | CSR | `u32` row offsets, `u32` columns, `f64` values | sparse loops |
//! | `Cvi` | CVI | CSR with values replaced by ids into a dictionary | sparse loops, value lookup |
//! | `Dvi` | DVI | dense rows of value ids into a dictionary | dense loops, value lookup |
//! | `Snappy` | snappy | snappy over the DEN bytes | decompress, then dense |
//! | `Gzip` | gzip | gzip (level 6) over the DEN bytes | decompress, then dense |
//! | `Lz4` | lz4 | LZ4 block over the DEN bytes | decompress, then dense |
//! | `TocSparse`, `TocLogical`, `TocFull` | TOC_SPARSE, TOC_LOGICAL, TOC_FULL | [`TocBatch`](crate::TocBatch) at each [`Level`] | on the decode tree |
//!
//! A batch in any of these formats is a [`Batch`]: a closed enum with one
//! variant per format family and the kernels as inherent methods, so the
//! trainer's hot loop dispatches with a `match`, not through a vtable, and
//! every format is known at compile time.
//!
//! The general-purpose compressors decompress before every kernel, as a
//! user of them would. Encoded sizes count every byte a page of that format
//! needs (array lengths included), so ratios compare like with like: they
//! are the exact length of the page's bytes ([`Batch::write_bytes`]),
//! which [`FormatKind::load`] validates and loads back. The page layouts
//! are specified in `docs/FORMAT.md` ("Comparison-format pages").

mod batch;
mod bytes;
mod coded;
mod dense;
mod general;
mod ids;
mod pool;
mod sparse;
mod toc;

pub use batch::Batch;
pub use coded::{CodedRows, Pair, PairTable};
// Not part of the API (hidden): the dense format's size and the pool of
// decode trees, used by the command line's measurements and the tests;
// may change in any release.
#[doc(hidden)]
pub use dense::den_len;
pub use dense::{Den, Dvi};
pub use general::Compressed;
pub(crate) use ids::index_values;
pub(crate) use pool::{give as give_tree, take as take_tree, with_scratch as with_build_scratch};
#[doc(hidden)]
pub use pool::{pooled_bytes, release_pooled};
pub use sparse::{Csr, Cvi};
pub use toc::TocPage;

use crate::codec::{EncodeOptions, Level};
use crate::error::Result;
use crate::sparse::SparseBatch;

/// Every format tocpile can compare, by the names the paper uses.
///
/// Each format has a fixed code ([`FormatKind::code`]), the byte a
/// dataset file's footer stores: codes are never reused or renumbered,
/// whatever the order of [`FormatKind::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[repr(u8)]
pub enum FormatKind {
    /// Dense `f64` rows.
    Den = 0,
    /// Compressed sparse rows.
    Csr = 1,
    /// CSR with value indexing.
    Cvi = 2,
    /// Dense with value indexing.
    Dvi = 3,
    /// snappy over the dense bytes.
    Snappy = 4,
    /// gzip (level 6) over the dense bytes.
    Gzip = 5,
    /// LZ4 (block format) over the dense bytes.
    Lz4 = 6,
    /// TOC, sparse encoding only.
    TocSparse = 7,
    /// TOC, sparse and logical encoding.
    TocLogical = 8,
    /// TOC, all three stages (the default format).
    TocFull = 9,
}

impl FormatKind {
    /// The format's code in files (`docs/FORMAT.md`): fixed forever.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The format of code `code`, if there is one.
    pub fn from_code(code: u8) -> Option<FormatKind> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// Every format, in table order (for tables and loops; files store
    /// [`code`](Self::code)s, not positions in this list).
    pub const ALL: [FormatKind; 10] = [
        FormatKind::Den,
        FormatKind::Csr,
        FormatKind::Cvi,
        FormatKind::Dvi,
        FormatKind::Snappy,
        FormatKind::Gzip,
        FormatKind::Lz4,
        FormatKind::TocSparse,
        FormatKind::TocLogical,
        FormatKind::TocFull,
    ];

    /// The format's name as the paper writes it ("DEN", "CSR", "TOC_FULL").
    pub fn name(self) -> &'static str {
        match self {
            FormatKind::Den => "DEN",
            FormatKind::Csr => "CSR",
            FormatKind::Cvi => "CVI",
            FormatKind::Dvi => "DVI",
            FormatKind::Snappy => "snappy",
            FormatKind::Gzip => "gzip",
            FormatKind::Lz4 => "lz4",
            FormatKind::TocSparse => "TOC_SPARSE",
            FormatKind::TocLogical => "TOC_LOGICAL",
            FormatKind::TocFull => "TOC_FULL",
        }
    }

    /// Looks a format up by name, ignoring case; `toc` means `TOC_FULL`.
    pub fn from_name(name: &str) -> Option<FormatKind> {
        if name.eq_ignore_ascii_case("toc") {
            return Some(FormatKind::TocFull);
        }
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// Encodes `batch` in this format.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the batch does not fit
    /// the format's integer widths.
    pub fn encode(self, batch: &SparseBatch) -> Result<Batch> {
        Ok(match self {
            FormatKind::Den => Batch::Den(Den::encode(batch)?),
            FormatKind::Csr => Batch::Csr(Csr::encode(batch)?),
            FormatKind::Cvi => Batch::Cvi(Cvi::encode(batch)?),
            FormatKind::Dvi => Batch::Dvi(Dvi::encode(batch)?),
            FormatKind::Snappy | FormatKind::Gzip | FormatKind::Lz4 => {
                Batch::Compressed(Compressed::encode(batch, self.codec())?)
            }
            FormatKind::TocSparse | FormatKind::TocLogical | FormatKind::TocFull => {
                let options = EncodeOptions::level(self.toc_level());
                Batch::Toc(TocPage::encode(batch, options)?)
            }
        })
    }

    /// Validates untrusted page bytes of this format (as written by
    /// [`Batch::write_bytes`]) and loads them. TOC pages are the
    /// [`TocBatch`](crate::TocBatch) blob, checked by
    /// [`TocBatch::from_bytes`](crate::TocBatch::from_bytes), their decode
    /// tree built once; the other formats are specified in
    /// `docs/FORMAT.md`. Never panics; memory is linear in `bytes.len()`
    /// (for snappy, gzip and LZ4 at most the codec's largest compression
    /// ratio times it).
    ///
    /// # Errors
    /// The first rule the bytes break, as an [`Error`](crate::Error)
    /// naming the field and offset, row and position, or id.
    pub fn load(self, bytes: &[u8]) -> Result<Batch> {
        self.load_shared(bytes, 0, None)
    }

    /// As [`FormatKind::load`], for a page of `rows` rows (its page
    /// header's count) of a dataset file whose segment has the shared
    /// dictionary `dict`: a version-3 or compact TOC page is validated
    /// against it (see [`TocBatch::from_bytes_shared`](crate::TocBatch::from_bytes_shared)).
    ///
    /// # Errors
    /// As [`FormatKind::load`].
    pub fn load_shared(
        self,
        bytes: &[u8],
        rows: usize,
        dict: Option<&std::sync::Arc<crate::codec::SharedDict>>,
    ) -> Result<Batch> {
        Ok(match self {
            FormatKind::Den => Batch::Den(Den::load(bytes)?),
            FormatKind::Csr => Batch::Csr(Csr::load(bytes)?),
            FormatKind::Cvi => Batch::Cvi(Cvi::load(bytes)?),
            FormatKind::Dvi => Batch::Dvi(Dvi::load(bytes)?),
            FormatKind::Snappy | FormatKind::Gzip | FormatKind::Lz4 => {
                Batch::Compressed(Compressed::load(bytes, self.codec())?)
            }
            FormatKind::TocSparse | FormatKind::TocLogical | FormatKind::TocFull => Batch::Toc(
                TocPage::load(bytes, self.toc_level(), dict.map(|d| (rows, d)))?,
            ),
        })
    }

    /// The TOC level of a TOC format (`TocSparse`, `TocLogical`,
    /// `TocFull`); `None` for the comparison formats. The one mapping from
    /// formats to levels; [`FormatKind::from`] a [`Level`] is its inverse.
    pub fn level(self) -> Option<Level> {
        match self {
            FormatKind::TocSparse => Some(Level::Sparse),
            FormatKind::TocLogical => Some(Level::Logical),
            FormatKind::TocFull => Some(Level::Full),
            _ => None,
        }
    }

    /// The level of a TOC format (the callers matched it).
    fn toc_level(self) -> Level {
        self.level().expect("a TOC format")
    }

    /// The codec of snappy, gzip and lz4 (the callers matched them).
    fn codec(self) -> general::Codec {
        match self {
            FormatKind::Snappy => general::Codec::Snappy,
            FormatKind::Gzip => general::Codec::Gzip,
            FormatKind::Lz4 => general::Codec::Lz4,
            other => unreachable!("{other} is not a general-purpose codec"),
        }
    }
}

impl From<Level> for FormatKind {
    /// The TOC format of `level`.
    fn from(level: Level) -> FormatKind {
        match level {
            Level::Sparse => FormatKind::TocSparse,
            Level::Logical => FormatKind::TocLogical,
            Level::Full => FormatKind::TocFull,
        }
    }
}

impl std::fmt::Display for FormatKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
