//! An archive's front: the lead, the netCDF header frame and the block sizes frame, read and
//! checked when it is opened.

use super::*;
use crate::nc3::error::{HeaderError, HeaderProblem};
use crate::nc3::ParseError;

/// Reads and checks the lead and the netCDF header frame of an archive of `len` bytes: returns
/// the lead, the original header's bytes, the parsed header, and the offset just past the
/// header frame.
pub(crate) fn read_front<R: ReadAt>(
    reader: &R,
    path: &Path,
    len: u64,
) -> Result<(Lead, Vec<u8>, Header, format::BlockSizes, u64)> {
    let bad = |part: &'static str, offset: u64, source: ArchiveError| Error::Archive {
        path: path.to_path_buf(),
        part,
        offset,
        source,
    };
    if len < (LEAD_LEN + FRAME_HEADER_LEN) as u64 {
        return Err(bad("lead", 0, ArchiveError::TooShort { len }));
    }
    let mut front = [0u8; LEAD_LEN + FRAME_HEADER_LEN];
    reader
        .read_exact_at(&mut front, 0)
        .map_err(io_err(path, "read"))?;
    let (lead, h) = check_front(&front).map_err(|(part, at, w)| bad(part, at, w))?;
    let at = LEAD_LEN as u64;
    // The header limit, before anything is read or allocated for the header: a small header
    // frame may decompress to a forged header of millions of items.
    let header_err = |what| Error::Header {
        path: path.to_path_buf(),
        source: HeaderError::new(0, what),
    };
    let limit = crate::nc3::header_limit().map_err(header_err)?;
    if lead.header_len > limit {
        return Err(header_err(HeaderProblem::LongerThanLimit {
            len: lead.header_len,
            limit,
        }));
    }
    let end = at + (FRAME_HEADER_LEN as u64) + u64::from(h.stored_len);
    if end > len {
        return Err(bad(
            "netCDF header",
            at,
            ArchiveError::HeaderFrameTooLong {
                stored: h.stored_len,
                len,
            },
        ));
    }
    let mut payload = vec![0u8; h.stored_len as usize];
    reader
        .read_exact_at(&mut payload, at + FRAME_HEADER_LEN as u64)
        .map_err(io_err(path, "read"))?;
    let hb = decode_header_payload(&h, &payload).map_err(|e| bad("netCDF header", at, e.into()))?;
    let header = Header::parse_prefix_with_limit(&hb, lead.header_len, limit).map_err(|e| {
        let e = match e {
            ParseError::Bad(e) => e,
            ParseError::NeedMore(_) => HeaderError::new(hb.len() as u64, HeaderProblem::PastBuffer),
        };
        bad("netCDF header", at, e.into())
    })?;
    if header.len() != lead.header_len {
        return Err(bad(
            "netCDF header",
            at,
            ArchiveError::HeaderLength {
                parsed: header.len(),
                lead: lead.header_len,
            },
        ));
    }
    if !lead.block_sizes_frame {
        return Ok((
            lead,
            hb,
            header,
            format::BlockSizes::uniform(lead.block_size),
            end,
        ));
    }
    let (sizes, end) = read_block_sizes(reader, path, len, &lead, &header, end)?;
    Ok((lead, hb, header, sizes, end))
}

/// Reads and checks the block sizes frame at `at` (format 1.1: right after the header frame)
/// for the variables of `header`; returns the block sizes and where the frame ends.
fn read_block_sizes<R: ReadAt>(
    reader: &R,
    path: &Path,
    len: u64,
    lead: &Lead,
    header: &Header,
    at: u64,
) -> Result<(format::BlockSizes, u64)> {
    let bad = |source: ArchiveError| Error::Archive {
        path: path.to_path_buf(),
        part: "block sizes",
        offset: at,
        source,
    };
    let mut fh = [0u8; FRAME_HEADER_LEN];
    if at + FRAME_HEADER_LEN as u64 > len {
        return Err(bad(crate::error::FrameHeaderError::Short.into()));
    }
    reader
        .read_exact_at(&mut fh, at)
        .map_err(io_err(path, "read"))?;
    let h = FrameHeader::decode(&fh).map_err(|e| bad(e.into()))?;
    format::BlockSizes::check_frame(&h, header.var_count()).map_err(|e| bad(e.into()))?;
    let end = at + (FRAME_HEADER_LEN as u64) + u64::from(h.stored_len);
    if end > len {
        return Err(bad(crate::error::FrameHeaderError::Short.into()));
    }
    let mut payload = vec![0u8; h.stored_len as usize];
    reader
        .read_exact_at(&mut payload, at + FRAME_HEADER_LEN as u64)
        .map_err(io_err(path, "read"))?;
    let mut table = Vec::new();
    decode_payload(&h, &payload, &mut table).map_err(|e| bad(e.into()))?;
    let sizes = format::BlockSizes::decode(&table, lead.block_size).map_err(|e| bad(e.into()))?;
    Ok((sizes, end))
}

