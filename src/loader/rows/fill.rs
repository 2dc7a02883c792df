//! The buffers of an epoch that does not keep the whole file: one buffer
//! of blocks after another, the next one decoded on a thread of its own
//! while the mini-batches of this one are gathered (double buffering,
//! CorgiPile paper section 6.3, carried from reading to decoding).
//!
//! Before, the producer decoded a buffer only when the last one was
//! spent, and the trainer waited through every decode: a streamed epoch
//! of shuffled flights3m kept 1.5 of its 2 cores busy and waited for the
//! loader half of the time. Decoding ahead costs one more buffer of
//! decoded rows in memory (counted in the loader's peak), the same
//! blocks and the same order: what a buffer holds and the order its rows
//! leave in do not depend on when it was decoded.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::super::feed::Feed;
use super::super::resident::{packed_bytes, Packed};
use super::super::Plan;
use super::buffer::decode_buffer;
use super::{Buffer, BufferScratch};
use crate::dataset::Source;
use crate::error::{Error, Result};

/// What decoding a buffer needs, handed to the thread that decodes the
/// next one and back.
struct Parts<S: Source + 'static> {
    feed: Feed<S>,
    /// The buffer decoded into (the spent one, cleared).
    buffer: Box<Buffer>,
    /// The second half's buffer, appended to `buffer`.
    side: Box<Buffer>,
    scratch: Box<(BufferScratch, BufferScratch)>,
    /// Whether the feed has no block left.
    input_done: bool,
}

impl<S: Source + 'static> Parts<S> {
    fn heap_bytes(&self) -> usize {
        self.feed.ahead_bytes()
            + self.buffer.heap_bytes()
            + self.side.heap_bytes()
            + self.scratch.0.heap_bytes()
            + self.scratch.1.heap_bytes()
    }

    /// Decodes the next buffer of blocks into `buffer`; returns the bytes
    /// of the blocks read for it that nothing else holds (streamed, not
    /// resident), which were in memory with it.
    fn fill(&mut self, plan: &Plan, path: &Path) -> Result<usize> {
        let blocks = next_blocks(&mut self.feed, plan.buffer_blocks, &mut self.input_done)?;
        decode_buffer(
            &blocks,
            (&mut self.buffer, &mut self.side),
            &mut self.scratch,
            plan,
            path,
        )?;
        Ok(blocks
            .iter()
            .filter(|(_, b)| Arc::strong_count(b) == 1)
            .map(|(_, b)| packed_bytes(b))
            .sum())
    }
}

/// A decode running on its own thread: the parts come back with the
/// streamed bytes or the error.
type Running<S> = JoinHandle<(Parts<S>, Result<usize>)>;

/// The buffers of one epoch (see the module docs).
pub(super) struct Buffers<S: Source + 'static> {
    /// The buffer whose rows are being handed out.
    current: Box<Buffer>,
    /// The parts, when no decode is running.
    idle: Option<Parts<S>>,
    running: Option<Running<S>>,
    /// The parts' bytes when they were sent to the running decode.
    sent_bytes: usize,
    plan: Arc<Plan>,
    path: PathBuf,
}

impl<S: Source + 'static> Buffers<S> {
    pub(super) fn new(feed: Feed<S>, plan: Arc<Plan>, path: PathBuf) -> Self {
        let new = || Box::new(Buffer::new(plan.rows, plan.trace));
        Buffers {
            current: new(),
            idle: Some(Parts {
                feed,
                buffer: new(),
                side: new(),
                scratch: Box::default(),
                input_done: false,
            }),
            running: None,
            sent_bytes: 0,
            plan,
            path,
        }
    }

    /// The buffer being handed out.
    pub(super) fn current(&self) -> &Buffer {
        &self.current
    }

    /// Whether every block of the epoch is in a buffer made current.
    pub(super) fn input_done(&self) -> bool {
        self.running.is_none() && self.idle.as_ref().is_none_or(|p| p.input_done)
    }

    /// Makes the next buffer current (decoded now, or taken from the
    /// decode started with the last one) and starts decoding the one
    /// after it, when the loader double-buffers and blocks are left.
    /// `carry` sees the spent buffer and the next before the switch (a
    /// mini-batch begun in the one and finished in the other). Returns
    /// the bytes held meanwhile beyond [`heap_bytes`](Self::heap_bytes)
    /// after it.
    pub(super) fn advance(
        &mut self,
        carry: impl FnOnce(&Buffer, &mut Buffer) -> Result<()>,
    ) -> Result<usize> {
        let (mut parts, streamed) = match self.running.take() {
            Some(running) => match running.join() {
                Ok((parts, streamed)) => (parts, streamed),
                Err(panic) => std::panic::resume_unwind(panic),
            },
            None => {
                let Some(mut parts) = self.idle.take() else {
                    return Err(Error::BadArgument {
                        what: "a buffer of the epoch",
                        expected: "one after an error",
                    });
                };
                let streamed = parts.fill(&self.plan, &self.path);
                (parts, streamed)
            }
        };
        // The decoded buffer and the spent one are both held here.
        let during = parts.heap_bytes() + self.current.heap_bytes() + streamed?;
        carry(&self.current, &mut parts.buffer)?;
        std::mem::swap(&mut self.current, &mut parts.buffer);
        if self.plan.double_buffer && !parts.input_done {
            self.sent_bytes = parts.heap_bytes();
            let (plan, path) = (Arc::clone(&self.plan), self.path.clone());
            let spawned = std::thread::Builder::new()
                .name("tocpile-decode".into())
                .spawn(move || {
                    let streamed = parts.fill(&plan, &path);
                    (parts, streamed)
                })
                .map_err(|e| Error::spawn_failed(&self.path, "buffer decode", e))?;
            self.running = Some(spawned);
        } else {
            self.idle = Some(parts);
        }
        Ok(during.saturating_sub(self.heap_bytes()))
    }

    /// Heap bytes held: the current buffer, and the parts (or what they
    /// held when sent to the running decode).
    pub(super) fn heap_bytes(&self) -> usize {
        let parts = match &self.idle {
            Some(parts) => parts.heap_bytes(),
            None => self.sent_bytes,
        };
        self.current.heap_bytes() + parts
    }
}

impl<S: Source + 'static> Drop for Buffers<S> {
    /// Waits for a decode still running: no thread of an epoch outlives
    /// it (a Shuffle Once copy is deleted when its loader goes).
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.join();
        }
    }
}

/// The next `n` blocks of `feed` (fewer at its end, which sets
/// `input_done`).
fn next_blocks<S: Source + 'static>(
    feed: &mut Feed<S>,
    n: usize,
    input_done: &mut bool,
) -> Result<Vec<(usize, Packed)>> {
    let mut blocks = Vec::with_capacity(n);
    while blocks.len() < n {
        match feed.next().transpose()? {
            Some((b, block, _)) => blocks.push((b, block)),
            None => {
                *input_done = true;
                break;
            }
        }
    }
    Ok(blocks)
}
