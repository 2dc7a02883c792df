//! Where the bytes of a dataset file go: per section, over every page of a
//! TOC file (as `tocpile encode` writes it), versions 1 to 8.
//!
//! For each file given, prints the bytes (and bytes per row) of: the page
//! headers (row count and payload length varints), the labels sections
//! (what the headers and payloads leave of each block), each encoded
//! batch's fixed header (magic, version, flags, `n_cols`; split between
//! self-contained pages and version-3 pages coded against a shared
//! dictionary; a compact page of version 4 has a form byte instead), its
//! packed arrays by section (row lengths, the first
//! layer's pair columns and value ids, the value dictionary, the codes:
//! those of version-3 pages apart), the packed arrays' own headers (count
//! and width; a compact page's, its widths), what remains of the batch (float dictionaries, dictionary
//! bases and kinds); the footer's shared dictionaries (version 3) by part
//! (their pairs' packed arrays, node parents and keys, and every header
//! around them); and the file header, the block index entries, the rest
//! of the footer and the trailer. Section names as in `docs/FORMAT.md`.
//!
//! ```text
//! cargo run --release --example file_bytes FILE.toc [FILE.toc ...]
//! ```

use std::collections::BTreeMap;

use tocpile::dataset::Dataset;
use tocpile::internals::{packed_arrays, packed_arrays_of};
use tocpile::DecodeTree;

mod footer;

fn varint_len(v: u64) -> u64 {
    (64 - v.leading_zeros() as u64).max(1).div_ceil(7)
}

