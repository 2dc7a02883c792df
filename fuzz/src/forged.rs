//! Forged dataset files for the `dataset_forged` and `train_forged`
//! targets: files an attacker can write, with every checksum right, so
//! that the fuzzer explores footers that lie about their totals, pages
//! that claim any number of rows, and TOC pages whose prefix tree decodes
//! to far more than their bytes (bombs), rather than files a checksum
//! would reject. Built with the tests' forge (`tests/support/forge.rs`).

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use tocpile::dataset::Dataset;
use tocpile::limits::{set_limits, Limits};
use tocpile::{EncodeOptions, Encoder, SparseBatch};

use crate::forge::{
    bomb_batch, dataset_versioned, dataset_with_copies, float_labels, int_labels, shared_section,
    with_footer_sections, Claims,
};
use crate::{arbitrary_batch, arbitrary_options, mutate};

/// Limits low enough that any allocation the policy misses stands out
/// under libFuzzer's `-malloc_limit_mb` (a page may decode to 4M
/// non-zeros, 48 MiB; models and dense pages get 1M columns, models 4M
/// parameters, 32 MiB a copy).
pub fn set_fuzz_limits() {
    set_limits(Limits {
        max_page_nnz: 1 << 22,
        max_decode_nnz: 1 << 23,
        max_cols: 1 << 20,
        max_params: 1 << 22,
    });
}

/// A dataset file of up to 4 pages of TOC_FULL, TOC_LOGICAL or
/// TOC_SPARSE format, each an encoded arbitrary batch, a prefix-tree bomb
/// (row `k` holds columns `0..=k`, up to 2^17 rows: beyond the limits) or
/// raw bytes, with row counts true or arbitrary, grouped into blocks, and
/// a footer whose totals are the truth or arbitrary.
pub fn arbitrary_file(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let format = *u.choose(&[9u8, 9, 8, 7])?;
    let version = *u.choose(&[1u8, 2, 2, 8])?;
    let n_pages = u.int_in_range(1usize..=4)?;
    let mut pages = Vec::with_capacity(n_pages);
    let (mut true_rows, mut true_nnz, mut n_cols) = (0u64, 0u64, 1u64);
    for _ in 0..n_pages {
        let (rows, nnz, cols, payload) = match u.int_in_range(0u8..=3)? {
            0 | 1 => {
                let g = arbitrary_batch(u, 64, 32)?;
                let mut options: EncodeOptions = arbitrary_options(u)?;
                if format != 9 {
                    options.level = if format == 8 {
                        tocpile::Level::Logical
                    } else {
                        tocpile::Level::Sparse
                    };
                }
                let Ok(batch) = Encoder::new(options).encode(&g.batch) else {
                    return Err(libfuzzer_sys::arbitrary::Error::IncorrectFormat);
                };
                let rows = g.batch.n_rows() as u64;
                (
                    rows,
                    g.batch.nnz() as u64,
                    g.n_cols as u64,
                    batch.into_bytes(),
                )
            }
            2 => {
                // Mostly small chains (decoded in full), sometimes one far
                // beyond the page limit (a bomb of up to 8.6e9 non-zeros).
                let rows = match u.int_in_range(0u8..=3)? {
                    0 | 1 => u.int_in_range(2u64..=64)?,
                    2 => u.int_in_range(65u64..=3000)?,
                    _ => u.int_in_range(1u64 << 15..=1 << 17)?,
                };
                (rows, rows * (rows + 1) / 2, rows, bomb_batch(rows))
            }
            _ => {
                let len = u.int_in_range(0usize..=256)?;
                let rows = u.int_in_range(0u64..=64)?;
                (rows, 0, 1, u.bytes(len)?.to_vec())
            }
        };
        // Sometimes claim other rows than the payload holds.
        let claimed = if u.ratio(1u8, 8u8)? {
            u.int_in_range(0u64..=1 << 16)?
        } else {
            rows
        };
        true_rows += claimed;
        true_nnz += nnz;
        n_cols = n_cols.max(cols);
        let labels = arbitrary_labels(u, version, claimed)?;
        pages.push((claimed, labels, payload));
    }
    let mut claims = Claims {
        n_cols,
        n_rows: true_rows,
        nnz: true_nnz,
    };
    if u.ratio(1u8, 3u8)? {
        claims.n_rows = arbitrary_total(u)?;
    }
    if u.ratio(1u8, 3u8)? {
        claims.nnz = arbitrary_total(u)?;
    }
    if u.ratio(1u8, 4u8)? {
        claims.n_cols = arbitrary_total(u)?;
    }
    let per_block = u.int_in_range(1usize..=4)?;
    Ok(dataset_versioned(
        format, version, &pages, per_block, claims,
    ))
}

