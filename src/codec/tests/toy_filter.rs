//! A toy byte filter, registered in the unit tests only (its line in `src/format/filters.rs`
//! has `#[cfg(test)]`): the worked example of adding a filter in docs/development.md, which
//! shows this file's code between the markers, and tests that the registry routes to it.

// [toy filter]
use crate::codec::block::ByteFilter;
use crate::codec::word::be_to_native;

/// Filter `toy`: each byte less the byte before it (wrapping).
pub(crate) struct Toy;

impl ByteFilter for Toy {
    fn apply(&self, data: &[u8], _esize: usize, out: &mut Vec<u8>) {
        out.clear();
        let mut before = 0u8;
        out.extend(
            data.iter()
                .map(|&b| b.wrapping_sub(std::mem::replace(&mut before, b))),
        );
    }

    fn undo(&self, data: &[u8], esize: usize, out: &mut Vec<u8>) {
        out.clear();
        out.resize(data.len(), 0);
        self.undo_into(&mut data.to_vec(), esize, out, false);
    }

    fn undo_into(&self, src: &mut [u8], esize: usize, dst: &mut [u8], native: bool) {
        let mut sum = 0u8;
        for (d, &s) in dst.iter_mut().zip(src.iter()) {
            sum = sum.wrapping_add(s);
            *d = sum;
        }
        if native {
            be_to_native(dst, esize);
        }
    }

    /// A part of the block is the running sum up to its end (`PART` on the registry line).
    fn undo_part(
        &self,
        src: &[u8],
        len: usize,
        _esize: usize,
        from: usize,
        dst: &mut [u8],
    ) -> bool {
        let end = from + dst.len();
        if end > len || src.len() < end {
            return false;
        }
        let mut sum = src[..from].iter().fold(0u8, |a, &s| a.wrapping_add(s));
        for (d, &s) in dst.iter_mut().zip(&src[from..end]) {
            sum = sum.wrapping_add(s);
            *d = sum;
        }
        true
    }

    fn part_needs(&self, _len: usize, _esize: usize, end: usize) -> usize {
        end
    }
}
// [end]

#[cfg(test)]
mod tests {
    use crate::codec::decode::{decode_payload_part, DecodeScratch, PartDecoder};
    use crate::codec::registry::{self, Stage};
    use crate::codec::{decode_payload, decode_payload_into, Encoded, Encoder, FilterMode};
    use crate::format::{crc, Codec, Filter, FrameHeader, FRAME_HEADER_LEN};

    #[test]
    fn the_registry_routes_the_toy_filter() {
        // Its wire id, name, kind and capabilities come from its registry line.
        let f = Filter::Toy;
        assert_eq!((Filter::from_id(251), f.name()), (Some(f), "toy"));
        assert!(matches!(registry::filter(f), Stage::Bytes(_)));
        assert!(f.undoes_part() && !f.is_same());
        assert!(f.goes_with(Codec::Zstd) && f.goes_with(Codec::Toy));
        assert!(!f.goes_with(Codec::Pco) && !f.goes_with(Codec::Context));
        // The encoder applies it, and the decoder undoes it: whole, in native order, in part.
        let data: Vec<u8> = (0..40_000u32).flat_map(|i| (i / 3).to_be_bytes()).collect();
        let mut enc = Encoder::new(Codec::Zstd, 3, FilterMode::Fixed(f), false).unwrap();
        let mut frame = Vec::new();
        let Encoded::Frame(h) = enc.encode_block(0, 0, 4, &data, &mut frame) else {
            panic!("not a frame");
        };
        assert_eq!((h.codec, h.filter), (Codec::Zstd, Filter::Toy));
        let payload = &frame[FRAME_HEADER_LEN..];
        let mut back = Vec::new();
        decode_payload(&h, payload, &mut back).unwrap();
        assert_eq!(back, data);
        let mut scratch = DecodeScratch::default();
        let mut native = vec![0; data.len()];
        decode_payload_into(&h, payload, &mut native, &mut scratch, true).unwrap();
        let want: Vec<u8> = (0..40_000u32).flat_map(|i| (i / 3).to_ne_bytes()).collect();
        assert_eq!(native, want);
        let (from, len) = (1001, 77);
        let mut part = vec![0; len];
        decode_payload_part(&h, payload, from, &mut part, &mut scratch).unwrap();
        assert_eq!(part, data[from..from + len]);
        // A small read of a zstd frame stops once it has the bytes up to the part's end.
        let mut d = PartDecoder::new(&h, from, len, &mut scratch)
            .unwrap()
            .unwrap();
        d.payload_mut().copy_from_slice(payload);
        part.fill(0);
        assert!(d.finish(&mut part).unwrap());
        assert_eq!(part, data[from..from + len]);
        // A codec of numbers does not go with it: the frame is refused, naming the pair.
        let pco = FrameHeader {
            codec: Codec::Pco,
            payload_crc: crc(payload),
            ..h
        };
        let e = decode_payload(&pco, payload, &mut back).unwrap_err();
        assert!(e.to_string().contains("filter toy with codec pco"), "{e}");
    }

    #[test]
    fn docs_show_the_toy_filter() {
        let this = include_str!("toy_filter.rs");
        assert!(
            crate::codec::tests::docs_show(this, "// [toy filter]"),
            "docs/development.md shows another toy filter"
        );
    }
}
