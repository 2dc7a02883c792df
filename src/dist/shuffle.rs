//! The shuffle transport: a parameter-server rank that holds every block
//! ([`ShuffleServer`], rank 0) and `n` workers that cache some of them
//! ([`ShuffleWorker`], ranks `1..=n`, worker `w` on rank `w + 1`), over any
//! [`Communicator`] (UberShuffle section 4's system, the shuffling half).
//!
//! ```text
//! start:  server --broadcast--> session (scheme, seed, capacity, chunk size, block lengths and CRCs)
//!         server --send--> each worker's initial cache (placement), CRC-checked
//! epoch:  server --broadcast--> plan (packets: parts as (worker, chunk))
//!         server --multicast--> each packet's XOR payload to its workers
//!         workers decode, check CRCs, update their caches; the server mirrors them
//!         allreduce: per-worker failure flags and the workers' relay traffic
//! ```
//!
//! Each worker learns its next blocks from the seed (the loader's
//! permutation), so the plan needs only the packets' parts. A worker that
//! cannot decode a packet keeps relaying to the end of the plan and then
//! reports the failure in the closing allreduce, so the other ranks
//! finish the epoch and the server returns the error too.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use super::assign::{capacity_for, next_cache, placement, Assignment, Caches};
use super::chunks::{ChunkLayout, Decoder};
use super::comm::{Communicator, Tag, Traffic};
use super::packet::Packet;
use super::plan::{plan, Scheme};
use super::wire::{plan_from_bytes, plan_to_bytes, Session};
use crate::dataset::Dataset;
use crate::error::{Error, Result};

/// The tag of the initial placement's messages.
const PLACE_TAG: Tag = 1;

/// The server's settings of a shuffle session; workers learn them from
/// the session message.
#[derive(Debug, Clone, PartialEq)]
pub struct ShuffleOptions {
    /// The scheme (default UberShuffle at the paper's depth 2).
    pub scheme: Scheme,
    /// Share of the blocks each worker caches (the paper's alpha, default
    /// 0.5, at least `1/n` for `n` workers): `floor(alpha q)` blocks, or a
    /// worker's share if that is more (when `n` does not divide `q`).
    pub alpha: f64,
    /// Bytes of every chunk and packet (default 4 KiB).
    pub chunk_bytes: usize,
    /// Seed of the assignments (the loader's) and of the caches.
    pub seed: u64,
}

impl Default for ShuffleOptions {
    fn default() -> Self {
        ShuffleOptions {
            scheme: Scheme::UberShuffle {
                depth: Scheme::PAPER_DEPTH,
            },
            alpha: 0.5,
            chunk_bytes: 4096,
            seed: 0,
        }
    }
}

/// The server's account of one shuffle.
#[derive(Debug, Clone, PartialEq)]
pub struct ShuffleReport {
    /// The epoch shuffled into.
    pub epoch: u64,
    /// The scheme.
    pub scheme: Scheme,
    /// Transmissions (packets of up to `chunk_bytes`).
    pub packets: usize,
    /// Chunks delivered (parts of all packets).
    pub chunks: usize,
    /// Blocks delivered.
    pub blocks: usize,
    /// Bytes of the blocks delivered.
    pub block_bytes: u64,
    /// Zero bytes the packets carry for their parts (a part shorter than
    /// its packet: a block's last chunk beside a longer chunk).
    pub padding_bytes: u64,
    /// Packet payload bytes the server sent.
    pub payload_bytes: u64,
    /// For comparison, the payload bytes of the same scheme coding whole
    /// blocks, every block padded to the dataset's largest (equal-size
    /// packets without chunks).
    pub whole_blocks_padded_bytes: u64,
    /// For comparison, the payload bytes of the same scheme coding whole
    /// blocks, each packet only as long as its longest block (packets of
    /// unequal size).
    pub whole_blocks_per_packet_bytes: u64,
    /// Bytes of the plan message.
    pub plan_bytes: u64,
    /// Everything the server handed to the transport in this shuffle (the
    /// plan to each worker, the packets).
    pub server: Traffic,
    /// Everything the workers sent in this shuffle (multicast relays).
    pub workers: Traffic,
    /// Wall-clock seconds on the server, planning included.
    pub seconds: f64,
}

impl ShuffleReport {
    /// Padding over the bytes of the blocks delivered.
    pub fn padding_overhead(&self) -> f64 {
        self.padding_bytes as f64 / self.block_bytes.max(1) as f64
    }
}

