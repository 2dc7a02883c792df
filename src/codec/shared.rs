//! Dictionaries shared by the pages of a segment (format version 3).
//!
//! A 50-row page that carries its own first layer and prefix tree pays for
//! them again and again: the tree barely grows in 50 rows, so most rows
//! are written as many short codes. A *segment* (a run of consecutive
//! blocks of a dataset file, a few thousand rows) instead learns one tree
//! from all its rows (TOC paper Algorithm 1 over the segment) and keeps
//! the nodes that more than one row uses. That tree is stored once, as
//! the segment's dictionary, and each page of the segment stores only its
//! codes into it: codes below the dictionary's node count name shared
//! nodes, and Algorithm 2 goes on creating the page's own nodes above it.
//! A page is decodable given its segment's dictionary alone, so random
//! access per block (and the CorgiPile block shuffle) keeps working.
//!
//! The dictionary holds the segment's pairs as an encoded batch without
//! rows (its first layer: every pair of the segment, sorted by column,
//! with the value dictionary; validated by the checks every batch
//! passes), then the shared nodes explicitly, numbered breadth first so
//! that their parents never decrease: the parents as escape-coded gaps
//! (a few bits each) and the keys as first-layer ids. It is validated
//! once per segment.

use std::sync::Arc;

use hashbrown::HashMap;

use super::encoder::{child_key, Encoder};
use super::gaps::{best_width, running_totals, write_escaped};
use super::layout::{self, FLAG_SHARED, FLAG_TREE, MAGIC};
use super::{DecodeTree, TocBatch};
use crate::error::{Error, Result};
use crate::sparse::SparseBatch;
use crate::wire::{
    bits_needed, read_packed, unpack_into, write_packed, write_packed_payload, write_varint, Reader,
};

/// A segment's shared dictionary, validated: the complete decode tree of
/// its bytes. Pages of [`TocBatch::version`] 3 refer to it
/// ([`TocBatch::from_bytes_shared`]).
#[derive(Debug)]
pub struct SharedDict {
    bytes: Vec<u8>,
    /// Whether its pages are compact (a dictionary of a version-4 file)
    /// rather than version-3 batches.
    compact: bool,
    /// Whether a compact page may also be a page of row ids (a
    /// dictionary of a version-7 file).
    row_ids: bool,
    /// Whether its pairs' value dictionary is grouped (what only a file
    /// of version 8 may hold).
    grouped: bool,
    /// Whether its pairs' value ids are gap-coded (likewise).
    id_gaps: bool,
    /// The complete tree (node `i` has Algorithm 2's id `i`).
    pub(super) tree: DecodeTree,
}

