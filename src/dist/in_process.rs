//! [`InProcess`]: `n` ranks as threads of one process, exchanging
//! messages through a hub of channels: the communicator of the tests and
//! of the single-process path (a group of one never waits).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use super::comm::{Communicator, Tag, Traffic};
use crate::error::{Error, Result};

/// A point-to-point message: its tag and bytes.
type Message = (Tag, Vec<u8>);

/// One rank of an in-process group. Made with the others by
/// [`InProcess::group`]; move each to its own thread.
///
/// Sends never wait (channels are unbounded), so the default
/// [`Communicator::send_receive`] cannot deadlock. Collective messages
/// travel on channels of their own and carry the collective's kind and
/// sequence number, so ranks that call different collectives get an
/// [`Error::Communication`] instead of each other's data.
#[derive(Debug)]
pub struct InProcess {
    rank: usize,
    size: usize,
    timeout: Option<Duration>,
    to: Vec<Sender<Message>>,
    from: Vec<Receiver<Message>>,
    /// Messages received from each rank while waiting for another tag.
    parked: RefCell<Vec<VecDeque<Message>>>,
    collective_to: Vec<Sender<Collective>>,
    collective_from: Vec<Receiver<Collective>>,
    /// Collectives this rank has entered.
    sequence: Cell<u64>,
    traffic: Cell<Traffic>,
}

#[derive(Debug)]
struct Collective {
    kind: &'static str,
    sequence: u64,
    payload: Payload,
}

#[derive(Debug)]
enum Payload {
    Values(Vec<f64>),
    Bytes(Vec<u8>),
    /// The root's refusal (lengths differ), passed to every rank.
    Failed(String),
}

impl InProcess {
    /// `size` connected ranks, `0..size` in order; receives wait as long
    /// as it takes.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for a size of 0.
    pub fn group(size: usize) -> Result<Vec<InProcess>> {
        Self::build(size, None)
    }

    /// As [`InProcess::group`], but a receive that waits longer than
    /// `timeout` fails with [`Error::Communication`] (tests use this so
    /// that a protocol bug fails instead of hanging).
    ///
    /// # Errors
    /// As [`InProcess::group`].
    pub fn group_with_timeout(size: usize, timeout: Duration) -> Result<Vec<InProcess>> {
        Self::build(size, Some(timeout))
    }

    fn build(size: usize, timeout: Option<Duration>) -> Result<Vec<InProcess>> {
        if size == 0 {
            return Err(Error::BadArgument {
                what: "group size",
                expected: "at least 1",
            });
        }
        // senders[a][b] / receivers[b][a]: the channel from rank a to rank b.
        let (mut to, mut from) = (grid(size), grid(size));
        let (mut collective_to, mut collective_from) = (grid(size), grid(size));
        for a in 0..size {
            for b in 0..size {
                let (s, r) = channel();
                to[a].push(s);
                from[b].push(r);
                let (s, r) = channel();
                collective_to[a].push(s);
                collective_from[b].push(r);
            }
        }
        let ranks = to
            .into_iter()
            .zip(from)
            .zip(collective_to.into_iter().zip(collective_from))
            .enumerate()
            .map(
                |(rank, ((to, from), (collective_to, collective_from)))| InProcess {
                    rank,
                    size,
                    timeout,
                    to,
                    from,
                    parked: RefCell::new(vec![VecDeque::new(); size]),
                    collective_to,
                    collective_from,
                    sequence: Cell::new(0),
                    traffic: Cell::new(Traffic::default()),
                },
            )
            .collect();
        Ok(ranks)
    }

    fn count(&self, bytes: usize) {
        let t = self.traffic.get();
        self.traffic.set(Traffic {
            bytes_sent: t.bytes_sent + bytes as u64,
            messages_sent: t.messages_sent + 1,
        });
    }

    fn gone(&self, peer: usize, what: &str) -> Error {
        Error::Communication {
            rank: self.rank,
            peer,
            message: what.to_string(),
        }
    }

    fn check_rank(&self, rank: usize) -> Result<()> {
        match rank < self.size {
            true => Ok(()),
            false => Err(Error::BadArgument {
                what: "rank",
                expected: "below the communicator's size",
            }),
        }
    }

