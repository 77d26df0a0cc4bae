//! The block encoder: chooses a block's filter and codec and writes its frame.

use super::block::Compress;
use super::filter::{apply_filter, FilterMode};
use super::pcodec::pco_sample;
use super::tuning::*;
use crate::codec::error::CodecError;
use crate::codec::pcodec::NumKind;
use crate::codec::registry::check_level;
use crate::format::{crc, Codec, Filter, FrameHeader};

pub(crate) mod numeric;
pub(crate) mod plan;
pub(crate) mod repeats;
pub(crate) mod whole;

pub(crate) use plan::{Path, Plan, Shared};

/// A reusable block encoder (one per thread): holds the codec contexts and scratch space.
///
/// ```
/// use nc3pack::{FilterMode, testing::{Encoder, decode_payload}, format::{Codec, FrameHeader, FRAME_HEADER_LEN}};
/// let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 10).to_be_bytes()).collect();
/// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap();
/// let mut frame = Vec::new();
/// let h = enc.encode_block(0, 0, 4, &data, &mut frame).frame().unwrap();
/// assert!(h.stored_len < data.len() as u32);
/// let h2 = FrameHeader::decode(&frame).unwrap();
/// let mut out = Vec::new();
/// decode_payload(&h2, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
/// assert_eq!(out, data);
/// ```
pub struct Encoder {
    codec: Codec,
    mode: FilterMode,
    thorough: bool,
    /// The block codec's compressor at the encoder's level (None for codec none), which
    /// owns its state (zstd its context).
    block: Option<Box<dyn Compress>>,
    /// zstd at the level filters are judged with (1, or 3 when thorough).
    probe: Option<Box<dyn Compress>>,
    /// Whether blocks may use zstd level 1 (see [`Encoder::fast_blocks`]): then `probe` is
    /// that level's context (filters are judged at level 1 when not thorough), and such blocks
    /// are compressed with it. One context less to set up per encoder, the same frames.
    fast: bool,
    /// Whether the plan being executed uses `fast` (set from [`Plan::fast`] as it starts).
    use_fast: bool,
    filtered: Vec<u8>,
    scratch: Vec<u8>,
    /// The numeric front-ends' encoding scratch, each kept by its type (see
    /// [`super::front::FrontEncode`]).
    fronts: super::space::Scratch,
    /// Whether numeric blocks may use the pco codec (see [`Encoder::numeric`]).
    pco: bool,
    /// The number type of the block being encoded, when it is numeric.
    kind: Option<NumKind>,
    /// The `mask` prefix of the block being encoded (see [`super::mask::apply`]).
    mask_prefix: Vec<u8>,
    /// The block's elements other than its fill value (see [`super::mask::apply`]).
    mask_rest: Vec<u8>,
    /// The row length of the block being encoded when it may use the `lorenzo` filter (floats
    /// of a variable of at least two dimensions; see [`Encoder::encode_block_numeric`]).
    row: Option<usize>,
    /// The row length of the block being encoded when it may use the `plane` filter (numbers
    /// that may use pco, of a variable of at least two dimensions).
    plane_row: Option<usize>,
    /// Whether blocks may use the lzma codec instead where it pays (the `max` preset with
    /// zstd; see [`Encoder::lzma_block`]).
    lzma_alt: bool,
    /// Block-codec runs on whole blocks (counted for tests).
    #[cfg(test)]
    pub(super) codec_runs: usize,
    /// Whether the last block's `plane` choice went to [`Encoder::check_plane`] (for tests).
    #[cfg(test)]
    pub(super) plane_checked: bool,
    /// Blocks judged (their plan chosen rather than taken from a run's: for tests).
    #[cfg(test)]
    pub(super) judged: usize,
    /// The plan of the last block encoded (for tests).
    #[cfg(test)]
    pub(super) last_plan: Option<Plan>,
}

