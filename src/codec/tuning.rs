//! The encoder's thresholds: sample sizes and the margins by which one filter or codec must
//! beat another on a sample before a block takes it. Every one was measured on the bench
//! corpus; changing one changes archive bytes.

/// Size of the sample a fast encoder judges filters on.
pub(crate) const FILTER_SAMPLE: usize = 32 << 10;

/// With fast blocks (see [`Encoder::fast_blocks`]), a block uses level 1 unless the encoder's
/// level makes the sample smaller than this fraction of level 1's result.
pub(crate) const FAST_ENOUGH: f64 = 0.98;

/// In the default preset, a block uses the `lorenzo` filter when it makes the sample smaller
/// than this fraction of the best other filter's: a few rows of a sample favour it over the
/// whole block (measured on gridded.nc of the bench corpus, where a bare win on the sample
/// made blocks of noisy fields larger), and it decodes a little slower than zzdelta.
pub(crate) const LORENZO_MARGIN: f64 = 0.97;

/// In the default preset, a numeric block of a variable of at least two dimensions uses the
/// `plane` filter with pco when that makes its sample smaller than this fraction of the best
/// filter's with zstd level 1 (and smaller than pco alone): a margin for its slower decoding
/// (see README "Numbers").
pub(crate) const PLANE_MARGIN: f64 = 0.93;

/// In the default preset, a block whose sample chose `plane` keeps it without running the
/// block codec on the whole block when its payload is smaller than this fraction of the block
/// codec's result estimated on a spread sample ([`Encoder::spread_estimate`]): on topo.nc's
/// elevation blocks the payload is 0.87 of that estimate (0.90 of the real result). The
/// estimate runs 3-4 % high, so this is [`PLANE_MARGIN`] less that.
pub(crate) const PLANE_SURE: f64 = 0.89;

/// In the default preset, a block whose sample's second half has fewer than 1 in this many
/// elements with a value new to the sample tries the `refs` filter with zstd (see
/// [`Encoder::plain_block`]).
pub(crate) const REFS_LATE_NEW: usize = 8;

/// In the default preset, the `refs` filter with zstd is kept where it is smaller than this
/// fraction of the block's result without it (its decoding looks each value up in the table).
pub(crate) const REFS_MARGIN: f64 = 0.97;

/// In the default preset, the `refs` filter with zstd is kept without the block codec's run on
/// the block when it is smaller than this fraction of that run's result estimated from the
/// sample (`Encoder::refs_est`; the probe level on the sample: a few percent above the block
/// level's result). points.nc's ten blocks that try `refs` (lat, lon, time and obs_time):
/// 0.19 to 0.78 of it.
pub(crate) const REFS_SURE: f64 = 0.8;

/// Pieces of a block [`Encoder::spread_estimate`] compresses.
pub(crate) const SPREAD_PIECES: usize = 4;

/// Bytes of each piece [`Encoder::spread_estimate`] compresses.
pub(crate) const SPREAD_PIECE: usize = 16 << 10;

/// Bytes of a block the `max` preset runs both zstd levels on to estimate the slow level's
/// gain (see [`Encoder::estimate_slow`]).
pub(crate) const GAIN_SAMPLE: usize = 128 << 10;

/// In thorough encoders, a numeric block uses pco without the block codec's run when pco is
/// smaller than this fraction of that run's estimated result (a margin for the estimate's
/// error).
pub(crate) const PCO_LIKELY: f64 = 0.97;

/// Bytes of a block the `max` preset compresses with lzma to judge whether lzma pays on the
/// block (see [`Encoder::lzma_block`]).
pub(crate) const LZMA_SAMPLE: usize = 128 << 10;

/// In the `max` preset, lzma is tried on the whole block when the share of its units (see
/// [`repeat_unit`]) that repeat an earlier one of the block exceeds that share within the
/// sample by this much (see [`far_repeats`]).
pub(crate) const FAR_REPEATS: f64 = 0.1;

/// In the `max` preset, a block whose values repeat far apart tries the `refs` filter before
/// lzma only when the block codec's result is not below 1 / this of the block (mesh.nc's
/// coordinates: 1 / 3 to 1 / 16; points.nc's repeated times, with pco: 1 / 1200).
pub(crate) const REFS_RATIO: usize = 32;

/// In the `max` preset, a block of 4- or 8-byte values judged on a sample also tries the `refs`
/// filter before lzma on the sample when at least this share of its values (see
/// [`repeat_unit`]) repeat an earlier one of the block (and not the one just before): fields
/// of noisy floats, where refs cannot pay, repeat next to none.
pub(crate) const REFS_REPEATS: f64 = 0.2;

/// In the `max` preset, a block uses lzma when lzma makes it smaller than this fraction of
/// the best other codec's result: lzma decodes several times slower than zstd.
pub(crate) const LZMA_MARGIN: f64 = 0.97;

