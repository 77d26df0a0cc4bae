#![doc = include_str!("../README.md")]
//! # API Notes
//!
//! * In some places, Pco methods accept a destination (either `W: Write` or `&mut [T: Number]`).
//! If Pco returns an error, it is possible both the destination and the struct
//! have been modified.
//! * Pco will always try to process all numbers, and it will fail if insufficient bytes are
//! available. For instance, during decompression Pco will try to fill the entire `&mut [T]`
//! passed in, returning an insufficient data error if the `&[u8]` passed in is not long enough.

#![allow(clippy::manual_non_exhaustive)] // sometimes we want to ban explicit construction within the crate too
#![deny(clippy::unused_unit)]
#![deny(dead_code)]

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctest;

pub use chunk_config::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};
pub use constants::{DEFAULT_COMPRESSION_LEVEL, DEFAULT_MAX_PAGE_N, FULL_BATCH_N};
pub use progress::Progress;
pub use scratch::DecompressorScratch;

pub mod data_types;
/// for inspecting certain types of Pco metadata
pub mod describers;
pub mod errors;
/// structs representing stored information about how compression was done
pub mod metadata;
/// for compressing/decompressing .pco files
pub mod standalone;
/// for compressing/decompressing as part of an outer, wrapping format
pub mod wrapped;

/// (nc3pack) Checks of nc3pack's changes to this crate, for nc3pack's tests.
#[doc(hidden)]
pub mod nc3pack_checks {
  pub use crate::bin_optimization::check_two_pass_dp;
  pub use crate::delta::lookback::check_lookbacks;
  pub use crate::histograms::check_bucketed;

  std::thread_local! {
    // What this thread's decoding may use: 0 anything, 1 not AVX-512, 2 the published loops.
    static LIMIT: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
  }

  fn with_limit<R>(limit: u8, f: impl FnOnce() -> R) -> R {
    let before = LIMIT.with(|l| l.replace(limit));
    let r = f();
    LIMIT.with(|l| l.set(before));
    r
  }

  /// Runs `f` with this thread's decoding on the published (portable) loops instead of
  /// those compiled again for this CPU: to compare the two.
  pub fn with_portable_decoding<R>(f: impl FnOnce() -> R) -> R {
    with_limit(2, f)
  }

  /// Runs `f` with this thread's decoding on the loops for BMI2 at most (not AVX-512).
  pub fn with_bmi2_decoding<R>(f: impl FnOnce() -> R) -> R {
    with_limit(1, f)
  }

  /// Whether the decoder's loops compiled for BMI2 may run on this thread.
  #[cfg(target_arch = "x86_64")]
  #[inline]
  pub(crate) fn bmi2_decoding() -> bool {
    std::arch::is_x86_feature_detected!("bmi2") && LIMIT.with(|l| l.get()) < 2
  }

  /// Whether the decoder's offsets loop for AVX-512 VBMI may run on this thread.
  #[cfg(target_arch = "x86_64")]
  #[inline]
  pub(crate) fn vbmi_decoding() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f")
      && has!("avx512bw")
      && has!("avx512vbmi")
      && has!("bmi2")
      && LIMIT.with(|l| l.get()) < 1
  }
}

mod ans;
mod bin_optimization;
mod bit_reader;
mod bit_writer;
mod bits;
mod chunk_config;
mod chunk_latent_compressor;
mod chunk_latent_decompressor;
mod compression_intermediates;
mod compression_table;
mod constants;
mod delta;
mod dyn_slices;
mod histograms;
mod macros;
mod mode;
mod page_latent_decompressor;
mod progress;
mod read_write_uint;
mod sampling;
mod scratch;
mod sort_utils;

#[cfg(test)]
mod tests;

// To ensure our tests surface uninitialized memory issues, since some default
// allocators fill with 0, we make the allocator write uncommon values instead.
#[cfg(test)]
mod poisoning_allocator {
  use std::alloc::{GlobalAlloc, Layout, System};

  struct Poisoning;

  unsafe impl GlobalAlloc for Poisoning {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
      let ptr = System.alloc(layout);
      if !ptr.is_null() {
        ptr.write_bytes(0xab, layout.size());
      }
      ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
      System.dealloc(ptr, layout)
    }
  }

  #[global_allocator]
  static ALLOCATOR: Poisoning = Poisoning;
}

#[cfg(feature = "bench")]
mod bench_utils;
/// Exists so that the `micro` bench target can force the linker to pull in
/// this crate's `#[divan::bench]` items, which register themselves at startup.
#[cfg(feature = "bench")]
#[doc(hidden)]
pub fn _bench_link() {}