impl Encoder {
    /// An encoder for `codec` at `level` choosing filters by `mode`; a `thorough` encoder judges
    /// filters on whole blocks (slower, for the `max` preset).
    ///
    /// # Errors
    ///
    /// [`CodecError::Level`] for a level outside the codec's range, [`CodecError::Zstd`] when
    /// zstd cannot make a context.
    pub fn new(
        codec: Codec,
        level: i32,
        mode: FilterMode,
        thorough: bool,
    ) -> Result<Encoder, CodecError> {
        check_level(codec, level)?;
        let zstd = |l| super::registry::codec(Codec::Zstd).compressor(l);
        Ok(Encoder {
            codec,
            mode,
            thorough,
            block: super::registry::codec(codec).compressor(level)?,
            probe: if mode == FilterMode::Auto && codec != Codec::None {
                zstd(if thorough { 3 } else { 1 })?
            } else {
                None
            },
            fast: false,
            use_fast: false,
            filtered: Vec::new(),
            scratch: Vec::new(),
            fronts: super::space::Scratch::default(),
            pco: false,
            kind: None,
            mask_prefix: Vec::new(),
            mask_rest: Vec::new(),
            row: None,
            plane_row: None,
            lzma_alt: thorough && codec == Codec::Zstd && mode == FilterMode::Auto,
            #[cfg(test)]
            last_plan: None,
            #[cfg(test)]
            codec_runs: 0,
            #[cfg(test)]
            plane_checked: false,
            #[cfg(test)]
            judged: 0,
        })
    }

    /// Lets each block use zstd level 1 (the level filters are judged with) instead of the
    /// encoder's level when the encoder's level does not make the block's filtered sample at
    /// least 2 % smaller (the `fast` preset: on noisy floats level 1 compresses as well as level
    /// 3 in half the time, while record data with repeats gains from level 3). Only with zstd,
    /// filters chosen per block ([`FilterMode::Auto`]) and not thorough; otherwise nothing
    /// changes.
    ///
    /// ```
    /// use nc3pack::{FilterMode, testing::{decode_payload, Encoder}, format::{Codec, FrameHeader}};
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap().fast_blocks(true).unwrap();
    /// let noise: Vec<u8> = (0..65536u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    /// let mut frame = Vec::new();
    /// let h = enc.encode_block(0, 0, 4, &noise, &mut frame).frame().unwrap();
    /// let mut back = Vec::new();
    /// decode_payload(&h, &frame[36..], &mut back).unwrap();
    /// assert_eq!(back, noise);
    /// ```
    ///
    /// # Errors
    ///
    /// None now: the level 1 context is the probe's, made with the encoder. (Kept for callers
    /// that handled [`CodecError::Zstd`] when this made a context of its own.)
    pub fn fast_blocks(mut self, on: bool) -> Result<Encoder, CodecError> {
        // The probe's level (1 when not thorough) is the fast level.
        self.fast = on
            && self.codec == Codec::Zstd
            && self.mode == FilterMode::Auto
            && !self.thorough
            && self.probe.is_some();
        Ok(self)
    }

    /// Lets numeric blocks (given a [`NumKind`] by [`Encoder::encode_block_numeric`]) use the
    /// pco codec instead of the filter and block codec where it compresses better: judged on
    /// the filters' sample, where pco must be at least 20 % (10 % for floats that pco takes as
    /// decimals or whole numbers) smaller than the best filter with zstd level 1, or
    /// (thorough encoders) on the whole block against the block codec's
    /// result. Only with filters chosen per block ([`FilterMode::Auto`]) and a codec other
    /// than none; otherwise nothing changes.
    ///
    /// ```
    /// use nc3pack::{FilterMode, testing::{decode_payload, Encoder, NumKind}, format::Codec};
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap().numeric(true);
    /// // A random walk in steps of 0.01 as floats: noise to byte filters, integers to pco.
    /// let (mut k, mut x) = (2000i64, 1u64);
    /// let data: Vec<u8> = (0..65536)
    ///     .flat_map(|_| {
    ///         x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ///         k += (x >> 61) as i64 - 3;
    ///         ((k as f64 * 0.01) as f32).to_be_bytes()
    ///     })
    ///     .collect();
    /// let mut frame = Vec::new();
    /// let h = enc.encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &data, &mut frame);
    /// let h = h.frame().unwrap();
    /// assert_eq!(h.codec, Codec::Pco);
    /// let mut back = Vec::new();
    /// decode_payload(&h, &frame[36..], &mut back).unwrap();
    /// assert_eq!(back, data);
    /// ```
    pub fn numeric(mut self, on: bool) -> Encoder {
        self.pco = on && self.mode == FilterMode::Auto && self.codec != Codec::None;
        self
    }

