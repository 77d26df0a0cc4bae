//! A toy codec, registered in the unit tests only (its line in `src/format/codecs.rs` has
//! `#[cfg(test)]`): the worked example of adding a codec in docs/development.md, which shows
//! this file's code between the markers, and tests that the registry routes to it.

// [toy codec]
use crate::codec::block::{BlockCodec, Compress};
use crate::codec::error::{CodecError, FrameError};
use crate::codec::space::Scratch;
use crate::format::{Codec, FrameHeader};

/// Codec `toy`: runs of equal bytes as (length, byte) pairs.
pub(crate) struct Toy;

impl Compress for Toy {
    fn compress(&mut self, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
        let mut pairs = Vec::new();
        for run in input.chunk_by(|a, b| a == b) {
            for piece in run.chunks(255) {
                pairs.extend_from_slice(&[piece.len() as u8, piece[0]]);
            }
        }
        let smaller = pairs.len() < limit;
        if smaller {
            out.extend_from_slice(&pairs);
        }
        smaller
    }
}

impl BlockCodec for Toy {
    fn compressor(&self, _level: i32) -> Result<Option<Box<dyn Compress>>, CodecError> {
        Ok(Some(Box::new(Toy)))
    }

    fn decompress_into(
        &self,
        _h: &FrameHeader,
        payload: &[u8],
        out: &mut [u8],
        _scratch: &mut Scratch,
    ) -> Result<(), FrameError> {
        let refused = |why: &str| -> FrameError {
            CodecError::Refused {
                codec: Codec::Toy,
                message: why.into(),
            }
            .into()
        };
        let mut at = 0;
        for pair in payload.chunks(2) {
            let &[n, b] = pair else {
                return Err(refused("an odd number of bytes"));
            };
            let Some(run) = out.get_mut(at..at + usize::from(n)) else {
                return Err(refused("a run past the block"));
            };
            run.fill(b);
            at += usize::from(n);
        }
        if at != out.len() {
            return Err(refused("runs short of the block"));
        }
        Ok(())
    }
}
// [end]

#[cfg(test)]
mod tests {
    use crate::codec::{decode_payload, Encoded, Encoder, FilterMode};
    use crate::format::{Codec, Filter, FRAME_HEADER_LEN};

    #[test]
    fn the_registry_routes_the_toy_codec() {
        // Its name, wire id and `--codec` choice come from its registry line.
        let codec: Codec = "toy".parse().unwrap();
        assert_eq!(codec, Codec::Toy);
        assert_eq!((Codec::from_id(250), codec.name()), (Some(codec), "toy"));
        assert!(Codec::NAMES.contains(&"toy"));
        assert!(Filter::Refs.goes_with(codec) && !codec.decodes_part());
        // The encoder compresses with it, and the decoder decodes with it.
        let data: Vec<u8> = (0..4096u32).map(|i| (i / 700) as u8).collect();
        let mut enc = Encoder::new(codec, 0, FilterMode::Fixed(Filter::None), false).unwrap();
        let mut frame = Vec::new();
        let Encoded::Frame(h) = enc.encode_block(0, 0, 1, &data, &mut frame) else {
            panic!("not a frame");
        };
        assert_eq!((h.codec, h.stored_len), (Codec::Toy, 36));
        let mut back = Vec::new();
        decode_payload(&h, &frame[FRAME_HEADER_LEN..], &mut back).unwrap();
        assert_eq!(back, data);
        // Its errors name it.
        let mut bad = frame[FRAME_HEADER_LEN..].to_vec();
        bad[4] = 255;
        let h = crate::format::FrameHeader {
            payload_crc: crate::format::crc(&bad),
            ..h
        };
        let e = decode_payload(&h, &bad, &mut back).unwrap_err();
        assert_eq!(e.to_string(), "toy: a run past the block");
    }

    #[test]
    fn docs_show_the_toy_codec() {
        let this = include_str!("toy.rs");
        assert!(
            crate::codec::tests::docs_show(this, "// [toy codec]"),
            "docs/development.md shows another toy codec"
        );
    }
}