/// Reads every block of a dataset file as raw bytes (what the server
/// shuffles), each verified against the CRC-32 in the file's index.
///
/// # Errors
/// As [`Dataset::open`] and [`Dataset::read_block`]; [`Error::Io`].
pub fn read_blocks(path: &Path) -> Result<Vec<Vec<u8>>> {
    let dataset = Dataset::open(path)?;
    (0..dataset.n_blocks())
        .map(|i| dataset.read_block(i).map(|block| block.into_bytes()))
        .collect()
}

/// The parameter server: holds every block, plans and sends each shuffle,
/// and mirrors the workers' caches.
#[derive(Debug)]
pub struct ShuffleServer<'c, C: Communicator + ?Sized> {
    comm: &'c C,
    session: Session,
    layout: ChunkLayout,
    blocks: Vec<Vec<u8>>,
    caches: Caches,
    assignment: Assignment,
    epoch: u64,
}

impl<'c, C: Communicator + ?Sized> ShuffleServer<'c, C> {
    /// Starts a session on rank 0 with `blocks`: announces it and sends
    /// each worker its initial cache for the assignment of epoch 0.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if this is not rank 0, there are no workers
    /// or more than 64, or `alpha` is below `1/n` or above 1; errors of
    /// the communicator.
    pub fn start(comm: &'c C, blocks: Vec<Vec<u8>>, options: &ShuffleOptions) -> Result<Self> {
        if comm.rank() != 0 || comm.size() < 2 {
            return Err(Error::BadArgument {
                what: "shuffle server",
                expected: "rank 0 of a communicator with at least one worker",
            });
        }
        let n_workers = comm.size() - 1;
        if !(options.alpha * n_workers as f64 >= 1.0 && options.alpha <= 1.0) {
            return Err(Error::BadArgument {
                what: "alpha",
                expected:
                    "at least 1/n for n workers (a cache holds a worker's share) and at most 1",
            });
        }
        let block_lens: Vec<u64> = blocks.iter().map(|b| b.len() as u64).collect();
        let layout = ChunkLayout::new(&block_lens, options.chunk_bytes)?;
        let assignment = Assignment::epoch(options.seed, 0, blocks.len(), n_workers)?;
        // floor(alpha q), but never below a share (q need not divide by n).
        let capacity = capacity_for(options.alpha, blocks.len()).max(assignment.largest_share());
        let caches = Caches::place(&assignment, capacity, options.seed)?;
        let session = Session {
            scheme: options.scheme,
            seed: options.seed,
            capacity,
            chunk_bytes: options.chunk_bytes,
            crcs: blocks.iter().map(|b| crc32fast::hash(b)).collect(),
            block_lens,
        };
        comm.broadcast(0, &mut session.to_bytes())?;
        for w in 0..n_workers {
            for &b in caches.blocks(w) {
                comm.send(w + 1, PLACE_TAG, &blocks[b])?;
            }
        }
        Ok(ShuffleServer {
            comm,
            session,
            layout,
            blocks,
            caches,
            assignment,
            epoch: 0,
        })
    }

    /// The epoch whose assignment the workers hold.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The workers' caches, as the server mirrors them.
    pub fn caches(&self) -> &Caches {
        &self.caches
    }

    /// The current assignment.
    pub fn assignment(&self) -> &Assignment {
        &self.assignment
    }

    /// The chunk layout of the blocks.
    pub fn layout(&self) -> &ChunkLayout {
        &self.layout
    }

