//! Runs of small blocks: consecutive blocks of a variable whose blocks are from
//! [`SHARED_BLOCK_MIN`] to [`SHARED_BLOCK_MAX`] bytes go to one encoder together, which judges the first and has the next ones take
//! its plan (see [`Encoder::encode_shared`]). A run is cut by the blocks' numbers only (the
//! `n`-th run of a stream holds its blocks `n * len` to `n * len + len - 1`), so the archive's
//! bytes do not depend on the thread count.

use super::route::RoutedBlock;
use super::var_plan::EncoderPlan;
use crate::codec::encoder::Shared;
use crate::codec::pcodec::NumKind;
use crate::codec::tuning::{SHARED_BLOCK_MAX, SHARED_BLOCK_MIN, TRIAL_SPAN};
use crate::codec::{Encoded, Encoder};

/// How many blocks a run of the stream whose blocks are `block_bytes` long holds: 1 (each block
/// judged, as with the default block size) unless its blocks are from [`SHARED_BLOCK_MIN`] to
/// [`SHARED_BLOCK_MAX`] bytes and its encoder shares plans (`shares`).
pub(super) fn run_len(block_bytes: u64, shares: bool) -> usize {
    if shares && (SHARED_BLOCK_MIN..=SHARED_BLOCK_MAX).contains(&block_bytes) {
        usize::try_from(TRIAL_SPAN / block_bytes.max(1))
            .unwrap_or(1)
            .max(1)
    } else {
        1
    }
}

/// The runs being gathered, per stream number.
#[derive(Default)]
pub(super) struct Runs {
    open: Vec<Vec<RoutedBlock>>,
}

impl Runs {
    /// Takes the next routed block; returns a complete run (a lone block where its stream's
    /// runs hold one). A stream's last block ends its run, so that a fixed-size variable's
    /// frames (and the shared streams', which hold the small variables) are written where its
    /// bytes end in the input, not after everything else: an archive cut short keeps the
    /// variables stored before the cut.
    pub(super) fn push(&mut self, block: RoutedBlock, plan: &EncoderPlan) -> Option<Run> {
        let len = run_len(block.block_bytes, plan.shares(block.id));
        if len <= 1 {
            return Some(vec![block]);
        }
        let s = block.stream;
        if self.open.len() <= s {
            self.open.resize_with(s + 1, Vec::new);
        }
        let last = block.last;
        let run = &mut self.open[s];
        run.push(block);
        (last || run.len() >= len).then(|| std::mem::take(run))
    }

    /// The runs left open at the end of the input, in stream order.
    pub(super) fn rest(self) -> impl Iterator<Item = Run> {
        self.open.into_iter().filter(|r| !r.is_empty())
    }
}

/// Consecutive blocks of one stream, encoded together.
pub(super) type Run = Vec<RoutedBlock>;

/// A block encoded: its stream number, what the encoder made of it and its frame.
pub(super) type EncodedBlock = (usize, Encoded, Vec<u8>);

/// Encodes the blocks of `run` in order with `enc` (`kinds`: each variable's number type and
/// row length), a run of more than one block sharing its plans.
pub(super) fn encode_run(
    enc: &mut Encoder,
    kinds: &[(Option<NumKind>, usize)],
    run: Run,
) -> Vec<EncodedBlock> {
    let mut shared = Shared::default();
    let alone = run.len() == 1;
    run.into_iter()
        .map(|job| {
            let mut frame =
                Vec::with_capacity(job.data.len() / 2 + crate::format::FRAME_HEADER_LEN);
            let numeric = kinds.get(job.id as usize).copied().unwrap_or_default();
            let (id, block, esize, data) = (job.id, job.block, job.esize, &job.data);
            let encoded = if alone {
                enc.encode_block_numeric(id, block, esize, numeric, data, &mut frame)
            } else {
                enc.encode_shared(id, block, esize, numeric, data, &mut frame, &mut shared)
            };
            (job.stream, encoded, frame)
        })
        .collect()
}
