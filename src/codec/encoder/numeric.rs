//! The encoder's numeric paths: `mask`, `fit`, `plane` and pco.

use super::*;
use crate::codec::front::{Numbers, Residuals};
use crate::codec::pcodec::pco_thorough;
use crate::codec::pcodec::NumKind;
use crate::codec::registry::front_encoders;
use crate::format::{Codec, Filter};

impl Encoder {
    /// Judges the `mask` filter on a block (default preset) whose elements include the fill
    /// value `fill` (see [`crate::codec::mask::fill_of`]): what pco chose on the other
    /// elements' sample and `mask`'s estimated result on the block, when pco on the
    /// other elements plus the mask is estimated below the mask margin × the best filter's
    /// result with zstd, and below the result with `plane` or pco alone where the sample chose
    /// them (`sampled`).
    ///
    /// The estimates are for the whole block, from a piece of the other elements as long as
    /// the sample and from the same place (scaled). `mask`: pco on the piece in the block's
    /// float mode `mode`, scaled to all the other elements, with pco's metadata and the mask
    /// counted once. zstd: the sample's best 1-D filter and zstd on the same piece, scaled the
    /// same way (and by what `lorenzo` gained on the sample, if it won), plus an element's
    /// bytes wherever a run of fill values starts or ends. Against the sample's own zstd
    /// result, where fill values cost little, `mask` was taken or not by where the sample fell:
    /// a sample in a polar row's ice made zstd look twice as good.
    pub(super) fn mask_sample(
        &mut self,
        kind: NumKind,
        data: &[u8],
        fill: u64,
        sampled: Sampled,
        mode: Option<crate::codec::pcodec::Mode>,
    ) -> Option<(crate::codec::pcodec::Choice, f64)> {
        let e = kind.esize();
        let mut taken_mask = None;
        let (mut prefix, mut rest) = (
            std::mem::take(&mut self.mask_prefix),
            std::mem::take(&mut self.mask_rest),
        );
        prefix.clear();
        let split = crate::codec::mask::apply(data, e, fill, &mut prefix, &mut rest);
        let take = sampled.len.min(rest.len()) / e * e;
        let mut c = std::mem::take(&mut self.scratch);
        c.clear();
        let start = (sampled.at as u128 * rest.len() as u128 / data.len().max(1) as u128) as usize;
        let start = (start / e * e).min(rest.len() - take);
        let piece = &rest[start..start + take];
        let choice = split
            .and_then(|split| Some((split, pco_sample(kind, piece, mode, &mut c)?)))
            .filter(|_| take > 0 && !c.is_empty());
        if let Some((split, choice)) = choice {
            let (take_n, rest_n) = ((take / e) as f64, (rest.len() / e) as f64);
            // pco's metadata and the mask once, the rest of pco's result scaled.
            let meta = choice.meta().min(c.len()) as f64;
            let pco = prefix.len() as f64 + meta + (c.len() as f64 - meta) * rest_n / take_n;
            // The best filter with zstd on the same piece, scaled as pco's, plus what the fill
            // values cost zstd where they start and end: an element's bytes at each.
            let mut f = Vec::new();
            apply_filter(sampled.plain.1, piece, e, &mut f);
            c.clear();
            let zstd = if zstd_into(self.probe.as_deref_mut(), &f, &mut c) {
                c.len()
            } else {
                f.len()
            };
            let zstd = zstd as f64 * sampled.best as f64 / sampled.plain.0.max(1) as f64;
            let zstd = zstd * rest_n / take_n + (2 * split.runs * e) as f64;
            let margin = if choice.decimal() {
                PCO_MARGIN_DECIMAL
            } else {
                MASK_MARGIN
            };
            let share = pco / zstd.max(1.0);
            // plane's or pco's result on the sample, scaled to the block, as before `mask`.
            let taken = sampled.taken as f64 * data.len() as f64 / sampled.len.max(1) as f64;
            if share < margin && pco < taken {
                taken_mask = Some((choice, pco));
            }
        }
        (self.mask_prefix, self.mask_rest, self.scratch) = (prefix, rest, c);
        taken_mask
    }

