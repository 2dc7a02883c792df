//! Where the bytes of a dataset file go: per section, over every page of a
//! TOC file (as `tocpile encode` writes it).
//!
//! For each file given, prints the bytes (and bytes per row) of: the page
//! headers (row count and payload length varints), the labels sections
//! (what the headers and payloads leave of each block),
//! each encoded batch's fixed header (magic, version, flags, `n_cols`),
//! its packed arrays by section (row lengths, the first layer's pair
//! columns and value ids, the value dictionary, the codes), the packed
//! arrays' own headers (count and width), what remains of the batch (float
//! dictionaries, dictionary bases and kinds), and the blocks' index,
//! footer and trailer. Section names as in `docs/FORMAT.md`.
//!
//! ```text
//! cargo run --release --example file_bytes FILE.toc [FILE.toc ...]
//! ```

use std::collections::BTreeMap;

use tocpile::dataset::Dataset;
use tocpile::internals::packed_arrays;
use tocpile::DecodeTree;

fn varint_len(v: u64) -> u64 {
    (64 - v.leading_zeros() as u64).max(1).div_ceil(7)
}

fn main() -> tocpile::Result<()> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: file_bytes FILE.toc [FILE.toc ...]");
        std::process::exit(2);
    }
    for path in paths {
        let data = Dataset::open(&path)?;
        let info = data.info().clone();
        let mut parts: BTreeMap<&'static str, u64> = BTreeMap::new();
        let mut add = |name: &'static str, n: u64| *parts.entry(name).or_default() += n;
        let mut first_layer = 0u64;
        let mut codes = 0u64;
        let mut tree = DecodeTree::default();
        for b in 0..data.n_blocks() {
            let block = data.read_block(b)?;
            // The labels sections are what the page headers and payloads
            // leave of the block (whatever form they are stored in).
            let mut labels = block.bytes().len() as u64;
            for p in 0..block.n_pages() {
                let view = block.toc_view(p, &mut tree)?;
                let blob = view.batch.as_bytes();
                let rows = view.labels.len() as u64;
                let header = varint_len(rows) + varint_len(blob.len() as u64);
                add("page headers (rows, payload length)", header);
                labels -= header + blob.len() as u64;
                let n_cols_len = varint_len(view.batch.n_cols() as u64);
                add(
                    "batch header (magic, version, flags, n_cols)",
                    6 + n_cols_len,
                );
                let mut accounted = 6 + n_cols_len;
                for array in packed_arrays(blob)? {
                    let name = match array.name {
                        "pair columns" => "first layer: pair columns",
                        "value ids" => "first layer: value ids",
                        "dictionary offsets" | "dictionary deltas" => "value dictionary (packed)",
                        other => other,
                    };
                    add(name, array.payload.len() as u64);
                    let header = varint_len(array.count as u64) + 1;
                    add("packed array headers (count, width)", header);
                    accounted += array.payload.len() as u64 + header;
                }
                add(
                    "value dictionary (f64 entries, kind, base)",
                    blob.len() as u64 - accounted,
                );
                first_layer += view.batch.n_first_layer() as u64;
                codes += view.batch.n_codes() as u64;
            }
            add("labels", labels);
        }
        let pages_total: u64 = parts.values().sum();
        parts.insert(
            "file header, block index, footer, trailer",
            info.file_bytes - pages_total,
        );
        let rows = info.n_rows.max(1) as f64;
        println!(
            "{path}: {} bytes, {} rows, {} pages of {} rows, {} blocks; per page: {:.1} first-layer pairs, {:.1} codes",
            info.file_bytes,
            info.n_rows,
            info.n_pages,
            info.page_rows,
            info.n_blocks,
            first_layer as f64 / info.n_pages.max(1) as f64,
            codes as f64 / info.n_pages.max(1) as f64,
        );
        let mut sorted: Vec<_> = parts.into_iter().collect();
        sorted.sort_by_key(|&(_, bytes)| std::cmp::Reverse(bytes));
        for (name, bytes) in sorted {
            println!(
                "  {name:<46} {bytes:>10} B  {:>7.2} B/row  {:>5.1}%",
                bytes as f64 / rows,
                100.0 * bytes as f64 / info.file_bytes as f64
            );
        }
    }
    Ok(())
}
