//! Not part of the API (hidden): used by the workspace's front ends and
//! tests; may change in any release.
//!
//! Kernels over a mini-batch stored as several pages, one
//! [`DecodeTree`] each (a mini-batch of k pages drawn from different
//! blocks, as the loader's page mode builds it), with the pages processed
//! in parallel by rayon.
//!
//! Parallelism goes across pages rather than inside one small batch: a
//! page's tree is walked in dependency order (parents before children), so
//! splitting one page would need synchronisation, while pages are
//! independent. Rows of the mini-batch are the rows of page 0, then page 1,
//! and so on.
//!
//! Measured on this project's 2-core machines, quiet
//! (`cargo run --release --example pages`, parallel time / one page after
//! another): 0.76 for `A.v` and 0.82 for `v.A` on mnist5k (5 or 10 pages,
//! 6,000 to 13,000 codes per page); no gain on coil2000's 10 pages of 100
//! rows (1.03, 0.98); and with the other core busy, small pages of a few
//! hundred codes ran 1.2 to 2.3 times slower in parallel, as handing pages
//! to threads cost more than the work. Below [`PARALLEL_MIN_CODES`] codes in
//! all pages together the pages are therefore processed one after another
//! on the calling thread. Each thread keeps its [`Workspace`] between
//! calls.

use ndarray::{ArrayView1, ArrayViewMut1, Axis};
use rayon::prelude::*;

use super::Workspace;
use crate::codec::DecodeTree;

/// Mini-batches with fewer codes than this (all pages together) run on
/// the calling thread.
pub const PARALLEL_MIN_CODES: usize = 16_000;

thread_local! {
    /// Each rayon worker's scratch memory, reused across calls.
    static WORKSPACE: std::cell::RefCell<Workspace> = std::cell::RefCell::new(Workspace::new());
}

fn parallel(pages: &[DecodeTree]) -> bool {
    pages.len() > 1 && pages.iter().map(DecodeTree::n_codes).sum::<usize>() >= PARALLEL_MIN_CODES
}

/// Runs `f` with this thread's workspace.
fn with_workspace<R>(f: impl FnOnce(&mut Workspace) -> R) -> R {
    WORKSPACE.with(|ws| f(&mut ws.borrow_mut()))
}

/// Rows of all pages together.
pub fn total_rows(pages: &[DecodeTree]) -> usize {
    pages.iter().map(DecodeTree::n_rows).sum()
}

/// `A . v` for the mini-batch made of `pages`, pages in parallel.
///
/// # Panics
/// If the pages differ in column count from `v`, or `out` does not have
/// one entry per row of all pages.
pub fn par_matvec(pages: &[DecodeTree], v: ArrayView1<'_, f64>, mut out: ArrayViewMut1<'_, f64>) {
    assert_eq!(
        out.len(),
        total_rows(pages),
        "A.v: out has {} entries, the pages {} rows",
        out.len(),
        total_rows(pages)
    );
    let mut chunks = Vec::with_capacity(pages.len());
    let mut rest = out.view_mut();
    for page in pages {
        let (head, tail) = rest.split_at(Axis(0), page.n_rows());
        chunks.push(head);
        rest = tail;
    }
    let run = |(page, chunk): (&DecodeTree, ArrayViewMut1<'_, f64>)| {
        with_workspace(|ws| page.matvec_into(v, chunk, ws));
    };
    if parallel(pages) {
        crate::parallel::install(|| pages.par_iter().zip(chunks).for_each(run));
    } else {
        pages.iter().zip(chunks).for_each(run);
    }
}

/// `v . A` for the mini-batch made of `pages`, pages in parallel; each
/// rayon task sums its pages into its own vector, and the vectors are
/// added at the end.
///
/// # Panics
/// If `v` does not have one entry per row of all pages, or `out` one per
/// column.
pub fn par_vecmat(pages: &[DecodeTree], v: ArrayView1<'_, f64>, mut out: ArrayViewMut1<'_, f64>) {
    assert_eq!(
        v.len(),
        total_rows(pages),
        "v.A: v has {} entries, the pages {} rows",
        v.len(),
        total_rows(pages)
    );
    let n_cols = out.len();
    let mut starts = Vec::with_capacity(pages.len());
    let mut at = 0;
    for page in pages {
        starts.push(at);
        at += page.n_rows();
    }
    let page_sum = |acc: &mut [f64], part: &mut [f64], page: &DecodeTree, start: usize| {
        let rows = v.slice(ndarray::s![start..start + page.n_rows()]);
        with_workspace(|ws| page.vecmat_into(rows, ArrayViewMut1::from(&mut part[..]), ws));
        acc.iter_mut().zip(part.iter()).for_each(|(a, &x)| *a += x);
    };
    if !parallel(pages) {
        let (mut acc, mut part) = (vec![0.0; n_cols], vec![0.0; n_cols]);
        for (page, start) in pages.iter().zip(starts) {
            page_sum(&mut acc, &mut part, page, start);
        }
        out.iter_mut().zip(&acc).for_each(|(o, &s)| *o = s);
        return;
    }
    let total = crate::parallel::install(|| {
        pages
            .par_iter()
            .zip(starts)
            .fold(
                || (vec![0.0; n_cols], vec![0.0; n_cols]),
                |(mut acc, mut part), (page, start)| {
                    page_sum(&mut acc, &mut part, page, start);
                    (acc, part)
                },
            )
            .map(|(acc, _)| acc)
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, &y)| *x += y);
                a
            })
    });
    match total {
        Some(sum) => out.iter_mut().zip(&sum).for_each(|(o, &s)| *o = s),
        None => out.fill(0.0),
    }
}
