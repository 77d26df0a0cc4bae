//! The encoder's decision for a block as a value ([`Plan`]), and the one function that carries
//! it out ([`Encoder::execute`]).

use super::*;
use crate::codec::pcodec::{Choice, Mode, NumKind};
use crate::format::{Codec, Filter};

/// What the encoder decided for a block (see [`Encoder::encode_block`]): its filter, the level
/// of the block codec, and the path its bytes take. Made by the choosing step (the trials on
/// the block's sample, [`Encoder::choose_auto`]) and carried out by [`Encoder::execute`]; every
/// threshold the choice uses is in [`super::super::tuning`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The filter before the block codec (the path's fallback, and the thorough search's).
    pub(crate) filter: Filter,
    /// Whether the block codec runs at zstd level 1 instead of the encoder's level (fast
    /// blocks: see [`Encoder::fast_blocks`]).
    pub(crate) fast: bool,
    /// Where the sample's values come from a small set (see [`REFS_LATE_NEW`]) and no numeric
    /// codec took the block: the block codec's result on the block estimated from the sample's
    /// best filter with the probe level, scaled to the block's length; the block codec's path
    /// then tries `refs` first (see [`Encoder::plain_block`]).
    pub(crate) refs_est: Option<f64>,
    /// The path the block's bytes take.
    pub(crate) path: Path,
}

/// The path of a block's bytes (see [`Plan`]). Every path but [`Path::Plain`] and
/// [`Path::Thorough`] falls back to the block codec after the plan's filter where it fails or
/// does not shrink the block.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Path {
    /// The block codec after the plan's filter (the bytes as they are, codec none, where that
    /// does not shrink them).
    Plain,
    /// pco on the block's numbers, as pco chose on the sample.
    Pco {
        /// The number type.
        kind: NumKind,
        /// What pco chose on the sample.
        choice: Choice,
    },
    /// The `plane` filter with pco.
    Plane {
        /// The number type.
        kind: NumKind,
        /// The predictor the sample chose.
        params: crate::codec::plane::Params,
        /// Whether the sample chose `plane` over the block codec (not over pco alone): then
        /// the whole block checks that choice (see [`PLANE_MARGIN`], [`Encoder::check_plane`]).
        check: bool,
    },
    /// The `mask` filter with pco: the block's fill values set apart (in the encoder's
    /// `mask_prefix` and `mask_rest`, made while choosing), pco on the others.
    Mask {
        /// The number type.
        kind: NumKind,
        /// What pco chose on the sample of the other elements.
        choice: Choice,
        /// The fill value set apart.
        fill: u64,
    },
    /// The `fit` predictor fitted to the block, with pco.
    Fit {
        /// The number type.
        kind: NumKind,
        /// The row length.
        row: usize,
        /// The fill value set apart, if any.
        fill: Option<u64>,
    },
    /// Thorough encoders (the `max` preset): each numeric path tried on the whole block and
    /// kept where smaller, then `context` and lzma.
    Thorough {
        /// The probe level's result on the block after the filter (0: not judged).
        probe_size: usize,
        /// lzma's plan, where lzma may be tried (see [`Encoder::lzma_plan`]).
        lzma: Option<LzmaPlan>,
        /// The float mode pco finds over the block (see `pco::block_float_mode`).
        block_mode: Option<Mode>,
    },
}

impl Encoder {
    /// Carries out `plan` on the block `data` (elements of `esize` bytes): its payload into
    /// `c` (replacing it), and the codec and filter of its frame.
    pub(super) fn execute(
        &mut self,
        plan: &Plan,
        esize: usize,
        data: &[u8],
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        self.use_fast = plan.fast;
        let mut f = std::mem::take(&mut self.filtered);
        let done = match plan.path {
            Path::Plain => None,
            Path::Pco { kind, choice } => pco_chosen(kind, choice, data, c),
            Path::Plane {
                kind,
                params,
                check,
            } => {
                match crate::codec::plane::encode_block(kind, &params, data, &mut self.fronts, c) {
                    true if check => self.check_plane(esize, plan.filter, data, &mut f, c),
                    true => Some((Codec::Pco, Filter::Plane)),
                    false => None,
                }
            }
            Path::Mask { kind, choice, .. } => self.mask_block(kind, choice, data.len(), c),
            Path::Fit { kind, row, fill } => self.fit_block(kind, (row, fill), data, c),
            Path::Thorough {
                probe_size,
                lzma,
                block_mode,
            } => Some(self.thorough_block(
                plan,
                (probe_size, lzma, block_mode),
                data,
                esize,
                &mut f,
                c,
            )),
        };
        let done = done.unwrap_or_else(|| {
            self.plain_block(plan.filter, plan.refs_est, data, esize, &mut f, c)
        });
        self.filtered = f;
        done
    }

