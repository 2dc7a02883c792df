//! The resource policy: how much memory a hostile or mistaken input may
//! make tocpile allocate. The rules and their reasons are in
//! `docs/FORMAT.md` ("Resource limits").
//!
//! Sizes that the bytes of an input cannot back are checked here, at the
//! trust boundary, before anything is allocated: the non-zeros a page
//! decodes to (a prefix tree can make them quadratic in the page's bytes),
//! the columns a model or a dense format allocates for (one column id in a
//! one-line file can ask for 2^32), the parameters of a model (columns
//! times the width of its first layer: a 96-byte file with column 500,000
//! asked a network for 100 million), and the totals a dataset footer
//! claims.
//! Exceeding a limit is [`Error::LimitExceeded`], which names the limit and
//! how to raise it; an allocation of a user-sized request that the system
//! refuses is [`Error::OutOfMemory`], never an abort.
//!
//! The limits are process-wide (like a thread pool's size) so that every
//! reader, however deep in a call chain, applies the same policy; a program
//! that trusts bigger inputs raises them once with [`set_limits`].

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Default ceiling on the non-zeros one page may decode to: 2^27 (1.5 GiB
/// as a decoded `SparseBatch`, 12 bytes an entry). A 65,536-row page of
/// 784 dense columns holds 51M.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const DEFAULT_MAX_PAGE_NNZ: u64 = 1 << 27;
/// Default ceiling on the non-zeros decoded at once from many pages: the
/// pages of one block, or of one CorgiPile buffer (decoded whole to
/// shuffle its rows): 2^27 like one page, 1.5 GiB decoded (the buffer's
/// decoding takes up to twice that at its peak). Pages each under
/// [`DEFAULT_MAX_PAGE_NNZ`] can add up to far more: sixteen prefix-tree
/// bombs in 1.5 MB asked for 2 billion. Real buffers hold a few million
/// (flights3m's 10% buffer: 9M).
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const DEFAULT_MAX_DECODE_NNZ: u64 = 1 << 27;
/// Default ceiling on the columns a model, a dense format or a kernel
/// vector allocates for: 2^26 (512 MiB per `f64` vector). The widest
/// common LIBSVM sets (kdd2010, 29M features) fit.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const DEFAULT_MAX_COLS: u64 = 1 << 26;
/// Default ceiling on the parameters (weights and biases) of a model
/// built for training: 2^26, 512 MiB per copy of them, and training keeps
/// about five copies (the parameters, the gradient and a helper thread's,
/// the two moments of Adam): some 2.5 GiB. A softmax of 2 classes over
/// 33M columns fits, as does the TOC paper's network (200 and 50 hidden)
/// over 335,000 columns. (A linear model over exactly `max_cols` columns
/// has one parameter more than this default: raise both together.)
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const DEFAULT_MAX_PARAMS: u64 = 1 << 26;

static MAX_PAGE_NNZ: AtomicU64 = AtomicU64::new(DEFAULT_MAX_PAGE_NNZ);
static MAX_DECODE_NNZ: AtomicU64 = AtomicU64::new(DEFAULT_MAX_DECODE_NNZ);
static MAX_COLS: AtomicU64 = AtomicU64::new(DEFAULT_MAX_COLS);
static MAX_PARAMS: AtomicU64 = AtomicU64::new(DEFAULT_MAX_PARAMS);

/// The limits of the resource policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most non-zeros one page (one encoded batch) may decode to; for a
    /// dense format, most cells (`rows x columns`) of one page.
    pub max_page_nnz: u64,
    /// Most non-zeros decoded at once from the pages of one block, or of
    /// one CorgiPile buffer in exact mode (the buffer is decoded whole so
    /// that its rows can be shuffled).
    pub max_decode_nnz: u64,
    /// Most columns a model, a dense page or a kernel's vectors may be
    /// allocated for.
    pub max_cols: u64,
    /// Most parameters (weights and biases) a model built for training
    /// may have. Model files are not limited: their bytes hold every
    /// parameter.
    pub max_params: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_page_nnz: DEFAULT_MAX_PAGE_NNZ,
            max_decode_nnz: DEFAULT_MAX_DECODE_NNZ,
            max_cols: DEFAULT_MAX_COLS,
            max_params: DEFAULT_MAX_PARAMS,
        }
    }
}

