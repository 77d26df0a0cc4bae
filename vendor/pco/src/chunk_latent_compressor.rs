use crate::ans::{AnsState, Symbol};
use crate::bit_writer::BitWriter;
use crate::compression_intermediates::{PageDissectedVar, TrainedBins};
use crate::compression_table::CompressionTable;
use crate::constants::{Bitlen, ANS_INTERLEAVING, MAX_BATCH_LATENT_VAR_SIZE, OVERSHOOT_PADDING};
use crate::data_types::Latent;
use crate::errors::PcoResult;
use crate::macros::define_latent_enum;
use crate::metadata::{bins, Bin};
use crate::read_write_uint::ReadWriteUint;
use crate::scratch::ScratchArray;
use crate::{ans, bit_reader, bit_writer, bits, read_write_uint, FULL_BATCH_N};
use std::debug_assert;
use std::io::Write;
use std::ops::Range;

#[derive(Clone, Debug)]
pub struct ChunkLatentCompressorScratch<L: Latent> {
  symbols: ScratchArray<Symbol>,
  // (nc3pack) One batch's dissection, packed into the page's bits as soon as it is made
  // (the published crate kept the whole page's, four numbers a latent, until it was written).
  ans_vals: ScratchArray<AnsState>,
  ans_bits: ScratchArray<Bitlen>,
  offsets: ScratchArray<L>,
  offset_bits: ScratchArray<Bitlen>,
}

// This would be very hard to combine with write_uints because it makes use of
// an optimization that only works easily for single-u64 writes of 56 bits or
// less: we keep the `target_u64` value we're updating in a register instead
// of referring back to `dst` (recent values of which will be in L1 cache). If
// a write exceeds 56 bits, we may need to shift target_u64 by 64 bits, which
// would be an overflow panic.
#[inline(never)]
unsafe fn write_short_uints<U: ReadWriteUint>(
  vals: &[U],
  bitlens: &[Bitlen],
  mut stale_byte_idx: usize,
  mut bits_past_byte: Bitlen,
  dst: &mut [u8],
) -> (usize, Bitlen) {
  stale_byte_idx += bits_past_byte as usize / 8;
  bits_past_byte %= 8;
  let mut target_u64 = bit_reader::u64_at(dst, stale_byte_idx);

  for (&val, &bitlen) in vals.iter().zip(bitlens).take(FULL_BATCH_N) {
    let bytes_added = bits_past_byte as usize / 8;
    stale_byte_idx += bytes_added;
    target_u64 >>= bytes_added * 8;
    bits_past_byte %= 8;

    target_u64 |= val.to_u64() << bits_past_byte;
    bit_writer::write_u64_to(target_u64, stale_byte_idx, dst);

    bits_past_byte += bitlen;
  }
  (stale_byte_idx, bits_past_byte)
}

// (nc3pack) As `write_short_uints`, for numbers of at most `56 / G` bits: `G` numbers at a
// time are joined in a register and written as one (so a quarter of the serial steps for ANS
// bits, a half for offsets of up to 28 bits). The same bits.
#[inline(never)]
unsafe fn write_short_uint_groups<U: ReadWriteUint, const G: usize>(
  vals: &[U],
  bitlens: &[Bitlen],
  mut stale_byte_idx: usize,
  mut bits_past_byte: Bitlen,
  dst: &mut [u8],
) -> (usize, Bitlen) {
  let n = vals.len().min(bitlens.len()).min(FULL_BATCH_N);
  let whole = n / G * G;
  stale_byte_idx += bits_past_byte as usize / 8;
  bits_past_byte %= 8;
  let mut target_u64 = bit_reader::u64_at(dst, stale_byte_idx);

  for (vals, bitlens) in vals[..whole]
    .chunks_exact(G)
    .zip(bitlens[..whole].chunks_exact(G))
  {
    let mut group = 0u64;
    let mut group_bits = 0;
    for (&val, &bitlen) in vals.iter().zip(bitlens) {
      group |= val.to_u64() << group_bits;
      group_bits += bitlen;
    }

    let bytes_added = bits_past_byte as usize / 8;
    stale_byte_idx += bytes_added;
    target_u64 >>= bytes_added * 8;
    bits_past_byte %= 8;

    target_u64 |= group << bits_past_byte;
    bit_writer::write_u64_to(target_u64, stale_byte_idx, dst);

    bits_past_byte += group_bits;
  }
  write_short_uints(
    &vals[whole..n],
    &bitlens[whole..n],
    stale_byte_idx,
    bits_past_byte,
    dst,
  )
}

