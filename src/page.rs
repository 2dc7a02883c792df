//! [`Page`]: rows in some format and their labels, the one unit that
//! flows from the dataset file through the loader to the model.
//!
//! ```text
//! Block::page / Block::pages --> Page --> MiniBatch { pages } --> Model::gradient(&[Page])
//! FormatKind::encode + labels --> Page::new /
//! ```

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::formats::{Batch, FormatKind};
use crate::sparse::SparseBatch;

/// Rows in some format and one label per row: what a dataset file's page
/// loads into, what the loader's mini-batches are made of, and what
/// [`Model::gradient`](crate::model::Model::gradient) takes.
///
/// Cheap to clone (one reference count): the loader's buffers, an MRS
/// reservoir and the mini-batches share one page rather than copying it.
/// The batch is validated when the page is made (by
/// [`FormatKind::load`] for bytes), so the kernels never fail on it.
///
/// ```
/// use tocpile::formats::FormatKind;
/// use tocpile::{Page, SparseBatch};
///
/// let rows = SparseBatch::from_dense_rows(2, &[[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])?;
/// let page = Page::encode(FormatKind::TocFull, &rows, &[1.0, 0.0, 1.0])?;
/// assert_eq!((page.n_rows(), page.n_cols()), (3, 2));
/// assert_eq!(page.labels(), [1.0, 0.0, 1.0]);
/// assert_eq!(page.batch().decode(), rows);
/// let shared = page.clone(); // no copy of the rows
/// assert_eq!(shared.heap_bytes(), page.heap_bytes());
/// # Ok::<(), tocpile::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Page {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    labels: Box<[f64]>,
    batch: Batch,
    /// What the model checks of the labels at every step, worked out once:
    /// every label finite, and the smallest class count the labels fit
    /// (`None` unless all are integers in `0..2^32`).
    finite: bool,
    class_bound: Option<usize>,
    /// [`Page::heap_bytes`], worked out once: the batch cannot change
    /// once shared, and the loader asks for it several times per page.
    heap_bytes: usize,
}

impl Page {
    /// A page of `batch` and its labels.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless there is one label per row.
    pub fn new(batch: Batch, labels: impl Into<Box<[f64]>>) -> Result<Page> {
        let labels = labels.into();
        if labels.len() != batch.n_rows() {
            return Err(Error::LengthMismatch {
                what: "labels of a page (one per row)",
                expected: batch.n_rows() as u64,
                found: labels.len() as u64,
            });
        }
        let (finite, class_bound) = scan_labels(&labels);
        let heap_bytes = std::mem::size_of::<Inner>()
            + 2 * std::mem::size_of::<usize>()
            + batch.heap_bytes()
            + 8 * labels.len();
        Ok(Page {
            inner: Arc::new(Inner {
                labels,
                batch,
                finite,
                class_bound,
                heap_bytes,
            }),
        })
    }

    /// Encodes `rows` in `format` into a page with `labels`.
    ///
    /// # Errors
    /// As [`FormatKind::encode`] and [`Page::new`].
    pub fn encode(format: FormatKind, rows: &SparseBatch, labels: &[f64]) -> Result<Page> {
        Page::new(format.encode(rows)?, labels)
    }

    /// One label per row.
    pub fn labels(&self) -> &[f64] {
        &self.inner.labels
    }

    /// True when every label is finite and, for `classes` given, a class
    /// index in `0..classes`: the model's label check, answered from what
    /// was worked out when the page was made (a resident page is checked
    /// once, not at every step).
    pub(crate) fn labels_fit(&self, classes: Option<usize>) -> bool {
        let classes_fit = match classes {
            Some(c) => self.inner.class_bound.is_some_and(|b| b <= c),
            None => true,
        };
        self.inner.finite && classes_fit
    }

    /// The rows, encoded.
    pub fn batch(&self) -> &Batch {
        &self.inner.batch
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.inner.labels.len()
    }

    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.inner.batch.n_cols()
    }

    /// The page's format.
    pub fn kind(&self) -> FormatKind {
        self.inner.batch.kind()
    }

    /// Heap bytes the page holds: its one shared allocation (reference
    /// counts, labels pointer and the [`Batch`] value), the batch's own
    /// ([`Batch::heap_bytes`]) and the labels'. Clones share them: count a
    /// page once however many clones exist.
    pub fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes
    }
}

/// Whether every label is finite, and the smallest class count the
/// labels fit (`None` unless all are integers in `0..2^32`), in one pass.
/// The loader makes a page per mini-batch, so this runs for every row of
/// every epoch: the integer test is a round trip through `u32` (exact
/// for the values it accepts) rather than `f64::fract`, which is a call
/// into the maths library per label (5% of a whole-file loader epoch).
fn scan_labels(labels: &[f64]) -> (bool, Option<usize>) {
    let mut finite = true;
    let mut integral = true;
    let mut most = 0u32;
    for &y in labels {
        finite &= y.is_finite();
        // `as u32` saturates (NaN to 0), so only values in 0..2^32 with
        // no fraction survive the round trip unchanged.
        let c = y as u32;
        integral &= f64::from(c) == y;
        most = most.max(c);
    }
    let bound = integral.then(|| most as usize + usize::from(!labels.is_empty()));
    (finite, bound)
}

#[cfg(test)]
mod tests {
    use super::scan_labels;
    use proptest::prelude::*;

    /// The scan as first written (`fract`, one label at a time): the
    /// reference the single pass is checked against.
    fn reference(labels: &[f64]) -> (bool, Option<usize>) {
        let finite = labels.iter().all(|y| y.is_finite());
        let mut bound = Some(0usize);
        for &y in labels {
            if !((0.0..4_294_967_296.0).contains(&y) && y.fract() == 0.0) {
                bound = None;
                break;
            }
            bound = bound.map(|b| b.max(y as usize + 1));
        }
        (finite, bound)
    }

    #[test]
    fn label_scan_matches_the_reference_at_the_edges() {
        let edges = [
            0.0,
            -0.0,
            1.0,
            0.5,
            -1.0,
            4_294_967_295.0,
            4_294_967_296.0,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ];
        assert_eq!(scan_labels(&[]), reference(&[]));
        for a in edges {
            for b in edges {
                assert_eq!(scan_labels(&[a, b]), reference(&[a, b]), "{a} {b}");
            }
        }
    }

    proptest! {
        #[test]
        fn label_scan_matches_the_reference(
            labels in prop::collection::vec(
                prop_oneof![
                    (0u32..20).prop_map(f64::from),
                    any::<u32>().prop_map(f64::from),
                    any::<f64>(),
                ],
                0..40,
            )
        ) {
            prop_assert_eq!(scan_labels(&labels), reference(&labels));
        }
    }
}
