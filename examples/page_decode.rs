//! CPU time per row to validate a dataset file's pages (checksum, page
//! list, every page's content rules and decode tree: `Block::pack`) and
//! to decode them again as the loader does every epoch
//! (`PackedBlock::decode_page`), so that a file with shared dictionaries
//! (version 3) can be compared with the same rows self-contained
//! (`tocpile encode --segment-rows 0`). Also prints the bytes the shared
//! dictionaries hold while the file is open. Medians of `ROUNDS` passes
//! over the whole file, one thread.
//!
//! ```text
//! cargo run --release --example page_decode FILE.toc [FILE.toc ...]
//! ```

use std::time::Instant;

use tocpile::dataset::{Dataset, PageDecoder};

const ROUNDS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> tocpile::Result<()> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: page_decode FILE.toc [FILE.toc ...]");
        std::process::exit(2);
    }
    for path in paths {
        let data = Dataset::open(&path)?;
        let rows = data.info().n_rows as f64;
        let blocks: Vec<_> = (0..data.n_blocks())
            .map(|b| data.read_block(b))
            .collect::<tocpile::Result<_>>()?;
        let (mut validate, mut decode) = (Vec::new(), Vec::new());
        let mut decoder = PageDecoder::new();
        let mut nnz = 0usize;
        for _ in 0..ROUNDS {
            let start = Instant::now();
            let packed: Vec<_> = blocks
                .iter()
                .map(|b| b.clone().pack())
                .collect::<tocpile::Result<_>>()?;
            validate.push(start.elapsed().as_secs_f64());
            let start = Instant::now();
            nnz = 0;
            for block in &packed {
                for j in 0..block.n_pages() {
                    block.decode_page(j, &mut decoder)?;
                    nnz += decoder.nnz();
                }
            }
            decode.push(start.elapsed().as_secs_f64());
        }
        let (with, segments) = data.n_segments();
        println!(
            "{path}: version {}, {} bytes, {segments} segments ({with} with a dictionary, \
             {} bytes resident)\n  validate + build {:.1} ns/row, decode {:.1} ns/row \
             ({nnz} non-zeros)",
            data.info().version,
            data.info().file_bytes,
            data.shared_dict_bytes(),
            1e9 * median(validate) / rows,
            1e9 * median(decode) / rows,
        );
    }
    Ok(())
}
