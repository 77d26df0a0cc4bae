//! Writing an archive's data section and index: frames go to the output as they come, constant
//! blocks go to the index only, and the runs of constant blocks go to constants frames so that a
//! scan can still find them.
//!
//! Packing and reindexing both write through a [`Sink`]: [`Sink::frame`] for each block frame,
//! [`Sink::lost`] for a block a repair could not find, then [`Sink::finish`] for the last
//! constants frame, the index and the footer.
//!
//! A block whose elements are all the same (typically the fill value of records materialized
//! past the data written, a land mask, zeros) costs 16 bytes of index entry and no frame; each
//! run of such blocks costs 32 bytes (before compression) in a constants frame. Constants frames
//! are written when they hold [`MAX_RUNS_PER_FRAME`] runs, when [`CONSTANTS_EVERY`] bytes of
//! other frames have been written since the oldest run waiting, and at the end: a cut archive
//! loses at most the constant blocks of its last 64 MiB, as it loses the frames after the cut.

use crate::codec::Encoded;
use crate::error::{Error, Result};
use crate::format::streams::Stream;
use crate::format::{
    self, Codec, ConstantRun, Footer, FrameHeader, IndexEntry, FLAG_LOST, FRAME_HEADER_LEN,
    MAX_RUNS_PER_FRAME,
};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Bytes of frames written after the oldest waiting run before the runs are written out.
pub const CONSTANTS_EVERY: u64 = 64 << 20;

/// Where the frames of an archive's data section go.
///
/// ```
/// use nc3pack::format::{FrameHeader, Codec, Filter, CONSTANTS_ID};
/// use nc3pack::testing::Sink;
/// // A constant block of stream 0 (id 0, block 0, 4-byte zeros): no frame, a constants frame.
/// let h = FrameHeader { stored_len: 4, decoded_len: 64, stream: 0, block: 0, codec: Codec::Constant,
///     filter: Filter::None, esize: 4, payload_crc: 0 };
/// let mut frame = h.encode().to_vec();
/// frame.extend_from_slice(&[0, 0, 0, 0]);
/// let mut out = Vec::new();
/// let mut sink = Sink::new(100);
/// sink.frame(&mut out, 0, &h, &frame).unwrap();
/// assert!(out.is_empty());
/// sink.flush_constants(&mut out).unwrap();
/// assert_eq!(FrameHeader::decode(&out).unwrap().stream, CONSTANTS_ID);
/// ```
#[derive(Default)]
pub struct Sink {
    entries: Vec<Vec<Option<IndexEntry>>>,
    pos: u64,
    runs: Vec<ConstantRun>,
    /// Stream id -> the run in `runs` that the stream's next constant block may extend.
    open: HashMap<u32, usize>,
    constants_frames: Vec<IndexEntry>,
    /// Bytes of frames written since the oldest waiting run.
    since_runs: u64,
}

impl Sink {
    /// A sink whose first frame goes at archive offset `pos` (just past the header frame).
    pub fn new(pos: u64) -> Sink {
        Sink {
            pos,
            ..Sink::default()
        }
    }

    /// Takes the frame `frame` (header `h`) of block `h.block` of stream number `stream` (as in
    /// [`crate::format::streams::streams`]): a constant block is kept in the index only, any other
    /// frame is written to `w`.
    pub fn frame<W: Write>(
        &mut self,
        w: &mut W,
        stream: usize,
        h: &FrameHeader,
        frame: &[u8],
    ) -> std::io::Result<()> {
        let e = usize::from(h.esize);
        let value = frame.get(FRAME_HEADER_LEN..).filter(|v| {
            h.codec == Codec::Constant
                && (1..=8).contains(&v.len())
                && v.len() == e
                && (h.decoded_len as usize).is_multiple_of(e)
        });
        if let Some(value) = value {
            return self.constant(w, stream, h.stream, h.block, value);
        }
        self.keep(w, stream, h, frame)
    }

    /// Takes what the encoder made of a block of stream number `stream`: its frame, `frame`,
    /// written to `w`, or a constant block, kept in the index only.
    pub fn encoded<W: Write>(
        &mut self,
        w: &mut W,
        stream: usize,
        encoded: &Encoded,
        frame: &[u8],
    ) -> std::io::Result<()> {
        match encoded {
            Encoded::Frame(h) => self.keep(w, stream, h, frame),
            Encoded::Constant(c) => self.constant(w, stream, c.stream, c.block, c.value()),
        }
    }