    /// As [`Encoder::encode_block`], for a block whose elements of `esize` bytes are numbers of
    /// `kind` (`None`: not numbers, or of one byte; a kind of another size is ignored), which
    /// may then use the pco codec (see [`Encoder::numeric`]). A block of identical elements is
    /// still [`Encoded::Constant`].
    ///
    /// The second item of the pair, `row`, is the length of the variable's innermost dimension when the variable has at
    /// least two dimensions (0 otherwise): then blocks of floats (`float`, `double`) may use
    /// the `lorenzo` filter, a 2-D predictor with "up" one row back, when filters are chosen
    /// per block ([`FilterMode::Auto`]), judged like the other filters (on the sample, which
    /// must hold at least two rows, or on the whole block).
    ///
    /// ```
    /// use nc3pack::{FilterMode, testing::{Encoded, Encoder, NumKind}, format::Codec};
    /// let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false).unwrap().numeric(true);
    /// let mut frame = Vec::new();
    /// let same = 1.5f32.to_be_bytes().repeat(1024);
    /// let done = enc.encode_block_numeric(0, 0, 4, (Some(NumKind::F32), 0), &same, &mut frame);
    /// assert!(matches!(done, Encoded::Constant(_)) && frame.is_empty());
    /// ```
    pub fn encode_block_numeric(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        (kind, row): (Option<NumKind>, usize),
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Encoded {
        self.encode_numeric(stream, block, esize, (kind, row), data, out, None)
    }

    /// [`Encoder::encode_block_numeric`], taking the plan `shared` holds where it may (see
    /// [`Encoder::encode_shared`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn encode_numeric(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        (kind, row): (Option<NumKind>, usize),
        data: &[u8],
        out: &mut Vec<u8>,
        shared: Option<&mut Shared>,
    ) -> Encoded {
        let whole = esize > 0 && data.len().is_multiple_of(esize);
        self.row = kind
            .filter(|k| {
                matches!(k, NumKind::F32 | NumKind::F64)
                    && k.esize() == esize
                    && whole
                    && matches!(
                        self.mode,
                        FilterMode::Auto | FilterMode::Fixed(Filter::Lorenzo)
                    )
                    && self.codec != Codec::None
            })
            .and_then(|_| u32::try_from(row).ok())
            .filter(|&r| r >= 2)
            .map(|r| r as usize);
        self.kind = kind.filter(|k| self.pco && k.esize() == esize && whole);
        self.plane_row = self
            .kind
            .and_then(|_| u32::try_from(row).ok())
            .filter(|&r| r >= 2)
            .map(|r| r as usize);
        let done = self.encode_with(stream, block, esize, data, out, shared);
        self.kind = None;
        self.row = None;
        self.plane_row = None;
        done
    }

    /// The row length the `lorenzo` filter uses on a block of `len` bytes (elements of `esize`
    /// bytes): the variable's, or the whole block when that is shorter.
    fn lorenzo_row(&self, esize: usize, len: usize) -> usize {
        let n = (len / esize.max(1)).max(1);
        self.row.unwrap_or(n).min(n)
    }

