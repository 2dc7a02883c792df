//! # tocpile
//!
//! Mini-batch stochastic gradient descent on compressed data.
//!
//! Training sets that do not fit in memory make SGD disk-bound. tocpile
//! stores each mini-batch with **tuple-oriented compression** (TOC: Li et
//! al., "Tuple-oriented Compression for Large-scale Mini-batch Stochastic
//! Gradient Descent"): sparse rows, then an LZW-like prefix tree shared by
//! the rows of the batch, then bit packing and value indexing. Ratios rival
//! gzip, yet the matrix products of SGD can run on the encoded form through
//! the rebuilt decode tree.
//!
//! ```text
//! rows --> SparseBatch --Encoder--> TocBatch (bytes) --from_bytes--> validated
//!                                                      |--> DecodeTree --> decode / kernels
//! ```
//!
//! Start with [`SparseBatch`] (the uncompressed batch), [`Encoder`] (or
//! [`encode`]) and [`TocBatch`]:
//!
//! ```
//! use tocpile::{Adaptive, Encoder, EncodeOptions, SparseBatch, TocBatch};
//!
//! // The running example of the TOC paper (Figure 3).
//! let batch = SparseBatch::from_dense_rows(4, &[
//!     [1.1, 2.0, 3.0, 1.4],
//!     [1.1, 2.0, 3.0, 0.0],
//!     [0.0, 1.1, 3.0, 1.4],
//!     [1.1, 2.0, 0.0, 0.0],
//! ])?;
//! // The paper's layout: always the prefix tree.
//! let paper_layout = EncodeOptions::default().with_adaptive(Adaptive::NONE);
//! let encoded = Encoder::new(paper_layout).encode(&batch)?;
//! assert_eq!(encoded.n_codes(), 9); // D = [1 2 3 4] [6 3] [5 8] [6]
//!
//! // The default chooses per batch: this one is too small for the tree
//! // to pay, so it is stored as flat rows (packed columns and value ids).
//! let mut encoder = Encoder::new(EncodeOptions::default());
//! let encoded = encoder.encode(&batch)?;
//! assert!(!encoded.has_tree());
//!
//! // Bytes from disk or the network are untrusted: from_bytes validates.
//! let bytes: Vec<u8> = encoded.as_bytes().to_vec();
//! let loaded = TocBatch::from_bytes(bytes)?;
//! assert_eq!(loaded.decode(), batch);
//! # Ok::<(), tocpile::Error>(())
//! ```
//!
//! Bad bytes are an [`Error`] naming what was wrong and where, never a
//! panic. The byte format is specified in `docs/FORMAT.md`.
//!
//! Training goes from a dataset file to the model through one page type:
//!
//! ```text
//! dataset::DatasetWriter --> file --> dataset::Block::page --> Page { labels, formats::Batch }
//!   --> loader::Loader (CorgiPile) --> MiniBatch { pages } --> model::Model::gradient(&[Page])
//!   --> train::train (epochs, learning rate, evaluation on a Dataset)
//! ```
//!
//! A [`Page`] is rows in any format ([`formats::Batch`]: TOC or one of the
//! paper's comparison formats) plus their labels; see [`loader`] and
//! [`model`] for runnable examples, and [`kernels`] for the products on
//! the decode tree.
//!
//! # Threads
//!
//! Parallel steps (kernels across the pages of a mini-batch, encoding,
//! parsing, the loader's decoding, prediction) run on the library's own
//! thread pool, [`parallel`], which a forked child process (PyTorch
//! DataLoader workers, Python's `multiprocessing`) starts again for
//! itself; a caller's `rayon::ThreadPool::install` keeps that pool.
//! `RAYON_NUM_THREADS` sizes it.
//!
//! # Cargo features
//!
//! - `arrow` (off by default): `ingest::arrow`, which encodes Arrow
//!   `RecordBatch`es (from Parquet, Arrow IPC or any Arrow source) into
//!   rows for the dataset writer. It adds arrow-rs's array, buffer and
//!   schema crates (no Parquet); the `tocpile` command line reads Parquet
//!   files through it with its own `parquet` feature.
//! - `mpi` (off by default): `dist::Mpi`, the communicator over MPI.
//! - `serde` (off by default): `Serialize` and `Deserialize` on the option
//!   structs (`TrainOptions`, `LoaderOptions`, `EncodeOptions`,
//!   `WriterOptions`, `LibsvmOptions`), `DatasetInfo`, `EpochReport`,
//!   `EvaluationReport` and the enums they hold. A `Scaling` read back is
//!   checked as by `Scaling::new`.
//! - `sprs` (off by default): `TryFrom<&sprs::CsMat<f64>>` for
//!   [`SparseBatch`] (CSR or CSC; explicit zeros dropped) and
//!   `TryFrom<&SparseBatch>` for `CsMat<f64>` (CSR).
#![deny(missing_docs)]
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod atomic;
#[doc(hidden)]
pub mod cleanup;
pub mod codec;
pub mod dataset;
pub mod dist;
mod error;
pub mod formats;
pub mod ingest;
pub mod kernels;
pub mod limits;
pub mod loader;
pub mod model;
mod options;
mod page;
pub mod parallel;
mod prefetch;
pub mod rng;
pub mod scale;
mod sparse;
#[cfg(feature = "sprs")]
mod sprs_interop;
pub mod train;
mod wire;