/// The limits in force (the defaults unless [`set_limits`] changed them).
pub fn limits() -> Limits {
    Limits {
        max_page_nnz: MAX_PAGE_NNZ.load(Ordering::Relaxed),
        max_decode_nnz: MAX_DECODE_NNZ.load(Ordering::Relaxed),
        max_cols: MAX_COLS.load(Ordering::Relaxed),
        max_params: MAX_PARAMS.load(Ordering::Relaxed),
    }
}

/// Sets the limits for the whole process (every reader and model built
/// after the call).
pub fn set_limits(limits: Limits) {
    MAX_PAGE_NNZ.store(limits.max_page_nnz, Ordering::Relaxed);
    MAX_DECODE_NNZ.store(limits.max_decode_nnz, Ordering::Relaxed);
    MAX_COLS.store(limits.max_cols, Ordering::Relaxed);
    MAX_PARAMS.store(limits.max_params, Ordering::Relaxed);
}

/// How a user raises the page limit (the command-line option, then the
/// library call).
const RAISE_PAGE_NNZ: &str = "--max-page-nnz N (library: tocpile::limits::set_limits)";
/// How a user raises the limit on what many pages decode to.
const RAISE_DECODE_NNZ: &str =
    "--max-decode-nnz N, or a smaller --buffer (library: tocpile::limits::set_limits)";
/// How a user raises the column limit.
const RAISE_COLS: &str = "--max-cols N (library: tocpile::limits::set_limits)";
/// How a user raises the parameter limit.
const RAISE_PARAMS: &str = "--max-params N (library: tocpile::limits::set_limits)";

/// Checks the non-zeros `nnz` of a page of `rows x cols`: at most one per
/// cell, and at most [`Limits::max_page_nnz`].
///
/// # Errors
/// [`Error::TooLarge`] for more non-zeros than cells (a corrupt count);
/// [`Error::LimitExceeded`] above the ceiling.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_page_nnz(nnz: u64, rows: usize, cols: usize) -> Result<()> {
    let cells = (rows as u64).saturating_mul(cols as u64);
    if nnz > cells {
        return Err(Error::TooLarge {
            what: "decoded non-zeros of a page (rows x columns)",
            value: nnz,
            max: cells,
        });
    }
    check_limit(
        "decoded non-zeros of a page",
        nnz,
        limits().max_page_nnz,
        RAISE_PAGE_NNZ,
    )
}

/// Checks the codes the rows of one page add up to before they are
/// allocated (a page of row ids repeats its distinct rows' codes): each
/// code decodes to a non-zero at least, so they are held to
/// [`Limits::max_page_nnz`].
///
/// # Errors
/// [`Error::LimitExceeded`].
pub(crate) fn check_page_codes(codes: u64) -> Result<()> {
    check_limit(
        "codes the rows of a page repeat (each decodes to a non-zero at least)",
        codes,
        limits().max_page_nnz,
        RAISE_PAGE_NNZ,
    )
}

/// Checks the non-zeros a dataset footer claims against what its pages
/// may decode to under the page limit.
///
/// # Errors
/// [`Error::LimitExceeded`].
pub(crate) fn check_footer_nnz(nnz: u64, n_pages: u64) -> Result<()> {
    check_limit(
        "footer non-zeros (at most pages x max_page_nnz)",
        nnz,
        n_pages.saturating_mul(limits().max_page_nnz),
        RAISE_PAGE_NNZ,
    )
}

