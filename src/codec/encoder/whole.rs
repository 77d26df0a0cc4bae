//! The encoder's checks on a whole block (`plane`, `refs`, the slow level) and its lzma plan.

use super::repeats::{far_repeats, repeat_shares, repeat_unit};
use super::*;
use crate::format::{Codec, Filter};

impl Encoder {
    /// Checks a block's `plane` payload in `c` (made because the sample chose it over the
    /// block codec) against the block codec after `filter` on the whole block: keeps it unless
    /// it is not smaller than [`PLANE_MARGIN`] times that result, which it then leaves in `c`
    /// (what the block would have been without `plane`). A payload already smaller than
    /// [`PLANE_SURE`] times the block codec's result estimated on a spread sample (see
    /// [`Encoder::spread_estimate`]) is kept without that run.
    pub(super) fn check_plane(
        &mut self,
        esize: usize,
        filter: Filter,
        data: &[u8],
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        #[cfg(test)]
        {
            self.plane_checked = true;
        }
        if self
            .spread_estimate(filter, data, esize, f)
            .is_some_and(|est| (c.len() as f64) < PLANE_SURE * est)
        {
            return Some((Codec::Pco, Filter::Plane));
        }
        let prefix = self.apply_block_filter(filter, data, esize, f);
        let mut other = Vec::new();
        if self.compress(f, data.len() - prefix.len(), &mut other)
            && (c.len() as f64) >= PLANE_MARGIN * (other.len() + prefix.len()) as f64
        {
            other.splice(0..0, prefix);
            *c = other;
            return Some((self.codec, filter));
        }
        Some((Codec::Pco, Filter::Plane))
    }

    /// The block codec on `data` after `filter` into `c` (the bytes as they are, codec none,
    /// where that is not smaller). A block whose values come from a small set (`refs_est`)
    /// tries `refs` first and keeps it without that run where it is smaller than [`REFS_SURE`]
    /// times the estimate, else where it is smaller than [`REFS_MARGIN`] times the run's result.
    pub(super) fn plain_block(
        &mut self,
        filter: Filter,
        refs_est: Option<f64>,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        let refs = match refs_est.and_then(|est| Some((est, self.refs_payload(data, esize, f)?))) {
            Some((est, z)) if (z.len() as f64) < REFS_SURE * est => {
                *c = z;
                return (self.codec, Filter::Refs);
            }
            refs => refs.map(|(_, z)| z),
        };
        let prefix = self.apply_block_filter(filter, data, esize, f);
        let result = if self.compress(f, data.len() - prefix.len(), c) {
            c.splice(0..0, prefix);
            (self.codec, filter)
        } else {
            c.clear();
            c.extend_from_slice(data);
            (Codec::None, Filter::None)
        };
        match refs {
            Some(z) if (z.len() as f64) < REFS_MARGIN * c.len() as f64 => {
                *c = z;
                (self.codec, Filter::Refs)
            }
            _ => result,
        }
    }