/// Not part of the API (hidden, may change in any release): the codec's
/// bit unpacker and the packed arrays of an encoded batch, for the
/// measurement that chose the unpacker (`examples/unpack.rs`); the
/// loader's check of a page without a decode tree, for the tests that
/// compare it with the validating build.
#[doc(hidden)]
pub mod internals {
    /// A packed array of an encoded batch: its section, bit width, element
    /// count and payload bytes.
    #[derive(Debug, Clone, Copy)]
    pub struct PackedArray<'a> {
        /// The section (`"codes"`, `"pair columns"`, ...).
        pub name: &'static str,
        /// Bits per element (0 to 32).
        pub width: u8,
        /// Elements.
        pub count: usize,
        /// The payload, `ceil(count * width / 8)` bytes.
        pub payload: &'a [u8],
    }

    /// The packed arrays of the encoded batch `blob`, in stored order.
    ///
    /// # Errors
    /// As [`TocBatch::from_bytes`](crate::TocBatch::from_bytes) for a blob
    /// whose structure is invalid.
    pub fn packed_arrays(blob: &[u8]) -> crate::Result<Vec<PackedArray<'_>>> {
        let layout = crate::codec::layout_of(blob)?;
        Ok(arrays(&layout, blob))
    }

    /// The packed arrays of a validated batch or page (a compact page's
    /// among them, whose bytes alone do not delimit its arrays), in
    /// stored order.
    pub fn packed_arrays_of<B: AsRef<[u8]>>(batch: &crate::TocBatch<B>) -> Vec<PackedArray<'_>> {
        arrays(batch.layout(), batch.as_bytes())
    }

    /// The packed arrays `layout` finds in `blob`, in stored order.
    fn arrays<'a>(layout: &crate::codec::Layout, blob: &'a [u8]) -> Vec<PackedArray<'a>> {
        crate::codec::packed_arrays(blob, layout)
            .into_iter()
            .map(|(name, p)| PackedArray {
                name,
                width: p.width,
                count: p.count,
                payload: p.payload(blob),
            })
            .collect()
    }

    /// Unpacks `count` values of `width` bits from `payload` into `out`
    /// (cleared first), as every decode does.
    ///
    /// # Panics
    /// If `width > 32` or `payload` is shorter than `ceil(count * width / 8)`.
    pub fn unpack(payload: &[u8], width: u8, count: usize, out: &mut Vec<u32>) {
        assert!(width <= 32, "width {width} above 32");
        assert!(
            payload.len() as u64 >= crate::wire::payload_len(count as u64, width),
            "payload too short"
        );
        crate::wire::unpack_into(payload, width, count, out)
    }

    pub use crate::codec::CheckedPage;

    /// Validates an encoded page as the dataset loader does, without
    /// building its decode tree: the rules, errors and decoded non-zeros
    /// of [`TocBatch::from_bytes_shared`](crate::TocBatch::from_bytes_shared)
    /// with `dict`, of
    /// [`TocBatch::from_bytes_with_tree`](crate::TocBatch::from_bytes_with_tree)
    /// without; `rows` is the page header's row count (a compact page
    /// stores none). `tree` is scratch (it holds no batch afterwards).
    ///
    /// # Errors
    /// As `TocBatch::from_bytes_shared`.
    pub fn check_page(
        blob: &[u8],
        rows: usize,
        dict: Option<&crate::SharedDict>,
        tree: &mut crate::DecodeTree,
    ) -> crate::Result<CheckedPage> {
        crate::codec::check_page(blob, rows, dict, tree)
    }
}

pub use codec::{
    decode_bytes, encode, Adaptive, DecodeTree, EncodeOptions, Encoder, Level, Packing, TocBatch,
};
#[doc(hidden)]
pub use codec::{SegmentModel, SharedDict};
pub use error::{Error, IoSource, Result};
pub use kernels::Workspace;
/// The `ndarray` crate (0.17) whose arrays the kernels and models take and
/// return: `use tocpile::ndarray::Array1;` gives the matching version
/// without a dependency of your own (one of another version would be a
/// different type).
pub use ndarray;
pub use page::Page;
pub use sparse::{SparseBatch, MAX_COLS};

/// The README's code blocks, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The code blocks of docs/DISTRIBUTED.md, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/DISTRIBUTED.md")]
pub struct DistributedDoctests;