/// Adds the parts of the footer and its shared dictionaries to `add`.
/// Returns the scaling factors equal to 1.
fn footer_parts(file: &[u8], add: &mut impl FnMut(&'static str, u64)) -> u64 {
    let f = footer::parse(file);
    add(
        "index: block entries (len, rows, pages, crc)",
        f.index.len() as u64,
    );
    add(
        "footer: scaling section (f64 per column)",
        f.scaling.len() as u64,
    );
    add(
        "footer: totals, schema, other sections",
        (f.footer.len() - f.index.len() - f.scaling.len() - f.shared.len()) as u64,
    );
    add("file header and trailer", 8 + 16);
    let mut headers = f.shared.len() as u64;
    for (_, dict) in &f.segments {
        headers -= dict.len() as u64;
        if dict.is_empty() {
            continue;
        }
        let mut d = footer::Cursor {
            bytes: &file[dict.clone()],
            at: 0,
        };
        let pairs_len = d.varint() as usize;
        headers += d.at as u64;
        let pairs = d.skip(pairs_len);
        let mut accounted = 0u64;
        for array in packed_arrays(pairs).expect("validated at open") {
            let name = match array.name {
                "pair columns" => "shared: pair columns",
                "value ids" => "shared: value ids",
                "dictionary offsets" | "dictionary deltas" => "shared: value dictionary (packed)",
                _ => "shared: empty row lengths and codes",
            };
            add(name, array.payload.len() as u64);
            let header = varint_len(array.count as u64) + 1;
            add("shared: packed array headers", header);
            accounted += array.payload.len() as u64 + header;
        }
        let n_cols = footer::Cursor {
            bytes: pairs,
            at: 6,
        }
        .varint();
        let header = 6 + varint_len(n_cols);
        add("shared: pairs batch header", header);
        add(
            "shared: value dictionary (f64 entries, kind, base)",
            pairs_len as u64 - accounted - header,
        );
        for name in ["shared: node parents", "shared: node keys"] {
            let (h, _, _, payload) = d.packed();
            add(name, payload.len() as u64);
            add("shared: packed array headers", h);
        }
    }
    add("shared: section and segment headers", headers);
    f.scaling_ones
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
        let (mut first_layer, mut codes, mut shared_pages) = (0u64, 0u64, 0u64);
        // What a page form sized to what it carries would save: a
        // version-3 page without magic, version and n_cols (the file
        // fixes them) and without the two counts (rows from the page
        // header, codes the sum of the row lengths), one form byte kept;
        // and with no payload length (such a page delimits itself).
        let (mut compact_saves, mut length_saves) = (0u64, 0u64);
        let mut tree = DecodeTree::default();
        for b in 0..data.n_blocks() {
            let block = data.read_block(b)?;
            // The labels sections are what the page headers and payloads
            // leave of the block (whatever form they are stored in).
            let mut labels = block.bytes().len() as u64;
            // Page copies (version 5: a zero byte each; from version 6 a
            // run of them is a zero byte and their count) hold no bytes
            // of a page of their own.
            let mut run = 0u64;
            for p in 0..=block.n_pages() {
                let copy = p < block.n_pages() && block.page_is_copy(p);
                if copy {
                    run += 1;
                    continue;
                }
                if run > 0 {
                    let bytes = if info.version >= 6 {
                        1 + varint_len(run)
                    } else {
                        run
                    };
                    add("page copies", bytes);
                    labels -= bytes;
                    run = 0;
                }
                if p == block.n_pages() {
                    break;
                }
                let view = block.toc_view(p, &mut tree)?;
                let blob = view.batch.as_bytes();
                // Version 3: a page coded against the segment's
                // dictionary; 4: the same, in the compact form; 7: a
                // compact page of row ids.
                let version = view.batch.version();
                let compact = version == 4 || version == 7;
                let shared = version >= 3;
                shared_pages += shared as u64;
                let rows = view.labels.len() as u64;
                let header = varint_len(rows) + varint_len(blob.len() as u64);
                add("page headers (rows, payload length)", header);
                labels -= header + blob.len() as u64;
                let n_cols_len = varint_len(view.batch.n_cols() as u64);
                let arrays = packed_arrays_of(&view.batch);
                // A page of row ids also stores its distinct rows' count.
                let distinct = arrays
                    .iter()
                    .find(|a| a.name == "row lengths")
                    .map_or(0, |a| a.count as u64);
                let batch_header = match version {
                    4 => 1,
                    7 => 1 + varint_len(distinct),
                    _ => 6 + n_cols_len,
                };
                add(
                    match (compact, shared) {
                        (true, _) => "compact page: form byte (and distinct rows)",
                        (false, true) => "v3 page: batch header (magic, version, flags, n_cols)",
                        (false, false) => "batch header (magic, version, flags, n_cols)",
                    },
                    batch_header,
                );
                if shared && !compact {
                    compact_saves +=
                        5 + n_cols_len + varint_len(rows) + varint_len(view.batch.n_codes() as u64);
                }
                if shared {
                    length_saves += varint_len(blob.len() as u64);
                }
                let mut accounted = batch_header;
                for array in arrays {
                    let name = match (shared, array.name) {
                        (true, "codes") => "v3 page: codes",
                        (true, "row lengths") => "v3 page: row lengths",
                        (_, "pair columns") => "first layer: pair columns",
                        (_, "value ids") => "first layer: value ids",
                        (_, "dictionary offsets" | "dictionary deltas") => {
                            "value dictionary (packed)"
                        }
                        (_, other) => other,
                    };
                    add(name, array.payload.len() as u64);
                    let header = if compact {
                        1
                    } else {
                        varint_len(array.count as u64) + 1
                    };
                    add(
                        match (compact, shared) {
                            (true, _) => "compact page: widths",
                            (false, true) => "v3 page: packed array headers (count, width)",
                            (false, false) => "packed array headers (count, width)",
                        },
                        header,
                    );
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
        let file = std::fs::read(&path).map_err(|e| tocpile::Error::io(&path, e))?;
        let scaling_ones = footer_parts(&file, &mut add);
        parts.retain(|_, bytes| *bytes > 0);
        let total: u64 = parts.values().sum();
        assert_eq!(total, info.file_bytes, "every byte in one part");
        let rows = info.n_rows.max(1) as f64;
        let (with_dict, segments) = data.n_segments();
        println!(
            "{path}: version {}, {} bytes, {} rows, {} pages of {} rows ({shared_pages} coded against a shared dictionary), {} blocks, {segments} segments ({with_dict} with a dictionary); per page: {:.1} first-layer pairs (the dictionary's for a version-3 page), {:.1} codes",
            info.version,
            info.file_bytes,
            info.n_rows,
            info.n_pages,
            info.page_rows,
            info.n_blocks,
            first_layer as f64 / info.n_pages.max(1) as f64,
            codes as f64 / info.n_pages.max(1) as f64,
        );
        if scaling_ones > 0 {
            println!("  (scaling section: {scaling_ones} of its factors are 1)");
        }
        for (what, bytes) in [
            ("compact v3 page header would save", compact_saves),
            (
                "... and no payload length (v3 and compact pages)",
                compact_saves + length_saves,
            ),
        ] {
            println!(
                "  {what:<56} {bytes:>10} B  {:>7.3} B/row  {:>5.1}%",
                bytes as f64 / rows,
                100.0 * bytes as f64 / info.file_bytes as f64
            );
        }
        let mut sorted: Vec<_> = parts.into_iter().collect();
        sorted.sort_by_key(|&(_, bytes)| std::cmp::Reverse(bytes));
        for (name, bytes) in sorted {
            println!(
                "  {name:<56} {bytes:>10} B  {:>7.3} B/row  {:>5.1}%",
                bytes as f64 / rows,
                100.0 * bytes as f64 / info.file_bytes as f64
            );
        }
    }
    Ok(())
}