#[inline(never)]
unsafe fn write_uints<U: ReadWriteUint, const MAX_U64S: usize>(
  vals: &[U],
  bitlens: &[Bitlen],
  mut stale_byte_idx: usize,
  mut bits_past_byte: Bitlen,
  dst: &mut [u8],
) -> (usize, Bitlen) {
  for (&val, &bitlen) in vals.iter().zip(bitlens).take(FULL_BATCH_N) {
    stale_byte_idx += bits_past_byte as usize / 8;
    bits_past_byte %= 8;
    bit_writer::write_uint_to::<_, MAX_U64S>(val, stale_byte_idx, bits_past_byte, dst);
    bits_past_byte += bitlen;
  }
  (stale_byte_idx, bits_past_byte)
}

#[derive(Clone, Debug)]
pub struct ChunkLatentCompressor<L: Latent> {
  table: CompressionTable<L>,
  pub encoder: ans::Encoder,
  pub avg_bits_per_latent: f64,
  is_trivial: bool, // if the page body will always be empty
  needs_ans: bool,
  max_u64s_per_offset: usize,
  // (nc3pack) The most bits a latent's offset takes (to size a batch's packed bits).
  max_bits_per_offset: Bitlen,
  latents: Vec<L>,
  scratch: ChunkLatentCompressorScratch<L>,
}

// (nc3pack: the states in local variables rather than behind the reference, which kept the
// compiler storing and reloading them in the loop, and the batch walked in chunks of
// ANS_INTERLEAVING without index checks. The same states and bits.)
#[inline(never)]
fn encode_ans_in_reverse(
  encoder: &ans::Encoder,
  ans_vals: &mut [AnsState],
  ans_bits: &mut [Bitlen],
  ans_final_states: &mut [AnsState; ANS_INTERLEAVING],
  dst: &[Symbol],
) {
  let n = ans_vals.len().min(ans_bits.len()).min(dst.len());
  let final_base_i = (n / ANS_INTERLEAVING) * ANS_INTERLEAVING;
  let mut states = *ans_final_states;

  // first get the jagged part out of the way
  for j in (0..n - final_base_i).rev() {
    let i = final_base_i + j;
    let (new_state, bitlen) = encoder.encode(states[j], dst[i]);
    ans_vals[i] = bits::lowest_bits_fast(states[j], bitlen);
    ans_bits[i] = bitlen;
    states[j] = new_state;
  }

  // then do the main loop
  for ((vals, bits), symbols) in ans_vals[..final_base_i]
    .chunks_exact_mut(ANS_INTERLEAVING)
    .zip(ans_bits[..final_base_i].chunks_exact_mut(ANS_INTERLEAVING))
    .zip(dst[..final_base_i].chunks_exact(ANS_INTERLEAVING))
    .rev()
  {
    for j in (0..ANS_INTERLEAVING).rev() {
      let (new_state, bitlen) = encoder.encode(states[j], symbols[j]);
      vals[j] = bits::lowest_bits_fast(states[j], bitlen);
      bits[j] = bitlen;
      states[j] = new_state;
    }
  }
  *ans_final_states = states;
}

// (nc3pack) Appends the first `n_bits` bits of `src` (packed from its first bit; 8 bytes
// readable from any byte before the last bit's) to `dst` at bit `bits_past_byte` of byte
// `stale_byte_idx`, as writing the same numbers there would have: 56 bits at a time, the bits
// written so far kept in a register (as `write_short_uints` does), not read back. The bits of
// `dst` from there on must be zero, and `dst` must hold 8 bytes past the last bit's byte.
#[inline(never)]
unsafe fn append_bits(
  src: &[u8],
  n_bits: usize,
  mut stale_byte_idx: usize,
  mut bits_past_byte: Bitlen,
  dst: &mut [u8],
) -> (usize, Bitlen) {
  stale_byte_idx += bits_past_byte as usize / 8;
  bits_past_byte %= 8;
  let mut target = bit_reader::u64_at(dst, stale_byte_idx) & ((1u64 << bits_past_byte) - 1);
  let mut src_byte_idx = 0;
  let mut left = n_bits;
  while left >= 56 {
    target |= (bit_reader::u64_at(src, src_byte_idx) & ((1u64 << 56) - 1)) << bits_past_byte;
    bit_writer::write_u64_to(target, stale_byte_idx, dst);
    target >>= 56;
    stale_byte_idx += 7;
    src_byte_idx += 7;
    left -= 56;
  }
  if left > 0 {
    target |= (bit_reader::u64_at(src, src_byte_idx) & ((1u64 << left) - 1)) << bits_past_byte;
    bit_writer::write_u64_to(target, stale_byte_idx, dst);
  }
  let end = bits_past_byte as usize + left;
  (stale_byte_idx + end / 8, (end % 8) as Bitlen)
}