    fn wait<T>(&self, receiver: &Receiver<T>, peer: usize) -> Result<T> {
        match self.timeout {
            None => receiver
                .recv()
                .map_err(|_| self.gone(peer, "the peer has stopped")),
            Some(limit) => receiver.recv_timeout(limit).map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    self.gone(peer, &format!("no message within {limit:?}"))
                }
                RecvTimeoutError::Disconnected => self.gone(peer, "the peer has stopped"),
            }),
        }
    }

    fn post(&self, to: usize, kind: &'static str, sequence: u64, payload: Payload) -> Result<()> {
        self.count(match &payload {
            Payload::Values(v) => v.len() * 8,
            Payload::Bytes(b) => b.len(),
            Payload::Failed(m) => m.len(),
        });
        self.collective_to[to]
            .send(Collective {
                kind,
                sequence,
                payload,
            })
            .map_err(|_| self.gone(to, "the peer has stopped"))
    }

    /// The next collective message from `from`, which must belong to the
    /// same collective call.
    fn take(&self, from: usize, kind: &'static str, sequence: u64) -> Result<Payload> {
        let message = self.wait(&self.collective_from[from], from)?;
        if message.kind != kind || message.sequence != sequence {
            return Err(self.gone(
                from,
                &format!(
                    "ranks disagree on the collective: this rank is in {kind} #{sequence}, \
                     the peer sent {} #{}",
                    message.kind, message.sequence
                ),
            ));
        }
        match message.payload {
            Payload::Failed(why) => Err(self.gone(from, &why)),
            payload => Ok(payload),
        }
    }

    fn enter(&self) -> u64 {
        let s = self.sequence.get();
        self.sequence.set(s + 1);
        s
    }
}

fn grid<T>(size: usize) -> Vec<Vec<T>> {
    (0..size).map(|_| Vec::with_capacity(size)).collect()
}

impl Communicator for InProcess {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allreduce_sum(&self, values: &mut [f64]) -> Result<()> {
        const KIND: &str = "allreduce";
        let seq = self.enter();
        if self.rank != 0 {
            self.post(0, KIND, seq, Payload::Values(values.to_vec()))?;
            return match self.take(0, KIND, seq)? {
                Payload::Values(sum) if sum.len() == values.len() => {
                    values.copy_from_slice(&sum);
                    Ok(())
                }
                _ => Err(self.gone(0, "allreduce result of another length")),
            };
        }
        let mut failure = None;
        for r in 1..self.size {
            match self.take(r, KIND, seq)? {
                Payload::Values(v) if v.len() == values.len() => {
                    // Rank order: ((v0 + v1) + v2) + ...
                    values.iter_mut().zip(&v).for_each(|(a, b)| *a += b);
                }
                Payload::Values(v) => {
                    failure.get_or_insert(format!(
                        "allreduce lengths differ: rank 0 has {}, rank {r} has {}",
                        values.len(),
                        v.len()
                    ));
                }
                _ => return Err(self.gone(r, "allreduce sent bytes")),
            }
        }
        for r in 1..self.size {
            let payload = match &failure {
                Some(why) => Payload::Failed(why.clone()),
                None => Payload::Values(values.to_vec()),
            };
            self.post(r, KIND, seq, payload)?;
        }
        match failure {
            Some(why) => Err(self.gone(0, &why)),
            None => Ok(()),
        }
    }

    fn broadcast(&self, root: usize, bytes: &mut Vec<u8>) -> Result<()> {
        const KIND: &str = "broadcast";
        self.check_rank(root)?;
        let seq = self.enter();
        if self.rank == root {
            for r in (0..self.size).filter(|&r| r != root) {
                self.post(r, KIND, seq, Payload::Bytes(bytes.clone()))?;
            }
            return Ok(());
        }
        match self.take(root, KIND, seq)? {
            Payload::Bytes(b) => {
                *bytes = b;
                Ok(())
            }
            _ => Err(self.gone(root, "broadcast sent values")),
        }
    }

    fn barrier(&self) -> Result<()> {
        self.allreduce_sum(&mut [])
    }

    fn send(&self, to: usize, tag: Tag, bytes: &[u8]) -> Result<()> {
        self.check_rank(to)?;
        self.count(bytes.len());
        self.to[to]
            .send((tag, bytes.to_vec()))
            .map_err(|_| self.gone(to, "the peer has stopped"))
    }

    fn receive(&self, from: usize, tag: Tag) -> Result<Vec<u8>> {
        self.check_rank(from)?;
        let mut parked = self.parked.borrow_mut();
        if let Some(i) = parked[from].iter().position(|(t, _)| *t == tag) {
            return Ok(parked[from].remove(i).expect("parked message").1);
        }
        loop {
            let (t, bytes) = self.wait(&self.from[from], from)?;
            if t == tag {
                return Ok(bytes);
            }
            parked[from].push_back((t, bytes));
        }
    }

    fn traffic(&self) -> Traffic {
        self.traffic.get()
    }
}
