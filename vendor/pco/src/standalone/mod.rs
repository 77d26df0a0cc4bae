pub use compressor::{ChunkCompressor, FileCompressor};
pub use decompressor::{ChunkDecompressor, DecompressorItem, FileDecompressor};
pub use simple::*;

mod compressor;
mod constants;
mod decompressor;
pub mod guarantee;
mod simple;