impl SharedDict {
    /// Validates `bytes` as a shared dictionary (`docs/FORMAT.md`): the
    /// pairs, an encoded batch of [`Level::Full`](crate::Level::Full) with a prefix tree and
    /// no rows, checked as [`TocBatch::from_bytes`] checks every batch;
    /// then the nodes: as many parents as keys, every parent an earlier
    /// node (not the root), every key a pair, and the key's column past
    /// the column of the parent's last pair.
    ///
    /// # Errors
    /// As [`TocBatch::from_bytes`] for the pairs, [`Error::WrongFormat`]
    /// for pairs without a tree, of another level or with rows;
    /// [`Error::CodeOutOfRange`] for a parent or key out of range and
    /// [`Error::ColumnsNotAscending`] for a key not past its parent
    /// (`row` is the node's index among the shared nodes).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<SharedDict> {
        let mut r = Reader::new(&bytes);
        let pairs_len = r.varint("shared pairs length")?;
        let pairs = r.bytes(pairs_len, "shared pairs")?;
        let layout = layout::parse_pairs(pairs)?;
        let not_pairs = layout.is_shared()
            || !layout.has_tree()
            || layout.flags & layout::FLAG_INDEXED == 0
            || layout.n_rows() > 0;
        if not_pairs {
            return Err(Error::WrongFormat {
                expected: "the pairs of a shared dictionary (a TOC_FULL tree batch of no rows)",
                found: "another TOC batch",
            });
        }
        let grouped = matches!(
            layout.values,
            layout::Values::Indexed {
                dict: layout::Dict::Grouped { .. },
                ..
            }
        );
        let mut tree = DecodeTree::default();
        tree.build(pairs, &layout, false)?;
        let parents = read_packed(&mut r, "shared node parents (escape-coded gaps)", false)?;
        let keys = read_packed(&mut r, "shared node keys", false)?;
        if r.remaining() > 0 {
            return Err(Error::TrailingBytes {
                what: "the shared dictionary's node keys",
                offset: r.offset(),
                len: r.remaining(),
            });
        }
        let mut symbols = Vec::new();
        let mut totals = Vec::new();
        unpack_into(
            parents.payload(&bytes),
            parents.width,
            parents.count,
            &mut symbols,
        );
        let what = "shared node parents (one per key)";
        running_totals(&symbols, &parents, keys.count, what, &mut totals)?;
        unpack_into(keys.payload(&bytes), keys.width, keys.count, &mut symbols);
        grow_shared(&mut tree, &totals, &symbols)?;
        tree.codes = Vec::new();
        tree.row_starts = Vec::new();
        tree.scratch = Vec::new();
        tree.gaps = Vec::new();
        tree.trim();
        Ok(SharedDict {
            bytes,
            compact: false,
            row_ids: false,
            grouped,
            id_gaps: layout.has_id_gaps(),
            tree,
        })
    }

    /// Whether the pairs' value dictionary is grouped (scaled integers of
    /// several exponents and raw values): a dictionary of a dataset file
    /// of version 8 or later.
    pub fn grouped_values(&self) -> bool {
        self.grouped
    }

    /// Whether the pairs' value ids are gap-coded within columns (flag
    /// ID_GAPS): a dictionary of a dataset file of version 8 or later.
    pub fn gap_coded_ids(&self) -> bool {
        self.id_gaps
    }

    /// The dictionary, for pages in the compact form (`compact`: a
    /// dictionary of a dataset file of version 4, whose pages store no
    /// batch header and no counts) or as version-3 pages. Readers take
    /// the one form the file's version names.
    pub fn with_compact_pages(mut self, compact: bool) -> SharedDict {
        self.compact = compact;
        self
    }

    /// Whether its pages are in the compact form (see
    /// [`with_compact_pages`](Self::with_compact_pages)).
    pub fn compact_pages(&self) -> bool {
        self.compact
    }

    /// The dictionary, for compact pages that may also be pages of row
    /// ids (`row_ids`: a dictionary of a dataset file of version 7, whose
    /// pages store each distinct row once and an id per row where that
    /// is smaller; `docs/FORMAT.md`, "Pages of row ids").
    pub fn with_row_id_pages(mut self, row_ids: bool) -> SharedDict {
        self.row_ids = row_ids;
        self
    }

    /// Whether its compact pages may be pages of row ids (see
    /// [`with_row_id_pages`](Self::with_row_id_pages)).
    pub fn row_id_pages(&self) -> bool {
        self.compact && self.row_ids
    }

    /// The dictionary as stored.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Columns of the rows it serves.
    pub fn n_cols(&self) -> usize {
        self.tree.n_cols
    }

    /// Nodes of the shared tree, root and first layer included: codes
    /// below this name shared nodes.
    pub fn n_nodes(&self) -> usize {
        self.tree.parent.len()
    }

    /// Pairs `(column, value)` of the first layer.
    pub fn n_pairs(&self) -> usize {
        self.tree.n_first_layer()
    }

    /// Heap bytes held while it is resident: its bytes and its tree.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.tree.heap_bytes()
    }
}