/// Decodes the header frame's payload into a buffer of exactly `h.decoded_len` bytes (checked
/// against the lead, so at most [`format::MAX_HEADER_LEN`]), allocated fallibly after the CRC
/// check: a header the machine has no memory for is an error, not an abort. The codec decodes
/// into that buffer and stops at its end, so no frame content makes it grow.
fn decode_header_payload(
    h: &FrameHeader,
    payload: &[u8],
) -> std::result::Result<Vec<u8>, FrameError> {
    let mut out = Vec::new();
    // (Through this thread's scratch: its zstd context serves the blocks read next.)
    super::with_scratch(|s| {
        crate::codec::decode::decode_payload_with(h, payload, &mut out, &mut s.codec)
    })
    .map_err(|e| match e {
        FrameError::NoMemory { .. } => FrameError::HeaderNoMemory { len: h.decoded_len },
        e => e,
    })?;
    Ok(out)
}

/// Decodes and checks the first `LEAD_LEN + FRAME_HEADER_LEN` bytes of an archive, the lead and
/// the header of the netCDF header frame, as opening does; the error names the part and offset.
/// The writer runs it on what it wrote, so that it never reports success for an archive whose
/// front a reader refuses.
pub(crate) fn check_front(
    front: &[u8],
) -> std::result::Result<(Lead, FrameHeader), (&'static str, u64, ArchiveError)> {
    let lead = Lead::decode(front).map_err(|e| ("lead", 0, e.into()))?;
    let at = LEAD_LEN as u64;
    let fh = front
        .get(LEAD_LEN..LEAD_LEN + FRAME_HEADER_LEN)
        .unwrap_or(&[]);
    let h = FrameHeader::decode(fh).map_err(|e| ("netCDF header", at, e.into()))?;
    if h.stream != format::HEADER_ID || h.block != 0 || u64::from(h.decoded_len) != lead.header_len
    {
        return Err((
            "netCDF header",
            at,
            ArchiveError::NotHeaderFrame {
                stream: h.stream,
                decoded: h.decoded_len,
                header_len: lead.header_len,
            },
        ));
    }
    Ok((lead, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front(lead: &Lead, header_len: u32) -> Vec<u8> {
        let mut b = lead.encode().to_vec();
        let h = FrameHeader {
            stored_len: 1,
            decoded_len: header_len,
            stream: format::HEADER_ID,
            block: 0,
            codec: format::Codec::Zstd,
            filter: format::Filter::None,
            esize: 1,
            payload_crc: 0,
        };
        b.extend_from_slice(&h.encode());
        b
    }

    #[test]
    fn check_front_refuses_a_header_over_the_limit_naming_it() {
        let h = (format::MAX_HEADER_LEN + 1) as u32;
        let lead = Lead {
            file_len: 1 << 31,
            numrecs: 0,
            header_len: u64::from(h),
            block_size: 1 << 20,
            hash: 0,
            block_sizes_frame: false,
        };
        let (part, at, what) = check_front(&front(&lead, h)).unwrap_err();
        assert_eq!((part, at), ("lead", 0));
        assert_eq!(
            what,
            ArchiveError::Lead(crate::error::LeadError::HeaderTooLong {
                header_len: lead.header_len
            })
        );
        assert!(
            what.to_string().contains("1073741824 bytes (1 GiB)"),
            "{what}"
        );
        let ok = Lead {
            header_len: 32,
            ..lead
        };
        assert_eq!(check_front(&front(&ok, 32)).unwrap().0, ok);
        let (part, _, what) = check_front(&front(&ok, 33)).unwrap_err();
        assert_eq!(part, "netCDF header");
        assert_eq!(
            what,
            ArchiveError::NotHeaderFrame {
                stream: format::HEADER_ID,
                decoded: 33,
                header_len: 32
            }
        );
    }
}
