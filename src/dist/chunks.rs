//! Coding over blocks of unequal size: blocks are cut into chunks of
//! `chunk_bytes` (the last chunk of a block is shorter), the chunks are the
//! items the planner codes over (UberShuffle's data points are
//! unit-sized), and a packet is as long as its longest chunk.
//!
//! Padding therefore happens only where a block's short last chunk shares
//! a packet with a longer chunk: at most one chunk per block delivered,
//! whatever the spread of block sizes. The alternatives measured against
//! it in every [`super::ShuffleReport`]: padding every block to the
//! largest block costs the largest-to-mean ratio on every packet; coding
//! whole blocks with each packet as long as its longest block is close to
//! chunks on files whose blocks are nearly equal (TOC blocks close at the
//! first page that reaches the target size) but its packets are block
//! sized and vary with them. Chunks keep nearly every packet the same size
//! (one message size, an even split for the multicast relay), bound a
//! receiver's buffer by the chunk size, and let the carpool flow fill
//! empty slots at chunk granularity. All chunks of a block share its
//! holders, so the coding gain is the blocks'.
//!
//! [`Decoder`] is one worker's side (paper Algorithm 3): for each packet
//! addressed to it, XOR the payload with the other parts' chunks from its
//! cache; then check every recovered block against its CRC-32.

use std::collections::HashMap;
use std::ops::Range;

use super::assign::{Assignment, Caches};
use super::packet::{Demand, Packet};
use crate::error::{Error, Result};

/// Where each block's chunks are: block `b` is chunks
/// `first[b]..first[b + 1]`, at least one even for an empty block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLayout {
    chunk_bytes: usize,
    block_lens: Vec<u64>,
    first: Vec<usize>,
}

impl ChunkLayout {
    /// The layout of blocks of `block_lens` bytes in chunks of
    /// `chunk_bytes`.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for a chunk size of 0;
    /// [`Error::TooLarge`] if the chunk count overflows.
    pub fn new(block_lens: &[u64], chunk_bytes: usize) -> Result<ChunkLayout> {
        if chunk_bytes == 0 {
            return Err(Error::BadArgument {
                what: "chunk_bytes",
                expected: "at least 1",
            });
        }
        let mut first = Vec::with_capacity(block_lens.len() + 1);
        let mut total: u64 = 0;
        first.push(0);
        for &len in block_lens {
            total += len.div_ceil(chunk_bytes as u64).max(1);
            if total > u32::MAX as u64 {
                return Err(Error::TooLarge {
                    what: "chunks of the dataset",
                    value: total,
                    max: u32::MAX as u64,
                });
            }
            first.push(total as usize);
        }
        Ok(ChunkLayout {
            chunk_bytes,
            block_lens: block_lens.to_vec(),
            first,
        })
    }