/// Appends the shared nodes (`parents[i]`, `keys[i]`: node `n_first + i`)
/// to the complete tree of the pairs, checking each.
fn grow_shared(tree: &mut DecodeTree, parents: &[u64], keys: &[u32]) -> Result<()> {
    let n_first = tree.parent.len();
    let n = n_first + keys.len();
    if n as u64 > u32::MAX as u64 {
        return Err(Error::TooLarge {
            what: "shared dictionary nodes",
            value: n as u64,
            max: u32::MAX as u64,
        });
    }
    for v in [
        &mut tree.parent,
        &mut tree.key,
        &mut tree.first,
        &mut tree.depth,
    ] {
        v.reserve(keys.len());
    }
    for (i, (&p, &k)) in parents.iter().zip(keys).enumerate() {
        let id = n_first + i;
        if p == 0 || p >= id as u64 {
            return Err(Error::CodeOutOfRange {
                row: i,
                position: 0,
                code: p,
                limit: id as u64,
            });
        }
        if k == 0 || k as usize >= n_first {
            return Err(Error::CodeOutOfRange {
                row: i,
                position: 1,
                code: k as u64,
                limit: n_first as u64,
            });
        }
        let p = p as usize;
        let (last, col) = (
            tree.pair_cols[tree.key[p] as usize],
            tree.pair_cols[k as usize],
        );
        if last >= col {
            return Err(Error::ColumnsNotAscending {
                row: i,
                position: 1,
                prev: last as u64,
                col: col as u64,
            });
        }
        tree.parent.push(p as u32);
        tree.key.push(k);
        let (first, depth) = (tree.first[p], tree.depth[p] + 1);
        tree.first.push(first);
        tree.depth.push(depth);
    }
    Ok(())
}

/// What the encoder learned from a segment: the dictionary and the maps
/// that encode its pages against it.
#[derive(Debug)]
pub struct SegmentModel {
    dict: Arc<SharedDict>,
    /// `(column, value bits)` -> first-layer id.
    pair_ids: HashMap<(u32, u64), u32>,
    /// `child_key(node, pair)` -> shared node.
    children: HashMap<u64, u32>,
}

impl SegmentModel {
    /// The dictionary to store with the segment.
    pub fn dict(&self) -> &Arc<SharedDict> {
        &self.dict
    }
}

/// Shared nodes are those that at least this many codes of the segment
/// use (with their ancestors): a node used once costs the dictionary more
/// than it saves its page, which can create it locally.
pub const MIN_NODE_USES: u32 = 2;

impl Encoder {
    /// Learns a segment's dictionary from all of its rows: its pairs
    /// sorted by column, and the nodes of Algorithm 1's tree over the
    /// segment that at least [`MIN_NODE_USES`] codes use, with their
    /// ancestors. `None` for a segment without entries.
    ///
    /// # Errors
    /// [`Error::TooLarge`] for a segment of `2^32 - 1` entries or more.
    pub fn learn_segment(&mut self, rows: &SparseBatch) -> Result<Option<SegmentModel>> {
        self.learn_segment_in(rows, false)
    }