/// A page's labels section: version 1, the float form; version 2, the
/// float form after kind 0, a valid integer form (up to 4 integers of any
/// size, ascending or not, ids in or out of range), or a kind byte and
/// arbitrary bytes; version 8 also the scaled form (any exponent, base
/// and width, offsets of any bits, cut short or not).
fn arbitrary_labels(u: &mut Unstructured<'_>, version: u8, rows: u64) -> Result<Vec<u8>> {
    if version == 1 {
        return Ok(float_labels(rows, 0.0));
    }
    let last = if version >= 8 { 4 } else { 3 };
    Ok(match u.int_in_range(0u8..=last)? {
        4 => {
            let mut out = vec![2, u.int_in_range(0u8..=23)?];
            let base: i64 = match u.int_in_range(0u8..=2)? {
                0 => u.int_in_range(-300i64..=300)?,
                1 => u.int_in_range(-(1i64 << 53) - 1..=(1i64 << 53) + 1)?,
                _ => u.arbitrary()?,
            };
            crate::forge::varint(&mut out, ((base << 1) ^ (base >> 63)) as u64);
            let width = u.int_in_range(0u8..=33)?;
            out.push(width);
            let len = (rows.min(4096) * width as u64).div_ceil(8) as usize;
            let len = if u.ratio(1u8, 8u8)? {
                len.saturating_sub(1)
            } else {
                len
            };
            for _ in 0..len {
                out.push(u.arbitrary()?);
            }
            out
        }
        0 => {
            let mut out = vec![0];
            out.extend(float_labels(rows, 0.0));
            out
        }
        1 | 2 => {
            let n = u.int_in_range(0usize..=4)?;
            let mut values = Vec::with_capacity(n);
            for _ in 0..n {
                values.push(match u.int_in_range(0u8..=2)? {
                    0 => u.int_in_range(-3i64..=3)?,
                    1 => u.int_in_range(-(1i64 << 53) - 1..=(1i64 << 53) + 1)?,
                    _ => u.arbitrary()?,
                });
            }
            if u.ratio(3u8, 4u8)? {
                values.sort_unstable();
                values.dedup();
            }
            let width = crate::forge::bits(values.len().saturating_sub(1) as u64);
            let max_id = (1u64 << width) - 1;
            // Ids: the page's rows (up to a few thousand, else truncated
            // ids), each inside the dictionary or anywhere in the width.
            let count = rows.min(4096) as usize;
            let mut ids = Vec::with_capacity(count);
            for _ in 0..count {
                ids.push(u.int_in_range(0..=max_id)?);
            }
            int_labels(&values, &ids)
        }
        _ => {
            let len = u.int_in_range(0usize..=16)?;
            let mut out = vec![u.int_in_range(0u8..=2)?];
            out.extend_from_slice(u.bytes(len)?);
            out
        }
    })
}

/// A footer total: small, near a power of two, or anything.
fn arbitrary_total(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match u.int_in_range(0u8..=2)? {
        0 => u.int_in_range(0u64..=1 << 20)?,
        1 => 1u64 << u.int_in_range(0u32..=63)?,
        _ => u.arbitrary()?,
    })
}