    /// The filters worth trying for elements of `esize` bytes.
    fn candidates(&self, esize: usize) -> &'static [Filter] {
        match (esize, self.thorough) {
            (1, _) => &[Filter::None, Filter::ByteDelta],
            (_, false) => &[Filter::Shuffle, Filter::ByteDelta, Filter::ZigZagDelta],
            (_, true) => &[
                Filter::None,
                Filter::Shuffle,
                Filter::ByteDelta,
                Filter::Delta,
                Filter::ZigZagDelta,
            ],
        }
    }

    /// Compresses `input` with the block codec into `out` (replacing it); false if the result
    /// is not smaller than `limit`.
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        out.clear();
        #[cfg(test)]
        {
            self.codec_runs += 1;
        }
        let c = if self.use_fast {
            self.probe.as_deref_mut().filter(|_| self.fast)
        } else {
            self.block.as_deref_mut()
        };
        c.is_some_and(|c| c.compress(input, limit, out))
    }

    /// The block codec's compressor when the codec is zstd (the level the judges compare the
    /// probe's with), else None.
    fn zstd_block(&mut self) -> Option<&mut (dyn Compress + 'static)> {
        if self.codec == Codec::Zstd {
            self.block.as_deref_mut()
        } else {
            None
        }
    }

    /// The block's plan: its filter and the path its bytes take (see [`Plan`]). In the `auto`
    /// mode, judged on the block (see [`Encoder::choose_auto`]); else the fixed filter with
    /// the block codec. Thorough encoders then search on the whole block (their lzma plan
    /// made here).
    fn choose(&mut self, esize: usize, data: &[u8]) -> Plan {
        #[cfg(test)]
        {
            self.judged += 1;
        }
        let cands = self.candidates(esize);
        let fixed = match self.mode {
            // The 2-D predictor is for the rows of float variables of 2+ dimensions (see
            // `encode_block_numeric`); other blocks take the 1-D difference instead.
            FilterMode::Fixed(Filter::Lorenzo)
                if self.row.is_none()
                    || !super::lorenzo::supports(esize)
                    || !data.len().is_multiple_of(esize) =>
            {
                if esize == 1 {
                    Filter::ByteDelta
                } else {
                    Filter::ZigZagDelta
                }
            }
            // `plane` and `mask` go with codec pco only, which only the per-block choice makes;
            // `refs` (whose payload holds its table's entry count) only the `max` preset's lzma
            // path.
            FilterMode::Fixed(Filter::Plane | Filter::Refs | Filter::Mask | Filter::Fit) => {
                Filter::Shuffle
            }
            FilterMode::Fixed(f) => f,
            FilterMode::Auto if cands.len() == 1 => cands[0],
            FilterMode::Auto => return self.choose_auto(esize, data, cands),
        };
        let plan = Plan {
            filter: fixed,
            fast: false,
            refs_est: None,
            path: Path::Plain,
        };
        self.thorough_plan(plan, esize, data, 0)
    }

    /// A thorough encoder's plan after its filter (`plan`) and the probe level's result on the
    /// block with it (`probe_size`, 0 when not judged): the search on the whole block
    /// ([`Path::Thorough`]), with lzma's plan where lzma may be tried.
    fn thorough_plan(&mut self, plan: Plan, esize: usize, data: &[u8], probe_size: usize) -> Plan {
        if !self.thorough {
            return plan;
        }
        let mut f = std::mem::take(&mut self.filtered);
        let lzma = if self.lzma_alt {
            self.lzma_plan(plan.filter, data, esize, probe_size, &mut f)
        } else {
            None
        };
        self.filtered = f;
        let block_mode = self
            .kind
            .filter(|k| k.is_float())
            .and_then(|k| super::pcodec::block_float_mode(k, data));
        Plan {
            path: Path::Thorough {
                probe_size,
                lzma,
                block_mode,
            },
            ..plan
        }
    }

    /// [`Encoder::choose_filter`] in the `auto` mode: every candidate filter (and `lorenzo` on
    /// rows) judged with zstd at the probe level on a sample of the block (the whole block for
    /// thorough encoders), then the numeric codecs for a block of numbers (see
    /// [`Encoder::judge_numeric`]), and the level for fast blocks.
    fn choose_auto(&mut self, esize: usize, data: &[u8], cands: &'static [Filter]) -> Plan {
        let sample = if self.thorough {
            data.len()
        } else {
            data.len().min(FILTER_SAMPLE) / esize * esize
        };
        let sample = sample.max(esize).min(data.len());
        let at = if self.thorough {
            0
        } else {
            sample_start(data, esize, sample)
        };
        let sample = &data[at..at + sample];
        let (mut f, mut c) = (
            std::mem::take(&mut self.filtered),
            std::mem::take(&mut self.scratch),
        );
        let mut best = self.probe_filters(cands, sample, esize, &mut f, &mut c);
        let plain = best;
        // The 2-D predictor, on at least two rows: its payload holds the row length.
        if let Some(row) = self.row.filter(|&r| 2 * r * esize <= sample.len()) {
            super::lorenzo::apply(sample, esize, row, &mut f);
            c.clear();
            let size = if zstd_into(self.probe.as_deref_mut(), &f, &mut c) {
                c.len()
            } else {
                f.len()
            } + super::lorenzo::ROW_PREFIX;
            let margin = if self.thorough { 1.0 } else { LORENZO_MARGIN };
            if (size as f64) < margin * best.0 as f64 {
                best = (size, Filter::Lorenzo);
            }
        }
        let (path, refs_est) = match self.kind.filter(|_| !self.thorough) {
            Some(kind) => {
                let probed = Probed {
                    esize,
                    at,
                    sample,
                    best,
                    plain,
                };
                self.judge_numeric(kind, data, &probed, &mut f, &mut c)
            }
            None => (Path::Plain, None),
        };
        let mut fast = false;
        if self.fast {
            // The probe is the fast level: does the block's level pay on the sample?
            let row = self.lorenzo_row(esize, sample.len());
            apply_filter_rows(best.1, sample, esize, row, &mut f);
            c.clear();
            let slow = if zstd_into(self.zstd_block(), &f, &mut c) {
                c.len()
            } else {
                f.len()
            };
            fast = slow as f64 >= FAST_ENOUGH * best.0 as f64;
        }
        (self.filtered, self.scratch) = (f, c);
        let plan = Plan {
            filter: best.1,
            fast,
            refs_est,
            path,
        };
        self.thorough_plan(plan, esize, data, best.0)
    }

    /// The candidate filter whose result on `sample` with zstd at the probe level is smallest,
    /// and that size (`f` and `c` are scratch space).
    fn probe_filters(
        &mut self,
        cands: &[Filter],
        sample: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (usize, Filter) {
        let mut best = (usize::MAX, cands[0]);
        for &cand in cands {
            apply_filter(cand, sample, esize, f);
            c.clear();
            let size = if zstd_into(self.probe.as_deref_mut(), f, c) {
                c.len()
            } else {
                f.len()
            };
            if size < best.0 {
                best = (size, cand);
            }
        }
        best
    }

    /// The numeric codecs' trials on a block of numbers of `kind` (default preset), after the
    /// filters' probe on its sample (`p`): `fit`, pco, `plane`, `mask` and `refs`, each judged
    /// against zstd's estimated result. Returns the path the block takes and, where its values
    /// come from a small set, the estimate that has the block codec's path try `refs` (see
    /// [`Plan::refs_est`]). `f` and `c` are scratch space.
    fn judge_numeric(
        &mut self,
        kind: NumKind,
        data: &[u8],
        p: &Probed<'_>,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Path, Option<f64>) {
        let Probed {
            esize,
            at,
            sample,
            best,
            plain,
        } = *p;
        c.clear();
        // Floats in the mode pco finds on the block (see `block_float_mode`),
        // which the block's run then takes too.
        let block_mode = super::pcodec::block_float_mode(kind, data);
        // A block of floats with a fill value tries pco on its other elements
        // (`mask`, below) instead of pco on all of them, which the fill values cost
        // dearly; integers try both (a flag's most common value is no fill).
        let fill = super::mask::fill_of(data, esize);
        let scale = data.len() as f64 / sample.len() as f64;
        let (fit, zstd_est) = self.judge_fit(kind, data, p, fill, block_mode);
        // Clearly below zstd, and below mask where the block has a fill value.
        let sure = kind.is_float()
            && fit.is_some_and(|(_, est, mask)| {
                est < FIT_SURE * zstd_est && mask.is_none_or(|mask| est < FIT_MARGIN * mask)
            });
        let fit = fit.map(|(row, est, _)| (row, est));
        if let Some((row, _)) = fit.filter(|_| sure) {
            return (Path::Fit { kind, row, fill }, None);
        }
        let pco_choice = match fill {
            Some(_) if kind.is_float() => None,
            _ => pco_sample(kind, sample, block_mode, c),
        };
        let margin = if pco_choice.is_some_and(|ch| ch.decimal()) {
            PCO_MARGIN_DECIMAL
        } else {
            PCO_MARGIN
        };
        let pco_path = pco_choice.map(|choice| Path::Pco { kind, choice });
        let mut path = pco_path
            .filter(|_| (c.len() as f64) < margin * best.0 as f64)
            .unwrap_or(Path::Plain);
        let pco_size = if pco_choice.is_some() {
            c.len()
        } else {
            usize::MAX
        };
        // The 2-D predictor with pco, on at least two rows.
        if let Some(row) = self.plane_row.filter(|&r| 2 * r * esize <= sample.len()) {
            let p = super::plane::choose(sample, esize, row as u32, kind.is_float());
            super::plane::apply(sample, esize, &p, f);
            c.clear();
            if super::pcodec::compress_residuals(kind.unsigned(), f, super::pcodec::LEVEL, c) {
                let size = c.len() + super::plane::PREFIX;
                if (size as f64) < PLANE_MARGIN * best.0 as f64 {
                    // pco alone where it does as well (it decodes faster).
                    let check = !matches!(path, Path::Pco { .. });
                    path = match pco_path {
                        Some(pco) if pco_size <= size => pco,
                        _ => Path::Plane {
                            kind,
                            params: p,
                            check,
                        },
                    };
                }
            }
        }
        let taken = match path {
            Path::Plane { .. } => c.len() + super::plane::PREFIX,
            Path::Pco { .. } => pco_size,
            _ => usize::MAX,
        };
        let mut mask_est = None;
        if let Some(fill) = fill {
            let sampled = Sampled {
                at,
                len: sample.len(),
                best: best.0,
                plain,
                taken,
            };
            if let Some((choice, est)) = self.mask_sample(kind, data, fill, sampled, block_mode) {
                path = Path::Mask { kind, choice, fill };
                mask_est = Some(est);
            }
        }
        // The fitted predictor where it beats what the sample chose.
        if let Some((row, est)) = fit {
            // Against pco's choices (as dear to pack and to read) by a small
            // margin; against zstd by the margin that takes it first.
            let (chosen, margin) = match mask_est {
                Some(m) => (m, FIT_MARGIN),
                None if taken != usize::MAX => (taken as f64 * scale, FIT_MARGIN),
                None => (zstd_est, FIT_SURE),
            };
            if est < margin * chosen {
                path = Path::Fit { kind, row, fill };
            }
        }
        // Values from a small set (the coordinates of stations reporting in cycles):
        // where no numeric codec took the block, it tries `refs` with zstd.
        let small_set = self.codec == Codec::Zstd
            && taken == usize::MAX
            && !matches!(path, Path::Mask { .. })
            && super::refs::late_new(sample, esize)
                .is_some_and(|(new, half)| new * REFS_LATE_NEW < half);
        let refs_est = small_set.then(|| best.0 as f64 * data.len() as f64 / sample.len() as f64);
        (path, refs_est)
    }

    /// The `fit` trial of [`Encoder::judge_numeric`]: where the block (of a variable of two
    /// dimensions or more, floats not in a decimal mode) may use it, its row length, estimated
    /// result and, with a fill value `fill`, `mask`'s (see [`Encoder::fit_sample`]); and
    /// zstd's result on the block estimated from the sample's. Leaves the block's fill section
    /// in `mask_prefix`.
    fn judge_fit(
        &mut self,
        kind: NumKind,
        data: &[u8],
        p: &Probed<'_>,
        fill: Option<u64>,
        block_mode: Option<super::pcodec::Mode>,
    ) -> (Option<(usize, f64, Option<f64>)>, f64) {
        let Probed {
            esize,
            at,
            sample,
            best,
            ..
        } = *p;
        // A predictor fitted to the block, on rows of a variable of at least two
        // dimensions (not for floats pco takes as decimals or whole numbers, whose
        // multiplier the residuals lose): tried first, as where it is clearly
        // below the best filter with zstd nothing else beats it by much, and the
        // other trials are skipped; else judged against their choice.
        let scale = data.len() as f64 / sample.len() as f64;
        let classic = block_mode.is_none_or(|m| m == super::pcodec::Mode::Classic);
        let window = at / esize..(at + sample.len()) / esize;
        let fit_row = self
            .plane_row
            .filter(|_| classic && super::fit::supports(esize));
        // The block's fill section (kept for the block's run) and how many of its
        // elements are not the fill.
        self.mask_prefix.clear();
        let others = match (fit_row, fill) {
            (Some(_), Some(f)) => super::mask::section(data, esize, f, &mut self.mask_prefix)
                .map(|split| split.others),
            _ => None,
        };
        // zstd's result on the block from the sample's, scaled by the elements
        // that are not the fill (which cost zstd little): a sample in a polar
        // row's ice makes zstd look twice as good as it does on the block.
        let zstd_est = match (fill, others) {
            (Some(f), Some(others)) => {
                let in_sample = sample
                    .chunks_exact(esize)
                    .filter(|x| super::mask::element(x) != f)
                    .count()
                    .max(sample.len() / esize / 8);
                best.0 as f64 * others as f64 / in_sample as f64
            }
            _ => best.0 as f64 * scale,
        };
        let fit = fit_row.and_then(|row| {
            let others = others.unwrap_or(data.len() / esize);
            let (est, mask) =
                self.fit_sample(kind, data, row, (fill, others), window, block_mode)?;
            Some((row, est, mask))
        });
        (fit, zstd_est)
    }
    /// Encodes block `block` of the stream with frame stream id `stream` (elements of `esize`
    /// bytes). Unless the codec is `none`, a block of identical elements (of 1 to 8 bytes) is
    /// [`Encoded::Constant`] and nothing is appended to `out`: the writer records it in the index
    /// and a constants frame. Any other block is appended to `out` as a complete frame (header and
    /// payload), [`Encoded::Frame`]; a block that does not shrink is stored raw.
    #[cfg(any(test, feature = "testing"))]
    pub fn encode_block(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Encoded {
        self.encode_with(stream, block, esize, data, out, None)
    }

    /// [`Encoder::encode_block`], taking the plan `shared` holds where it may, else judging the
    /// block and leaving its plan there (see [`Encoder::encode_shared`]).
    fn encode_with(
        &mut self,
        stream: u32,
        block: u64,
        esize: usize,
        data: &[u8],
        out: &mut Vec<u8>,
        shared: Option<&mut Shared>,
    ) -> Encoded {
        if let Some(c) = self.constant(stream, block, esize, data) {
            return Encoded::Constant(c);
        }
        let e = esize.max(1);
        let start = out.len();
        out.resize(start + crate::format::FRAME_HEADER_LEN, 0);
        let payload_at = out.len();
        let (codec, filter) = if self.codec == Codec::None {
            out.extend_from_slice(data);
            (Codec::None, Filter::None)
        } else {
            self.mask_prefix.clear();
            // The block's fill value, which a shared plan must have been judged with.
            let fill = shared.as_ref().map(|_| super::mask::fill_of(data, e));
            let taken = shared
                .as_deref()
                .zip(fill)
                .and_then(|(s, fill)| self.take_shared(s, e, fill, data));
            let plan = match taken {
                Some(plan) => plan,
                None => self.choose(e, data),
            };
            #[cfg(test)]
            {
                self.last_plan = Some(plan);
            }
            let mut c = std::mem::take(&mut self.scratch);
            let result = self.execute(&plan, e, data, &mut c);
            if let Some(s) = shared {
                s.update(plan, taken.is_some(), (data.len(), fill.flatten()), c.len());
            }
            out.extend_from_slice(&c);
            self.scratch = c;
            result
        };
        let payload = &out[payload_at..];
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: data.len() as u32,
            stream,
            block,
            codec,
            filter,
            esize: esize as u16,
            payload_crc: crc(payload),
        };
        out[start..payload_at].copy_from_slice(&h.encode());
        Encoded::Frame(h)
    }

    /// The block as a [`ConstantBlock`] when the codec is not `none` and its elements (of 1 to
    /// 8 bytes, at least two) are all the same.
    fn constant(
        &self,
        stream: u32,
        block: u64,
        esize: usize,
        data: &[u8],
    ) -> Option<ConstantBlock> {
        let e = esize.max(1);
        if self.codec != Codec::None
            && (1..=8).contains(&esize)
            && data.len() >= 2 * e
            && data.len().is_multiple_of(e)
            && data.chunks_exact(e).all(|c| c == &data[..e])
        {
            let mut value = [0u8; 8];
            value[..e].copy_from_slice(&data[..e]);
            return Some(ConstantBlock {
                stream,
                block,
                esize: e as u8,
                value,
            });
        }
        None
    }
}