    /// As [`learn_segment`](Self::learn_segment), the dictionary for
    /// pages in the compact form when `compact_pages` (what a dataset
    /// file of version 8 holds; see [`SharedDict::with_compact_pages`]
    /// and [`SharedDict::with_row_id_pages`]): its values may then be
    /// grouped by exponent ([`SharedDict::grouped_values`]), and
    /// [`encode_shared`](Self::encode_shared) writes compact pages, or
    /// pages of row ids where those are smaller.
    ///
    /// # Errors
    /// As `learn_segment`.
    pub fn learn_segment_in(
        &mut self,
        rows: &SparseBatch,
        compact_pages: bool,
    ) -> Result<Option<SegmentModel>> {
        if rows.nnz() == 0 {
            return Ok(None);
        }
        if rows.nnz() as u64 >= u32::MAX as u64 - 1 {
            return Err(Error::TooLarge {
                what: "entries in one segment",
                value: rows.nnz() as u64,
                max: u32::MAX as u64 - 2,
            });
        }
        // For a version-8 file the first layer is numbered by column and
        // dictionary id (`sort_first_layer`), and the ids may be written
        // as gaps.
        self.grouped_dictionary = compact_pages;
        self.logical(rows, true);
        let n_first = self.first_cols.len() as u32 + 1;
        let n_created = self.codes.len() - self.row_lens.iter().filter(|&&l| l > 0).count();
        // Parent and key of every created node, by id - n_first.
        let mut parent = vec![0u32; n_created];
        let mut key = vec![0u32; n_created];
        for (&k, &child) in &self.children {
            let slot = (child - n_first) as usize;
            parent[slot] = (k >> 32) as u32;
            key[slot] = k as u32;
        }
        let mut uses = vec![0u32; n_created];
        for &c in &self.codes {
            if c >= n_first {
                uses[(c - n_first) as usize] += 1;
            }
        }
        // Keep the used nodes and their ancestors (parents have smaller
        // ids, so one descending pass closes the set).
        let mut keep: Vec<bool> = uses.iter().map(|&u| u >= MIN_NODE_USES).collect();
        for i in (0..n_created).rev() {
            if keep[i] && parent[i] >= n_first {
                keep[(parent[i] - n_first) as usize] = true;
            }
        }
        // Breadth-first ids: a node's children (by key) follow every
        // node numbered before it, so the parents never decrease.
        let mut kids: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n_first as usize + n_created];
        for i in (0..n_created).filter(|&i| keep[i]) {
            kids[parent[i] as usize].push((key[i], i as u32 + n_first));
        }
        let mut new_id = vec![0u32; n_first as usize + n_created];
        for (i, id) in new_id.iter_mut().enumerate().take(n_first as usize) {
            *id = i as u32;
        }
        let mut queue: Vec<u32> = (1..n_first).collect();
        let (mut parents, mut keys) = (Vec::new(), Vec::new());
        let mut children = HashMap::new();
        let (mut next, mut at, mut last_parent) = (n_first, 0, 0u32);
        while at < queue.len() {
            let old = queue[at] as usize;
            at += 1;
            let mut list = std::mem::take(&mut kids[old]);
            list.sort_unstable();
            for (k, child) in list {
                let p = new_id[old];
                new_id[child as usize] = next;
                children.insert(child_key(p, k), next);
                parents.push((p - last_parent) as u64);
                last_parent = p;
                keys.push(k);
                queue.push(child);
                next += 1;
            }
        }
        let pair_ids: HashMap<(u32, u64), u32> = self
            .first_cols
            .iter()
            .zip(&self.first_vals)
            .enumerate()
            .map(|(i, (&c, &v))| ((c, v.to_bits()), i as u32 + 1))
            .collect();
        // The dictionary: the segment's first layer as a tree batch of
        // Level::Full with no rows, then the nodes.
        self.codes.clear();
        self.row_lens.clear();
        let saved = self.options;
        self.options = super::EncodeOptions::default();
        self.options.adaptive.flat_pages = false;
        let mut pairs = Vec::new();
        pairs.extend_from_slice(&MAGIC);
        pairs.push(1);
        let empty = SparseBatch::with_cols(rows.n_cols())?;
        self.full(&empty, &mut pairs);
        self.options = saved;
        self.grouped_dictionary = false;
        let mut out = Vec::new();
        write_varint(&mut out, pairs.len() as u64);
        out.extend_from_slice(&pairs);
        let (width, _) = best_width(&parents, false);
        write_escaped(&mut out, &parents, width, &mut self.scratch);
        write_packed(&mut out, &keys, bits_needed(n_first - 1));
        let dict = Arc::new(
            SharedDict::from_bytes(out)?
                .with_compact_pages(compact_pages)
                .with_row_id_pages(compact_pages),
        );
        debug_assert_eq!(dict.n_nodes(), next as usize);
        Ok(Some(SegmentModel {
            dict,
            pair_ids,
            children,
        }))
    }

    /// Encodes `batch` (rows of the segment `model` was learned from) as a
    /// version-3 page: its codes into the shared tree, Algorithm 1
    /// creating the page's own nodes above the shared ones.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for an entry that is not a pair of the
    /// segment; [`Error::TooLarge`] as [`Encoder::encode`].
    pub fn encode_shared(&mut self, batch: &SparseBatch, model: &SegmentModel) -> Result<TocBatch> {
        let n_shared = model.dict.n_nodes() as u64;
        if batch.nnz() as u64 + n_shared >= u32::MAX as u64 {
            return Err(Error::TooLarge {
                what: "entries in one batch",
                value: batch.nnz() as u64,
                max: u32::MAX as u64 - n_shared - 1,
            });
        }
        self.seq.clear();
        for (&c, &v) in batch.cols().iter().zip(batch.values()) {
            match model.pair_ids.get(&(c, v.to_bits())) {
                Some(&id) => self.seq.push(id),
                None => {
                    return Err(Error::BadArgument {
                        what: "rows encoded against a segment's dictionary",
                        expected: "rows of that segment",
                    })
                }
            }
        }
        self.children.clear();
        self.codes.clear();
        self.row_lens.clear();
        let mut next_node = n_shared as u32;
        for w in batch.offsets().windows(2) {
            let row = &self.seq[w[0]..w[1]];
            let before = self.codes.len();
            let mut i = 0;
            while i < row.len() {
                let mut node = row[i];
                let mut j = i + 1;
                while let Some(&p) = row.get(j) {
                    let k = child_key(node, p);
                    let found = if (node as u64) < n_shared {
                        model.children.get(&k).or_else(|| self.children.get(&k))
                    } else {
                        self.children.get(&k)
                    };
                    match found {
                        Some(&child) => {
                            node = child;
                            j += 1;
                        }
                        None => break,
                    }
                }
                self.codes.push(node);
                if j < row.len() {
                    self.children.insert(child_key(node, row[j]), next_node);
                    next_node += 1;
                }
                i = j;
            }
            self.row_lens.push((self.codes.len() - before) as u32);
        }
        let mut out = Vec::new();
        let (lens_width, codes_width) = (
            self.width_of(&self.row_lens, 1),
            self.width_of(&self.codes, 1),
        );
        let layout = if model.dict.compact_pages() {
            // The compact form: the counts are the page's rows and the
            // sum of its row lengths, the columns the dictionary's.
            let row_ids = model.dict.row_id_pages();
            if !(row_ids && self.write_row_ids(lens_width, codes_width, &mut out)) {
                out.push(layout::COMPACT_PAGE);
                write_packed_payload(&mut out, &self.row_lens, lens_width);
                write_packed_payload(&mut out, &self.codes, codes_width);
            }
            super::compact_layout(&out, batch.n_rows(), batch.n_cols(), row_ids)
        } else {
            out.extend_from_slice(&MAGIC);
            out.push(3);
            out.push(FLAG_TREE | FLAG_SHARED);
            write_varint(&mut out, batch.n_cols() as u64);
            write_packed(&mut out, &self.row_lens, lens_width);
            write_packed(&mut out, &self.codes, codes_width);
            layout::parse(&out)
        }
        .expect("the encoder writes valid pages");
        let page = TocBatch::from_shared_parts(out, layout, batch.nnz() as u64, &model.dict);
        debug_assert!(TocBatch::from_bytes_shared(
            page.as_bytes(),
            batch.n_rows(),
            &model.dict,
            &mut DecodeTree::default()
        )
        .is_ok_and(|p| p.decode() == *batch));
        Ok(page)
    }
}
