//! The rows of a dataset file's block, for the commands that study rows
//! (`ratio`, `bench`): decoded within the limit on what a block's pages
//! decode to, and allocated fallibly, errors naming the file (issue 34,
//! item 2: a block of bombs aborted `ratio`).

use tocpile::dataset::Dataset;
use tocpile::ingest::Chunk;
use tocpile::SparseBatch;

use crate::Failure;

/// Every row and label of block `b` of `dataset`.
pub fn block_rows(dataset: &Dataset, b: usize) -> Result<Chunk, Failure> {
    let block = dataset.read_block(b)?;
    let path = dataset.path();
    let about = |e: tocpile::Error| Failure::about(path, e);
    let mut batch = SparseBatch::with_cols(dataset.info().n_cols)?;
    let mut labels = Vec::with_capacity(block.n_rows());
    let mut block_nnz = 0u64;
    for p in 0..block.n_pages() {
        let page = block.page(p)?;
        // The block's rows are held at once: what its pages decode to is
        // bounded as the loader bounds a block.
        if let Some(toc) = page.batch().as_toc() {
            block_nnz = block_nnz.saturating_add(toc.tree().decoded_nnz());
            tocpile::limits::check_block_nnz(block_nnz)
                .map_err(|e| Failure::about(path, format!("block {b}: {e}")))?;
        }
        for (cols, vals) in page.batch().try_decode().map_err(about)?.rows() {
            batch.push_row(cols, vals).map_err(about)?;
        }
        labels.extend_from_slice(page.labels());
    }
    Ok(Chunk {
        batch,
        labels,
        first_line: 0,
    })
}
