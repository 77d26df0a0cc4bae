use crate::ans::Symbol;
use crate::bits;
use crate::compression_intermediates::BinCompressionInfo;
use crate::constants::{Bitlen, Weight};
use crate::data_types::Latent;
use crate::histograms::HistogramBin;
use crate::metadata::Bin;

// vec of [start_bin_idx, end_bin_idx], inclusive
type Partitioning = Vec<(usize, usize)>;

const SINGLE_BIN_SPEEDUP_WORTH_IN_BITS_PER_NUM: f32 = 0.1;
const TRIVIAL_OFFSET_SPEEDUP_WORTH_IN_BITS_PER_NUM: f32 = 0.1;

/// Fast approximate base-2 logarithm for **positive, finite, non-denormal** `x`.
/// Inspired by `log2_raw` from the `fast-math` crate by Huon Wilson.
/// Altered for continuity and smaller absolute error. See #287 for details.
#[inline(always)]
fn log2_approx(x: f32) -> f32 {
  const Z: f32 = 0.674; // cutoff for local approximation in [z, 2z]
  const SIGNIF_MASK: u32 = 0x7FFFFF;
  const Z_SIGNIF: u32 = Z.to_bits() & SIGNIF_MASK;
  const B: f32 = 2.0 / Z;
  const C: f32 = -B / (6.0 * Z);
  const A: f32 = -B - C;

  debug_assert!(
    x.is_normal() && x > 0.0,
    "log2_approx called with non-normal or non-positive value: {x}"
  );

  let bits = x.to_bits();
  let exp = bits >> 23;
  let signif = bits & SIGNIF_MASK;

  let high_bit = (signif > Z_SIGNIF) as u32;
  let log_int = exp + high_bit - 127;

  let exp = 0x7F ^ high_bit;
  let bits = (exp << 23) | signif;
  let normalized = f32::from_bits(bits);
  log_int as f32 + A + normalized * (B + C * normalized)
}

// using f32 instead of f64 because the .log2() is faster
fn bin_cost<L: Latent>(
  bin_meta_cost: f32,
  lower: L,
  upper: L,
  count: Weight,
  total_count_log2: f32,
) -> f32 {
  let count = count as f32;
  let ans_cost = total_count_log2 - log2_approx(count);
  let offset_cost = bits::bits_to_encode_offset(upper - lower) as f32;
  bin_meta_cost + (ans_cost + offset_cost) * count
}

// (nc3pack) `bin_cost` with the offset's bit count found without
// `leading_zeros`, so that a loop of it vectorizes: the same value.
#[inline(always)]
fn bin_cost_fast<L: Latent>(
  bin_meta_cost: f32,
  lower: L,
  upper: L,
  count: Weight,
  total_count_log2: f32,
) -> f32 {
  let count = count as f32;
  let ans_cost = total_count_log2 - log2_approx(count);
  let offset_cost = offset_bits_f32(upper - lower);
  bin_meta_cost + (ans_cost + offset_cost) * count
}

// (nc3pack) `bits::bits_to_encode_offset` as an f32: the bit length of a
// value below 2^32 read from the exponent of its (exact) f64 conversion.
#[inline(always)]
fn offset_bits_f32<L: Latent>(max_offset: L) -> f32 {
  #[inline]
  fn bit_len(x: u64) -> u32 {
    // x < 2^32: exact as an f64, whose biased exponent is 1022 + bit length.
    let e = ((x as f64).to_bits() >> 52) as u32;
    if x == 0 {
      0
    } else {
      e - 1022
    }
  }
  let x = max_offset.to_u64();
  if L::BITS <= 32 {
    bit_len(x) as f32
  } else {
    let hi = x >> 32;
    let lo = x & 0xFFFF_FFFF;
    (if hi != 0 {
      bit_len(hi) + 32
    } else {
      bit_len(lo)
    }) as f32
  }
}

// (nc3pack) The least of `costs` and its last index (usize::MAX when none is
// below f32::MAX, as the original's scan left it); NaN costs are never least.
#[inline(always)]
fn least_cost_last(costs: &[f32]) -> (f32, usize) {
  const LANES: usize = 8;
  let mut lanes = [f32::MAX; LANES];
  let mut chunks = costs.chunks_exact(LANES);
  for chunk in &mut chunks {
    for (lane, &cost) in lanes.iter_mut().zip(chunk) {
      if cost < *lane {
        *lane = cost;
      }
    }
  }
  let mut least = f32::MAX;
  for &cost in chunks.remainder().iter().chain(&lanes) {
    if cost < least {
      least = cost;
    }
  }
  if least < f32::MAX {
    let j = costs
      .iter()
      .rposition(|&cost| cost == least)
      .unwrap_or(usize::MAX);
    (least, j)
  } else {
    (f32::MAX, usize::MAX)
  }
}