    /// Shuffles into the next epoch: plans, broadcasts the plan,
    /// multicasts every packet, and collects the workers' outcome.
    ///
    /// # Errors
    /// [`Error::Shuffle`] if a worker failed to recover its blocks (the
    /// session is then out of step and must be restarted); errors of the
    /// communicator.
    pub fn shuffle(&mut self) -> Result<ShuffleReport> {
        let started = Instant::now();
        let before = self.comm.traffic();
        let n = self.comm.size() - 1;
        let epoch = self.epoch + 1;
        let q = self.blocks.len();
        let next = Assignment::epoch(self.session.seed, epoch, q, n)?;
        let block_demands = self.caches.demands(&next);
        let demands = self.layout.demands(&self.caches, &next);
        let whole = plan(self.session.scheme, n, &block_demands)?;
        let plan = plan(self.session.scheme, n, &demands)?;
        let largest = (0..q).map(|b| self.layout.block_len(b)).max().unwrap_or(0);
        let per_packet = whole
            .packets
            .iter()
            .map(|p| {
                p.parts
                    .iter()
                    .map(|part| self.layout.block_len(part.item))
                    .max()
                    .unwrap_or(0)
            })
            .sum();
        let mut plan_bytes = plan_to_bytes(epoch, &plan.packets);
        let plan_len = plan_bytes.len() as u64;
        self.comm.broadcast(0, &mut plan_bytes)?;
        for packet in &plan.packets {
            let mut payload = self.layout.encode(packet, |b| &self.blocks[b]);
            self.comm.multicast(0, &ranks(packet), &mut payload)?;
        }
        let server = self.comm.traffic().since(before);
        let mut outcome = vec![0.0; n + 2];
        self.comm.allreduce_sum(&mut outcome)?;
        if let Some(w) = outcome[..n].iter().position(|&failed| failed != 0.0) {
            return Err(Error::Shuffle {
                worker: w,
                epoch,
                message: "the worker could not recover its blocks (see its error)".into(),
            });
        }
        self.caches.update(&next, self.session.seed, epoch)?;
        self.assignment = next;
        self.epoch = epoch;
        Ok(ShuffleReport {
            epoch,
            scheme: self.session.scheme,
            packets: plan.len(),
            chunks: plan.parts(),
            blocks: block_demands.len(),
            block_bytes: block_demands
                .iter()
                .map(|d| self.layout.block_len(d.item))
                .sum(),
            padding_bytes: plan.packets.iter().map(|p| self.layout.padding(p)).sum(),
            payload_bytes: plan
                .packets
                .iter()
                .map(|p| self.layout.packet_len(p) as u64)
                .sum(),
            whole_blocks_padded_bytes: whole.len() as u64 * largest,
            whole_blocks_per_packet_bytes: per_packet,
            plan_bytes: plan_len,
            server,
            workers: Traffic {
                bytes_sent: outcome[n] as u64,
                messages_sent: outcome[n + 1] as u64,
            },
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The ranks a packet goes to.
fn ranks(packet: &Packet) -> Vec<usize> {
    packet.parts.iter().map(|p| p.worker + 1).collect()
}

/// A worker: caches blocks, and recovers its next blocks from each
/// shuffle.
#[derive(Debug)]
pub struct ShuffleWorker<'c, C: Communicator + ?Sized> {
    comm: &'c C,
    worker: usize,
    session: Session,
    layout: ChunkLayout,
    cache: BTreeMap<usize, Vec<u8>>,
    assignment: Assignment,
    epoch: u64,
}

impl<'c, C: Communicator + ?Sized> ShuffleWorker<'c, C> {
    /// Joins the session the server on rank 0 starts: receives the
    /// session and this worker's initial cache, each block CRC-checked.
    ///
    /// # Errors
    /// [`Error::BadArgument`] on rank 0; errors of parsing the session;
    /// [`Error::Shuffle`] for a cached block with a wrong checksum; errors
    /// of the communicator.
    pub fn join(comm: &'c C) -> Result<Self> {
        if comm.rank() == 0 {
            return Err(Error::BadArgument {
                what: "shuffle worker",
                expected: "a rank other than 0 (the server's)",
            });
        }
        let (worker, n_workers) = (comm.rank() - 1, comm.size() - 1);
        let mut bytes = Vec::new();
        comm.broadcast(0, &mut bytes)?;
        let session = Session::from_bytes(&bytes)?;
        let layout = ChunkLayout::new(&session.block_lens, session.chunk_bytes)?;
        let q = session.block_lens.len();
        let assignment = Assignment::epoch(session.seed, 0, q, n_workers)?;
        if session.capacity < assignment.largest_share() || session.capacity > q {
            return Err(Error::BadArgument {
                what: "session capacity",
                expected: "at least a worker's share and at most the block count",
            });
        }
        let mut cache = BTreeMap::new();
        for b in placement(&assignment, session.capacity, session.seed, worker) {
            let block = comm.receive(0, PLACE_TAG)?;
            let (found, expected) = (crc32fast::hash(&block), session.crcs[b]);
            if found != expected || block.len() as u64 != session.block_lens[b] {
                return Err(Error::Shuffle {
                    worker,
                    epoch: 0,
                    message: format!(
                        "placed block {b}: checksum {found:08x}, expected {expected:08x}"
                    ),
                });
            }
            cache.insert(b, block);
        }
        Ok(ShuffleWorker {
            comm,
            worker,
            session,
            layout,
            cache,
            assignment,
            epoch: 0,
        })
    }

    /// This worker's number (its rank minus one).
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// The epoch whose blocks the worker holds.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The session's settings and block checksums.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// This worker's blocks of the current epoch, in visiting order (the
    /// loader's slice of the epoch's permutation).
    pub fn blocks(&self) -> &[usize] {
        self.assignment.blocks(self.worker)
    }

    /// The bytes of a cached block.
    pub fn block(&self, block: usize) -> Option<&[u8]> {
        self.cache.get(&block).map(Vec::as_slice)
    }

    /// The cached blocks, ascending (always within the session's
    /// capacity, always holding [`blocks`](Self::blocks)).
    pub fn cached(&self) -> Vec<usize> {
        self.cache.keys().copied().collect()
    }

    /// Takes part in the shuffle into the next epoch: receives the plan
    /// and the packets addressed here (relaying multicasts), recovers and
    /// checks the missing blocks, and updates the cache. Returns the
    /// blocks recovered.
    ///
    /// # Errors
    /// [`Error::Shuffle`] if a packet cannot be decoded or a block is
    /// missing or damaged (after the other ranks have finished the
    /// epoch); errors of parsing the plan; errors of the communicator.
    pub fn shuffle(&mut self) -> Result<Vec<usize>> {
        let before = self.comm.traffic();
        let n = self.comm.size() - 1;
        let epoch = self.epoch + 1;
        let mut bytes = Vec::new();
        self.comm.broadcast(0, &mut bytes)?;
        let (plan_epoch, packets) = plan_from_bytes(&bytes, n, self.layout.n_chunks())?;
        let q = self.layout.n_blocks();
        let next = Assignment::epoch(self.session.seed, epoch, q, n)?;
        let needed: Vec<usize> = next
            .blocks(self.worker)
            .iter()
            .copied()
            .filter(|b| !self.cache.contains_key(b))
            .collect();
        let mut decoder = Decoder::new(self.worker, epoch, &self.layout, &needed);
        let mut failure = (plan_epoch != epoch).then(|| Error::Shuffle {
            worker: self.worker,
            epoch,
            message: format!("the plan is for epoch {plan_epoch}"),
        });
        for packet in packets.iter().filter(|p| p.part_for(self.worker).is_some()) {
            let mut payload = Vec::new();
            self.comm.multicast(0, &ranks(packet), &mut payload)?;
            if failure.is_none() {
                let cache = &self.cache;
                let result =
                    decoder.receive(packet, &payload, |b| cache.get(&b).map(Vec::as_slice));
                failure = result.err();
            }
        }
        let recovered = match failure {
            None => decoder.finish(&self.session.crcs),
            Some(e) => Err(e),
        };
        let relayed = self.comm.traffic().since(before);
        let mut outcome = vec![0.0; n + 2];
        outcome[self.worker] = if recovered.is_err() { 1.0 } else { 0.0 };
        outcome[n] = relayed.bytes_sent as f64;
        outcome[n + 1] = relayed.messages_sent as f64;
        self.comm.allreduce_sum(&mut outcome)?;
        let recovered = recovered?;
        if let Some(w) = outcome[..n].iter().position(|&failed| failed != 0.0) {
            return Err(Error::Shuffle {
                worker: w,
                epoch,
                message: "another worker could not recover its blocks".into(),
            });
        }
        let current: Vec<usize> = self.cache.keys().copied().collect();
        let keep = next_cache(
            &current,
            next.blocks(self.worker),
            self.session.capacity,
            self.session.seed,
            epoch,
            self.worker,
        );
        let received: Vec<usize> = recovered.iter().map(|(b, _)| *b).collect();
        let mut fresh: BTreeMap<usize, Vec<u8>> = recovered.into_iter().collect();
        let mut cache = BTreeMap::new();
        for b in keep {
            let bytes = fresh.remove(&b).or_else(|| self.cache.remove(&b));
            cache.insert(b, bytes.expect("a kept block is cached or recovered"));
        }
        self.cache = cache;
        self.assignment = next;
        self.epoch = epoch;
        Ok(received)
    }
}