    /// [`Path::Thorough`]: lzma alone where its plan is sure of it, else pco's paths on the
    /// whole block ([`Encoder::pco_block`]) or the block codec, then `context` and lzma where
    /// they are smaller.
    fn thorough_block(
        &mut self,
        plan: &Plan,
        (probe_size, lzma, block_mode): (usize, Option<LzmaPlan>, Option<Mode>),
        data: &[u8],
        e: usize,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        // Not before pco has been tried on floats it takes as decimals or whole numbers:
        // there pco in the block's mode is often far below what lzma's sample promises
        // (ocean_atlas_subset's temperatures among fill values: 5 % smaller and 3× faster).
        let decimal = block_mode.is_some_and(|m| m != Mode::Classic);
        let sure = lzma
            .filter(|p| p.sure() && !decimal)
            .and_then(|p| self.lzma_sure(p, data, e, f, c));
        if let Some(r) = sure {
            return self.context_block(data, e, r, c);
        }
        let numeric = self
            .kind
            .and_then(|k| self.pco_block(k, plan.filter, (probe_size, block_mode), data, f, c));
        let result = match numeric {
            Some(r) => r,
            None => self.plain_block(plan.filter, None, data, e, f, c),
        };
        let result = self.context_block(data, e, result, c);
        match lzma {
            Some(p) => self.lzma_block(p, data, e, result, f, c),
            None => self.lzma_after_context(data, e, result, f, c),
        }
    }
}

/// [`Path::Pco`]: pco on the block as the sample chose into `c`; `None` (and `c` empty) when pco
/// fails or does not shrink the block.
fn pco_chosen(
    kind: NumKind,
    choice: Choice,
    data: &[u8],
    c: &mut Vec<u8>,
) -> Option<(Codec, Filter)> {
    c.clear();
    let done =
        crate::codec::pcodec::compress_chosen(kind, data, crate::codec::pcodec::LEVEL, choice, c);
    if done && c.len() < data.len() {
        Some((Codec::Pco, Filter::None))
    } else {
        c.clear();
        None
    }
}

/// The plans a run of blocks of one variable shares (see [`TRIAL_SPAN`],
/// [`Encoder::encode_shared`]): the last judged block's for each fill value (the blocks of a
/// field with patches of fill values have some or none, and take the plan judged on a block
/// like them), up to [`SHARED_FILLS`] of them. A new run starts with [`Shared::default`], so
/// what a block takes depends only on the blocks before it in its run.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    judged: Vec<Judged>,
}

/// The most fill values (`None` counted) whose plans a run keeps (see [`Shared`]).
const SHARED_FILLS: usize = 4;

/// A judged block of a run (see [`Shared`]).
#[derive(Debug, Clone, Copy)]
struct Judged {
    /// Its plan.
    plan: Plan,
    /// Its length.
    len: usize,
    /// Its fill value (see [`crate::codec::mask::fill_of`]).
    fill: Option<u64>,
    /// Its payload's length per byte of the block.
    rate: f64,
}

impl Shared {
    /// After a block of `len` bytes was encoded by `plan` into a payload of `payload` bytes:
    /// keeps a judged block's plan for the next blocks (not a thorough one, which judges every
    /// block whole), and drops a taken plan whose payload grew past [`TRIAL_DRIFT`] times the
    /// judged block's, so that the next block is judged afresh.
    pub(super) fn update(
        &mut self,
        plan: Plan,
        taken: bool,
        (len, fill): (usize, Option<u64>),
        payload: usize,
    ) {
        let rate = payload as f64 / len.max(1) as f64;
        let at = self.judged.iter().position(|j| j.fill == fill);
        if !taken {
            if let Some(at) = at {
                self.judged.remove(at);
            } else if self.judged.len() >= SHARED_FILLS {
                self.judged.remove(0);
            }
            if !matches!(plan.path, Path::Thorough { .. }) {
                self.judged.push(Judged {
                    plan,
                    len,
                    fill,
                    rate,
                });
            }
        } else if let Some(at) = at.filter(|&at| rate > TRIAL_DRIFT * self.judged[at].rate) {
            self.judged.remove(at);
        }
    }
}