    /// Bytes of every chunk (and of every packet).
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.block_lens.len()
    }

    /// Number of chunks of all blocks.
    pub fn n_chunks(&self) -> usize {
        self.first[self.block_lens.len()]
    }

    /// Bytes of block `block`.
    ///
    /// # Panics
    /// If `block >= n_blocks()`.
    pub fn block_len(&self, block: usize) -> u64 {
        self.block_lens[block]
    }

    /// The chunks of `block`.
    ///
    /// # Panics
    /// If `block >= n_blocks()`.
    pub fn chunks(&self, block: usize) -> Range<usize> {
        self.first[block]..self.first[block + 1]
    }

    /// The block of `chunk` and the chunk's index within it.
    ///
    /// # Panics
    /// If `chunk >= n_chunks()`.
    pub fn locate(&self, chunk: usize) -> (usize, usize) {
        assert!(chunk < self.n_chunks(), "chunk {chunk} out of range");
        let block = self.first.partition_point(|&f| f <= chunk) - 1;
        (block, chunk - self.first[block])
    }

    /// The bytes of chunk `index` of a block.
    pub fn slice<'a>(&self, block_bytes: &'a [u8], index: usize) -> &'a [u8] {
        let start = index
            .saturating_mul(self.chunk_bytes)
            .min(block_bytes.len());
        let end = start
            .saturating_add(self.chunk_bytes)
            .min(block_bytes.len());
        &block_bytes[start..end]
    }

    /// Bytes of chunk `chunk`: `chunk_bytes`, less for a block's last.
    ///
    /// # Panics
    /// If `chunk >= n_chunks()`.
    pub fn chunk_len(&self, chunk: usize) -> usize {
        let (block, index) = self.locate(chunk);
        let rest = self.block_lens[block] - (index * self.chunk_bytes) as u64;
        rest.min(self.chunk_bytes as u64) as usize
    }

    /// Bytes of `packet`'s payload: its longest chunk.
    ///
    /// # Panics
    /// If a part's chunk is out of range.
    pub fn packet_len(&self, packet: &Packet) -> usize {
        packet
            .parts
            .iter()
            .map(|p| self.chunk_len(p.item))
            .max()
            .unwrap_or(0)
    }

    /// Zero bytes `packet` carries for its parts: for each part, the
    /// packet's length minus its chunk's.
    ///
    /// # Panics
    /// If a part's chunk is out of range.
    pub fn padding(&self, packet: &Packet) -> u64 {
        let len = self.packet_len(packet);
        packet
            .parts
            .iter()
            .map(|p| (len - self.chunk_len(p.item)) as u64)
            .sum()
    }

    /// The demands of the shuffle into `next` at chunk granularity: each
    /// block's demand ([`Caches::demands`]) once per chunk.
    ///
    /// # Panics
    /// As [`Caches::demands`], or if the caches hold a block this layout
    /// lacks.
    pub fn demands(&self, caches: &Caches, next: &Assignment) -> Vec<Demand> {
        caches
            .demands(next)
            .into_iter()
            .flat_map(|d| {
                self.chunks(d.item).map(move |item| Demand {
                    item,
                    worker: d.worker,
                    holders: d.holders,
                })
            })
            .collect()
    }

    /// The payload of `packet`: the XOR of its parts' chunks, each
    /// zero-padded to the longest; `block` gives a block's bytes.
    ///
    /// # Panics
    /// If a part's chunk is out of range.
    pub fn encode<'a>(&self, packet: &Packet, block: impl Fn(usize) -> &'a [u8]) -> Vec<u8> {
        let mut payload = vec![0u8; self.packet_len(packet)];
        for part in &packet.parts {
            let (b, index) = self.locate(part.item);
            xor_into(&mut payload, self.slice(block(b), index));
        }
        payload
    }
}

/// XORs `src` into the start of `dst` (`src` no longer than `dst`).
///
/// # Panics
/// If `src` is longer than `dst`.
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    let dst = &mut dst[..src.len()];
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (a, b) in (&mut d).zip(&mut s) {
        let x = u64::from_ne_bytes(a[..].try_into().expect("8 bytes"))
            ^ u64::from_ne_bytes(b.try_into().expect("8 bytes"));
        a.copy_from_slice(&x.to_ne_bytes());
    }
    for (a, b) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *a ^= b;
    }
}

/// One worker's decoder for one shuffle: collects the chunks of the blocks
/// it needs, then checks each block's length and CRC-32. Memory grows
/// with the chunks received, never with what a header claims.
#[derive(Debug)]
pub struct Decoder<'l> {
    worker: usize,
    epoch: u64,
    layout: &'l ChunkLayout,
    /// The blocks to recover, ascending.
    needed: Vec<usize>,
    /// Chunks recovered so far.
    received: HashMap<usize, Vec<u8>>,
}

impl<'l> Decoder<'l> {
    /// A decoder for `worker` (0-based) that must recover `needed` (the
    /// blocks of its next assignment that its cache lacks) in the shuffle
    /// into `epoch`.
    pub fn new(worker: usize, epoch: u64, layout: &'l ChunkLayout, needed: &[usize]) -> Self {
        let mut needed = needed.to_vec();
        needed.sort_unstable();
        needed.dedup();
        Decoder {
            worker,
            epoch,
            layout,
            needed,
            received: HashMap::new(),
        }
    }