/// Opens `file` and reads everything: every block, every page decoded in
/// full (no budget: the resource limits must keep memory bounded), and
/// `verify`. Errors are expected; a panic or an allocation beyond
/// libFuzzer's limit is a bug. Returns the dataset if it opened.
pub fn read_everything(file: Vec<u8>) -> Option<Dataset<Vec<u8>>> {
    let ds = match Dataset::from_memory(file, "forged.toc") {
        Ok(ds) => ds,
        Err(e) => {
            let _ = e.to_string();
            return None;
        }
    };
    let info = ds.info().clone();
    assert!(info.nnz <= info.n_rows.saturating_mul(info.n_cols as u64));
    for b in 0..ds.n_blocks() {
        let Ok(block) = ds.read_block(b) else {
            continue;
        };
        for p in 0..block.n_pages() {
            match block.page(p) {
                Ok(page) => {
                    let decoded = page.batch().decode();
                    assert_eq!(decoded.n_rows(), page.n_rows());
                    assert_eq!(decoded.n_rows(), page.labels().len());
                    assert!(decoded.nnz() as u64 <= tocpile::limits::limits().max_page_nnz);
                }
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
    }
    if let Err(e) = ds.verify(|_| {}) {
        let _ = e.to_string();
    }
    Some(ds)
}

/// A version-4 file generated from arbitrary rows as the writer lays it
/// out (one segment whose dictionary the pages are coded against, as
/// compact pages, in blocks; version 7 where a page is a page of row
/// ids, 8 where the dictionary is grouped), then mutated as a whole: the dictionary's
/// bytes and every page's bytes and row count, the lengths and every
/// checksum recomputed (by the forge) so that the mutations reach the
/// decoders rather than a checksum. Returns the file and, when nothing
/// was mutated, the rows it must decode to.
pub fn arbitrary_v4_file(u: &mut Unstructured<'_>) -> Result<(Vec<u8>, Option<SparseBatch>)> {
    let generated = arbitrary_batch(u, 64, 32)?;
    let rows = generated.batch;
    let mut encoder = Encoder::new(EncodeOptions::default());
    let Ok(Some(model)) = encoder.learn_segment_in(&rows, true) else {
        return Err(libfuzzer_sys::arbitrary::Error::IncorrectFormat);
    };
    let page_rows = u.int_in_range(1usize..=16)?;
    let mut dict = model.dict().as_bytes().to_vec();
    let mut pages = Vec::new();
    for start in (0..rows.n_rows()).step_by(page_rows) {
        let batch = rows.slice_rows(start..(start + page_rows).min(rows.n_rows()));
        let Ok(page) = encoder.encode_shared(&batch, &model) else {
            return Err(libfuzzer_sys::arbitrary::Error::IncorrectFormat);
        };
        pages.push((batch.n_rows() as u64, page.into_bytes()));
    }
    // A page of row ids (first byte 2) needs a file of version 7, a
    // grouped dictionary or gap-coded ids one of version 8.
    let version = if model.dict().grouped_values() || model.dict().gap_coded_ids() {
        8
    } else if pages.iter().any(|p| p.1.first() == Some(&2)) {
        7
    } else {
        4
    };
    // What to mutate: the dictionary, pages, row counts (bits 0 to 2).
    let what = u.int_in_range(0u8..=7)?;
    let mut mutated = false;
    if what & 1 != 0 {
        mutate(&mut dict, u)?;
        mutated = true;
    }
    if what & 2 != 0 && !pages.is_empty() {
        let k = u.choose_index(pages.len())?;
        mutate(&mut pages[k].1, u)?;
        mutated = true;
    }
    if what & 4 != 0 && !pages.is_empty() {
        let k = u.choose_index(pages.len())?;
        pages[k].0 = u.int_in_range(0u64..=64)?;
        mutated = true;
    }
    let labelled: Vec<(u64, Vec<u8>, Vec<u8>)> = pages
        .into_iter()
        .map(|(n, payload)| {
            // Two classes where the page has two rows (a dictionary holds
            // at most one value a row).
            let values: &[i64] = if n >= 2 { &[0, 1] } else { &[0] };
            let ids: Vec<u64> = (0..n).map(|i| i % values.len() as u64).collect();
            (n, int_labels(values, &ids), payload)
        })
        .collect();
    let claims = Claims {
        n_cols: rows.n_cols() as u64,
        n_rows: labelled.iter().map(|p| p.0).sum(),
        nnz: rows.nnz() as u64,
    };
    let per_block = u.int_in_range(1usize..=4)?;
    let n_blocks = labelled.len().div_ceil(per_block) as u64;
    let file = dataset_versioned(9, version, &labelled, per_block, claims);
    let file = with_footer_sections(&file, &shared_section(&[(n_blocks, dict)]));
    Ok((file, (!mutated).then_some(rows)))
}

/// A version-5 to 8 file whose blocks hold page copies: arbitrary rows
/// in compact pages (or pages of row ids, in version 7) coded against a
/// segment's dictionary, each page followed by 0 to 3 copies of itself
/// (one zero byte each in version 5, one run from version 6); then its pages, row counts, copies (added where no
/// page precedes, or dropped) or version (one less) mutated, every
/// length and checksum recomputed. Returns the file
/// and, if unmutated, the rows it holds (the copied pages' rows again).
pub fn arbitrary_v5_file_with_copies(
    u: &mut Unstructured<'_>,
) -> Result<(Vec<u8>, Option<SparseBatch>)> {
    let generated = arbitrary_batch(u, 48, 24)?;
    let rows = generated.batch;
    let mut encoder = Encoder::new(EncodeOptions::default());
    let Ok(Some(model)) = encoder.learn_segment_in(&rows, true) else {
        return Err(libfuzzer_sys::arbitrary::Error::IncorrectFormat);
    };
    let page_rows = u.int_in_range(1usize..=12)?;
    let dict = model.dict().as_bytes().to_vec();
    let mut expected = SparseBatch::with_cols(rows.n_cols())
        .map_err(|_| libfuzzer_sys::arbitrary::Error::IncorrectFormat)?;
    let mut pages: Vec<Option<crate::forge::StoredPage>> = Vec::new();
    for start in (0..rows.n_rows()).step_by(page_rows) {
        let batch = rows.slice_rows(start..(start + page_rows).min(rows.n_rows()));
        let Ok(page) = encoder.encode_shared(&batch, &model) else {
            return Err(libfuzzer_sys::arbitrary::Error::IncorrectFormat);
        };
        let n = batch.n_rows() as u64;
        let values: &[i64] = if n >= 2 { &[0, 1] } else { &[0] };
        let ids: Vec<u64> = (0..n).map(|i| i % values.len() as u64).collect();
        pages.push(Some((n, int_labels(values, &ids), page.into_bytes())));
        for _ in 0..=u.int_in_range(0u8..=3)? {
            for (c, v) in batch.rows() {
                expected
                    .push_row(c, v)
                    .map_err(|_| libfuzzer_sys::arbitrary::Error::IncorrectFormat)?;
            }
            pages.push(None);
        }
        // The loop pushed one copy too many: the page itself comes first.
        pages.pop();
    }
    // Copies must not open a block: blocks end after a stored page's run.
    let per_block = u.int_in_range(1usize..=8)?;
    let what = u.int_in_range(0u8..=15)?;
    // Versions 5 to 8; a page of row ids (first byte 2) needs 7, a
    // grouped dictionary or gap-coded ids 8.
    let ids = pages.iter().flatten().any(|p| p.2.first() == Some(&2));
    let grouped = model.dict().grouped_values() || model.dict().gap_coded_ids();
    let mut version = match u.int_in_range(0u8..=3)? {
        0 if !ids && !grouped => 5,
        1 if !ids && !grouped => 6,
        2 if !grouped => 7,
        _ => 8,
    };
    if what & 1 != 0 && !pages.is_empty() {
        let k = u.choose_index(pages.len())?;
        if let Some(page) = &mut pages[k] {
            mutate(&mut page.2, u)?;
        }
    }
    if what & 2 != 0 && !pages.is_empty() {
        let k = u.choose_index(pages.len())?;
        if let Some(page) = &mut pages[k] {
            page.0 = u.int_in_range(0u64..=64)?;
        }
    }
    if what & 4 != 0 {
        let k = u.choose_index(pages.len() + 1)?;
        if k < pages.len() && u.arbitrary()? {
            pages.remove(k);
        } else {
            pages.insert(k, None);
        }
    }
    if what & 8 != 0 {
        version -= 1;
    }
    let stored_blocks_ok = pages
        .chunks(per_block)
        .all(|block| block.first().is_some_and(Option::is_some));
    let claims = Claims {
        n_cols: rows.n_cols() as u64,
        n_rows: expected.n_rows() as u64,
        nnz: expected.nnz() as u64,
    };
    let n_blocks = pages.len().div_ceil(per_block) as u64;
    let file = dataset_with_copies(9, version, &pages, per_block, claims);
    let file = with_footer_sections(&file, &shared_section(&[(n_blocks, dict)]));
    let intact = what == 0 && stored_blocks_ok;
    Ok((file, intact.then_some(expected)))
}

/// Every path that reads a whole file's pages, on `file` (a dataset in
/// memory): [`read_everything`] (each page decoded in full, `verify`),
/// then each block's pages held at once (`Block::pages`, decode trees),
/// packed as the loader keeps them and decoded again from the packed
/// bytes. Errors are expected, a panic is a bug. Returns every row
/// decoded from the packed blocks, if every block packed.
pub fn read_packed(file: Vec<u8>) -> Option<SparseBatch> {
    let ds = read_everything(file)?;
    let mut all = SparseBatch::with_cols(ds.info().n_cols).ok()?;
    let mut complete = true;
    let mut decoder = tocpile::dataset::PageDecoder::new();
    for b in 0..ds.n_blocks() {
        let Ok(block) = ds.read_block(b) else {
            complete = false;
            continue;
        };
        if let Ok(pages) = block.pages() {
            for page in &pages {
                let _ = page.batch().try_decode();
            }
        }
        let Ok(packed) = block.pack() else {
            complete = false;
            continue;
        };
        for j in 0..packed.n_pages() {
            if packed.decode_page(j, &mut decoder).is_err() {
                complete = false;
                continue;
            }
            for i in 0..decoder.n_rows() {
                let (s, e) = decoder.row_range(i);
                let pushed = all.push_row(&decoder.cols()[s..e], &decoder.vals()[s..e]);
                assert!(pushed.is_ok(), "a validated page decodes to valid rows");
            }
        }
    }
    complete.then_some(all)
}