    /// Encodes the block (of `data_len` bytes) the `mask` filter split (see
    /// [`Encoder::mask_sample`]) into `c`: its prefix, then pco on the other elements as
    /// `choice` says. `None` (and `c` unspecified) when pco fails or the result is not smaller
    /// than the block.
    pub(super) fn mask_block(
        &mut self,
        kind: NumKind,
        choice: crate::codec::pcodec::Choice,
        data_len: usize,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        c.clear();
        c.extend_from_slice(&self.mask_prefix);
        let mut p = Vec::new();
        let done = crate::codec::pcodec::compress_chosen(
            kind,
            &self.mask_rest,
            crate::codec::pcodec::LEVEL,
            choice,
            &mut p,
        );
        (done && c.len() + p.len() < data_len).then(|| {
            c.append(&mut p);
            (Codec::Pco, Filter::Mask)
        })
    }

    /// Estimates the `fit` filter's result on a block (default preset) of numbers of `kind` in
    /// rows of `row`, its fill value `fill` (if any) set apart: fits the predictor to the
    /// sample's elements (`window`, widened to hold about as many elements that are not the
    /// fill) and the two rows before them, codes their residuals with pco and scales that to
    /// the block's `others` elements that are not the fill, adding the prefix (with the fill
    /// section in `mask_prefix`). With a fill value, also `mask`'s result estimated the same
    /// way: pco (in the block's float mode `mode`) on the window's elements that are not the
    /// fill. `None` when the sample has too few elements to fit or pco fails.
    pub(super) fn fit_sample(
        &mut self,
        kind: NumKind,
        data: &[u8],
        row: usize,
        (fill, others): (Option<u64>, usize),
        window: std::ops::Range<usize>,
        mode: Option<crate::codec::pcodec::Mode>,
    ) -> Option<(f64, Option<f64>)> {
        use crate::codec::fit;
        let e = kind.esize();
        let n = data.len() / e;
        // A window with about as many elements that are not the fill as the sample has in all
        // (pco's metadata, scaled from a few numbers, would swamp the estimate).
        let len = (window.len() as u128 * n as u128 / others.max(1) as u128) as usize;
        let len = len.clamp(window.len(), n);
        let start = window.start.min(n - len);
        let window = start..start + len;
        let offsets = fit::offsets_for(row, n);
        let reach = offsets.iter().map(|&o| o as usize).max().unwrap_or(1);
        let from = window.start.saturating_sub(reach);
        let region = &data[from * e..window.end * e];
        let mut work = std::mem::take(self.fronts.get::<fit::Work>());
        fit::load(region, e, kind.is_float(), fill, &mut work);
        let p = fit::fit_loaded(e, kind.is_float(), &offsets, &work);
        let window = window.start - from..window.end - from;
        let words = &mut self.fronts.get::<Residuals>().0;
        let m = fit::residuals(e, &p, window, words, &mut work);
        *self.fronts.get::<fit::Work>() = work;
        let mut c = std::mem::take(&mut self.scratch);
        c.clear();
        let coded = !p.taps.is_empty()
            && m > 0
            && crate::codec::pcodec::compress_residuals_native(
                kind.unsigned(),
                &self.fronts.get::<Residuals>().0,
                m,
                crate::codec::pcodec::LEVEL,
                &mut c,
            );
        let head = fit::HEAD + fit::TAP * p.taps.len() + self.mask_prefix.len();
        let est = coded.then(|| head as f64 + c.len() as f64 * others as f64 / m as f64);
        // With a fill value, what `mask` makes of the same elements: pco on those of the window
        // that are not the fill (scattered fill values, as gaps in ship-track coverage, leave
        // the predictor few whole neighbourhoods, and pco on the others alone can be smaller).
        let mut piece = std::mem::take(&mut self.mask_rest);
        let mask = fill.zip(est).and_then(|(f, _)| {
            piece.clear();
            let window = data[start * e..(start + len) * e].chunks_exact(e);
            window
                .filter(|x| crate::codec::mask::element(x) != f)
                .for_each(|x| piece.extend_from_slice(x));
            c.clear();
            pco_sample(kind, &piece, mode, &mut c)?;
            let meta = self.mask_prefix.len() as f64;
            Some(meta + c.len() as f64 * others as f64 / (piece.len() / e).max(1) as f64)
        });
        self.mask_rest = piece;
        self.scratch = c;
        est.map(|est| (est, mask))
    }