/// What a sample says of lzma on a block (see [`Encoder::lzma_plan`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LzmaPlan {
    /// The filter before lzma.
    filter: Filter,
    /// lzma's estimated result on the block (0: not judged).
    est: f64,
    /// The block codec's estimated result on the block (0: not judged).
    slow: f64,
    /// Whether to try the `refs` filter before lzma too (values of 4 or 8 bytes repeated far
    /// apart; see [`Encoder::lzma_block`]).
    refs: bool,
}

impl LzmaPlan {
    /// Whether lzma is so clearly smaller than the block codec's estimated result that the
    /// block codec need not run.
    fn sure(&self) -> bool {
        self.est < LZMA_MARGIN * self.slow
    }
}

/// What [`Encoder::encode_block`] made of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoded {
    /// A frame, appended to the output; its header.
    Frame(FrameHeader),
    /// A block whose elements are all the same: no frame (it lives in the index).
    Constant(ConstantBlock),
}

impl Encoded {
    /// The frame's header, or `None` for a constant block.
    #[cfg(any(test, feature = "testing"))]
    pub fn frame(self) -> Option<FrameHeader> {
        match self {
            Encoded::Frame(h) => Some(h),
            Encoded::Constant(_) => None,
        }
    }
}

/// A block whose elements all equal one value, which the writer records in the index and a
/// constants frame instead of writing a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantBlock {
    /// Frame stream id.
    pub stream: u32,
    /// Block number within the stream.
    pub block: u64,
    /// Element size, 1 to 8.
    pub esize: u8,
    /// The element, in its first `esize` bytes (the rest zero).
    pub value: [u8; 8],
}

