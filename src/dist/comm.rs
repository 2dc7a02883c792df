//! The [`Communicator`] trait: what the distributed parts of tocpile need
//! from a message-passing layer, shaped after MPI so that an MPI
//! implementation maps each method onto one MPI call.
//!
//! | method | MPI |
//! |---|---|
//! | [`rank`](Communicator::rank), [`size`](Communicator::size) | `MPI_Comm_rank`, `MPI_Comm_size` |
//! | [`allreduce_sum`](Communicator::allreduce_sum) | `MPI_Allreduce` of the lengths (a mismatch is an error everywhere), `MPI_Gather` to rank 0, the sum in rank order, `MPI_Bcast` (bit-identical; `MPI_Allreduce` of the values may reorder the sum) |
//! | [`broadcast`](Communicator::broadcast) | `MPI_Bcast` of the length, then of the bytes |
//! | [`barrier`](Communicator::barrier) | `MPI_Barrier` |
//! | [`send`](Communicator::send), [`receive`](Communicator::receive) | `MPI_Send`, `MPI_Recv` with the tag |
//! | [`send_receive`](Communicator::send_receive) | `MPI_Sendrecv` |
//! | [`multicast`](Communicator::multicast) | the relay below over point-to-point messages, or `MPI_Bcast` on a communicator of the group (`MPI_Comm_create_group`, cached per group) |
//!
//! The default [`multicast`](Communicator::multicast) is the efficient
//! multicast of UberShuffle section 4.2 (Theorem 4): the root splits the
//! packet into one sub-packet per member and sends each its own; the
//! members then pass sub-packets around a ring until every member holds
//! all of them. The root sends each byte once, and the whole multicast
//! takes `(2g - 1)/g` unicast times for `g` members on single-ported links.

use super::set::WorkerSet;
use crate::error::{Error, Result};

/// A point-to-point message tag: tells apart messages between the same
/// two ranks. Tags from [`RESERVED_TAGS`] up belong to this module.
pub type Tag = u32;

/// The first tag this module uses itself (the multicast relay).
pub const RESERVED_TAGS: Tag = 0xffff_0000;

const MULTICAST_TAG: Tag = RESERVED_TAGS;

/// Bytes and messages a rank handed to its transport, point-to-point and
/// collective alike (a broadcast's root counts one message per receiver).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Messages sent.
    pub messages_sent: u64,
}

impl Traffic {
    /// The traffic since `earlier` (a snapshot of the same rank).
    pub fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            bytes_sent: self.bytes_sent.saturating_sub(earlier.bytes_sent),
            messages_sent: self.messages_sent.saturating_sub(earlier.messages_sent),
        }
    }
}

impl std::ops::Add for Traffic {
    type Output = Traffic;
    fn add(self, other: Traffic) -> Traffic {
        Traffic {
            bytes_sent: self.bytes_sent + other.bytes_sent,
            messages_sent: self.messages_sent + other.messages_sent,
        }
    }
}

/// A group of `size` ranks exchanging messages (an MPI communicator).
///
/// Collectives ([`allreduce_sum`](Self::allreduce_sum),
/// [`broadcast`](Self::broadcast), [`barrier`](Self::barrier)) must be
/// called by every rank, in the same order; a
/// [`multicast`](Self::multicast) by its root and every member of its
/// group, in the same order relative to each other. Point-to-point
/// messages between two ranks arrive in the order they were sent, per
/// tag.
pub trait Communicator {
    /// This rank, below [`size`](Self::size).
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Replaces `values` on every rank by the sum over the ranks, taken
    /// in rank order (`((v0 + v1) + v2) + ...`), so that the result is
    /// bit-identical whatever the timing.
    ///
    /// # Errors
    /// [`Error::Communication`] if a peer is gone or the ranks' lengths
    /// differ.
    fn allreduce_sum(&self, values: &mut [f64]) -> Result<()>;

    /// Replaces `bytes` on every rank by the root's.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for a root not below the size;
    /// [`Error::Communication`] if a peer is gone.
    fn broadcast(&self, root: usize, bytes: &mut Vec<u8>) -> Result<()>;