fn calc_trivial_offset_partitioning<L: Latent>(
  bin_meta_cost: f32,
  total_count_log2: f32,
  bins: &[HistogramBin<L>],
) -> Option<(Partitioning, f32)> {
  if bins.iter().any(|bin| bin.lower != bin.upper) {
    return None;
  }

  let partitioning: Vec<_> = (0..bins.len()).map(|i| (i, i)).collect();
  let cost = bins
    .iter()
    .map(|bin| {
      bin_cost(
        bin_meta_cost,
        bin.lower,
        bin.upper,
        bin.count as Weight,
        total_count_log2,
      )
    })
    .sum();
  Some((partitioning, cost))
}

fn rewind_best_partitioning(best_js: &[usize], n_bins: usize) -> Partitioning {
  let mut best_partitioning = Vec::new();
  let mut i = n_bins - 1;
  loop {
    let j = best_js[i];
    best_partitioning.push((j, i));
    if j > 0 {
      i = j - 1;
    } else {
      break;
    }
  }
  best_partitioning.reverse();
  best_partitioning
}

// Combines consecutive unoptimized bins and returns a vec of (j, i) where
// j and i are the inclusive indices of a group of bins to combine together.
// This algorithm is exactly optimal, assuming our cost estimates (measured in
// total bit size) are correct.
fn choose_optimized_partitioning<L: Latent>(
  bins: &[HistogramBin<L>],
  ans_size_log: Bitlen,
) -> Partitioning {
  // (nc3pack) Compiled again for AVX2 (8 costs a vector instruction instead of 4) and for
  // AVX-512 (16, and integers to floats in one instruction), chosen at run time: the same
  // operations on the same values.
  #[cfg(target_arch = "x86_64")]
  {
    use std::arch::is_x86_feature_detected as has;
    if has!("avx512f") && has!("avx512dq") && has!("avx512bw") && has!("avx512vl") {
      // SAFETY: this CPU has these AVX-512 parts.
      return unsafe { choose_optimized_partitioning_avx512(bins, ans_size_log) };
    }
    if has!("avx2") {
      // SAFETY: this CPU has AVX2.
      return unsafe { choose_optimized_partitioning_avx2(bins, ans_size_log) };
    }
  }
  choose_optimized_partitioning_any(bins, ans_size_log)
}

// (nc3pack) See `choose_optimized_partitioning`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn choose_optimized_partitioning_avx2<L: Latent>(
  bins: &[HistogramBin<L>],
  ans_size_log: Bitlen,
) -> Partitioning {
  choose_optimized_partitioning_any(bins, ans_size_log)
}

// (nc3pack) See `choose_optimized_partitioning`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl")]
fn choose_optimized_partitioning_avx512<L: Latent>(
  bins: &[HistogramBin<L>],
  ans_size_log: Bitlen,
) -> Partitioning {
  choose_optimized_partitioning_any(bins, ans_size_log)
}

#[inline(always)]
fn choose_optimized_partitioning_any<L: Latent>(
  bins: &[HistogramBin<L>],
  ans_size_log: Bitlen,
) -> Partitioning {
  // (nc3pack) The same DP in two passes per bin: every candidate's cost into
  // `costs` (a loop without branches, which the compiler vectorizes), then the
  // least cost, the largest `j` on ties, as the original's descending scan
  // with `<` found it. Each cost is computed by the same operations as
  // before, so the partitioning is the same; ~3x faster at 256 bins.
  let n = bins.len();
  let mut c = 0;
  let mut c_counts = Vec::with_capacity(n + 1);
  let mut best_costs = vec![f32::NAN; n + 1];
  c_counts.push(0_u32);
  best_costs[0] = 0.0;
  for bin in bins {
    c += bin.count as u32;
    c_counts.push(c);
  }
  let total_count = c;
  let lowers = bins.iter().map(|bin| bin.lower).collect::<Vec<_>>();
  let uppers = bins.iter().map(|bin| bin.upper).collect::<Vec<_>>();
  let total_count_log2 = log2_approx(c as f32);

  let mut best_js = Vec::with_capacity(n);

  let bin_meta_cost = Bin::<L>::exact_bit_size(ans_size_log) as f32;
  let mut costs = vec![0.0_f32; n];

  for i in 0..n {
    let upper = uppers[i];
    let c_count_i = c_counts[i + 1];
    let costs = &mut costs[..i + 1];
    for (((cost, &c_count_j), &best_cost_up_to_j), &lower) in costs
      .iter_mut()
      .zip(&c_counts[..i + 1])
      .zip(&best_costs[..i + 1])
      .zip(&lowers[..i + 1])
    {
      *cost = best_cost_up_to_j
        + bin_cost_fast::<L>(
          bin_meta_cost,
          lower,
          upper,
          c_count_i - c_count_j,
          total_count_log2,
        );
    }
    let (best_cost, best_j) = least_cost_last(costs);
    best_costs[i + 1] = best_cost;
    best_js.push(best_j);
  }
  let best_cost = best_costs[n];

  let single_bin_partitioning = vec![(0_usize, bins.len() - 1)];
  let single_bin_cost = bin_cost(
    bin_meta_cost,
    lowers[0],
    uppers[bins.len() - 1],
    total_count,
    total_count_log2,
  );
  if single_bin_cost < best_cost + SINGLE_BIN_SPEEDUP_WORTH_IN_BITS_PER_NUM * total_count as f32 {
    return single_bin_partitioning;
  }

  if let Some((trivial_offset_partitioning, trivial_offset_cost)) =
    calc_trivial_offset_partitioning(bin_meta_cost, total_count_log2, bins)
  {
    if trivial_offset_cost
      < best_cost + TRIVIAL_OFFSET_SPEEDUP_WORTH_IN_BITS_PER_NUM * total_count as f32
    {
      return trivial_offset_partitioning;
    }
  }

  rewind_best_partitioning(&best_js, bins.len())
}

