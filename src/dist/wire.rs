//! The shuffle's two messages besides the packets, as bytes: the session
//! the server announces once, and the plan it broadcasts each epoch.
//! Workers parse both as untrusted input: every count is bounded by the
//! bytes that remain before anything is allocated, every worker and chunk
//! number is checked against the session.
//!
//! ```text
//! session = "TOCS" version(1) scheme(1) depth seed(u64) capacity chunk_bytes
//!           n_blocks (block_len crc32(u32))*
//! plan    = "TOCP" version(1) epoch n_packets packet*
//! packet  = n_parts (worker chunk)*        workers strictly ascending
//! ```
//! Integers are LEB128 varints unless a width is given (little-endian).

use super::packet::{Packet, Part};
use super::plan::Scheme;
use crate::error::{Error, Result};
use crate::wire::{write_varint, Reader};

const SESSION_MAGIC: [u8; 4] = *b"TOCS";
const PLAN_MAGIC: [u8; 4] = *b"TOCP";
const VERSION: u8 = 1;
/// The largest block a session may announce (a dataset file's blocks are
/// far smaller).
const MAX_BLOCK_BYTES: u64 = 1 << 32;
/// The largest chunk (and packet) size.
const MAX_CHUNK_BYTES: u64 = 1 << 30;

/// What the server announces to every worker once: the shuffle's
/// settings and every block's length and CRC-32.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The shuffling scheme.
    pub scheme: Scheme,
    /// Seed of the assignments and cache choices.
    pub seed: u64,
    /// Blocks each worker caches.
    pub capacity: usize,
    /// Bytes of every chunk and packet.
    pub chunk_bytes: usize,
    /// Each block's length in bytes.
    pub block_lens: Vec<u64>,
    /// Each block's CRC-32.
    pub crcs: Vec<u32>,
}

impl Session {
    /// The session as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = SESSION_MAGIC.to_vec();
        out.push(VERSION);
        let (code, depth) = match self.scheme {
            Scheme::Uncoded => (0, 0),
            Scheme::Coded => (1, 0),
            Scheme::UberShuffle { depth } => (2, depth as u64),
        };
        out.push(code);
        write_varint(&mut out, depth);
        out.extend_from_slice(&self.seed.to_le_bytes());
        write_varint(&mut out, self.capacity as u64);
        write_varint(&mut out, self.chunk_bytes as u64);
        write_varint(&mut out, self.block_lens.len() as u64);
        for (&len, &crc) in self.block_lens.iter().zip(&self.crcs) {
            write_varint(&mut out, len);
            out.extend_from_slice(&crc.to_le_bytes());
        }
        out
    }

    /// Parses a session.
    ///
    /// # Errors
    /// [`Error::BadMagic`], [`Error::UnsupportedVersion`],
    /// [`Error::FieldOutOfRange`], [`Error::Truncated`],
    /// [`Error::BadVarint`] or [`Error::TrailingBytes`], each with the
    /// byte offset.
    pub fn from_bytes(bytes: &[u8]) -> Result<Session> {
        let mut r = Reader::new(bytes);
        header(&mut r, SESSION_MAGIC)?;
        let at = r.offset();
        let scheme = match (r.u8("scheme")?, r.varint_max("depth", 64)? as usize) {
            (0, _) => Scheme::Uncoded,
            (1, _) => Scheme::Coded,
            (2, depth) => Scheme::UberShuffle { depth },
            (code, _) => {
                return Err(Error::FieldOutOfRange {
                    what: "scheme",
                    offset: at,
                    value: code as u64,
                    max: 2,
                })
            }
        };
        let seed = u64::from_le_bytes(r.bytes(8, "seed")?.try_into().expect("8 bytes"));
        let capacity = r.varint_max("capacity", u32::MAX as u64)? as usize;
        let chunk_bytes = r.varint_max("chunk bytes", MAX_CHUNK_BYTES)? as usize;
        // Each block takes at least 5 bytes: bound the count first.
        let n_blocks = r.varint_max("block count", r.remaining() as u64 / 5)? as usize;
        let (mut block_lens, mut crcs) =
            (Vec::with_capacity(n_blocks), Vec::with_capacity(n_blocks));
        for _ in 0..n_blocks {
            block_lens.push(r.varint_max("block length", MAX_BLOCK_BYTES)?);
            crcs.push(u32::from_le_bytes(
                r.bytes(4, "block checksum")?.try_into().expect("4 bytes"),
            ));
        }
        end(&r)?;
        Ok(Session {
            scheme,
            seed,
            capacity,
            chunk_bytes,
            block_lens,
            crcs,
        })
    }
}