impl<L: Latent> ChunkLatentCompressor<L> {
  pub fn new(trained: TrainedBins<L>, bins: &[Bin<L>], latents: Vec<L>) -> PcoResult<Box<Self>> {
    let needs_ans = bins.len() != 1;

    let table = CompressionTable::from(trained.infos);
    let weights = bins::weights(bins);
    let ans_spec = ans::Spec::from_weights(trained.ans_size_log, weights)?;
    let encoder = ans::Encoder::new(&ans_spec);

    let max_bits_per_offset = bins::max_offset_bits(bins);
    let max_u64s_per_offset = read_write_uint::calc_max_u64s_for_writing(max_bits_per_offset);

    Ok(Box::new(ChunkLatentCompressor {
      table,
      encoder,
      avg_bits_per_latent: bins::avg_bits_per_latent(bins, trained.ans_size_log),
      is_trivial: bins::are_trivial(bins),
      needs_ans,
      max_u64s_per_offset,
      max_bits_per_offset,
      latents,
      scratch: ChunkLatentCompressorScratch {
        symbols: ScratchArray([0; FULL_BATCH_N]),
        ans_vals: ScratchArray([0; FULL_BATCH_N]),
        ans_bits: ScratchArray([0; FULL_BATCH_N]),
        offsets: ScratchArray([L::ZERO; FULL_BATCH_N]),
        offset_bits: ScratchArray([0; FULL_BATCH_N]),
      },
    }))
  }

  // Each latent's bin: its symbol, its offset from the bin's lower bound and the offset's bit
  // count, into the scratch arrays. (nc3pack: where the bins have a lookup table, one pass
  // that finds the bin and takes its numbers, instead of one that finds every bin, one that
  // takes their numbers and one for the offsets.)
  #[inline(never)]
  fn dissect_bins(&mut self, range: Range<usize>) {
    let n = range.len();
    let Self {
      table,
      scratch,
      latents,
      ..
    } = self;
    let latents = &latents[range];
    let offsets = &mut scratch.offsets[..n];
    let offset_bits = &mut scratch.offset_bits[..n];
    if table.is_trivial() {
      // trivial case: there's at most one bin (no symbols to write).
      let (lower, bits) = table.only_bin().map_or((L::ZERO, 0), |info| {
        (info.lower, info.offset_bits)
      });
      offset_bits.fill(bits);
      for (offset, &latent) in offsets.iter_mut().zip(latents) {
        *offset = latent - lower;
      }
      return;
    }

    let symbols = &mut scratch.symbols[..n];
    if table.dissect_by_lookup(latents, symbols, offsets, offset_bits) {
      return;
    }
    let search_idxs = table.binary_search(latents);
    for (i, (&search_idx, &latent)) in search_idxs.iter().zip(latents).enumerate() {
      let info = &table.infos[search_idx];
      symbols[i] = info.symbol;
      offsets[i] = latent - info.lower;
      offset_bits[i] = info.offset_bits;
    }
  }

  // (nc3pack) Dissects one batch and packs its bits (ANS, then offsets, as the page writes
  // them) into `dst` from its first bit; returns how many bits. `dst` must be zero and hold
  // `batch_bytes_bound(batch_n)` bytes.
  fn dissect_batch(
    &mut self,
    page_start: usize,
    relative_batch_range: Range<usize>,
    ans_final_states: &mut [AnsState; ANS_INTERLEAVING],
    dst: &mut [u8],
  ) -> usize {
    let batch_n = relative_batch_range.len();
    let absolute_batch_range =
      page_start + relative_batch_range.start..page_start + relative_batch_range.end;
    self.dissect_bins(absolute_batch_range);

    let scratch = &mut self.scratch;
    let mut at = (0, 0);
    if self.needs_ans {
      encode_ans_in_reverse(
        &self.encoder,
        &mut scratch.ans_vals[..batch_n],
        &mut scratch.ans_bits[..batch_n],
        ans_final_states,
        &scratch.symbols[..batch_n],
      );
      // ANS bits: at most the table's size log (up to MAX_ANS_BITS, 14) each, so 4 to a
      // group.
      // Safety: `dst` holds the batch's bits and the overshoot (`batch_bytes_bound`).
      at = unsafe {
        if self.encoder.size_log() <= 14 {
          write_short_uint_groups::<_, 4>(
            &scratch.ans_vals[..batch_n],
            &scratch.ans_bits[..batch_n],
            at.0,
            at.1,
            dst,
          )
        } else {
          write_short_uints(
            &scratch.ans_vals[..batch_n],
            &scratch.ans_bits[..batch_n],
            at.0,
            at.1,
            dst,
          )
        }
      };
    }

    let offsets = &scratch.offsets[..batch_n];
    let offset_bits = &scratch.offset_bits[..batch_n];
    // Safety: as for the ANS bits.
    at = unsafe {
      match self.max_u64s_per_offset {
        0 => at,
        1 => match self.max_bits_per_offset {
          0..=14 => write_short_uint_groups::<L, 4>(offsets, offset_bits, at.0, at.1, dst),
          15..=18 => write_short_uint_groups::<L, 3>(offsets, offset_bits, at.0, at.1, dst),
          19..=28 => write_short_uint_groups::<L, 2>(offsets, offset_bits, at.0, at.1, dst),
          _ => write_short_uints::<L>(offsets, offset_bits, at.0, at.1, dst),
        },
        2 => write_uints::<L, 2>(offsets, offset_bits, at.0, at.1, dst),
        3 => write_uints::<L, 3>(offsets, offset_bits, at.0, at.1, dst),
        _ => panic!("[ChunkCompressor] data type is too large"),
      }
    };
    at.0 * 8 + at.1 as usize
  }

