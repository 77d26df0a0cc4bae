//! The zstd codec: block compression and the header and constants frames.

use super::block::{BlockCodec, Compress};
use super::error::{CodecError, FrameError};
use super::space::{KeptScratch, Scratch};
use crate::format::{
    bytes_frame, BlockSizes, Codec, ConstantRun, FrameHeader, BLOCK_SIZES_ID, CONSTANTS_ID,
    HEADER_ID,
};

/// Compresses into `out` if the result is smaller than `limit` bytes.
pub(crate) fn compress_zstd(
    c: Option<&mut zstd::bulk::Compressor<'static>>,
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    let Some(c) = c else { return false };
    let cap = limit.min(zstd::zstd_safe::compress_bound(input.len()));
    let mut buf = Vec::with_capacity(cap);
    match c.compress_to_buffer(input, &mut buf) {
        Ok(_) if buf.len() < limit => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}

/// Level of the header frame's zstd compression.
pub(crate) const HEADER_LEVEL: i32 = 19;
/// Level of the constants frames' zstd compression.
pub(crate) const CONSTANTS_LEVEL: i32 = 3;

/// The zstd contexts of header and constants frames, by level, kept between calls (as many as
/// were in use at once): setting up a zstd context (which probes the CPU with `cpuid`, slow in
/// a virtual machine) costs more than compressing a small file's header. A reused context
/// compresses to the same bytes as a fresh one (zstd resets the session at every one-shot
/// compression; the tests check it).
static BYTES_ZSTD: crate::kept::Kept<i32, zstd::bulk::Compressor<'static>> =
    crate::kept::Kept::new(16);

/// The payload and codec of a frame of bytes (the header frame, a constants frame): `data`
/// compressed by zstd at `level` (one zstd frame) when that is smaller, else `data` raw.
pub(crate) fn compress_bytes(data: &[u8], level: i32) -> (Codec, std::borrow::Cow<'_, [u8]>) {
    match zstd_if_smaller(data, level) {
        Some(c) => (Codec::Zstd, std::borrow::Cow::Owned(c)),
        None => (Codec::None, std::borrow::Cow::Borrowed(data)),
    }
}

/// The header dictionary: a zstd raw-content dictionary of 2,672 bytes, the netCDF-3 header
/// encoding (names and attributes as a header stores them, big-endian counts and padding) of
/// common CF names and values (`Conventions`, `units`, `calendar`, `_FillValue`, the
/// time/lat/lon/level dimensions and coordinate variables with their `units`, `long_name`,
/// `standard_name` and `axis`, common standard names), built from those names only (no
/// measured file) by `bench/header_dict.py --dict-out src/codec/header_dict.bin`. Its bytes
/// are part of the format (codec 7, design/FORMAT.md, "The header dictionary") and never
/// change: a test checks their XXH3-64.
pub(crate) const HEADER_DICT: &[u8] = include_bytes!("header_dict.bin");

/// [`HEADER_DICT`] prepared for [`HEADER_LEVEL`] (zstd's `CDict`), once for the process:
/// loading it for each header was 8 % of packing a collection of small files. A prepared
/// dictionary is read-only, shared by every thread.
static HEADER_CDICT: std::sync::OnceLock<zstd::dict::EncoderDictionary<'static>> =
    std::sync::OnceLock::new();

/// `header` compressed by zstd at [`HEADER_LEVEL`] with [`HEADER_DICT`]; `None` on failure.
/// It uses a kept context of that level (the plain header's, just given back), with the
/// prepared dictionary referenced for this one frame: a second context's set-up and first use
/// of its memory were a tenth of the trial's time on a tiny file. The frame is the one a fresh
/// context with the dictionary loaded makes (the tests check it).
fn compress_with_dict(header: &[u8]) -> Option<Vec<u8>> {
    let dict =
        HEADER_CDICT.get_or_init(|| zstd::dict::EncoderDictionary::new(HEADER_DICT, HEADER_LEVEL));
    with_bytes_context(HEADER_LEVEL, |c| {
        c.set_prepared_dictionary(dict)?;
        let packed = c.compress(header);
        // The context's next frames are without the dictionary (or from a fresh context).
        c.set_dictionary(HEADER_LEVEL, &[])?;
        packed
    })
}

/// The header frame: the original netCDF-3 header, zstd-compressed (level 19) when that is
/// smaller, else raw. With `dict` (the compact form), zstd with the header dictionary
/// ([`Codec::ZstdDict`]) when that is smaller still.
pub(crate) fn header_frame(header: &[u8], dict: bool) -> Vec<u8> {
    let (codec, payload) = compress_bytes(header, HEADER_LEVEL);
    if dict {
        if let Some(d) = compress_with_dict(header).filter(|d| d.len() < payload.len()) {
            return bytes_frame(HEADER_ID, 0, header.len(), Codec::ZstdDict, &d);
        }
    }
    bytes_frame(HEADER_ID, 0, header.len(), codec, &payload)
}

/// A constants frame: the runs `runs` (at most [`crate::format::MAX_RUNS_PER_FRAME`]) as a
/// frame of stream [`CONSTANTS_ID`] and block `seq`, zstd-compressed (level 3) when that is
/// smaller.
pub(crate) fn constants_frame(seq: u64, runs: &[ConstantRun]) -> Vec<u8> {
    let runs: Vec<u8> = runs.iter().flat_map(|r| r.encode()).collect();
    let (codec, payload) = compress_bytes(&runs, CONSTANTS_LEVEL);
    bytes_frame(CONSTANTS_ID, seq, runs.len(), codec, &payload)
}

/// The block sizes frame for `nvars` variables: stream [`BLOCK_SIZES_ID`], block 0, esize 1,
/// filter none, whose decoded payload is [`BlockSizes::table`], zstd (level 3) when that is
/// smaller, else stored.
pub(crate) fn block_sizes_frame(sizes: &BlockSizes, nvars: usize) -> Vec<u8> {
    let table = sizes.table(nvars);
    let (codec, payload) = compress_bytes(&table, CONSTANTS_LEVEL);
    bytes_frame(BLOCK_SIZES_ID, 0, table.len(), codec, &payload)
}

/// `data` compressed by zstd at `level` if that is smaller than `data`; `None` if not, or on
/// failure.
pub(crate) fn zstd_if_smaller(data: &[u8], level: i32) -> Option<Vec<u8>> {
    with_bytes_context(level, |c| c.compress(data)).filter(|c| c.len() < data.len())
}

/// What `f` returns with a context of `level` from [`BYTES_ZSTD`] (made if none is kept);
/// `None` if it fails, and the context is then dropped: the next frame starts from a fresh
/// one.
fn with_bytes_context(
    level: i32,
    f: impl FnOnce(&mut zstd::bulk::Compressor<'static>) -> std::io::Result<Vec<u8>>,
) -> Option<Vec<u8>> {
    let mut c = match BYTES_ZSTD.take(&level) {
        Some(c) => c,
        None => zstd::bulk::Compressor::new(level).ok()?,
    };
    // A context that failed is not kept.
    let packed = f(&mut c).ok()?;
    BYTES_ZSTD.give(level, c);
    Some(packed)
}

/// zstd's compressor: its context, at the level it was made with.
struct ZstdCompressor(zstd::bulk::Compressor<'static>);

impl Compress for ZstdCompressor {
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        compress_zstd(Some(&mut self.0), input, limit, out)
    }
}

/// Codec `zstd`: one zstd frame.
pub(crate) struct Zstd;

impl BlockCodec for Zstd {
    fn levels(&self) -> std::ops::RangeInclusive<i32> {
        -7..=22
    }
    fn default_level(&self) -> i32 {
        3
    }
    fn max_level(&self) -> i32 {
        19
    }
    fn compressor(&self, level: i32) -> Result<Option<Box<dyn Compress>>, CodecError> {
        let c = zstd::bulk::Compressor::new(level).map_err(|e| CodecError::Zstd(e.to_string()))?;
        Ok(Some(Box::new(ZstdCompressor(c))))
    }
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        decompress_with(scratch, h, payload, out, None)
    }
    /// Stops once it has the bytes asked for (`PART` on its registry line).
    fn decompress_upto(
        &self,
        _h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        want: usize,
        scratch: &mut Scratch,
    ) -> Result<(usize, bool), FrameError> {
        Ok(ZstdDCtx::of(scratch)?.decompress_upto(payload, out, want)?)
    }
}

/// `payload` (zstd frames; compressed with `dict`, if given) decompressed by the context
/// kept in `scratch` (made if it is not yet) into `out`, which it must fill exactly.
fn decompress_with(
    scratch: &mut Scratch,
    h: &FrameHeader,
    payload: &[u8],
    out: &mut [u8],
    dict: Option<&[u8]>,
) -> Result<(), FrameError> {
    let got = ZstdDCtx::of(scratch)?.decompress(payload, out, dict)?;
    if got != out.len() {
        return Err(FrameError::DecodedLength {
            got,
            decoded: h.decoded_len,
        });
    }
    Ok(())
}

/// Codec `zstd-dict`: one zstd frame compressed with [`HEADER_DICT`] (the header frame of a
/// compact archive). The encoder never chooses it for a block: [`header_frame`] makes it.
pub(crate) struct ZstdDict;

impl BlockCodec for ZstdDict {
    fn decompress_into(
        &self,
        h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        decompress_with(scratch, h, payload, out, Some(HEADER_DICT))
    }
}

/// A zstd decompression context: for whole frames, or a frame a zstd block at a time, each
/// straight from the frame's bytes into the block's buffer (zstd's buffer-less streaming: no
/// input or window buffer of its own), so that a small read stops once it has the bytes it
/// needs. A thread keeps one for every frame it decodes: making one probes the CPU (`cpuid`,
/// slow in a virtual machine) and maps its tables' memory.
pub(crate) struct ZstdDCtx(std::ptr::NonNull<zstd::zstd_safe::zstd_sys::ZSTD_DCtx>);

// SAFETY: the context is owned here and used through `&mut self` only.
unsafe impl Send for ZstdDCtx {}

/// The zstd decompression context a decoding thread keeps between frames, in its
/// [`Scratch`] (made at the first zstd frame, header frames and small reads' frames included).
impl KeptScratch for Option<ZstdDCtx> {
    /// A context counts as 1.
    #[cfg(test)]
    fn held(&self) -> usize {
        usize::from(self.is_some())
    }
}

/// zstd's result `r` as a count, or its error name.
fn zstd_result(r: usize) -> Result<usize, CodecError> {
    // SAFETY: ZSTD_isError only reads its argument.
    if unsafe { zstd::zstd_safe::zstd_sys::ZSTD_isError(r) } != 0 {
        return Err(CodecError::Zstd(
            zstd::zstd_safe::get_error_name(r).to_string(),
        ));
    }
    Ok(r)
}

impl ZstdDCtx {
    /// The thread's context kept in `scratch`, made if it is not yet.
    ///
    /// # Errors
    ///
    /// [`CodecError::Zstd`] when zstd cannot make one.
    pub(crate) fn of(scratch: &mut Scratch) -> Result<&mut ZstdDCtx, CodecError> {
        let ctx = scratch.get::<Option<ZstdDCtx>>();
        if let Some(d) = ctx {
            return Ok(d);
        }
        // SAFETY: makes a context owned by the result (freed in `drop`).
        let d = std::ptr::NonNull::new(unsafe { zstd::zstd_safe::zstd_sys::ZSTD_createDCtx() })
            .ok_or_else(|| CodecError::Zstd("cannot make a zstd context".into()))?;
        Ok(ctx.insert(ZstdDCtx(d)))
    }

    /// Decompresses the zstd frames of `src` (compressed with `dict`, if given) into `dst`:
    /// the bytes written.
    ///
    /// # Errors
    ///
    /// [`CodecError::Zstd`] for damaged frames, or frames that decode to more than `dst`
    /// holds.
    pub(crate) fn decompress(
        &mut self,
        src: &[u8],
        dst: &mut [u8],
        dict: Option<&[u8]>,
    ) -> Result<usize, CodecError> {
        use zstd::zstd_safe::zstd_sys as z;
        let ctx = self.0.as_ptr();
        // SAFETY: zstd reads `src` and `dict` and writes at most `dst.len()` bytes of `dst`.
        zstd_result(unsafe {
            match dict {
                None => z::ZSTD_decompressDCtx(
                    ctx,
                    dst.as_mut_ptr().cast(),
                    dst.len(),
                    src.as_ptr().cast(),
                    src.len(),
                ),
                Some(dict) => z::ZSTD_decompress_usingDict(
                    ctx,
                    dst.as_mut_ptr().cast(),
                    dst.len(),
                    src.as_ptr().cast(),
                    src.len(),
                    dict.as_ptr().cast(),
                    dict.len(),
                ),
            }
        })
    }

    /// Decompresses the zstd frames of `src` into `dst`, one zstd block at a time, until it
    /// has written at least `want` bytes (and `dst` is not full) or the frames end with
    /// `src`: the bytes written, and whether the frames ended. Each zstd block is decoded from
    /// `src` where it lies, into `dst` after the one before (which it may copy from); frames
    /// follow one another as [`ZstdDCtx::decompress`] reads them (a skippable frame writes
    /// nothing).
    ///
    /// # Errors
    ///
    /// [`CodecError::Zstd`] for a damaged frame, one cut short by the end of `src`, bytes
    /// after a frame that are not one, or frames that decode to more than `dst` holds.
    pub(crate) fn decompress_upto(
        &mut self,
        src: &[u8],
        dst: &mut [u8],
        want: usize,
    ) -> Result<(usize, bool), CodecError> {
        use zstd::zstd_safe::zstd_sys as z;
        let ctx = self.0.as_ptr();
        // SAFETY: resets the context owned here.
        zstd_result(unsafe { z::ZSTD_decompressBegin(ctx) })?;
        let (mut read, mut wrote) = (0usize, 0usize);
        // A step reads a frame header or a zstd block (at least one byte), or starts the next
        // frame after one that read at least one: bounded by twice the source's length.
        for _ in 0..=2 * src.len() + 1 {
            // (Once `dst` is full, on to the end of the frames: nothing may follow.)
            if wrote >= want && wrote < dst.len() {
                return Ok((wrote, false));
            }
            // SAFETY: reads the context's state.
            let k = unsafe { z::ZSTD_nextSrcSizeToDecompress(ctx) };
            if k == 0 {
                if read == src.len() {
                    return Ok((wrote, true));
                }
                // Another frame.
                // SAFETY: resets the context owned here.
                zstd_result(unsafe { z::ZSTD_decompressBegin(ctx) })?;
                continue;
            }
            if k > src.len() - read {
                return Err(CodecError::Zstd("the zstd frame is cut short".into()));
            }
            // SAFETY: zstd reads the `k` bytes of `src` at `read` and writes at most
            // `dst.len() - wrote` bytes at `dst`'s byte `wrote`, reading back from the bytes
            // it wrote before (the pointer is derived from all of `dst`).
            let n = zstd_result(unsafe {
                z::ZSTD_decompressContinue(
                    ctx,
                    dst.as_mut_ptr().add(wrote).cast(),
                    dst.len() - wrote,
                    src.as_ptr().add(read).cast(),
                    k,
                )
            })?;
            read += k;
            wrote += n;
        }
        Err(CodecError::Zstd("the zstd frames do not end".into()))
    }
}

impl Drop for ZstdDCtx {
    fn drop(&mut self) {
        // SAFETY: the context made in `ZstdDCtx::of`, freed once.
        unsafe {
            zstd::zstd_safe::zstd_sys::ZSTD_freeDCtx(self.0.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FRAME_HEADER_LEN, RUN_LEN};

    #[test]
    fn header_and_constants_frames_from_a_reused_context_match_a_fresh_one() {
        // Headers of varied sizes and contents, large ones before small ones, in one thread (so
        // one reused context per level): each frame must hold the bytes a fresh context makes.
        let mut headers: Vec<Vec<u8>> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let text = b"CDF\x01time value status units seconds";
        for &len in &[300usize, 200_000, 40, 5_000, 70_000, 1, 300, 0, 12_345, 300] {
            let h = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly repetitive text with some noise, so that zstd finds matches.
                    if x.is_multiple_of(5) {
                        x as u8
                    } else {
                        text[i % text.len()]
                    }
                })
                .collect();
            headers.push(h);
        }
        // Real headers too, which the dictionary makes smaller.
        for name in ["classic_records.nc", "gridded_sst.nc"] {
            let path = format!("{}/samples/{name}", env!("CARGO_MANIFEST_DIR"));
            let file = std::fs::read(path).unwrap();
            let parsed = crate::nc3::Header::parse(&file, file.len() as u64).unwrap();
            headers.insert(3, parsed.bytes().to_vec());
        }
        let mut with_dict = 0;
        for h in &headers {
            let fresh = zstd::bulk::compress(h, HEADER_LEVEL).unwrap();
            let frame = header_frame(h, false);
            let payload = &frame[FRAME_HEADER_LEN..];
            if fresh.len() < h.len() {
                assert_eq!(payload, &fresh[..], "header of {} bytes", h.len());
            } else {
                assert_eq!(payload, &h[..], "header of {} bytes", h.len());
            }
            // With the header dictionary (the same thread's level-19 context, the dictionary
            // loaded for one frame), then without it again at the next header.
            let fresh_dict = zstd::bulk::Compressor::with_dictionary(HEADER_LEVEL, HEADER_DICT)
                .unwrap()
                .compress(h)
                .unwrap();
            let compact = header_frame(h, true);
            if fresh_dict.len() < frame.len() - FRAME_HEADER_LEN {
                with_dict += 1;
                assert_eq!(
                    &compact[FRAME_HEADER_LEN..],
                    &fresh_dict[..],
                    "{} bytes",
                    h.len()
                );
            } else {
                assert_eq!(compact, frame, "header of {} bytes", h.len());
            }
            // The same bytes as the runs of a constants frame (whole 32-byte records), at the
            // constants frames' level, interleaved with the headers.
            let runs: Vec<ConstantRun> = h
                .chunks_exact(RUN_LEN)
                .map(|r| ConstantRun {
                    stream: u32::from_le_bytes(r[0..4].try_into().unwrap()),
                    first: u64::from_le_bytes(r[8..16].try_into().unwrap()) >> 1,
                    count: 1,
                    value: r[24..32].try_into().unwrap(),
                })
                .collect();
            let table: Vec<u8> = runs.iter().flat_map(|r| r.encode()).collect();
            let fresh = zstd::bulk::compress(&table, 3).unwrap();
            let frame = constants_frame(7, &runs);
            let payload = &frame[FRAME_HEADER_LEN..];
            if fresh.len() < table.len() {
                assert_eq!(payload, &fresh[..], "runs of {} bytes", table.len());
            } else {
                assert_eq!(payload, &table[..], "runs of {} bytes", table.len());
            }
        }
        assert!(
            with_dict >= 2,
            "{with_dict} headers smaller with the dictionary"
        );
    }

    #[test]
    fn the_bytes_frames_have_their_stream_block_and_decoded_length() {
        let h = FrameHeader::decode(&header_frame(&[b'C'; 300], false)).unwrap();
        assert_eq!((h.stream, h.block, h.decoded_len), (HEADER_ID, 0, 300));
        assert!(h.codec == Codec::Zstd && h.stored_len < 300);
        let runs = [ConstantRun {
            stream: 0,
            first: 0,
            count: 9,
            value: [0; 8],
        }];
        let h = FrameHeader::decode(&constants_frame(2, &runs)).unwrap();
        assert_eq!((h.stream, h.block, h.decoded_len), (CONSTANTS_ID, 2, 32));
        let sizes = BlockSizes {
            default: 1 << 20,
            vars: vec![65536, 1 << 20],
        };
        let f = block_sizes_frame(&sizes, 2);
        let h = FrameHeader::decode(&f).unwrap();
        assert_eq!((h.stream, h.block, h.decoded_len), (BLOCK_SIZES_ID, 0, 8));
        assert_eq!(BlockSizes::check_frame(&h, 2), Ok(()));
    }

    /// The header dictionary is part of the format: its bytes never change.
    #[test]
    fn the_header_dictionary_has_its_fixed_bytes() {
        assert_eq!(HEADER_DICT.len(), 2672);
        assert_eq!(
            xxhash_rust::xxh3::xxh3_64(HEADER_DICT),
            0x7bc6_c1a2_77cd_decf,
            "the header dictionary changed: archives of format 1.3 would not decode"
        );
    }

    #[test]
    fn a_header_dictionary_frame_decodes_to_the_header_and_is_never_larger() {
        let file = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/classic_records.nc"
        ))
        .unwrap();
        let parsed = crate::nc3::Header::parse(&file, file.len() as u64).unwrap();
        let header = parsed.bytes();
        let plain = header_frame(header, false);
        let with = header_frame(header, true);
        let h = FrameHeader::decode(&with).unwrap();
        assert_eq!((h.stream, h.codec), (HEADER_ID, Codec::ZstdDict));
        assert!(with.len() < plain.len(), "{} {}", with.len(), plain.len());
        let mut out = Vec::new();
        crate::codec::decode_payload(&h, &with[FRAME_HEADER_LEN..], &mut out).unwrap();
        assert_eq!(out, header);
        // Without the dictionary the payload does not decode.
        assert!(zstd::bulk::decompress(&with[FRAME_HEADER_LEN..], header.len()).is_err());
        // Where the dictionary does not help, the frame is the one without it.
        for h in [&b"CDF\x01"[..], &[7u8; 300][..], b""] {
            assert_eq!(header_frame(h, true), header_frame(h, false));
        }
    }
}
