//! Reading archives: open, check the structures, locate and decode blocks.

use crate::codec::decode_payload;
use crate::error::{io_err, Error, Result};
use crate::format::{
    self, Footer, FrameHeader, IndexEntry, Lead, FOOTER_LEN, FRAME_HEADER_LEN, LEAD_LEN,
};
use crate::io::ReadAt;
use crate::nc3::{Header, Layout};
use crate::pack::{streams, Stream};
use std::path::{Path, PathBuf};

/// An open .nc3z archive.
///
/// Opening reads the lead, the netCDF header copy and, from the end, the footer and index, and
/// checks all of their checksums; blocks are read on demand.
///
/// ```no_run
/// let a = nc3pack::Archive::open("/tmp/sst.nc3z").unwrap();
/// let sst = a.header().vars.iter().position(|v| v.name == "sst").unwrap();
/// let bytes = a.read_var_bytes(sst).unwrap(); // big-endian, as in the netCDF file
/// println!("{} bytes", bytes.len());
/// ```
pub struct Archive<R: ReadAt = std::fs::File> {
    path: PathBuf,
    reader: R,
    lead: Lead,
    header: Header,
    header_bytes: Vec<u8>,
    layout: Layout,
    streams: Vec<Stream>,
    index: Vec<IndexEntry>,
    footer: Footer,
    len: u64,
}

impl Archive<std::fs::File> {
    /// Opens the archive at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = std::fs::File::open(path).map_err(io_err(path, "open"))?;
        Archive::from_reader(f, path)
    }
}

impl<R: ReadAt> Archive<R> {
    /// Opens an archive from any positional reader; `path` names it in errors.
    pub fn from_reader(reader: R, path: &Path) -> Result<Self> {
        let len = reader.size().map_err(io_err(path, "stat"))?;
        let bad = |part: &'static str, offset: u64, what: String| Error::Archive {
            path: path.to_path_buf(),
            part,
            offset,
            what,
        };
        let mut lead_bytes = [0u8; LEAD_LEN];
        if len < (LEAD_LEN + 4 + FOOTER_LEN) as u64 {
            return Err(bad(
                "lead",
                0,
                format!("file is only {len} bytes long, too short for an archive"),
            ));
        }
        reader
            .read_exact_at(&mut lead_bytes, 0)
            .map_err(io_err(path, "read"))?;
        let lead = Lead::decode(&lead_bytes).map_err(|w| bad("lead", 0, w))?;
        let hlen = lead.header_len;
        let data_start = (LEAD_LEN as u64 + 4)
            .checked_add(hlen)
            .filter(|&e| e + FOOTER_LEN as u64 <= len)
            .ok_or_else(|| {
                bad(
                    "lead",
                    32,
                    format!("netCDF header length {hlen} does not fit in the {len}-byte archive"),
                )
            })?;
        let mut hb = vec![0u8; hlen as usize + 4];
        reader
            .read_exact_at(&mut hb, LEAD_LEN as u64)
            .map_err(io_err(path, "read"))?;
        let stored_crc = u32::from_le_bytes([
            hb[hlen as usize],
            hb[hlen as usize + 1],
            hb[hlen as usize + 2],
            hb[hlen as usize + 3],
        ]);
        hb.truncate(hlen as usize);
        if format::crc(&hb) != stored_crc {
            return Err(bad(
                "netCDF header",
                LEAD_LEN as u64,
                "checksum mismatch".into(),
            ));
        }
        let header = Header::parse(&hb, hlen)
            .map_err(|e| bad("netCDF header", LEAD_LEN as u64, e.to_string()))?;
        if header.len != hlen {
            return Err(bad(
                "netCDF header",
                LEAD_LEN as u64,
                format!(
                    "header parses to {} bytes, the lead says {hlen}",
                    header.len
                ),
            ));
        }
        let layout = Layout::with_numrecs(&header, lead.file_len, lead.numrecs)
            .map_err(|w| bad("lead", 24, format!("layout of the original file: {w}")))?;
        let streams = streams(&layout, lead.block_size);
        let total_blocks = streams.last().map_or(0, |s| s.first_slot + s.blocks());