    /// Encodes the block `data` (numbers of `kind` in rows of `row`) with the `fit` predictor
    /// fitted to it and pco into `c`, the elements equal to `fill` set apart (the fill section
    /// [`Encoder::fit_sample`] made, or made afresh). `None` (and `c` unspecified) when pco
    /// fails or the result is not smaller than the block.
    pub(super) fn fit_block(
        &mut self,
        kind: NumKind,
        (row, fill): (usize, Option<u64>),
        data: &[u8],
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        let section = (!self.mask_prefix.is_empty()).then_some(self.mask_prefix.as_slice());
        crate::codec::fit::encode_block(kind, (row, fill), section, data, &mut self.fronts, c)
            .then_some((Codec::Pco, Filter::Fit))
    }

    /// Thorough encoders: encodes a numeric block with pco into `c` (alone, or after whichever
    /// numeric front-end of pco's makes it smallest: `plane`, `mask`, `fit`, from the registry) when that is smaller than the block codec's
    /// result after `filter`, which it then leaves in `c`. `probe_size` is the probe level's
    /// result on the block (0: not judged), `block_mode` the float mode pco finds over it.
    /// `None` when pco is not used: the caller encodes as usual.
    pub(super) fn pco_block(
        &mut self,
        kind: NumKind,
        filter: Filter,
        (probe_size, block_mode): (usize, Option<crate::codec::pcodec::Mode>),
        data: &[u8],
        f: &mut Vec<u8>,
        c: &mut Vec<u8>,
    ) -> Option<(Codec, Filter)> {
        c.clear();
        let mut pco_filter = Filter::None;
        let done = pco_thorough(kind, data, block_mode, c);
        if !done || c.len() >= data.len() {
            c.clear();
        }
        // Then every numeric front-end whose codec is pco, in the registry's order (`plane`,
        // `mask`, `fit`), on the whole block: the smallest stays.
        let block = Numbers {
            kind,
            data,
            row: self.plane_row,
            mode: block_mode,
        };
        let mut r = Vec::new();
        for (id, front) in front_encoders() {
            if front.encode(&block, &mut self.fronts, &mut r) && (c.is_empty() || r.len() < c.len())
            {
                std::mem::swap(c, &mut r);
                pco_filter = id;
            }
        }
        if c.is_empty() {
            return None;
        }
        // Thorough encoders: pco far below what the probe level made of the block is out of
        // reach of the block codec's level too; skip that (slow) run.
        let sure = self.thorough && (c.len() as f64) < PCO_SURE * probe_size as f64;
        if sure {
            return Some((Codec::Pco, pco_filter));
        }
        // Closer: estimate the block codec's result from its gain over the probe level on a
        // sample, and skip its run when pco is still clearly smaller. (The slow level hardly
        // ever does worse than the probe level: no estimate where pco loses to the latter.)
        if self.thorough && (c.len() as f64) < PCO_LIKELY * probe_size as f64 {
            let est = self.estimate_slow(filter, data, kind.esize(), probe_size, f);
            if est.is_some_and(|est| (c.len() as f64) < PCO_LIKELY * est) {
                return Some((Codec::Pco, pco_filter));
            }
        }
        let prefix = self.apply_block_filter(filter, data, kind.esize(), f);
        let mut other = Vec::new();
        if c.len() > prefix.len() && self.compress(f, c.len() - prefix.len(), &mut other) {
            other.splice(0..0, prefix);
            *c = other;
            Some((self.codec, filter))
        } else {
            Some((Codec::Pco, pco_filter))
        }
    }
}