/// A `context` result above this share of its block leaves it to lzma to try the whole block
/// (see `Encoder::lzma_after_context`): noise, at ratios below 1.6. gridded.nc's t2m (context
/// at 0.46 of it) is not tried, and its `max` pack time stays as it was.
pub(crate) const NOISE_SHARE: f64 = 0.625;

/// In the default preset, a numeric block uses pco when pco makes its sample smaller than
/// this fraction of the best filter's with zstd level 1 (a margin for pco's slower decoding
/// and the sample's bias: pco compresses about 5 times slower than zstd level 1 and decodes
/// slower too, so it must pay for that).
pub(crate) const PCO_MARGIN: f64 = 0.80;

/// As [`PCO_MARGIN`], for floats that pco takes as multiples of a base or with their last
/// bits apart (its float multiplier or quantization mode, found over the whole block: see
/// `pco::block_float_mode`): whole numbers and decimals, which byte filters cannot see and
/// where the sample's estimate is close to the block's. 0.90 made Debian's ferret-datasets
/// files 0.7 % smaller as a whole (ETOPO5 1 %, ETOPO20 8 %) and left the bench corpus as it
/// was. Not for other floats (a smooth field where zstd's whole-block run gains most) nor
/// integers (mesh.nc's vertex indices grew and packed 6 % slower).
pub(crate) const PCO_MARGIN_DECIMAL: f64 = 0.90;

/// As [`PCO_MARGIN`], for `mask` and pco on a float block with a fill value (see
/// `Encoder::mask_sample`): mask and pco decode faster than pco on the same block, and the
/// estimate compares like with like. 0.93 took it for all of gridded.nc's sst blocks (the
/// variable 7 % smaller) and a tenth of its t2m blocks, made gridded.nc 1.6 % smaller in
/// 15 % more pack time, and left Debian's ferret-datasets files as they were (with
/// coads_climatology's UWND, 12 % smaller with it). Most t2m blocks (noise over a smooth
/// field), estimated at 0.94 to 0.96, are 3 % smaller with it, for a third more pack time:
/// not taken.
pub(crate) const MASK_MARGIN: f64 = 0.93;

/// The default preset takes `fit` with pco on a block where its estimated result (see
/// `Encoder::fit_sample`) is below this fraction of what the sample chose otherwise.
pub(crate) const FIT_MARGIN: f64 = 0.97;

/// The default preset takes `fit` with pco on a block of floats without trying pco, `plane` or
/// `mask` where its estimated result is below this fraction of the best filter's with zstd,
/// and on any block instead of zstd only where it is: fit and pco take about twice zstd's
/// pack time and three times its decode time, for 3 % on big5.nc's records (estimates at 0.95
/// to 0.957: packing 2.2 times as long), 4–5 % on gridded.nc's t2m (0.93 at the median).
pub(crate) const FIT_SURE: f64 = 0.95;

/// In thorough encoders, a numeric block uses pco without trying the block codec's level when
/// pco makes the block smaller than this fraction of what the best filter gets with the probe
/// level (zstd 3) on the whole block: zstd 19 makes numeric blocks 1-5 % smaller than zstd 3
/// after the same filter, and that run takes most of the `max` preset's time.
pub(crate) const PCO_SURE: f64 = 0.85;

/// With blocks of at most [`SHARED_BLOCK_MAX`] bytes (a variable's `block-size` setting), the
/// default preset judges the trials (filters, pco, `plane`, `mask`, `fit`) on one block and has
/// the next blocks of the variable, up to this many bytes in all, take the same plan (see
/// [`Encoder::encode_shared`]): the trials run on a sample of up to [`FILTER_SAMPLE`] bytes
/// whatever the block's size, half of a 64 KiB block, so small blocks would pay them many times
/// over. Measured on gridded.nc of the bench corpus with 64 KiB blocks: 1 MiB runs packed in
/// 1.6-1.8 times the default's CPU time, 2 MiB runs in 1.5 times, 0.03 % larger.
pub(crate) const TRIAL_SPAN: u64 = 2 << 20;

/// The largest blocks that share plans in runs (see [`TRIAL_SPAN`]): the default 1 MiB blocks
/// are judged one by one.
pub(crate) const SHARED_BLOCK_MAX: u64 = 512 << 10;

/// The smallest blocks that share plans in runs (see [`TRIAL_SPAN`]). Smaller ones are judged
/// one by one, as before runs: their trials run on the whole block, and the format 1.0
/// reference archives packed with 48- and 64-byte blocks (samples/archives_1_0, checked byte
/// for byte by the tests) keep their bytes.
pub(crate) const SHARED_BLOCK_MIN: u64 = 4 << 10;

/// A block that takes the plan of an earlier block (see [`TRIAL_SPAN`]) has the next block judge
/// afresh when its payload is larger than this many times the judged block's (per byte): the
/// data changed, and the plan may no longer be the best.
pub(crate) const TRIAL_DRIFT: f64 = 1.03;