impl ConstantBlock {
    /// The element's bytes.
    pub fn value(&self) -> &[u8] {
        &self.value[..usize::from(self.esize).min(8)]
    }
}

/// What the filters' probe found on a block's sample, for [`Encoder::judge_numeric`].
#[derive(Clone, Copy)]
struct Probed<'s> {
    /// The block's element size (bytes).
    esize: usize,
    /// Where the sample starts in the block (bytes).
    at: usize,
    /// The sample.
    sample: &'s [u8],
    /// The best result and filter with zstd at the probe level (`lorenzo` included).
    best: (usize, Filter),
    /// The best result and filter among the 1-D filters.
    plain: (usize, Filter),
}

/// What the default preset's sample found on a block, for [`Encoder::mask_sample`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampled {
    /// Where the sample starts in the block (bytes).
    at: usize,
    /// The sample's length (bytes).
    len: usize,
    /// The sample's best result with zstd (the probe level), after any filter.
    best: usize,
    /// The best result and filter among the 1-D filters (the 2-D `lorenzo` left out).
    plain: (usize, Filter),
    /// The sample's result with `plane` and pco, when it chose them (else `usize::MAX`).
    taken: usize,
}

/// Where a block's sample of `len` bytes starts: at the block's start, unless more than half
/// of the elements there (of `esize` bytes) equal the first (fill values: a polar or land
/// region heading a gridded field), then at 3/8 or 5/8 of the block, if that window is not
/// so; else at the start. A sample of fill values would judge the block by what zstd makes
/// of repeats.
pub(crate) fn sample_start(data: &[u8], esize: usize, len: usize) -> usize {
    let e = esize.max(1);
    let dominated = |w: &[u8]| {
        let first = &w[..e.min(w.len())];
        2 * w.chunks_exact(e).filter(|c| *c == first).count() > w.len() / e
    };
    if len == 0 || len >= data.len() || !dominated(&data[..len]) {
        return 0;
    }
    for (num, den) in [(3, 8), (5, 8)] {
        let at = (data.len() / e * num / den * e).min((data.len() - len) / e * e);
        if !dominated(&data[at..at + len]) {
            return at;
        }
    }
    0
}

/// [`apply_filter`], with rows of `row` elements for the `lorenzo` filter.
pub(crate) fn apply_filter_rows(
    filter: Filter,
    data: &[u8],
    esize: usize,
    row: usize,
    out: &mut Vec<u8>,
) {
    if filter == Filter::Lorenzo {
        super::lorenzo::apply(data, esize, row, out);
    } else {
        apply_filter(filter, data, esize, out);
    }
}

/// Compresses `input` with the zstd compressor `c`, if any, into `out` (appended), with no
/// limit: false without one.
pub(crate) fn zstd_into(
    c: Option<&mut (dyn Compress + 'static)>,
    input: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    c.is_some_and(|c| c.compress(input, usize::MAX, out))
}