  // (nc3pack) The bytes a batch of `batch_n` latents may write while packed: its bits, and
  // the 8-byte writes past the last one.
  fn batch_bytes_bound(&self, batch_n: usize) -> usize {
    let ans_bits = if self.needs_ans {
      self.encoder.size_log() as usize
    } else {
      0
    };
    (batch_n * (ans_bits + self.max_bits_per_offset as usize)).div_ceil(8)
      + 8 * self.max_u64s_per_offset
      + OVERSHOOT_PADDING
      + 8
  }

  pub fn dissect_page(&mut self, page_range: Range<usize>) -> PageDissectedVar {
    let mut ans_final_states = [self.encoder.default_state(); ANS_INTERLEAVING];

    let offset_n = if self.is_trivial { 0 } else { page_range.len() };
    let n_batches = offset_n.div_ceil(FULL_BATCH_N);
    let mut packed =
      Vec::with_capacity((offset_n as f64 * self.avg_bits_per_latent / 8.0) as usize * 9 / 8 + 64);
    let mut batches = vec![(0, 0); n_batches];

    // We go through in reverse for ANS!
    // Here the page buffers are indexed from 0..page_n, whereas latents are
    // indexed from 0..chunk_n, so we need both an absolute page start index and
    // a relative range for the batch within the page.
    for batch_idx in (0..n_batches).rev() {
      let relative_batch_range =
        batch_idx * FULL_BATCH_N..((batch_idx + 1) * FULL_BATCH_N).min(offset_n);
      let start = packed.len();
      // The bytes past a batch's bits are zero (written so or never written).
      packed.resize(
        start + self.batch_bytes_bound(relative_batch_range.len()),
        0,
      );
      let n_bits = self.dissect_batch(
        page_range.start,
        relative_batch_range,
        &mut ans_final_states,
        &mut packed[start..],
      );
      packed.truncate(start + n_bits.div_ceil(8));
      batches[batch_idx] = (start, n_bits);
    }
    packed.resize(packed.len() + 8, 0);

    PageDissectedVar {
      packed,
      batches,
      ans_final_states,
    }
  }

  pub fn write_dissected_batch<W: Write>(
    &self,
    page_dissected_var: &PageDissectedVar,
    batch_start: usize,
    writer: &mut BitWriter<W>,
  ) -> PcoResult<()> {
    debug_assert!(writer.buf.len() >= MAX_BATCH_LATENT_VAR_SIZE);
    writer.flush()?;

    let Some(&(start, n_bits)) = page_dissected_var.batches.get(batch_start / FULL_BATCH_N) else {
      return Ok(());
    };
    // Safety: a batch's bits fit in `MAX_BATCH_LATENT_VAR_SIZE` with the overshoot, and
    // `packed` holds 8 bytes past every batch's.
    (writer.stale_byte_idx, writer.bits_past_byte) = unsafe {
      append_bits(
        &page_dissected_var.packed[start..],
        n_bits,
        writer.stale_byte_idx,
        writer.bits_past_byte,
        &mut writer.buf,
      )
    };

    Ok(())
  }
}

// we allocate these on the heap because they're enormous
type Boxed<L> = Box<ChunkLatentCompressor<L>>;

define_latent_enum!(
  #[derive(Clone, Debug)]
  pub DynChunkLatentCompressor(Boxed)
);
