use std::cmp;

use crate::ans::Symbol;
use crate::compression_intermediates::BinCompressionInfo;
use crate::constants::Bitlen;
use crate::data_types::Latent;
use crate::FULL_BATCH_N;

#[derive(Clone, Debug)]
pub struct CompressionTable<L: Latent> {
  search_size_log: usize,
  search_lowers: Vec<L>,
  pub infos: Vec<BinCompressionInfo<L>>,
  // (nc3pack) When the bins span a narrow range of latents: its first latent and, for each
  // latent from there, the index `binary_search` finds (see `lookup_table`).
  lookup: Option<(L, Vec<u16>)>,
}

// (nc3pack) The widest span of latents looked up in a table instead of searched.
const LOOKUP_MAX_SPAN: u64 = 1 << 16;

// (nc3pack) For bins (sorted by `lower`) that together span at most `LOOKUP_MAX_SPAN` latents,
// the first latent and the bin index of every latent from there to the last bin's end: the
// last bin whose lower bound is not above it (the first bin below the first lower bound), as
// the binary search finds it.
fn lookup_table<L: Latent>(infos: &[BinCompressionInfo<L>]) -> Option<(L, Vec<u16>)> {
  let first = infos.first()?.lower;
  if infos.len() > u16::MAX as usize {
    return None;
  }
  let mut span = 0u64;
  for info in infos {
    if info.offset_bits >= 32 {
      return None;
    }
    // Saturating: 64-bit latents may span nearly 2^64 (then no table).
    let end = (info.lower - first)
      .to_u64()
      .saturating_add(1u64 << info.offset_bits);
    span = span.max(end);
  }
  if span > LOOKUP_MAX_SPAN {
    return None;
  }
  let mut table = Vec::with_capacity(span as usize);
  for (i, next) in infos.iter().skip(1).map(Some).chain([None]).enumerate() {
    let until = next.map_or(span, |next| {
      (next.lower - first).to_u64().min(span)
    });
    while (table.len() as u64) < until {
      table.push(i as u16);
    }
  }
  Some((first, table))
}

impl<L: Latent> From<Vec<BinCompressionInfo<L>>> for CompressionTable<L> {
  fn from(mut infos: Vec<BinCompressionInfo<L>>) -> Self {
    let search_size_log = if infos.len() <= 1 {
      0
    } else {
      1 + (infos.len() - 1).ilog2() as usize
    };
    infos.sort_unstable_by_key(|info| info.lower);
    let mut search_lowers = infos.iter().map(|info| info.lower).collect::<Vec<_>>();
    while search_lowers.len() < (1 << search_size_log) {
      search_lowers.push(L::MAX);
    }

    let lookup = lookup_table(&infos);
    Self {
      search_size_log,
      search_lowers,
      infos,
      lookup,
    }
  }
}

impl<L: Latent> CompressionTable<L> {
  pub fn is_trivial(&self) -> bool {
    // It's possible for the table to be trivial even when only_bin() is None;
    // the table can be empty
    self.infos.len() <= 1
  }

  pub fn only_bin(&self) -> Option<&BinCompressionInfo<L>> {
    if self.is_trivial() {
      self.infos.first()
    } else {
      None
    }
  }

  // (nc3pack) Where the bins have a lookup table and every latent is in it: each latent's
  // symbol, offset from its bin's lower bound and the offset's bit count, in one pass (true);
  // else false (and the outputs partly written), and `binary_search` finds the bins.
  #[inline(never)]
  pub fn dissect_by_lookup(
    &self,
    latents: &[L],
    symbols: &mut [Symbol],
    offsets: &mut [L],
    offset_bits: &mut [Bitlen],
  ) -> bool {
    let Some((first, table)) = &self.lookup else {
      return false;
    };
    for (((&latent, symbol), offset), bits) in latents
      .iter()
      .zip(symbols.iter_mut())
      .zip(offsets.iter_mut())
      .zip(offset_bits.iter_mut())
    {
      if latent < *first {
        return false;
      }
      let Some(&bin) = table.get((latent - *first).to_u64() as usize) else {
        return false;
      };
      let info = &self.infos[bin as usize];
      *symbol = info.symbol;
      *offset = latent - info.lower;
      *bits = info.offset_bits;
    }
    true
  }

  #[inline(never)]
  pub fn binary_search(&self, latents: &[L]) -> [usize; FULL_BATCH_N] {
    let mut search_idxs = [0; FULL_BATCH_N];

    // we do this as `size_log` SIMD loops over the batch
    for depth in 0..self.search_size_log {
      let bisection_idx = 1 << (self.search_size_log - 1 - depth);
      for (&latent, search_idx) in latents.iter().zip(search_idxs.iter_mut()) {
        let candidate_idx = *search_idx + bisection_idx;
        let value = unsafe { *self.search_lowers.get_unchecked(candidate_idx) };
        *search_idx += ((latent >= value) as usize) * bisection_idx;
      }
    }

    let n_bins = self.infos.len();
    if n_bins < 1 << self.search_size_log {
      // We worked with a balanced binary tree with missing leaves filled, so it
      // might have overshot some bin indices.
      search_idxs
        .iter_mut()
        .for_each(|search_idx| *search_idx = cmp::min(*search_idx, n_bins - 1));
    }

    search_idxs
  }
}