    /// Writes the frame `frame` (header `h`) of block `h.block` of stream number `stream` as it
    /// is.
    fn keep<W: Write>(
        &mut self,
        w: &mut W,
        stream: usize,
        h: &FrameHeader,
        frame: &[u8],
    ) -> std::io::Result<()> {
        w.write_all(frame)?;
        self.put(
            stream,
            h.block,
            IndexEntry {
                offset: self.pos,
                stored_len: h.stored_len,
                codec: h.codec,
                filter: h.filter,
                flags: 0,
            },
        );
        self.pos += frame.len() as u64;
        if !self.runs.is_empty() {
            self.since_runs += frame.len() as u64;
            if self.since_runs >= CONSTANTS_EVERY {
                self.flush_constants(w)?;
            }
        }
        Ok(())
    }

    /// Takes block `block` of stream number `stream` (frame stream id `id`), whose elements all
    /// equal `value` (1 to 8 bytes): an index entry, and a run in the next constants frame.
    pub fn constant<W: Write>(
        &mut self,
        w: &mut W,
        stream: usize,
        id: u32,
        block: u64,
        value: &[u8],
    ) -> std::io::Result<()> {
        let entry = IndexEntry::constant(value);
        self.put(stream, block, entry);
        self.add_run(id, block, entry.offset.to_le_bytes());
        if self.runs.len() >= MAX_RUNS_PER_FRAME {
            self.flush_constants(w)?;
        }
        Ok(())
    }

    /// Records block `block` of stream number `stream` as lost (a repair found no frame).
    pub fn lost(&mut self, stream: usize, block: u64) {
        self.put(
            stream,
            block,
            IndexEntry {
                offset: 0,
                stored_len: 0,
                codec: Codec::None,
                filter: format::Filter::None,
                flags: FLAG_LOST,
            },
        );
    }

    /// Writes the waiting runs as a constants frame (nothing if none wait).
    pub fn flush_constants<W: Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        if self.runs.is_empty() {
            return Ok(());
        }
        // Blocks finish out of order on several encoder threads: sort the runs and merge those
        // that turn out adjacent.
        self.runs.sort_unstable_by_key(|r| (r.stream, r.first));
        self.runs.dedup_by(|next, run| {
            let merge = next.stream == run.stream
                && next.value == run.value
                && run.first + run.count == next.first;
            if merge {
                run.count += next.count;
            }
            merge
        });
        let frame = crate::codec::constants_frame(self.constants_frames.len() as u64, &self.runs);
        w.write_all(&frame)?;
        let stored_len = (frame.len() - FRAME_HEADER_LEN) as u32;
        let codec = FrameHeader::decode(&frame).map_or(Codec::None, |h| h.codec);
        self.constants_frames.push(IndexEntry {
            offset: self.pos,
            stored_len,
            codec,
            filter: format::Filter::None,
            flags: 0,
        });
        self.pos += frame.len() as u64;
        self.runs.clear();
        self.open.clear();
        self.since_runs = 0;
        Ok(())
    }

    /// Writes the last constants frame, the index and the footer. Every block of `streams` must
    /// have been given, and nothing else. Returns the number of block entries and the archive's
    /// length.
    pub fn finish<W: Write>(
        mut self,
        w: &mut W,
        streams: &[Stream],
        out_path: &Path,
    ) -> Result<Finished> {
        let io = |source| Error::Io {
            path: out_path.to_path_buf(),
            op: "write",
            source,
        };
        self.flush_constants(w).map_err(&io)?;
        let entries = self.in_index_order(streams)?;
        let index_offset = self.pos;
        let index = format::encode_index(&entries, &self.constants_frames);
        w.write_all(&index).map_err(&io)?;
        let footer = Footer {
            index_offset,
            index_len: index.len() as u64,
            index_crc: format::crc(&index),
            flags: 0,
        };
        w.write_all(&footer.encode()).map_err(io)?;
        Ok(Finished {
            blocks: entries.len() as u64,
            len: index_offset + index.len() as u64 + format::FOOTER_LEN as u64,
        })
    }

    fn add_run(&mut self, stream: u32, block: u64, value: [u8; 8]) {
        if let Some(&i) = self.open.get(&stream) {
            let r = &mut self.runs[i];
            if r.value == value && r.first + r.count == block {
                r.count += 1;
                return;
            }
        }
        if self.runs.is_empty() {
            self.since_runs = 0;
        }
        self.open.insert(stream, self.runs.len());
        self.runs.push(ConstantRun {
            stream,
            first: block,
            count: 1,
            value,
        });
    }

    fn put(&mut self, stream: usize, block: u64, e: IndexEntry) {
        if self.entries.len() <= stream {
            self.entries.resize_with(stream + 1, Vec::new);
        }
        let blocks = &mut self.entries[stream];
        let b = block as usize;
        if blocks.len() <= b {
            blocks.resize(b + 1, None);
        }
        blocks[b] = Some(e);
    }

    /// The entries in index order; every block of `streams` must have been given, and nothing
    /// else.
    fn in_index_order(&mut self, streams: &[Stream]) -> Result<Vec<IndexEntry>> {
        let mut all = std::mem::take(&mut self.entries);
        all.resize_with(all.len().max(streams.len()), Vec::new);
        let mut out = Vec::new();
        for (i, blocks) in all.into_iter().enumerate() {
            let want = streams.get(i).map_or(0, Stream::blocks);
            if blocks.len() as u64 != want || blocks.iter().any(Option::is_none) {
                return Err(Error::Internal(format!(
                    "stream {i}: {} blocks written, {want} expected",
                    blocks.iter().flatten().count()
                )));
            }
            out.extend(blocks.into_iter().flatten());
        }
        Ok(out)
    }
}

