//! The kernel table's version-3 rows: each batch as pages of dataset file
//! version 3 (`docs/FORMAT.md`), coded against the shared dictionary of
//! its segment, and the kernels run on one tree for the batch's pages
//! (`DecodeTree::build_pages`), so that the pairs and shared nodes the
//! pages have in common are computed once per batch (issue 27, item 2).
//!
//! Segments are learned over the measured rows as `tocpile encode` learns
//! them over a file's: consecutive rows, at most
//! [`DEFAULT_SEGMENT_ROWS`](tocpile::dataset::DEFAULT_SEGMENT_ROWS) each,
//! here whole batches (a page never straddles two segments). Every page
//! is written as a version-3 page, even where the file writer would keep
//! it self-contained because that is smaller.

use tocpile::formats::FormatKind;
use tocpile::{DecodeTree, EncodeOptions, Encoder, Error, Result, SparseBatch};

/// A row of the kernel table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelFormat {
    /// A batch format ([`FormatKind`]): one encoded batch per batch.
    Batch(FormatKind),
    /// Each batch as `pages` version-3 pages of TOC_FULL against their
    /// segment's dictionary, merged into one tree (or, `apart`, one tree
    /// a page, the kernels run page after page).
    Shared {
        /// Pages a batch is cut into (rows shared out evenly).
        pages: usize,
        /// One tree a page rather than one for the batch.
        apart: bool,
        /// Kernels on the tree always, as before the per-batch choice of
        /// form (`DecodeTree::settle_for_kernels`): for comparison.
        tree_only: bool,
    },
    /// Each batch as the loader's pair codes (`Batch::Coded`): a code per
    /// entry into one table of pairs that every batch shares (`pairs.rs`).
    Pairs,
}

impl KernelFormat {
    /// The name in tables and JSON: the batch format's, or `TOC_V3` (one
    /// page a batch) and `TOC_V3xK` (K pages a batch merged).
    pub fn name(self) -> String {
        match self {
            KernelFormat::Batch(kind) => kind.name().to_string(),
            KernelFormat::Shared {
                pages,
                apart,
                tree_only,
            } => {
                let mut name = "TOC_V3".to_string();
                if pages > 1 {
                    name += &format!("x{pages}");
                }
                if apart {
                    name += "_APART";
                }
                if tree_only {
                    name += "_TREE";
                }
                name
            }
            KernelFormat::Pairs => "PAIRS".to_string(),
        }
    }

    /// Parses a name of [`FormatKind::from_name`], `pairs` (or
    /// `pair-codes`), `toc-v3`, `toc-v3xK` (K from 1 to 1,000) or
    /// `toc-v3xK-apart`, these three optionally ending in `-tree`,
    /// ignoring case and `-` or `_`.
    ///
    /// # Errors
    /// A message naming the formats for anything else.
    pub fn parse(text: &str) -> std::result::Result<KernelFormat, String> {
        if let Some(kind) = FormatKind::from_name(text) {
            return Ok(KernelFormat::Batch(kind));
        }
        let plain: String = text
            .chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .collect::<String>()
            .to_ascii_lowercase();
        if plain == "pairs" || plain == "paircodes" {
            return Ok(KernelFormat::Pairs);
        }
        let (plain, tree_only) = match plain.strip_suffix("tree") {
            Some(rest) => (rest.to_string(), true),
            None => (plain, false),
        };
        let (plain, apart) = match plain.strip_suffix("apart") {
            Some(rest) => (rest, true),
            None => (plain.as_str(), false),
        };
        let pages = match plain.strip_prefix("tocv3") {
            Some("") if !apart => Some(1),
            Some(rest) => rest
                .strip_prefix('x')
                .and_then(|k| k.parse::<usize>().ok())
                .filter(|k| (1..=1000).contains(k)),
            None => None,
        };
        let shared = pages.map(|pages| KernelFormat::Shared {
            pages,
            apart,
            tree_only,
        });
        shared.ok_or_else(|| {
            let names: Vec<&str> = FormatKind::ALL.iter().map(|k| k.name()).collect();
            format!(
                "unknown format {text:?} (toc, toc-v3, toc-v3xK for K version-3 pages a batch, \
                 toc-v3xK-apart for their kernels page by page, any of these ending in -tree \
                 for kernels on the tree whatever it costs, pairs for the loader's pair codes, \
                 or one of {})",
                names.join(", ")
            )
        })
    }
}

