//! Codecs and filters: turning a block of variable data into a frame payload and back.
//!
//! Encoding applies the filter (byte shuffle for multi-byte elements) and then the codec; if the
//! result is not smaller than the input, the block is stored raw (codec `none`, filter `none`),
//! so a stored payload is never larger than the block.

use crate::format::{crc, Codec, Filter, FrameHeader};

/// Byte-shuffles `src` (elements of `esize` bytes) into `dst`: the first byte of every element,
/// then the second byte of every element, and so on. A trailing partial element is copied as is.
///
/// ```
/// let mut out = Vec::new();
/// nc3pack::codec::shuffle(&[1, 2, 3, 4, 5, 6], 2, &mut out);
/// assert_eq!(out, [1, 3, 5, 2, 4, 6]);
/// ```
pub fn shuffle(src: &[u8], esize: usize, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    match esize {
        2 => shuffle_n::<2>(src, dst, n),
        4 => shuffle_n::<4>(src, dst, n),
        8 => shuffle_n::<8>(src, dst, n),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

fn shuffle_n<const E: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    let (streams, _) = dst.split_at_mut(n * E);
    let mut outs: Vec<&mut [u8]> = streams.chunks_exact_mut(n.max(1)).collect();
    if n == 0 {
        return;
    }
    for (i, e) in src[..n * E].chunks_exact(E).enumerate() {
        for j in 0..E {
            outs[j][i] = e[j];
        }
    }
}

fn unshuffle_n<const E: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    if n == 0 {
        return;
    }
    let ins: [&[u8]; E] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, e) in dst[..n * E].chunks_exact_mut(E).enumerate() {
        for j in 0..E {
            e[j] = ins[j][i];
        }
    }
}

/// Reverses [`shuffle`].
///
/// ```
/// let mut out = Vec::new();
/// nc3pack::codec::unshuffle(&[1, 3, 5, 2, 4, 6], 2, &mut out);
/// assert_eq!(out, [1, 2, 3, 4, 5, 6]);
/// ```
pub fn unshuffle(src: &[u8], esize: usize, dst: &mut Vec<u8>) {
    dst.clear();
    dst.resize(src.len(), 0);
    let n = src.len() / esize.max(1);
    match esize {
        2 => unshuffle_n::<2>(src, dst, n),
        4 => unshuffle_n::<4>(src, dst, n),
        8 => unshuffle_n::<8>(src, dst, n),
        _ => {
            dst.copy_from_slice(src);
            return;
        }
    }
    dst[n * esize..].copy_from_slice(&src[n * esize..]);
}

/// The default compression level of a codec.
///
/// ```
/// use nc3pack::{codec::default_level, format::Codec};
/// assert_eq!(default_level(Codec::Zstd), 3);
/// ```
pub fn default_level(codec: Codec) -> i32 {
    match codec {
        Codec::Zstd => 3,
        Codec::Deflate => 6,
        Codec::None => 0,
    }
}

/// Checks a level for a codec; the error names the valid range.
pub fn check_level(codec: Codec, level: i32) -> Result<(), String> {
    let range = match codec {
        Codec::Zstd => -7..=22,
        Codec::Deflate => 0..=9,
        Codec::None => 0..=0,
    };
    if range.contains(&level) {
        Ok(())
    } else {
        Err(format!(
            "level {level} is outside {}..={} for codec {}",
            range.start(),
            range.end(),
            codec.name()
        ))
    }
}

/// A reusable block encoder (one per thread): holds the codec context and scratch space.
///
/// ```
/// use nc3pack::{codec::{Encoder, decode_payload}, format::{Codec, FrameHeader, FRAME_HEADER_LEN}};
/// let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 10).to_be_bytes()).collect();
/// let mut enc = Encoder::new(Codec::Zstd, 3, true).unwrap();
/// let mut frame = Vec::new();
/// let h = enc.encode_frame(0, 0, 4, &data, &mut frame);
/// assert!(h.stored_len < data.len() as u32);
/// let h2 = FrameHeader::decode(&frame).unwrap();
/// let mut out = Vec::new();
/// decode_payload(&h2, &frame[FRAME_HEADER_LEN..], &mut out).unwrap();
/// assert_eq!(out, data);
/// ```
pub struct Encoder {
    codec: Codec,
    level: i32,
    shuffle: bool,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    filtered: Vec<u8>,
}