pub fn optimize_bins<L: Latent>(
  bins: &[HistogramBin<L>],
  ans_size_log: Bitlen,
) -> Vec<BinCompressionInfo<L>> {
  let partitioning = choose_optimized_partitioning(bins, ans_size_log);
  let mut res = Vec::with_capacity(partitioning.len());
  for (symbol, &(j, i)) in partitioning.iter().enumerate() {
    let count: usize = bins.iter().take(i + 1).skip(j).map(|bin| bin.count).sum();
    let optimized_bin = BinCompressionInfo {
      weight: count as Weight,
      lower: bins[j].lower,
      upper: bins[i].upper,
      symbol: symbol as Symbol,
      offset_bits: bits::bits_to_encode_offset(bins[i].upper - bins[j].lower),
    };
    res.push(optimized_bin);
  }
  res
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::compression_intermediates::BinCompressionInfo;
  use crate::histograms::HistogramBin;

  fn make_bin(count: usize, lower: u32, upper: u32) -> HistogramBin<u32> {
    HistogramBin {
      count,
      lower,
      upper,
    }
  }

  #[test]
  fn test_bin_optimization() {
    let infos = vec![
      make_bin(100, 1, 16),  // far enough from the others to stay independent
      make_bin(100, 33, 48), // same density as next bin, gets combined
      make_bin(100, 49, 64),
      make_bin(100, 65, 74), // same density as next bin (but different from previous ones)
      make_bin(50, 75, 79),
    ];
    let optimized = optimize_bins(&infos, 10);
    assert_eq!(
      optimized,
      vec![
        BinCompressionInfo {
          weight: 100,
          lower: 1,
          upper: 16,
          offset_bits: 4,
          symbol: 0,
        },
        BinCompressionInfo {
          weight: 200,
          lower: 33,
          upper: 64,
          offset_bits: 5,
          symbol: 1,
        },
        BinCompressionInfo {
          weight: 150,
          lower: 65,
          upper: 79,
          offset_bits: 4,
          symbol: 2,
        },
      ]
    )
  }

  #[test]
  fn test_bin_optimization_enveloped() {
    // here the 2nd bin would be covered by previous bin (which takes 8 offset
    // bits), but it's disadvantageous to combine them because the 2nd bin has
    // so much higher density
    let infos = vec![make_bin(1000, 0, 150), make_bin(1000, 200, 200)];
    let optimized = optimize_bins(&infos, 10);
    assert_eq!(
      optimized,
      vec![
        BinCompressionInfo {
          weight: 1000,
          lower: 0,
          upper: 150,
          offset_bits: 8,
          symbol: 0,
        },
        BinCompressionInfo {
          weight: 1000,
          lower: 200,
          upper: 200,
          offset_bits: 0,
          symbol: 1,
        },
      ]
    )
  }

  #[test]
  fn test_log2_approx() {
    // should be exact at powers of 2
    for exp in 0..32 {
      let approx = log2_approx((1_u32 << exp) as f32);
      assert_eq!(approx, exp as f32, "{} {}", exp, approx);
    }

    const MAX_ERROR: f32 = 0.0076;
    let mut prev_approx_log2 = -f32::INFINITY;
    for i in 1..=100 {
      let x = i as f32;
      let log2_exact = x.log2();
      let log2_approx_value = log2_approx(x);
      let error = (log2_exact - log2_approx_value).abs();

      assert!(
        log2_approx_value >= prev_approx_log2,
        "log2_approx({}) = {}, expected >= {}, error: {}",
        x,
        log2_approx_value,
        prev_approx_log2,
        error
      );

      assert!(
        error < MAX_ERROR,
        "log2_approx({}) = {}, expected {}, error: {}",
        x,
        log2_approx_value,
        log2_exact,
        error
      );

      prev_approx_log2 = log2_approx_value;
    }
  }
}