/// The plan of the shuffle into `epoch` as bytes.
pub fn plan_to_bytes(epoch: u64, packets: &[Packet]) -> Vec<u8> {
    let mut out = PLAN_MAGIC.to_vec();
    out.push(VERSION);
    write_varint(&mut out, epoch);
    write_varint(&mut out, packets.len() as u64);
    for p in packets {
        write_varint(&mut out, p.parts.len() as u64);
        for part in &p.parts {
            write_varint(&mut out, part.worker as u64);
            write_varint(&mut out, part.item as u64);
        }
    }
    out
}

/// Parses a plan for a shuffle of `n_workers` workers over `n_chunks`
/// chunks: the epoch and the packets.
///
/// # Errors
/// As [`Session::from_bytes`]; [`Error::FieldOutOfRange`] for an empty
/// packet, a worker or chunk out of range, or workers not strictly
/// ascending within a packet.
pub fn plan_from_bytes(
    bytes: &[u8],
    n_workers: usize,
    n_chunks: usize,
) -> Result<(u64, Vec<Packet>)> {
    if n_workers == 0 {
        return Err(Error::BadArgument {
            what: "n_workers",
            expected: "at least 1",
        });
    }
    let mut r = Reader::new(bytes);
    header(&mut r, PLAN_MAGIC)?;
    let epoch = r.varint("epoch")?;
    // A packet takes at least 3 bytes.
    let n_packets = r.varint_max("packet count", r.remaining() as u64 / 3)? as usize;
    let mut packets = Vec::with_capacity(n_packets);
    for _ in 0..n_packets {
        let n_parts = r.varint_nonzero("parts of a packet", n_workers as u64)? as usize;
        let mut parts = Vec::with_capacity(n_parts);
        for _ in 0..n_parts {
            let at = r.offset();
            let worker = r.varint_max("worker", n_workers as u64 - 1)? as usize;
            if parts.last().is_some_and(|p: &Part| p.worker >= worker) {
                return Err(Error::FieldOutOfRange {
                    what: "worker (ascending within a packet)",
                    offset: at,
                    value: worker as u64,
                    max: n_workers as u64 - 1,
                });
            }
            let item = r.varint_max("chunk", (n_chunks as u64).saturating_sub(1))? as usize;
            if n_chunks == 0 {
                return Err(Error::FieldOutOfRange {
                    what: "chunk (the session has none)",
                    offset: at,
                    value: item as u64,
                    max: 0,
                });
            }
            parts.push(Part { worker, item });
        }
        packets.push(Packet { parts });
    }
    end(&r)?;
    Ok((epoch, packets))
}

fn header(r: &mut Reader<'_>, magic: [u8; 4]) -> Result<()> {
    r.magic(&magic)?;
    match r.u8("version")? {
        VERSION => Ok(()),
        found => Err(Error::UnsupportedVersion {
            what: "message format",
            found,
            supported: VERSION,
        }),
    }
}

fn end(r: &Reader<'_>) -> Result<()> {
    match r.remaining() {
        0 => Ok(()),
        len => Err(Error::TrailingBytes {
            what: "the message",
            offset: r.offset(),
            len,
        }),
    }
}