impl Encoder {
    /// An encoder for `codec` at `level`, shuffling multi-byte elements if `shuffle`.
    pub fn new(codec: Codec, level: i32, shuffle: bool) -> Result<Encoder, String> {
        check_level(codec, level)?;
        let zstd = if codec == Codec::Zstd {
            Some(zstd::bulk::Compressor::new(level).map_err(|e| format!("zstd: {e}"))?)
        } else {
            None
        };
        Ok(Encoder {
            codec,
            level,
            shuffle,
            zstd,
            filtered: Vec::new(),
        })
    }

    /// Encodes one block as a complete frame (header and payload) appended to `out`; returns the
    /// frame header.
    pub fn encode_frame(
        &mut self,
        var: u32,
        block: u64,
        esize: usize,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> FrameHeader {
        let start = out.len();
        out.resize(start + crate::format::FRAME_HEADER_LEN, 0);
        let payload_at = out.len();
        let filter = if self.shuffle && esize > 1 && self.codec != Codec::None {
            shuffle(data, esize, &mut self.filtered);
            Filter::Shuffle
        } else {
            Filter::None
        };
        let input: &[u8] = if filter == Filter::None {
            data
        } else {
            &self.filtered
        };
        let compressed = match self.codec {
            Codec::None => false,
            Codec::Zstd => compress_zstd(self.zstd.as_mut(), input, out),
            Codec::Deflate => compress_deflate(self.level, input, out),
        };
        let (codec, filter) = if compressed && out.len() - payload_at < data.len() {
            (self.codec, filter)
        } else {
            out.truncate(payload_at);
            out.extend_from_slice(data);
            (Codec::None, Filter::None)
        };
        let payload = &out[payload_at..];
        let h = FrameHeader {
            stored_len: payload.len() as u32,
            decoded_len: data.len() as u32,
            var,
            block,
            codec,
            filter,
            esize: esize as u16,
            payload_crc: crc(payload),
        };
        out[start..payload_at].copy_from_slice(&h.encode());
        h
    }
}

/// Compresses into the spare room of `out` up to `input.len()` bytes; false if it does not fit.
fn compress_zstd(
    c: Option<&mut zstd::bulk::Compressor<'static>>,
    input: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let Some(c) = c else { return false };
    let at = out.len();
    let mut buf = Vec::with_capacity(input.len());
    match c.compress_to_buffer(input, &mut buf) {
        Ok(_) => {
            out.truncate(at);
            out.extend_from_slice(&buf);
            true
        }
        Err(_) => false,
    }
}

fn compress_deflate(level: i32, input: &[u8], out: &mut Vec<u8>) -> bool {
    let mut c = flate2::Compress::new(flate2::Compression::new(level as u32), false);
    let mut buf = Vec::with_capacity(input.len());
    match c.compress_vec(input, &mut buf, flate2::FlushCompress::Finish) {
        Ok(flate2::Status::StreamEnd) => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}

/// Checks a frame payload's CRC and decodes it into `out` (replacing its contents); the error
/// says what is wrong. `out` never grows beyond `h.decoded_len` bytes.
pub fn decode_payload(h: &FrameHeader, payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    if payload.len() != h.stored_len as usize {
        return Err(format!(
            "payload is {} bytes, the frame says {}",
            payload.len(),
            h.stored_len
        ));
    }
    if crc(payload) != h.payload_crc {
        return Err("payload checksum mismatch".into());
    }
    let n = h.decoded_len as usize;
    let mut raw = Vec::with_capacity(n);
    let buf: &mut Vec<u8> = if h.filter == Filter::None {
        out
    } else {
        &mut raw
    };
    buf.clear();
    match h.codec {
        Codec::None => {
            if payload.len() != n {
                return Err(format!(
                    "raw payload is {} bytes, the frame says {n} decoded",
                    payload.len()
                ));
            }
            buf.extend_from_slice(payload);
        }
        Codec::Zstd => {
            // Decode into a buffer limited to n bytes: a frame that claims more fails.
            let limited = zstd::bulk::decompress(payload, n).map_err(|e| format!("zstd: {e}"))?;
            let got = limited.len();
            if got != n {
                return Err(format!("decoded to {got} bytes, the frame says {n}"));
            }
            *buf = limited;
        }
        Codec::Deflate => {
            let mut d = flate2::Decompress::new(false);
            let mut limited = Vec::with_capacity(n);
            let st = d
                .decompress_vec(payload, &mut limited, flate2::FlushDecompress::Finish)
                .map_err(|e| format!("deflate: {e}"))?;
            if st != flate2::Status::StreamEnd
                || limited.len() != n
                || d.total_in() != payload.len() as u64
            {
                return Err(format!(
                    "deflate stream does not decode to exactly {n} bytes"
                ));
            }
            *buf = limited;
        }
    }
    if h.filter == Filter::Shuffle {
        let esize = usize::from(h.esize);
        if esize == 0 || !n.is_multiple_of(esize) {
            return Err(format!(
                "shuffle element size {esize} does not divide the block length {n}"
            ));
        }
        unshuffle(&raw, esize, out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FRAME_HEADER_LEN;

    fn roundtrip(codec: Codec, esize: usize, data: &[u8]) -> FrameHeader {
        let mut enc = Encoder::new(codec, default_level(codec), true).unwrap();
        let mut frame = vec![9u8; 3];
        let h = enc.encode_frame(1, 2, esize, data, &mut frame);
        let h2 = FrameHeader::decode(&frame[3..]).unwrap();
        assert_eq!(h, h2);
        assert_eq!(frame.len(), 3 + FRAME_HEADER_LEN + h.stored_len as usize);
        let mut out = vec![1, 2, 3];
        decode_payload(&h2, &frame[3 + FRAME_HEADER_LEN..], &mut out).unwrap();
        assert_eq!(out, data);
        h
    }

    #[test]
    fn every_codec_roundtrips_and_incompressible_data_is_stored_raw() {
        let smooth: Vec<u8> = (0..10000u32)
            .flat_map(|i| ((i as f32).sin()).to_be_bytes())
            .collect();
        let mut x = 12345u64;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for codec in [Codec::None, Codec::Zstd, Codec::Deflate] {
            for esize in [1, 2, 4, 8] {
                let h = roundtrip(codec, esize, &smooth);
                if codec != Codec::None {
                    assert!(h.stored_len < smooth.len() as u32);
                    assert_eq!(h.filter == Filter::Shuffle, esize > 1);
                }
                let h = roundtrip(codec, esize, &noise);
                assert_eq!(
                    (h.codec, h.filter, h.stored_len),
                    (Codec::None, Filter::None, 5000)
                );
            }
            roundtrip(codec, 4, &[]);
        }
    }

    #[test]
    fn shuffle_inverts_for_every_size_and_length() {
        for esize in [1, 2, 3, 4, 8] {
            for len in [0, 1, 7, 8, 9, 64, 1001] {
                let src: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
                let (mut a, mut b) = (Vec::new(), Vec::new());
                shuffle(&src, esize, &mut a);
                unshuffle(&a, esize, &mut b);
                assert_eq!(b, src, "esize {esize} len {len}");
                if esize == 2 && len == 8 {
                    assert_eq!(
                        a,
                        [src[0], src[2], src[4], src[6], src[1], src[3], src[5], src[7]]
                    );
                }
            }
        }
    }

    #[test]
    fn corrupt_payload_is_reported() {
        let data = vec![7u8; 1000];
        let mut enc = Encoder::new(Codec::Zstd, 3, true).unwrap();
        let mut frame = Vec::new();
        let h = enc.encode_frame(0, 0, 1, &data, &mut frame);
        let mut payload = frame[FRAME_HEADER_LEN..].to_vec();
        payload[0] ^= 1;
        let mut out = Vec::new();
        assert!(decode_payload(&h, &payload, &mut out)
            .unwrap_err()
            .contains("checksum"));
        // A frame that lies about its decoded length, with a matching CRC.
        let mut lying = h;
        lying.decoded_len = 999;
        let e = decode_payload(&lying, &frame[FRAME_HEADER_LEN..], &mut out).unwrap_err();
        assert!(e.contains("zstd") || e.contains("999"), "{e}");
    }
}