/// (nc3pack) Checks the two-pass DP against the DP as published, on
/// histograms made from `seed` (latents of `L`, bins up to `max_width` wide
/// and `max_gap` apart) and `bits_to_encode_offset` against its f32 form:
/// how many of its histograms kept more than one bin (the others check
/// little), or a description of the first difference. Public for nc3pack's tests
/// (this crate's own tests need a dev-dependency nc3pack leaves out).
#[doc(hidden)]
pub fn check_two_pass_dp<L: Latent>(
  seed: u64,
  max_width: u64,
  max_gap: u64,
) -> Result<usize, String> {
  let mut split = 0;
  let mut s = seed.max(1);
  let mut rnd = move || {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    s
  };
  let mut vals = vec![0_u64, 1, 2, 3, u64::MAX];
  for k in 1..64 {
    vals.extend([(1_u64 << k) - 1, 1 << k, (1 << k) + 1]);
  }
  for v in vals {
    let v = L::from_u64(v & (u64::MAX >> (64 - L::BITS)));
    if offset_bits_f32(v) != bits::bits_to_encode_offset(v) as f32 {
      return Err(format!("offset bits of {v}"));
    }
  }
  for n in [1, 2, 7, 8, 9, 64, 255, 256] {
    let mut bins = Vec::new();
    let mut x = 0_u64;
    for _ in 0..n {
      let w = rnd() % (max_width + 1);
      bins.push(HistogramBin {
        count: 1 + (rnd() % 5000) as usize,
        lower: L::from_u64(x),
        upper: L::from_u64(x + w),
      });
      x += w + 1 + rnd() % (max_gap + 1);
    }
    let ans_size_log = 10;
    // The DP as published.
    let mut c = 0;
    let mut cc = vec![(0_u32, 0.0_f32)];
    for bin in &bins {
      c += bin.count as u32;
      cc.push((c, f32::NAN));
    }
    let total_count_log2 = log2_approx(c as f32);
    let meta = Bin::<L>::exact_bit_size(ans_size_log) as f32;
    let mut best_js = Vec::new();
    for i in 0..n {
      let (mut best_cost, mut best_j) = (f32::MAX, usize::MAX);
      let (c_i, _) = cc[i + 1];
      for j in (0..i + 1).rev() {
        let (c_j, best_up_to_j) = cc[j];
        let cost = best_up_to_j
          + bin_cost::<L>(
            meta,
            bins[j].lower,
            bins[i].upper,
            c_i - c_j,
            total_count_log2,
          );
        if cost < best_cost {
          best_cost = cost;
          best_j = j;
        }
      }
      cc[i + 1].1 = best_cost;
      best_js.push(best_j);
    }
    let (_, best_cost) = cc[n];
    let single_bin_cost = bin_cost(
      meta,
      bins[0].lower,
      bins[n - 1].upper,
      c,
      total_count_log2,
    );
    let expected =
      if single_bin_cost < best_cost + SINGLE_BIN_SPEEDUP_WORTH_IN_BITS_PER_NUM * c as f32 {
        vec![(0, n - 1)]
      } else {
        match calc_trivial_offset_partitioning(meta, total_count_log2, &bins) {
          Some((p, cost))
            if cost < best_cost + TRIVIAL_OFFSET_SPEEDUP_WORTH_IN_BITS_PER_NUM * c as f32 =>
          {
            p
          }
          _ => rewind_best_partitioning(&best_js, n),
        }
      };
    // The version chosen on this CPU, the one for any CPU and, where it runs, the AVX2 one.
    #[cfg(target_arch = "x86_64")]
    let avx2_differs = std::arch::is_x86_feature_detected!("avx2")
      // SAFETY: this CPU has AVX2.
      && unsafe { choose_optimized_partitioning_avx2(&bins, ans_size_log) } != expected;
    #[cfg(not(target_arch = "x86_64"))]
    let avx2_differs = false;
    if choose_optimized_partitioning(&bins, ans_size_log) != expected
      || choose_optimized_partitioning_any(&bins, ans_size_log) != expected
      || avx2_differs
    {
      return Err(format!(
        "partitioning of {n} bins (seed {seed})"
      ));
    }
    if expected.len() > 1 {
      split += 1;
    }
  }
  Ok(split)
}
