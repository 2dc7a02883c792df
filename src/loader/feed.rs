//! The blocks of an epoch's order, each one validated: from the resident
//! cache when it holds them (decided when the epoch starts), else read,
//! checksummed and validated by the read-ahead threads (or on demand
//! without double buffering), then offered to the cache.

use std::sync::Arc;

use super::ahead::{Ahead, GROUP_BYTES};
use super::resident::{Packed, Resident};
use super::{Plan, Strategy};
use crate::dataset::{Dataset, Source};
use crate::error::Result;

/// Where the blocks that are not resident come from.
enum Reader<S: Source + 'static> {
    Ahead(Ahead),
    OnDemand(Arc<Dataset<S>>),
}

/// The epoch's blocks in order (see the module docs).
pub(crate) struct Feed<S: Source + 'static> {
    order: std::vec::IntoIter<(usize, Option<Packed>)>,
    reader: Reader<S>,
    resident: Arc<Resident>,
}

impl<S: Source + 'static> Feed<S> {
    pub(crate) fn start(
        dataset: Arc<Dataset<S>>,
        plan: &Plan,
        order: Vec<usize>,
        resident: Arc<Resident>,
    ) -> Result<Self> {
        let order: Vec<(usize, Option<Packed>)> =
            order.into_iter().map(|b| (b, resident.get(b))).collect();
        let to_read: Vec<usize> = order
            .iter()
            .filter(|(_, cached)| cached.is_none())
            .map(|&(b, _)| b)
            .collect();
        let reader = if plan.double_buffer && !to_read.is_empty() {
            let depth = ahead_depth(&dataset, plan, &to_read);
            Reader::Ahead(Ahead::start(
                dataset,
                to_read,
                depth,
                Arc::clone(&resident),
            )?)
        } else {
            Reader::OnDemand(dataset)
        };
        Ok(Feed {
            order: order.into_iter(),
            reader,
            resident,
        })
    }

    /// The next block's number, the block, and whether it is resident
    /// (held by the cache, so not counted again in the buffer).
    pub(crate) fn next(&mut self) -> Option<Result<(usize, Packed, bool)>> {
        let (b, cached) = self.order.next()?;
        if let Some(block) = cached {
            return Some(Ok((b, block, true)));
        }
        let block = match &mut self.reader {
            Reader::Ahead(ahead) => ahead.next()?,
            Reader::OnDemand(dataset) => dataset
                .read_block(b)
                .and_then(|block| self.resident.pack(block))
                .map(Arc::new),
        };
        Some(block.map(|block| {
            self.resident.offer(b, &block);
            let kept = self.resident.get(b).is_some();
            (b, block, kept)
        }))
    }

    /// Heap bytes of blocks validated ahead and not yet taken.
    pub(crate) fn ahead_bytes(&self) -> usize {
        match &self.reader {
            Reader::Ahead(ahead) => ahead.in_flight_bytes(),
            Reader::OnDemand(_) => 0,
        }
    }
}

/// Read-ahead groups in front of the making of a whole-file buffer.
pub(crate) const WHOLE_FILE_GROUPS: usize = 8;

/// Groups the read-ahead threads may validate in front of the consumer.
///
/// CorgiPile and the epoch shuffle take a whole buffer of blocks at once
/// and then hand out its mini-batches for a long while: with only
/// two read-ahead groups (128 KiB) in front, the read-ahead thread sat idle
/// through that drain and the next fill waited for nearly every block of
/// the buffer to be validated, so a streamed epoch cost validating *plus*
/// training (flights3m: 0.55 s, 43% of it waiting). Double buffering as in
/// the CorgiPile paper (section 6.3) fills the next buffer while this one
/// is consumed: the read-ahead may hold one buffer's worth of groups, so
/// the two overlap. Memory: one more buffer of validated blocks, counted
/// in the loader's peak ([`Ahead::in_flight_bytes`]).
///
/// The whole-file buffer is the exception: it is made once, each block
/// decoded into it as it arrives, so there is no drain to overlap, and a
/// buffer's worth of groups in front would be the whole file validated
/// at once (sorted flights3m: 27 MiB above the kept rows at the peak). A
/// few groups keep the read-ahead threads busy.
fn ahead_depth<S: Source>(dataset: &Dataset<S>, plan: &Plan, to_read: &[usize]) -> usize {
    if plan.whole {
        return plan.read_ahead.max(WHOLE_FILE_GROUPS);
    }
    if !matches!(plan.strategy, Strategy::CorgiPile | Strategy::EpochShuffle) {
        return plan.read_ahead;
    }
    let bytes: u64 = to_read.iter().map(|&b| dataset.block_bytes(b)).sum();
    let per_block = bytes / to_read.len().max(1) as u64;
    let buffer_bytes = per_block.saturating_mul(plan.buffer_blocks as u64);
    let groups = buffer_bytes.div_ceil(GROUP_BYTES) as usize;
    plan.read_ahead.max(groups.saturating_add(1))
}
