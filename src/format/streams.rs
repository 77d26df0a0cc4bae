//! The streams of an archive: which stream holds which bytes of the original, how each is cut
//! into blocks, and where every block sits in the index (design/FORMAT.md, "Layout").

use crate::format;
use crate::nc3::Layout;

/// One stream of the archive: a variable's materialized data, the residual bytes, or one of the
/// two shared streams that hold the small ones of those.
#[derive(Debug, Clone)]
pub struct Stream {
    /// Frame stream id.
    pub id: u32,
    /// Element size (1 for residual bytes and the shared streams).
    pub esize: usize,
    /// Total bytes.
    pub total: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// Index of the stream's first block in the index.
    pub first_slot: u64,
    /// For a member of a shared stream: that stream (numbered as in [`streams`]) and where the
    /// member's encoded bytes start in it. A member has no blocks of its own.
    pub shared: Option<(usize, u64)>,
}

impl Stream {
    fn new(id: u32, esize: usize, total: u64, block_size: u32) -> Stream {
        Stream {
            id,
            esize,
            total,
            block_bytes: format::var_block_bytes(block_size, esize),
            first_slot: 0,
            shared: None,
        }
    }

    /// Number of blocks of its own (0 for a member of a shared stream).
    pub fn blocks(&self) -> u64 {
        match self.shared {
            Some(_) => 0,
            None => format::block_count(self.total, self.block_bytes),
        }
    }

    /// Decoded bytes of block `b` (< [`blocks`](Self::blocks)): a block's bytes, or what is
    /// left of the stream for its last block.
    pub fn block_len(&self, b: u64) -> u64 {
        self.block_bytes.min(self.total - b * self.block_bytes)
    }
}

/// The streams of a layout in index order: variables in header order, the residual bytes, the
/// early shared stream, then the late shared stream. Every stream of 1 to
/// [`format::shared_max`] bytes is a member of a shared stream, which holds its members' encoded
/// bytes one after another in the order of `shared_order`.
///
/// ```
/// let f = std::fs::File::open("samples/classic_records.nc").unwrap();
/// let (_, _, layout) = nc3pack::nc3::open(&f, "classic_records.nc".as_ref()).unwrap();
/// let s = nc3pack::testing::streams(&layout, 1 << 20);
/// assert_eq!(s.len(), layout.vars.len() + 3);
/// // Every variable of this small file is a member of the late shared stream.
/// assert!(s[..layout.vars.len()].iter().all(|v| v.shared.is_some() || v.total == 0));
/// ```
#[cfg(any(test, feature = "testing"))]
pub fn streams(layout: &Layout, block_size: u32) -> Vec<Stream> {
    streams_with(layout, &format::BlockSizes::uniform(block_size))
}

/// `streams` with a block size per variable (format 1.1): variable v's stream has blocks of
/// `sizes.var(v)`, and is a member of a shared stream when it holds 1 to
/// [`format::shared_max`]`(sizes.var(v))` bytes; the residual and shared streams use
/// `sizes.default`.
pub fn streams_with(layout: &Layout, sizes: &format::BlockSizes) -> Vec<Stream> {
    let block_size = sizes.default;
    // Room for the three streams after the variables' too: growing a full vector by one would
    // double its allocation (64 MB more for a million variables).
    let mut out: Vec<Stream> = Vec::with_capacity(layout.vars.len() + 3);
    out.extend(
        layout
            .vars
            .iter()
            .enumerate()
            .map(|(i, v)| Stream::new(i as u32, v.esize, v.total, sizes.var(i))),
    );
    out.push(Stream::new(
        format::RESIDUAL_ID,
        1,
        layout.residual_len,
        block_size,
    ));
    let mut totals = [0u64; 2];
    for (s, k) in shared_order(layout) {
        let small = format::shared_max(if s < layout.vars.len() {
            sizes.var(s)
        } else {
            block_size
        });
        let st = &mut out[s];
        if (1..=small).contains(&st.total) {
            st.shared = Some((layout.vars.len() + 1 + k, totals[k]));
            totals[k] += st.total;
        }
    }
    out.push(Stream::new(
        format::SHARED_EARLY_ID,
        1,
        totals[0],
        block_size,
    ));
    out.push(Stream::new(
        format::SHARED_LATE_ID,
        1,
        totals[1],
        block_size,
    ));
    let mut slot = 0u64;
    for s in &mut out {
        s.first_slot = slot;
        slot += s.blocks();
    }
    out
}

/// The candidates for the shared streams in order, as (stream, 0 for the early shared stream or
/// 1 for the late one): the fixed variables in file order (early when the header declares more
/// than [`format::SPLIT_MIN`] bytes of data), then the record variables in record order, then
/// the residual bytes.
pub(crate) fn shared_order(layout: &Layout) -> impl Iterator<Item = (usize, usize)> + '_ {
    let residual = layout.vars.len();
    let early = usize::from(layout.declared_end <= format::SPLIT_MIN);
    let fixed = layout.fixed_order().iter().map(move |&i| (i, early));
    let rec = layout.rec_order().iter().map(|&i| (i, 1));
    fixed.chain(rec).chain(std::iter::once((residual, 1)))
}