/// Checks the cells (`rows x cols`) of a dense page against
/// [`Limits::max_page_nnz`] and the columns against [`Limits::max_cols`].
///
/// # Errors
/// [`Error::LimitExceeded`].
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_dense_cells(rows: usize, cols: usize) -> Result<()> {
    check_cols(cols, "columns of a dense page")?;
    let cells = (rows as u64).saturating_mul(cols as u64);
    check_limit(
        "cells of a dense page (rows x columns)",
        cells,
        limits().max_page_nnz,
        RAISE_PAGE_NNZ,
    )
}

/// Checks `cols` columns that `what` allocates for against
/// [`Limits::max_cols`].
///
/// # Errors
/// [`Error::LimitExceeded`].
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_cols(cols: usize, what: &'static str) -> Result<()> {
    check_limit(what, cols as u64, limits().max_cols, RAISE_COLS)
}

/// Checks the `params` parameters of a model being built for training
/// against [`Limits::max_params`].
///
/// # Errors
/// [`Error::LimitExceeded`].
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_params(params: usize) -> Result<()> {
    check_matrix(params, "model parameters (weights and biases)")
}

/// Checks the `cells` of a matrix that `what` allocates as a model
/// allocates its weights (one row per column of the data: the `M` of
/// `A.M` in a kernel benchmark, say) against [`Limits::max_params`].
///
/// # Errors
/// [`Error::LimitExceeded`].
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_matrix(cells: usize, what: &'static str) -> Result<()> {
    check_limit(what, cells as u64, limits().max_params, RAISE_PARAMS)
}

/// Checks the non-zeros `nnz` that the pages of one block or one buffer
/// (`what`) decode to at once against [`Limits::max_decode_nnz`].
///
/// # Errors
/// [`Error::LimitExceeded`] above the ceiling.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_decode_nnz(nnz: u64, what: &'static str) -> Result<()> {
    check_limit(
        what,
        nnz,
        MAX_DECODE_NNZ.load(Ordering::Relaxed),
        RAISE_DECODE_NNZ,
    )
}

/// How a user raises the limit on what one block's pages decode to (a
/// smaller buffer does not make a block smaller).
const RAISE_BLOCK_NNZ: &str = "--max-decode-nnz N (library: tocpile::limits::set_limits)";

/// Checks the non-zeros `nnz` that pages of one block held at once
/// decode to (its decoded rows, or its pages' decode trees, which have
/// at most a node per non-zero) against [`Limits::max_decode_nnz`].
///
/// # Errors
/// [`Error::LimitExceeded`] above the ceiling.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_block_nnz(nnz: u64) -> Result<()> {
    check_limit(
        "non-zeros one block's pages decode to",
        nnz,
        MAX_DECODE_NNZ.load(Ordering::Relaxed),
        RAISE_BLOCK_NNZ,
    )
}

/// Checks the rows one block of a version-5 or 6 dataset file claims, where
/// they are more than 8 per byte of the block (page copies repeat a
/// page's rows for one byte), against [`Limits::max_decode_nnz`]: the
/// block's labels are read whole, 8 bytes a row.
///
/// # Errors
/// [`Error::LimitExceeded`] above the ceiling.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_block_rows(rows: u64) -> Result<()> {
    check_limit(
        "rows one block holds (more than 8 per byte: page copies)",
        rows,
        MAX_DECODE_NNZ.load(Ordering::Relaxed),
        RAISE_BLOCK_NNZ,
    )
}

/// Checks the pages one block of a version-6 dataset file claims, where
/// they are more than its bytes (a run of page copies stands for any
/// number of pages in a few bytes), against an eighth of
/// [`Limits::max_decode_nnz`]: a block keeps a span of about 56 bytes a
/// page, so a block's pages cost at most what its labels may (8 bytes a
/// row, [`check_block_rows`]).
///
/// # Errors
/// [`Error::LimitExceeded`] above the ceiling.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_block_pages(pages: u64) -> Result<()> {
    check_limit(
        "pages one block holds (more than its bytes: runs of page copies)",
        pages,
        MAX_DECODE_NNZ.load(Ordering::Relaxed) / 8,
        RAISE_BLOCK_NNZ,
    )
}