    /// The default preset's `refs` trial: the table's entry count and the block codec's result
    /// on the `refs` filter's bytes of `data` (using `f`); `None` where the filter does not
    /// apply or that is not smaller than the block.
    pub(super) fn refs_payload(
        &mut self,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Option<Vec<u8>> {
        let d = crate::codec::refs::apply(data, esize, f)?;
        let mut z = Vec::new();
        if !self.compress(
            f,
            data.len().saturating_sub(crate::codec::refs::PREFIX),
            &mut z,
        ) {
            return None;
        }
        z.splice(0..0, d.to_be_bytes());
        Some(z)
    }

    /// The size the block codec would make of `data` after `filter`, estimated from
    /// [`SPREAD_PIECES`] pieces of [`SPREAD_PIECE`] bytes spread evenly over the block (the first
    /// at its start, the last at its end), compressed together and scaled to the block's
    /// length; `None` for a block of less than twice their total, or when the codec is not
    /// zstd. Pieces cut apart lose some of the block's long matches, so the estimate is a few
    /// percent above the real result (measured: 3-4 % on topo.nc's elevation, whose pieces of
    /// 64 KiB were 1-3 % above it at four times the cost).
    pub(super) fn spread_estimate(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Option<f64> {
        let piece = SPREAD_PIECE / esize * esize;
        let total = piece * SPREAD_PIECES;
        if self.codec != Codec::Zstd || piece == 0 || 2 * total > data.len() {
            return None;
        }
        let n = data.len() / esize - piece / esize;
        let mut sample = Vec::with_capacity(total);
        for i in 0..SPREAD_PIECES {
            let at = n * i / (SPREAD_PIECES - 1) * esize;
            sample.extend_from_slice(data.get(at..at + piece)?);
        }
        apply_filter_rows(filter, &sample, esize, self.lorenzo_row(esize, total), f);
        let mut z = Vec::new();
        let size = if zstd_into(self.zstd_block(), f, &mut z) {
            z.len()
        } else {
            f.len()
        };
        Some(size as f64 * data.len() as f64 / total as f64)
    }

    /// Thorough zstd encoders: whether lzma may pay on a block whose filter is `filter`.
    /// lzma runs on the block's first [`LZMA_SAMPLE`] bytes after the chosen filter and
    /// unfiltered (LZMA finds repeated multi-byte values whole); its result, scaled by the
    /// zstd probe's result on the whole block over the sample's, estimates lzma's on the
    /// block (conservatively: a whole block holds more repeats), and likewise the block
    /// codec's level on the sample estimates that. `None` when
    /// lzma cannot beat the probe's result by [`LZMA_MARGIN`] (then the level cannot either).
    /// A block shorter than twice the sample is not judged: its plan is to try lzma after it.
    pub(super) fn lzma_plan(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        probe_size: usize,
        f: &mut Vec<u8>,
    ) -> Option<LzmaPlan> {
        use crate::codec::lzma;
        let mut cands = [Filter::None; 2];
        let cands = match filter {
            Filter::None | Filter::Lorenzo => &cands[..1],
            g => {
                cands[0] = g;
                &cands[..]
            }
        };
        let n = LZMA_SAMPLE / esize * esize;
        let unit = repeat_unit(esize, self.kind);
        // Values judged one by one (8 bytes, 4-byte integers): not 4-byte floats, where
        // station coordinates repeated in runs of the same order (points.nc) lose with refs
        // and cost a second lzma run.
        let refs = crate::codec::refs::supports(esize)
            && unit == Some(esize)
            && data.len().is_multiple_of(esize);
        if n == 0 || 2 * n > data.len() || probe_size == 0 {
            // Tried after the block codec; after `refs` too where values repeat.
            let repeats = unit
                .and_then(|u| repeat_shares(data, u, u))
                .is_some_and(|(all, _)| all >= REFS_REPEATS);
            return Some(LzmaPlan {
                filter: cands[0],
                est: 0.0,
                slow: 0.0,
                refs: refs && repeats,
            });
        }
        let sample = &data[..n];
        let shares = unit.and_then(|u| repeat_shares(data, n, u));
        if far_repeats(shares) {
            // Values repeat across the block far more than within the sample: the sample
            // cannot see what LZMA finds, so lzma is tried on the whole block, unfiltered
            // (a filter would turn repeated values into differences that do not repeat), and
            // after `refs`, which turns them into references to a table of the values.
            return Some(LzmaPlan {
                filter: Filter::None,
                est: 0.0,
                slow: 0.0,
                refs,
            });
        }
        let (mut best, mut g) = (usize::MAX, cands[0]);
        let mut z = Vec::new();
        for &cand in cands {
            apply_filter(cand, sample, esize, f);
            z.clear();
            if lzma::compress(f, lzma::AUTO_LEVEL, best, &mut z) {
                (best, g) = (z.len(), cand);
            }
        }
        // `refs` where values repeat (within the sample too: else the block's far repeats took
        // the branch above), judged on the sample like the others.
        if refs && shares.is_some_and(|(all, _)| all >= REFS_REPEATS) {
            z.clear();
            if lzma_payload(Filter::Refs, sample, esize, f, best, &mut z) {
                (best, g) = (z.len(), Filter::Refs);
            }
        }
        let mut size = |ctx: Option<&mut (dyn Compress + 'static)>, f: &Vec<u8>| {
            z.clear();
            if zstd_into(ctx, f, &mut z) {
                z.len()
            } else {
                f.len()
            }
        };
        apply_filter_rows(filter, sample, esize, self.lorenzo_row(esize, n), f);
        let probe = size(self.probe.as_deref_mut(), f).max(1) as f64;
        let scale = probe_size as f64 / probe;
        let est = best as f64 * scale;
        if best == usize::MAX || est >= LZMA_MARGIN * probe_size as f64 {
            return None;
        }
        let slow = size(self.zstd_block(), f) as f64 * scale;
        Some(LzmaPlan {
            filter: g,
            est,
            slow,
            refs: false,
        })
    }

    /// Encodes the block with lzma into `c` when its plan is sure of it: kept when it is
    /// smaller than [`LZMA_MARGIN`] of the block codec's estimated result and, for numeric
    /// blocks that may use pco, of pco's result (not tried when the plan's estimate is not). `None` (and `c` unspecified) when lzma is not used.
    pub(super) fn lzma_sure(
        &mut self,
        plan: LzmaPlan,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        let mut limit = LZMA_MARGIN * plan.slow;
        if let Some(kind) = self.kind {
            // pco's result is exact and cheap to get: lzma must promise to beat it too (the
            // block codec's path then runs pco again: a small cost beside lzma's).
            let mut p = Vec::new();
            if crate::codec::pcodec::compress(kind, data, crate::codec::pcodec::LEVEL, &mut p) {
                limit = limit.min(LZMA_MARGIN * p.len() as f64);
                if plan.est >= limit {
                    return None;
                }
            }
        }
        let limit = (limit as usize).min(data.len());
        lzma_payload(plan.filter, data, esize, f, limit, c).then_some((Codec::Lzma, plan.filter))
    }

    /// Replaces the block's payload `c` (encoded as `current`) by an lzma one where that is
    /// smaller than [`LZMA_MARGIN`] of it, when the plan's estimate promises that (or the
    /// block was too short to judge). Where lzma did not run on the block unfiltered, a
    /// `context` result may still try that ([`Encoder::lzma_after_context`]).
    pub(super) fn lzma_block(
        &mut self,
        plan: LzmaPlan,
        data: &[u8],
        esize: usize,
        current: (Codec, Filter),
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        let mut target = (LZMA_MARGIN * c.len() as f64) as usize;
        if plan.est >= target as f64 {
            return self.lzma_after_context(data, esize, current, f, c);
        }
        let mut result = current;
        let mut z = Vec::new();
        // `refs` first: its input is shorter (4 bytes an element and the distinct values once)
        // and lzma on it runs two to three times faster than on the block; the block itself
        // then has to beat it (the run gives up as soon as its output reaches that size).
        // Not where the block codec already made the block tiny (a column of times repeated
        // by every station, which pco codes in a few kB): lzma on either form runs through the
        // whole block, and refs cannot win much there.
        let small = c.len().saturating_mul(REFS_RATIO) < data.len();
        if plan.refs && !small && lzma_payload(Filter::Refs, data, esize, f, target, &mut z) {
            target = z.len();
            std::mem::swap(c, &mut z);
            result = (Codec::Lzma, Filter::Refs);
        }
        if lzma_payload(plan.filter, data, esize, f, target, &mut z) {
            *c = z;
            (Codec::Lzma, plan.filter)
        } else if plan.filter == Filter::None {
            result
        } else {
            self.lzma_after_context(data, esize, result, f, c)
        }
    }

    /// Replaces a `context` payload `c` that left the block larger than [`NOISE_SHARE`] of it
    /// by lzma's on the whole block, unfiltered, where that is smaller (`max` only; called
    /// where lzma's plan did not run lzma so: there is no plan, its sample judged lzma no
    /// better than the block codec, or lzma after a filter lost). Such a block is mostly noise, whose values may still come from a
    /// limited set that LZMA finds repeated one by one across the block, which its first
    /// 128 KiB do not show: monthly_navy_winds.cdf's UWND (context 4,030,071 bytes, lzma after
    /// zzdelta 4,121,560, lzma 3,891,552).
    pub(crate) fn lzma_after_context(
        &mut self,
        data: &[u8],
        esize: usize,
        current: (Codec, Filter),
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        if !self.lzma_alt
            || current.0 != Codec::Context
            || (c.len() as f64) < NOISE_SHARE * data.len() as f64
        {
            return current;
        }
        let mut z = Vec::new();
        if lzma_payload(Filter::None, data, esize, f, c.len(), &mut z) {
            *c = z;
            (Codec::Lzma, Filter::None)
        } else {
            current
        }
    }

    /// Replaces the block's payload `c` (encoded as `current`) by a `context` one where that is
    /// smaller: thorough encoders only, on numeric blocks of 2, 4 or 8 bytes an element (with
    /// the variable's rows where it has two dimensions or more).
    pub(super) fn context_block(
        &mut self,
        data: &[u8],
        esize: usize,
        current: (Codec, Filter),
        c: &mut Vec<u8>,
    ) -> (Codec, Filter) {
        let Some(kind) = self
            .kind
            .filter(|_| self.thorough && crate::codec::context::supports(esize))
        else {
            return current;
        };
        let n = data.len() / esize;
        let row = self.plane_row.unwrap_or(n).clamp(1, n.max(1));
        let mut z = Vec::new();
        if crate::codec::context::compress_best(data, esize, kind.is_float(), row, c.len(), &mut z)
            .is_some()
        {
            *c = z;
            (Codec::Context, Filter::None)
        } else {
            current
        }
    }

    /// Applies `filter` to a whole block into `f`; returns the bytes that precede the codec's
    /// output in the payload (the row length for `lorenzo`, else none).
    pub(super) fn apply_block_filter(
        &self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        f: &mut Vec<u8>,
    ) -> Vec<u8> {
        let row = self.lorenzo_row(esize, data.len());
        apply_filter_rows(filter, data, esize, row, f);
        if filter == Filter::Lorenzo {
            (row as u32).to_be_bytes().to_vec()
        } else {
            Vec::new()
        }
    }

    /// The size the block codec's level would make of `data` after `filter`, estimated as the
    /// probe level's result on the whole block (`probe_size`) times the level's gain over the
    /// probe level on the block's first [`GAIN_SAMPLE`] bytes; `None` for a block of less than
    /// twice that (running the level on it costs little more) or without a probe result.
    pub(super) fn estimate_slow(
        &mut self,
        filter: Filter,
        data: &[u8],
        esize: usize,
        probe_size: usize,
        f: &mut Vec<u8>,
    ) -> Option<f64> {
        let n = GAIN_SAMPLE / esize * esize;
        if probe_size == 0 || n == 0 || 2 * n > data.len() {
            return None;
        }
        apply_filter_rows(filter, &data[..n], esize, self.lorenzo_row(esize, n), f);
        let mut c = Vec::new();
        let fast = if zstd_into(self.probe.as_deref_mut(), f, &mut c) {
            c.len()
        } else {
            f.len()
        };
        c.clear();
        let slow = if zstd_into(self.zstd_block(), f, &mut c) {
            c.len()
        } else {
            f.len()
        };
        Some(probe_size as f64 * slow as f64 / fast.max(1) as f64)
    }
}

/// The payload of an lzma frame for `data` after `filter` into `out` (replacing it; `f` is
/// scratch space for the filtered bytes): for `refs`, the table's entry count and then the .xz
/// stream of the filtered bytes; for the others (not `lorenzo` nor `plane`), the .xz stream of
/// [`apply_filter`]'s result. False (and `out` empty) when that is not smaller than `limit`
/// bytes.
pub(crate) fn lzma_payload(
    filter: Filter,
    data: &[u8],
    esize: usize,
    f: &mut Vec<u8>,
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    use crate::codec::{lzma, refs};
    out.clear();
    if filter == Filter::Refs {
        let Some(d) = refs::apply(data, esize, f) else {
            return false;
        };
        out.extend_from_slice(&d.to_be_bytes());
        let ok = lzma::compress(f, lzma::AUTO_LEVEL, limit.saturating_sub(refs::PREFIX), out);
        if !ok {
            out.clear();
        }
        return ok;
    }
    apply_filter(filter, data, esize, f);
    lzma::compress(f, lzma::AUTO_LEVEL, limit, out)
}