/// The batches as version-3 pages, `pages` a batch, each batch's pages
/// merged into one tree (or, `apart`, one tree a page: a batch's trees
/// are consecutive, `pages` a batch); and the bytes: every page plus every
/// segment's dictionary once.
///
/// # Errors
/// [`Error::BadArgument`] for a batch of fewer rows than `pages`; what
/// learning a segment or encoding a page returns.
pub fn encode_shared(
    batches: &[SparseBatch],
    pages: usize,
    apart: bool,
    tree_only: bool,
) -> Result<(Vec<DecodeTree>, usize)> {
    let settle = |mut tree: DecodeTree| {
        if !tree_only {
            tree.settle_for_kernels();
        }
        tree
    };
    let segment_rows = tocpile::dataset::DEFAULT_SEGMENT_ROWS;
    let mut encoder = Encoder::new(EncodeOptions::default());
    let (mut trees, mut bytes) = (Vec::with_capacity(batches.len()), 0);
    let mut start = 0;
    while start < batches.len() {
        // Whole batches up to the segment size (at least one).
        let mut end = start + 1;
        let mut rows = batches[start].n_rows();
        while end < batches.len() && rows + batches[end].n_rows() <= segment_rows {
            rows += batches[end].n_rows();
            end += 1;
        }
        let mut segment = SparseBatch::with_cols(batches[start].n_cols())?;
        for batch in &batches[start..end] {
            for r in 0..batch.n_rows() {
                let (cols, values) = batch.row(r);
                segment.push_row(cols, values)?;
            }
        }
        let model = encoder.learn_segment(&segment)?;
        if let Some(model) = &model {
            bytes += model.dict().as_bytes().len();
        }
        for batch in &batches[start..end] {
            let n = batch.n_rows();
            if n < pages {
                return Err(Error::BadArgument {
                    what: "pages a batch (toc-v3xK)",
                    expected: "at most as many pages as the batch has rows",
                });
            }
            let encoded = (0..pages)
                .map(|p| {
                    let rows = batch.slice_rows(p * n / pages..(p + 1) * n / pages);
                    match &model {
                        Some(model) => encoder.encode_shared(&rows, model),
                        // A segment without entries: its pages are empty,
                        // self-contained.
                        None => encoder.encode(&rows),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            bytes += encoded.iter().map(|p| p.encoded_len()).sum::<usize>();
            if apart {
                trees.extend(encoded.iter().map(|p| settle(p.tree())));
                continue;
            }
            let mut tree = DecodeTree::default();
            match &encoded[..] {
                [one] => one.build_tree(&mut tree),
                _ if model.is_none() => {
                    return Err(Error::BadArgument {
                        what: "batches merged from pages (toc-v3xK)",
                        expected: "a segment with entries",
                    })
                }
                many => tree.build_pages(many)?,
            }
            trees.push(settle(tree));
        }
        start = end;
    }
    Ok((trees, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for f in [
            KernelFormat::Batch(FormatKind::Csr),
            KernelFormat::Shared {
                pages: 1,
                apart: false,
                tree_only: false,
            },
            KernelFormat::Shared {
                pages: 5,
                apart: false,
                tree_only: false,
            },
            KernelFormat::Shared {
                pages: 5,
                apart: true,
                tree_only: false,
            },
            KernelFormat::Shared {
                pages: 1,
                apart: false,
                tree_only: true,
            },
            KernelFormat::Shared {
                pages: 5,
                apart: true,
                tree_only: true,
            },
            KernelFormat::Pairs,
        ] {
            assert_eq!(KernelFormat::parse(&f.name()), Ok(f));
        }
        assert_eq!(
            KernelFormat::parse("toc-v3x5"),
            Ok(KernelFormat::Shared {
                pages: 5,
                apart: false,
                tree_only: false,
            })
        );
        assert_eq!(
            KernelFormat::parse("toc-v3x5-apart"),
            Ok(KernelFormat::Shared {
                pages: 5,
                apart: true,
                tree_only: false,
            })
        );
        assert_eq!(KernelFormat::parse("pair-codes"), Ok(KernelFormat::Pairs));
        assert_eq!(
            KernelFormat::parse("toc"),
            Ok(KernelFormat::Batch(FormatKind::TocFull))
        );
        for bad in [
            "toc-v3x0",
            "toc-v3x",
            "toc-v3y5",
            "toc-v4",
            "tocv3x1001",
            "toc-v3-apart",
        ] {
            assert!(KernelFormat::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn merged_pages_decode_to_the_batches() {
        let rows: Vec<[f64; 3]> = (0..40)
            .map(|i| [1.0, (i % 3) as f64, if i % 4 == 0 { 0.0 } else { 2.5 }])
            .collect();
        let batch = SparseBatch::from_dense_rows(3, &rows).unwrap();
        let batches = [batch.slice_rows(0..20), batch.slice_rows(20..40)];
        for (pages, apart) in [(1, false), (5, false), (5, true)] {
            let (trees, bytes) = encode_shared(&batches, pages, apart, false).unwrap();
            assert!(bytes > 0);
            assert_eq!(trees.len(), if apart { 10 } else { 2 });
            let mut out = SparseBatch::with_cols(3).unwrap();
            for tree in &trees {
                let mut page = SparseBatch::default();
                tree.decode_into(&mut page);
                for r in 0..page.n_rows() {
                    let (c, v) = page.row(r);
                    out.push_row(c, v).unwrap();
                }
            }
            assert!(out == batch, "{pages} pages, apart {apart}");
        }
        assert!(encode_shared(&batches, 21, false, false).is_err());
    }
}