/// How a user raises the limit on what one mini-batch's rows decode to.
const RAISE_BATCH_NNZ: &str =
    "--max-decode-nnz N, or a smaller --batch-size (library: tocpile::limits::set_limits)";

/// Checks the non-zeros `nnz` that one mini-batch's rows decode to when
/// they are written out from codes (a buffer of code rows holds a row as
/// a few codes, however many entries they name: a dictionary bomb's rows
/// are one code each) against [`Limits::max_decode_nnz`].
///
/// # Errors
/// [`Error::LimitExceeded`] above the ceiling.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn check_batch_nnz(nnz: u64) -> Result<()> {
    check_limit(
        "non-zeros one mini-batch's rows decode to",
        nnz,
        MAX_DECODE_NNZ.load(Ordering::Relaxed),
        RAISE_BATCH_NNZ,
    )
}

fn check_limit(what: &'static str, value: u64, max: u64, raise: &'static str) -> Result<()> {
    if value > max {
        return Err(Error::LimitExceeded {
            what,
            value,
            max,
            raise,
        });
    }
    Ok(())
}

/// `len` copies of `value`, or [`Error::OutOfMemory`] naming `what` if the
/// system refuses the allocation (instead of an abort).
///
/// # Errors
/// [`Error::OutOfMemory`].
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub fn try_filled<T: Clone>(len: usize, value: T, what: &'static str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        what,
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    out.resize(len, value);
    Ok(out)
}

/// Reserves room for `additional` more elements in `v`, or
/// [`Error::OutOfMemory`] naming `what` if the system refuses (instead of
/// an abort).
///
/// # Errors
/// [`Error::OutOfMemory`].
#[inline]
pub(crate) fn try_reserve<T>(v: &mut Vec<T>, additional: usize, what: &'static str) -> Result<()> {
    // The common case (room already) inline, as `Vec::reserve`'s is.
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    v.try_reserve(additional).map_err(|_| Error::OutOfMemory {
        what,
        bytes: (v.len().saturating_add(additional) as u64)
            .saturating_mul(std::mem::size_of::<T>() as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_nnz_above_cells_or_ceiling_is_an_error() {
        assert!(check_page_nnz(6, 2, 3).is_ok());
        assert!(matches!(
            check_page_nnz(7, 2, 3),
            Err(Error::TooLarge {
                value: 7,
                max: 6,
                ..
            })
        ));
        let over = DEFAULT_MAX_PAGE_NNZ + 1;
        let e = check_page_nnz(over, 1 << 20, 1 << 20).unwrap_err();
        assert!(matches!(e, Error::LimitExceeded { value, .. } if value == over));
        assert!(e.to_string().contains("--max-page-nnz"), "{e}");
    }

    #[test]
    fn columns_above_the_ceiling_name_the_option() {
        assert!(check_cols(DEFAULT_MAX_COLS as usize, "model columns").is_ok());
        let e = check_cols(1 << 32, "model columns").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("model columns") && text.contains("--max-cols"),
            "{text}"
        );
        assert!(check_dense_cells(1, 1 << 27).is_err());
        assert!(check_dense_cells(4, 1 << 20).is_ok());
    }

    #[test]
    fn parameters_above_the_ceiling_name_the_option() {
        assert!(check_params(DEFAULT_MAX_PARAMS as usize).is_ok());
        let e = check_params(DEFAULT_MAX_PARAMS as usize + 1).unwrap_err();
        assert!(e.to_string().contains("--max-params N"), "{e}");
    }

    #[test]
    fn a_refused_allocation_is_an_error() {
        let e = try_filled(usize::MAX / 2, 0u64, "test vector").unwrap_err();
        assert!(matches!(
            e,
            Error::OutOfMemory {
                what: "test vector",
                ..
            }
        ));
        assert_eq!(try_filled(3, 1u8, "small").unwrap(), vec![1, 1, 1]);
    }
}