    /// Returns once every rank has called it.
    ///
    /// # Errors
    /// [`Error::Communication`] if a peer is gone.
    fn barrier(&self) -> Result<()>;

    /// Sends `bytes` to rank `to` under `tag`.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for a rank not below the size;
    /// [`Error::Communication`] if the peer is gone.
    fn send(&self, to: usize, tag: Tag, bytes: &[u8]) -> Result<()>;

    /// The next message from rank `from` under `tag`.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    fn receive(&self, from: usize, tag: Tag) -> Result<Vec<u8>>;

    /// Sends `bytes` to `to` and receives the next message from `from`,
    /// both under `tag`, without deadlocking when the peers do the same.
    /// The default sends first, which suits transports whose sends never
    /// wait for the receiver; an MPI implementation uses `MPI_Sendrecv`.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    fn send_receive(&self, to: usize, bytes: &[u8], from: usize, tag: Tag) -> Result<Vec<u8>> {
        self.send(to, tag, bytes)?;
        self.receive(from, tag)
    }

    /// Delivers the root's `bytes` to every rank of `group` (ascending or
    /// not, without the root, no repeats): called by the root and by each
    /// member with the same `root` and `group`; members' `bytes` are
    /// replaced. The default is the relay of UberShuffle Theorem 4.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if the group repeats a rank, holds the root,
    /// names a rank not below the size, or the caller is neither root nor
    /// member; [`Error::Communication`] as [`send`](Self::send).
    fn multicast(&self, root: usize, group: &[usize], bytes: &mut Vec<u8>) -> Result<()> {
        relay_multicast(self, root, group, bytes)
    }

    /// What this rank has sent so far.
    fn traffic(&self) -> Traffic;
}

/// The multicast of UberShuffle Theorem 4 over point-to-point messages.
fn relay_multicast<C: Communicator + ?Sized>(
    comm: &C,
    root: usize,
    group: &[usize],
    bytes: &mut Vec<u8>,
) -> Result<()> {
    let members: WorkerSet = check_group(comm, root, group)?;
    let g = group.len();
    let piece = |k: usize, len: usize| k * len / g..(k + 1) * len / g;
    let me = comm.rank();
    if me == root {
        for (k, &member) in group.iter().enumerate() {
            comm.send(member, MULTICAST_TAG, &bytes[piece(k, bytes.len())])?;
        }
        return Ok(());
    }
    debug_assert!(members.contains(me));
    let k = group.iter().position(|&r| r == me).expect("member");
    let (next, previous) = (group[(k + 1) % g], group[(k + g - 1) % g]);
    let mut pieces: Vec<Vec<u8>> = vec![Vec::new(); g];
    pieces[k] = comm.receive(root, MULTICAST_TAG)?;
    // Stage s: pass on the piece received in stage s - 1 (piece k - s + 1)
    // and receive piece k - s from the previous member.
    for s in 1..g {
        let outgoing = (k + g - (s - 1)) % g;
        let incoming = (k + g - s) % g;
        pieces[incoming] = comm.send_receive(next, &pieces[outgoing], previous, MULTICAST_TAG)?;
    }
    bytes.clear();
    for p in pieces {
        bytes.extend_from_slice(&p);
    }
    Ok(())
}

/// The group as a set, after checking it (ranks of up to 64; a larger
/// communicator multicasts to groups of ranks below 64 only).
fn check_group<C: Communicator + ?Sized>(
    comm: &C,
    root: usize,
    group: &[usize],
) -> Result<WorkerSet> {
    let bad = |expected| {
        Err(Error::BadArgument {
            what: "multicast group",
            expected,
        })
    };
    if group.is_empty() || root >= comm.size() {
        return bad("at least one member, and a root below the size");
    }
    let mut members = WorkerSet::EMPTY;
    for &r in group {
        if r >= comm.size() || r >= WorkerSet::MAX_WORKERS || r == root || members.contains(r) {
            return bad("distinct ranks below the size (and below 64), without the root");
        }
        members = members.with(r);
    }
    if comm.rank() != root && !members.contains(comm.rank()) {
        return bad("called by its root and its members only");
    }
    Ok(members)
}
