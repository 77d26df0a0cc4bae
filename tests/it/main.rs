//! Integration tests, one target: each module covers one area.

mod ahead;
mod batch;
mod cli;
mod compact;
mod constants;
mod context;
mod delete;
mod determinism;
mod fit;
mod hostile;
mod layout_cases;
mod limits;
mod lorenzo;
mod lzma;
mod mask;
mod mount;
mod original;
mod outputs;
mod packer;
mod pervar;
mod pipes;
mod plane;
mod property;
mod quantize;
mod read;
mod refs;
mod remote;
mod repair;
mod roundtrip;
mod safety;
mod serve;
mod shared;
mod signals;
mod slice;
mod summary;
mod threads;
mod util;

/// Filter settings for tests: `true` lets the encoder choose per block, `false` means no filter.
pub fn filters(on: bool) -> nc3pack::FilterMode {
    if on {
        nc3pack::FilterMode::Auto
    } else {
        nc3pack::FilterMode::Fixed(nc3pack::format::Filter::None)
    }
}
