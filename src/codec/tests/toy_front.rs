//! A toy numeric front-end, registered in the unit tests only (its line in
//! `src/format/filters.rs` has `#[cfg(test)]`): the worked example of adding a front-end of
//! numbers in docs/development.md, which shows this file's code between the markers, and tests
//! that the registry routes to it and the `max` preset's search tries it.

// [toy front]
use crate::codec::block::{front_esize, Coded, Form, NumericFront};
use crate::codec::error::{CodecError, FrameError};
use crate::codec::front::{FrontEncode, Numbers, Residuals};
use crate::codec::pcodec::{compress_residuals_native, LEVEL};
use crate::codec::space::Scratch;
use crate::format::{Codec, FrameHeader};

/// Front-end `toyfront`: each number XOR a pseudo-random key of its index, then pco.
pub(crate) struct ToyFront;

/// The key of element `i`, a number of `e` bytes (splitmix64's).
fn key(i: usize, e: usize) -> u64 {
    let mut z = (i as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) >> (64 - 8 * e)
}

/// The number in `x`, in native order or big-endian.
fn get(x: &[u8], native: bool) -> u64 {
    let mut b = [0u8; 8];
    if native && cfg!(target_endian = "little") {
        b[..x.len()].copy_from_slice(x);
        u64::from_le_bytes(b)
    } else {
        b[8 - x.len()..].copy_from_slice(x);
        u64::from_be_bytes(b)
    }
}

/// Writes the number `v` into `out`, in native order or big-endian.
fn put(v: u64, out: &mut [u8], native: bool) {
    let e = out.len();
    if native && cfg!(target_endian = "little") {
        out.copy_from_slice(&v.to_le_bytes()[..e]);
    } else {
        out.copy_from_slice(&v.to_be_bytes()[8 - e..]);
    }
}

impl NumericFront for ToyFront {
    fn apply(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        out.clear();
        out.resize(data.len() / esize * esize, 0);
        let pairs = data.chunks_exact(esize).zip(out.chunks_exact_mut(esize));
        for (i, (x, y)) in pairs.enumerate() {
            put(get(x, false) ^ key(i, esize), y, false);
        }
    }

    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        self.apply(data, esize, out); // the same key again gives the number back
    }

    /// No prefix: pco decodes one unsigned number per element, in native order.
    fn open<'p>(
        &self,
        h: &FrameHeader,
        payload: &'p [u8],
        _kept: &mut Scratch,
    ) -> Result<Coded<'p>, FrameError> {
        let sizes = |e: usize| matches!(e, 2 | 4 | 8);
        front_esize(h, sizes, |esize| {
            let message = format!("toyfront: elements of {esize} bytes");
            CodecError::Refused {
                codec: Codec::Pco,
                message,
            }
            .into()
        })?;
        Ok(Coded {
            payload,
            len: h.decoded_len as usize,
            form: Form::Residuals,
        })
    }

    fn close(
        &self,
        h: &FrameHeader,
        coded: &mut [u8],
        out: &mut [u8],
        native: bool,
        _kept: &mut Scratch,
    ) -> Result<(), FrameError> {
        let e = usize::from(h.esize);
        for (i, (x, y)) in coded
            .chunks_exact(e)
            .zip(out.chunks_exact_mut(e))
            .enumerate()
        {
            put(get(x, true) ^ key(i, e), y, native);
        }
        Ok(())
    }
}

/// The `max` preset tries it on every block of numbers: the numbers with their keys, handed to
/// pco in native order.
impl FrontEncode for ToyFront {
    fn encode(&self, block: &Numbers<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) -> bool {
        let e = block.kind.esize();
        let n = block.data.len() / e;
        let words = &mut scratch.get::<Residuals>().0;
        words.clear();
        words.resize((n * e).div_ceil(8), 0);
        let packed = &mut bytemuck::cast_slice_mut::<u64, u8>(words)[..n * e];
        let pairs = block.data.chunks_exact(e).zip(packed.chunks_exact_mut(e));
        for (i, (x, y)) in pairs.enumerate() {
            put(get(x, false) ^ key(i, e), y, true);
        }
        out.clear();
        compress_residuals_native(block.kind.unsigned(), words, n, LEVEL, out)
            && out.len() < block.data.len()
    }
}
// [end]

#[cfg(test)]
mod tests {
    use crate::codec::decode::DecodeScratch;
    use crate::codec::pcodec::NumKind;
    use crate::codec::registry::{self, front_encoders, Stage};
    use crate::codec::{decode_payload, decode_payload_into, Encoded, Encoder, FilterMode};
    use crate::format::{Codec, Filter, FRAME_HEADER_LEN};

    /// `n` integers of 0 to 12 XOR their keys: noise to every codec but the toy's.
    fn keyed(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| (super::key(i, 4) as u32 ^ (i % 13) as u32).to_be_bytes())
            .collect()
    }

    #[test]
    fn the_max_search_tries_the_toy_front_end_from_its_registry_line_alone() {
        // Its wire id, name, kind and pairing come from its registry line.
        let f = Filter::ToyFront;
        assert_eq!((Filter::from_id(252), f.name()), (Some(f), "toyfront"));
        assert!(matches!(registry::filter(f), Stage::Front(_)));
        assert!(f.goes_with(Codec::Pco) && !f.goes_with(Codec::Zstd));
        // The search's front-ends: every `NUMBERS` line, in the registry's order.
        let fronts: Vec<Filter> = front_encoders().map(|(f, _)| f).collect();
        assert_eq!(fronts, [Filter::Plane, Filter::Mask, Filter::Fit, f]);
        // The `max` preset takes it where it is smallest, and the frame decodes back.
        let data = keyed(30_000);
        let mut enc = Encoder::new(Codec::Zstd, 19, FilterMode::Auto, true)
            .unwrap()
            .numeric(true);
        let mut frame = Vec::new();
        let kind = (Some(NumKind::I32), 100);
        let Encoded::Frame(h) = enc.encode_block_numeric(0, 0, 4, kind, &data, &mut frame) else {
            panic!("not a frame");
        };
        assert_eq!((h.codec, h.filter), (Codec::Pco, f));
        assert!((h.stored_len as usize) < data.len() / 8, "{}", h.stored_len);
        let payload = &frame[FRAME_HEADER_LEN..];
        let mut back = Vec::new();
        decode_payload(&h, payload, &mut back).unwrap();
        assert_eq!(back, data);
        let mut native = vec![0; data.len()];
        let mut scratch = DecodeScratch::default();
        decode_payload_into(&h, payload, &mut native, &mut scratch, true).unwrap();
        let want: Vec<u8> = data
            .chunks_exact(4)
            .flat_map(|x| u32::from_be_bytes(x.try_into().unwrap()).to_ne_bytes())
            .collect();
        assert_eq!(native, want);
        // The default preset judges its front-ends on a sample, each by its own rule: the toy
        // is not among them.
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Auto, false)
            .unwrap()
            .numeric(true);
        frame.clear();
        let h = enc.encode_block_numeric(0, 0, 4, kind, &data, &mut frame);
        assert_ne!(h.frame().unwrap().filter, f);
    }

    #[test]
    fn docs_show_the_toy_front_end() {
        let this = include_str!("toy_front.rs");
        assert!(
            crate::codec::tests::docs_show(this, "// [toy front]"),
            "docs/development.md shows another toy front-end"
        );
    }
}