impl Encoder {
    /// Encodes the next block of a run of blocks of one variable (as
    /// [`Encoder::encode_block_numeric`]), taking the plan of the last block of the run that
    /// was judged where the block is as long and its fill value (for `mask` and `fit`) the same,
    /// instead of judging it: the trials run on a sample of up to [`FILTER_SAMPLE`] bytes
    /// whatever the block's length, which small blocks would pay many times over. A block whose
    /// payload drifts above the judged block's (see [`TRIAL_DRIFT`]) has the next one judged.
    /// The caller cuts the runs ([`TRIAL_SPAN`]), each starting with a new [`Shared`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn encode_shared(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        numeric: (Option<NumKind>, usize),
        data: &[u8],
        out: &mut Vec<u8>,
        shared: &mut Shared,
    ) -> Encoded {
        self.encode_numeric(stream, block, esize, numeric, data, out, Some(shared))
    }

    /// The plan `shared` holds, where the block `data` (elements of `esize` bytes) may take it:
    /// as long as the judged block and with the same fill value `fill` (see
    /// [`crate::codec::mask::fill_of`]: a block with fill values where the judged one had none
    /// may be `mask`'s). `mask` then needs the block's fill section in `mask_prefix` and
    /// `mask_rest`, made here.
    pub(super) fn take_shared(
        &mut self,
        shared: &Shared,
        esize: usize,
        fill: Option<u64>,
        data: &[u8],
    ) -> Option<Plan> {
        let Judged { plan, len, .. } = *shared.judged.iter().find(|j| j.fill == fill)?;
        if len != data.len() {
            return None;
        }
        match plan.path {
            Path::Thorough { .. } => None,
            Path::Mask { fill, .. } => {
                let (prefix, rest) = (&mut self.mask_prefix, &mut self.mask_rest);
                prefix.clear();
                crate::codec::mask::apply(data, esize, fill, prefix, rest)?;
                Some(plan)
            }
            Path::Plain | Path::Pco { .. } | Path::Plane { .. } | Path::Fit { .. } => Some(plan),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_payload, FilterMode};
    use crate::format::{FrameHeader, FRAME_HEADER_LEN};

    /// Rows of 1440 floats: a smooth field plus a little noise, offset by `at` rows; `noisy`
    /// makes it all noise.
    fn field(rows: usize, at: usize, noisy: bool) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ at as u64;
        (0..rows * 1440)
            .flat_map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (r, c) = ((i / 1440 + at) as f32, (i % 1440) as f32);
                let noise = (x >> 40) as f32 / (1u64 << 24) as f32;
                let v = if noisy {
                    noise * 1000.0
                } else {
                    280.0 + 20.0 * (r * 0.01).sin() * (c * 0.005).cos() + noise * 0.1
                };
                v.to_be_bytes()
            })
            .collect()
    }

    /// Encodes `blocks` as one run with `enc`, checks that every frame decodes to its block,
    /// and returns the payloads' total length.
    fn encode_run(enc: &mut Encoder, blocks: &[Vec<u8>]) -> usize {
        let mut shared = Shared::default();
        let mut total = 0;
        for (i, data) in blocks.iter().enumerate() {
            let mut frame = Vec::new();
            let kind = (Some(NumKind::F32), 1440);
            let done = enc.encode_shared(0, i as u64, 4, kind, data, &mut frame, &mut shared);
            let h = done.frame().unwrap();
            let h2 = FrameHeader::decode(&frame).unwrap();
            assert_eq!(h, h2);
            let mut back = Vec::new();
            decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
            assert_eq!(&back, data, "block {i}");
            total += frame.len() - FRAME_HEADER_LEN;
        }
        total
    }

    fn encoder() -> Encoder {
        Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .numeric(true)
    }

    #[test]
    fn a_run_of_small_blocks_judges_its_first_and_shares_the_plan() {
        // Sixteen blocks of eleven rows (62 KiB) of one smooth field.
        let blocks: Vec<Vec<u8>> = (0..16).map(|b| field(11, 11 * b, false)).collect();
        let mut enc = encoder();
        let shared = encode_run(&mut enc, &blocks);
        assert_eq!(enc.judged, 1, "blocks judged in a run of alike blocks");
        // Within a percent of judging every block.
        let mut alone = encoder();
        let mut each = 0;
        for (i, data) in blocks.iter().enumerate() {
            let mut frame = Vec::new();
            let kind = (Some(NumKind::F32), 1440);
            alone.encode_block_numeric(0, i as u64, 4, kind, data, &mut frame);
            each += frame.len() - FRAME_HEADER_LEN;
        }
        assert_eq!(alone.judged, 16);
        assert!(
            (shared as f64) < 1.01 * each as f64,
            "{shared} against {each}"
        );
    }

    #[test]
    fn a_run_judges_again_where_its_blocks_drift() {
        // Four smooth blocks, then noise: the first noisy block takes the smooth plan and drifts
        // far above it, and the next is judged afresh; a shorter last block is judged too.
        let mut blocks: Vec<Vec<u8>> = (0..4).map(|b| field(11, 11 * b, false)).collect();
        blocks.extend((4..8).map(|b| field(11, 11 * b, true)));
        blocks.push(field(3, 88, true));
        let mut enc = encoder();
        encode_run(&mut enc, &blocks);
        assert_eq!(
            enc.judged, 3,
            "the first, the one after the drift, the short last one"
        );
    }
}