/// What [`Sink::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Block entries in the index.
    pub blocks: u64,
    /// Length of the whole archive.
    pub len: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Filter;

    fn header(
        stream: u32,
        block: u64,
        codec: Codec,
        stored_len: u32,
        decoded_len: u32,
    ) -> FrameHeader {
        FrameHeader {
            stored_len,
            decoded_len,
            stream,
            block,
            codec,
            filter: Filter::None,
            esize: 4,
            payload_crc: 0,
        }
    }

    fn constant_frame(stream: u32, block: u64, value: [u8; 4]) -> (FrameHeader, Vec<u8>) {
        let h = header(stream, block, Codec::Constant, 4, 64);
        let mut f = h.encode().to_vec();
        f.extend_from_slice(&value);
        (h, f)
    }

    #[test]
    fn adjacent_equal_constant_blocks_make_one_run_per_stream() {
        let mut sink = Sink::new(0);
        let mut out = Vec::new();
        // Stream 0 blocks 0, 1, 2 (value 1, 1, 2), interleaved with stream 1 blocks 0, 1
        // (value 1); stream 0 block 4 (value 2) does not follow block 2.
        for (var, block, v) in [
            (0, 0, 1),
            (1, 0, 1),
            (0, 1, 1),
            (1, 1, 1),
            (0, 2, 2),
            (0, 4, 2),
        ] {
            let (h, f) = constant_frame(var, block, [0, 0, 0, v]);
            sink.frame(&mut out, var as usize, &h, &f).unwrap();
        }
        assert!(out.is_empty());
        let runs: Vec<(u32, u64, u64, u8)> = sink
            .runs
            .iter()
            .map(|r| (r.stream, r.first, r.count, r.value[3]))
            .collect();
        assert_eq!(
            runs,
            [(0, 0, 2, 1), (1, 0, 2, 1), (0, 2, 1, 2), (0, 4, 1, 2)]
        );
    }

    #[test]
    fn runs_are_sorted_and_merged_when_written() {
        let mut sink = Sink::new(0);
        let mut out = Vec::new();
        // Blocks 3, 1, 2, 0 of stream 0 (all value 7) and block 0 of stream 1, out of order.
        for (var, block) in [(0, 3), (1, 0), (0, 1), (0, 2), (0, 0)] {
            let (h, f) = constant_frame(var, block, [0, 0, 0, 7]);
            sink.frame(&mut out, var as usize, &h, &f).unwrap();
        }
        sink.flush_constants(&mut out).unwrap();
        let h = FrameHeader::decode(&out).unwrap();
        let mut table = Vec::new();
        crate::codec::decode_payload(&h, &out[FRAME_HEADER_LEN..], &mut table).unwrap();
        let runs: Vec<(u32, u64, u64)> = ConstantRun::decode_all(&table)
            .unwrap()
            .iter()
            .map(|r| (r.stream, r.first, r.count))
            .collect();
        assert_eq!(runs, [(0, 0, 4), (1, 0, 1)]);
    }

    #[test]
    fn runs_are_written_out_after_64_mib_of_other_frames() {
        let mut sink = Sink::new(100);
        let mut out = std::io::sink();
        let (h, f) = constant_frame(0, 0, [0; 4]);
        sink.frame(&mut out, 0, &h, &f).unwrap();
        // Frames of other blocks: the runs wait until 64 MiB of them have been written.
        let big = vec![0u8; (CONSTANTS_EVERY / 2) as usize];
        let hb = header(
            1,
            0,
            Codec::None,
            big.len() as u32 - 36,
            big.len() as u32 - 36,
        );
        sink.frame(&mut out, 1, &hb, &big).unwrap();
        assert_eq!((sink.constants_frames.len(), sink.runs.len()), (0, 1));
        let hb = FrameHeader { block: 1, ..hb };
        sink.frame(&mut out, 1, &hb, &big).unwrap();
        assert_eq!((sink.constants_frames.len(), sink.runs.len()), (1, 0));
        // The constants frame went right after the second big frame.
        assert_eq!(sink.constants_frames[0].offset, 100 + 2 * big.len() as u64);
    }
}