        let footer_at = len - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        reader
            .read_exact_at(&mut fb, footer_at)
            .map_err(io_err(path, "read"))?;
        let footer = Footer::decode(&fb).map_err(|w| bad("footer", footer_at, w))?;
        let want_len = total_blocks
            .checked_mul(format::INDEX_ENTRY_LEN as u64)
            .and_then(|n| n.checked_add(format::INDEX_HEADER_LEN as u64));
        if footer.index_offset < data_start
            || footer.index_offset.checked_add(footer.index_len) != Some(footer_at)
            || want_len != Some(footer.index_len)
        {
            return Err(bad(
                "footer",
                footer_at,
                format!("index at {} of {} bytes does not fit the archive (expected {} bytes ending at {footer_at})", footer.index_offset, footer.index_len, want_len.unwrap_or(u64::MAX)),
            ));
        }
        let mut ib = vec![0u8; footer.index_len as usize];
        reader
            .read_exact_at(&mut ib, footer.index_offset)
            .map_err(io_err(path, "read"))?;
        if format::crc(&ib) != footer.index_crc {
            return Err(bad(
                "index",
                footer.index_offset,
                "checksum mismatch".into(),
            ));
        }
        let index = format::decode_index(&ib, total_blocks)
            .map_err(|w| bad("index", footer.index_offset, w))?;
        for s in &streams {
            for b in 0..s.blocks() {
                let e = &index[(s.first_slot + b) as usize];
                let end = e
                    .offset
                    .checked_add(FRAME_HEADER_LEN as u64 + u64::from(e.stored_len));
                if !e.is_lost()
                    && (e.offset < data_start
                        || end.is_none_or(|end| end > footer.index_offset)
                        || u64::from(e.stored_len) > s.block_bytes)
                {
                    return Err(bad(
                        "index",
                        footer.index_offset,
                        format!(
                            "entry for block {b} of {} points outside the data section",
                            stream_name(&header, s.id)
                        ),
                    ));
                }
            }
        }
        Ok(Archive {
            path: path.to_path_buf(),
            reader,
            lead,
            header,
            header_bytes: hb,
            layout,
            streams,
            index,
            footer,
            len,
        })
    }

    /// The netCDF-3 header of the original file.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The original header's bytes, verbatim.
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }

    /// The data layout of the original file, with the record dimension materialized.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The archive's lead (original length, records, block size).
    pub fn lead(&self) -> &Lead {
        &self.lead
    }

    /// The xxh3-128 hash of the original file, as recorded at pack time.
    pub fn original_hash(&self) -> u128 {
        self.footer.hash
    }

    /// Length of the archive in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the archive is empty (never true for an archive that opened).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The archive's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of streams: one per variable, then the residual bytes.
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// Number of blocks of stream `s`.
    pub fn block_count(&self, s: usize) -> u64 {
        self.streams[s].blocks()
    }

    /// Decoded bytes per block of stream `s` (the last block may be shorter).
    pub fn block_bytes(&self, s: usize) -> u64 {
        self.streams[s].block_bytes
    }

    /// Index entry of block `b` of stream `s`.
    pub fn entry(&self, s: usize, b: u64) -> &IndexEntry {
        &self.index[(self.streams[s].first_slot + b) as usize]
    }

    /// Stored (compressed) bytes of stream `s`, frame headers included.
    pub fn stored_bytes(&self, s: usize) -> u64 {
        (0..self.block_count(s))
            .map(|b| FRAME_HEADER_LEN as u64 + u64::from(self.entry(s, b).stored_len))
            .sum()
    }

    /// Reads, checks and decodes block `b` of stream `s` (stream ids as in [`Archive::stream_count`]).
    pub fn read_block(&self, s: usize, b: u64) -> Result<Vec<u8>> {
        let st = &self.streams[s];
        let e = *self.entry(s, b);
        let err = |what: String| Error::Block {
            path: self.path.clone(),
            var: stream_name(&self.header, st.id),
            block: b,
            offset: e.offset,
            what,
        };
        if e.is_lost() {
            return Err(err("block was lost (marked by reindex)".into()));
        }
        let expect_len = st.block_bytes.min(st.total - b * st.block_bytes);
        let mut buf = vec![0u8; FRAME_HEADER_LEN + e.stored_len as usize];
        self.reader
            .read_exact_at(&mut buf, e.offset)
            .map_err(io_err(&self.path, "read"))?;
        let h = FrameHeader::decode(&buf).map_err(err)?;
        if h.var != st.id
            || h.block != b
            || h.stored_len != e.stored_len
            || u64::from(h.decoded_len) != expect_len
            || h.codec != e.codec
            || h.filter != e.filter
        {
            return Err(err(format!(
                "frame says variable id {} block {} ({} bytes stored, {} decoded), index expects id {} block {b} ({} stored, {expect_len} decoded)",
                h.var, h.block, h.stored_len, h.decoded_len, st.id, e.stored_len
            )));
        }
        let mut out = Vec::new();
        decode_payload(&h, &buf[FRAME_HEADER_LEN..], &mut out).map_err(err)?;
        Ok(out)
    }

    /// Reads the whole materialized data of variable `v` as big-endian bytes (as stored in the
    /// netCDF file, with records de-interleaved).
    pub fn read_var_bytes(&self, v: usize) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.streams[v].total as usize);
        for b in 0..self.block_count(v) {
            out.extend_from_slice(&self.read_block(v, b)?);
        }
        Ok(out)
    }
}

/// Name of a stream for messages: the variable's name, or "residual bytes".
pub(crate) fn stream_name(h: &Header, id: u32) -> String {
    match id {
        format::RESIDUAL_ID => "residual bytes".into(),
        format::META_ID => "metadata frame".into(),
        i => h.vars.get(i as usize).map_or_else(
            || format!("variable id {i}"),
            |v| format!("variable {:?}", v.name),
        ),
    }
}