    fn fail(&self, message: String) -> Error {
        Error::Shuffle {
            worker: self.worker,
            epoch: self.epoch,
            message,
        }
    }

    /// Decodes this worker's chunk from `packet`'s `payload`, cancelling
    /// the other parts with `cached` (a cached block's bytes, or `None`).
    /// Packets without a part for this worker are ignored.
    ///
    /// # Errors
    /// [`Error::Shuffle`] if a chunk is out of range, the payload is not
    /// as long as the packet's longest chunk, this worker's part is not a
    /// missing chunk of a needed block, another part's block is not in the
    /// cache (or has another length than the layout's), or the padding
    /// decodes to non-zero bytes.
    pub fn receive<'c>(
        &mut self,
        packet: &Packet,
        payload: &[u8],
        cached: impl Fn(usize) -> Option<&'c [u8]>,
    ) -> Result<()> {
        let Some(mine) = packet.part_for(self.worker) else {
            return Ok(());
        };
        let layout = self.layout;
        if let Some(p) = packet.parts.iter().find(|p| p.item >= layout.n_chunks()) {
            return Err(self.fail(format!("chunk {} does not exist", p.item)));
        }
        let expected = layout.packet_len(packet);
        if payload.len() != expected {
            let len = payload.len();
            return Err(self.fail(format!("a packet of {len} bytes, expected {expected}")));
        }
        let (block, index) = layout.locate(mine.item);
        if self.needed.binary_search(&block).is_err() {
            return Err(self.fail(format!("block {block} was not needed here")));
        }
        if self.received.contains_key(&mine.item) {
            return Err(self.fail(format!("chunk {index} of block {block} arrived twice")));
        }
        let mut chunk = payload.to_vec();
        for other in packet.parts.iter().filter(|p| p.worker != self.worker) {
            let (b, i) = layout.locate(other.item);
            match cached(b) {
                Some(bytes) if bytes.len() as u64 == layout.block_len(b) => {
                    xor_into(&mut chunk, layout.slice(bytes, i));
                }
                _ => {
                    return Err(self.fail(format!(
                        "cannot cancel chunk {i} of block {b}: the block is not cached here"
                    )))
                }
            }
        }
        let len = layout.chunk_len(mine.item);
        if chunk[len..].iter().any(|&x| x != 0) {
            return Err(self.fail(format!(
                "chunk {index} of block {block}: the padding after byte {len} decodes to non-zero"
            )));
        }
        chunk.truncate(len);
        self.received.insert(mine.item, chunk);
        Ok(())
    }

    /// The recovered blocks, ascending, each checked against `crcs` (one
    /// per block of the layout): complete, and its CRC-32 the server's.
    ///
    /// # Errors
    /// [`Error::Shuffle`] naming the first block that is incomplete or
    /// damaged.
    pub fn finish(mut self, crcs: &[u32]) -> Result<Vec<(usize, Vec<u8>)>> {
        let layout = self.layout;
        if crcs.len() != layout.n_blocks() {
            let n = crcs.len();
            return Err(self.fail(format!("{n} checksums for {} blocks", layout.n_blocks())));
        }
        let needed = std::mem::take(&mut self.needed);
        let mut out = Vec::with_capacity(needed.len());
        for b in needed {
            let mut bytes = Vec::new();
            for (i, chunk) in layout.chunks(b).enumerate() {
                match self.received.remove(&chunk) {
                    Some(c) => bytes.extend_from_slice(&c),
                    None => return Err(self.fail(format!("chunk {i} of block {b} never arrived"))),
                }
            }
            let (found, expected) = (crc32fast::hash(&bytes), crcs[b]);
            if found != expected {
                return Err(self.fail(format!(
                    "block {b}: checksum {found:08x}, expected {expected:08x}"
                )));
            }
            out.push((b, bytes));
        }
        Ok(out)
    }
}
