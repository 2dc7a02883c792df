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
//! The dictionary is itself an encoded batch (version 1 or 2) whose
//! complete decode tree (every node Algorithm 2 creates, kept with its
//! id) is the shared tree: its first layer is every pair of the segment,
//! sorted by column, and each of its rows `[p, k]` creates the node of
//! parent `p` and key `k`. So the dictionary is validated by the checks
//! every batch passes (`DecodeTree::build`), once per segment.

use std::sync::Arc;

use hashbrown::HashMap;

use super::encoder::{child_key, Encoder};
use super::layout::{self, FLAG_SHARED, FLAG_TREE, MAGIC};
use super::{DecodeTree, TocBatch};
use crate::error::{Error, Result};
use crate::sparse::SparseBatch;
use crate::wire::{write_packed, write_varint};

/// A segment's shared dictionary, validated: the complete decode tree of
/// its bytes. Pages of [`TocBatch::version`] 3 refer to it
/// ([`TocBatch::from_bytes_shared`]).
#[derive(Debug)]
pub struct SharedDict {
    bytes: Vec<u8>,
    /// The complete tree (node `i` has Algorithm 2's id `i`).
    pub(super) tree: DecodeTree,
}

impl SharedDict {
    /// Validates `bytes` as a shared dictionary: an encoded batch of
    /// [`Level::Full`] with a prefix tree, checked as
    /// [`TocBatch::from_bytes`] checks every batch, whose complete decode
    /// tree is kept.
    ///
    /// # Errors
    /// As [`TocBatch::from_bytes`]; [`Error::WrongFormat`] for a batch
    /// without a tree or of another level (a version-3 page included).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<SharedDict> {
        let layout = layout::parse(&bytes)?;
        if layout.is_shared() || !layout.has_tree() || layout.flags & layout::FLAG_INDEXED == 0 {
            return Err(Error::WrongFormat {
                expected: "a shared dictionary (a TOC_FULL batch with a prefix tree)",
                found: "another TOC batch",
            });
        }
        let mut tree = DecodeTree::default();
        tree.build(&bytes, &layout, false)?;
        crate::limits::check_page_nnz(tree.decoded_nnz(), tree.n_rows(), tree.n_cols())?;
        tree.codes = Vec::new();
        tree.row_starts = Vec::new();
        tree.scratch = Vec::new();
        tree.gaps = Vec::new();
        tree.trim();
        Ok(SharedDict { bytes, tree })
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
        let mut new_id = vec![0u32; n_created];
        let mut next = n_first;
        let mut dict_codes = Vec::new();
        let mut children = HashMap::new();
        for i in 0..n_created {
            if !keep[i] {
                continue;
            }
            let p = parent[i];
            let p = if p < n_first {
                p
            } else {
                new_id[(p - n_first) as usize]
            };
            new_id[i] = next;
            children.insert(child_key(p, key[i]), next);
            dict_codes.extend_from_slice(&[p, key[i]]);
            next += 1;
        }
        let pair_ids: HashMap<(u32, u64), u32> = self
            .first_cols
            .iter()
            .zip(&self.first_vals)
            .enumerate()
            .map(|(i, (&c, &v))| ((c, v.to_bits()), i as u32 + 1))
            .collect();
        // The dictionary: the segment's first layer, and a row [p, k] per
        // kept node, written as a tree batch of Level::Full.
        self.codes = dict_codes;
        self.row_lens.clear();
        self.row_lens.resize(self.codes.len() / 2, 2);
        let saved = self.options;
        self.options = super::EncodeOptions::default();
        self.options.adaptive.flat_pages = false;
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.push(1);
        let empty = SparseBatch::with_cols(rows.n_cols())?;
        self.full(&empty, &mut out);
        self.options = saved;
        let dict = Arc::new(SharedDict::from_bytes(out)?);
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
        out.extend_from_slice(&MAGIC);
        out.push(3);
        out.push(FLAG_TREE | FLAG_SHARED);
        write_varint(&mut out, batch.n_cols() as u64);
        write_packed(&mut out, &self.row_lens, self.width_of(&self.row_lens, 1));
        write_packed(&mut out, &self.codes, self.width_of(&self.codes, 1));
        let layout = layout::parse(&out).expect("the encoder writes valid pages");
        let page = TocBatch::from_shared_parts(out, layout, batch.nnz() as u64, &model.dict);
        debug_assert!(TocBatch::from_bytes_shared(
            page.as_bytes(),
            &model.dict,
            &mut DecodeTree::default()
        )
        .is_ok_and(|p| p.decode() == *batch));
        Ok(page)
    }
}
