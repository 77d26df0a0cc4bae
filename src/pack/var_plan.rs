//! The plan of a pack, variable by variable: the block size of each variable's stream and the
//! encoder (codec, level, filter) of its blocks, from the `--var` rules ([`crate::vars`],
//! [`PackOptions::vars`]) resolved against the header.

use super::{EncoderKey, PackOptions};
use crate::codec::Encoder;
use crate::error::CodecError;
use crate::error::{Error, OptionError, Result};
use crate::format;
use crate::nc3::Header;
use std::path::Path;

pub(super) fn encoder_key(opts: &PackOptions) -> EncoderKey {
    (
        opts.codec,
        opts.level,
        opts.filter,
        opts.thorough,
        opts.fast_blocks,
        opts.pco,
    )
}

pub(super) fn make_encoder(key: &EncoderKey) -> std::result::Result<Encoder, CodecError> {
    let &(codec, level, filter, thorough, fast_blocks, pco) = key;
    Ok(Encoder::new(codec, level, filter, thorough)?
        .fast_blocks(fast_blocks)?
        .numeric(pco))
}

/// Which encoder each variable's blocks use: `keys[0]` is the archive-wide one (also for the
/// residual and shared streams), the others come from per-variable settings.
pub(super) struct EncoderPlan {
    keys: Vec<EncoderKey>,
    /// Per variable, its index in `keys` (empty: every variable uses 0).
    of_var: Vec<usize>,
}

impl EncoderPlan {
    /// The index in `keys` of the encoder for the blocks of frame stream `id`.
    pub(super) fn key_of(&self, id: u32) -> usize {
        self.of_var.get(id as usize).copied().unwrap_or(0)
    }

    /// Whether the encoder of the blocks of frame stream `id` may share its plans across a run
    /// of small blocks (see [`super::runs`]): filters chosen per block by a fast encoder.
    pub(super) fn shares(&self, id: u32) -> bool {
        let (codec, _, filter, thorough, _, _) = self.keys[self.key_of(id)];
        codec != crate::format::Codec::None && filter == crate::codec::FilterMode::Auto && !thorough
    }

    /// Encoders for the keys but the first, made when first used.
    pub(super) fn others(&self) -> OtherEncoders {
        OtherEncoders((0..self.keys.len()).map(|_| None).collect())
    }
}

pub(super) struct OtherEncoders(Vec<Option<Encoder>>);

impl OtherEncoders {
    pub(super) fn get(&mut self, plan: &EncoderPlan, k: usize) -> Result<&mut Encoder> {
        let slot = &mut self.0[k];
        if slot.is_none() {
            *slot = Some(make_encoder(&plan.keys[k]).map_err(OptionError::from)?);
        }
        slot.as_mut()
            .ok_or_else(|| Error::Internal("no encoder".into()))
    }
}

/// The block sizes and encoders of `header`'s variables under `opts.vars`, for an input of
/// `file_len` bytes if its length is known.
pub(super) fn per_var(
    opts: &PackOptions,
    header: &Header,
    input: &Path,
    file_len: Option<u64>,
) -> Result<(format::BlockSizes, EncoderPlan)> {
    let mut settings = crate::vars::resolve(&opts.vars, header, input)?;
    let mut plan = EncoderPlan {
        keys: vec![encoder_key(opts)],
        of_var: Vec::new(),
    };
    let mut sizes = format::BlockSizes::uniform(opts.block_size);
    // In a file of at most the nominal block size every stream is one block whatever its
    // block size, so large blocks would change nothing but add a block sizes frame: a small
    // file (one a stream is read whole, so that a pipe gives the file's archive) gets none.
    let small = file_len
        .is_some_and(|n| n <= format::compact::COMPACT_FILE_MAX.min(u64::from(opts.block_size)));
    let large = if small {
        Vec::new()
    } else {
        large_blocks(opts, header, &settings)
    };
    if large.is_empty()
        && settings
            .iter()
            .all(|s| *s == crate::vars::VarSettings::default())
    {
        return Ok((sizes, plan));
    }
    // No rules: every variable with the archive-wide settings.
    settings.resize(header.var_count(), crate::vars::VarSettings::default());
    for (v, s) in settings.iter().enumerate() {
        let nominal = match large.get(v) {
            Some(&Some(b)) => b,
            _ => opts.block_size,
        };
        sizes.vars.push(s.block_size.unwrap_or(nominal));
        let codec = s.codec.unwrap_or(opts.codec);
        let level = match (s.level, s.codec) {
            (Some(l), _) => l,
            (None, Some(c)) if c != opts.codec => {
                if opts.thorough {
                    crate::codec::max_level(c)
                } else {
                    crate::codec::default_level(c)
                }
            }
            (None, _) => opts.level,
        };
        crate::codec::check_level(codec, level).map_err(|source| OptionError::VarCodec {
            var: header.var(v).name().to_string(),
            source,
        })?;
        let key = (
            codec,
            level,
            s.filter.unwrap_or(opts.filter),
            opts.thorough,
            opts.fast_blocks && s.level.is_none(),
            // A codec named for the variable is the codec its blocks get.
            opts.pco && s.codec.is_none(),
        );
        let k = match plan.keys.iter().position(|x| *x == key) {
            Some(k) => k,
            None => {
                plan.keys.push(key);
                plan.keys.len() - 1
            }
        };
        plan.of_var.push(k);
    }
    if sizes.is_uniform() {
        sizes.vars.clear();
    }
    Ok((sizes, plan))
}

/// Per variable, the large block size it gets from [`PackOptions::large_block_size`] (empty:
/// none does): the variables without a block size of their own that are larger than the
/// nominal block size; record variables (whose length a stream tells only at its end) all,
/// but only while one large block each takes at most [`super::LARGE_RECORD_BLOCKS_MAX`] in
/// all (each holds an open block while the records interleave them).
fn large_blocks(
    opts: &PackOptions,
    header: &Header,
    settings: &[crate::vars::VarSettings],
) -> Vec<Option<u32>> {
    let Some(large) = opts.large_block_size.filter(|&b| b > opts.block_size) else {
        return Vec::new();
    };
    let own = |v: usize| settings.get(v).is_some_and(|s| s.block_size.is_some());
    let records = (0..header.var_count())
        .filter(|&v| header.is_record_var(v) && !own(v))
        .count() as u64;
    let records_too = records * u64::from(large) <= super::LARGE_RECORD_BLOCKS_MAX;
    let sizes: Vec<Option<u32>> = (0..header.var_count())
        .map(|v| {
            let big = if header.is_record_var(v) {
                records_too
            } else {
                header.var(v).vsize() > u64::from(opts.block_size)
            };
            (big && !own(v)).then_some(large)
        })
        .collect();
    if sizes.iter().all(Option::is_none) {
        Vec::new()
    } else {
        sizes
    }
}
