//! The compact form of an archive (format 1.2): the same lead, frames, index and footer as the
//! full form, each field in as few bytes as its value needs, for archives of small files, whose
//! fixed structures would otherwise be a large share of the archive.
//!
//! The compact form is a bijection of the full form: [`compact`] turns a full archive into its
//! compact form, and [`expand`] turns it back, byte for byte (checksums included, recomputed
//! from the compact form's own). A reader expands a compact archive in memory when it opens it
//! ([`Expanded`]) and reads the full form as ever, so every check of the full form (frames,
//! index, the whole-file hash) applies unchanged; offsets in its messages are those of the full
//! form. `design/FORMAT.md` ("The compact form") is the byte-level specification.

use super::error::{FooterError, LeadError};
use super::{
    crc, Codec, Filter, Footer, FrameHeader, IndexEntry, Lead, FLAG_CONSTANT, FLAG_LOST,
    FOOTER_LEN, FOOTER_MAGIC, FRAME_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_HEADER_LEN, INDEX_MAGIC,
    LEAD_LEN, LEAD_MAGIC, VERSION_MAJOR,
};
use crate::io::ReadAt;
use std::io;

/// Minor version of a compact lead.
///
/// ```
/// assert_eq!(nc3pack::format::compact::COMPACT_MINOR, 2);
/// ```
pub const COMPACT_MINOR: u16 = 2;

/// Flag bit of a compact lead's flags byte (byte 12) that marks the compact form; bit 0 is the
/// block sizes flag, as in the full lead.
///
/// ```
/// assert_eq!(nc3pack::format::compact::FLAG_COMPACT, 2);
/// ```
pub const FLAG_COMPACT: u8 = 2;

/// Minor version of a compact lead whose header frame uses the header dictionary (codec 7,
/// [`Codec::ZstdDict`]; flag [`FLAG_HEADER_DICT`]).
///
/// ```
/// assert_eq!(nc3pack::format::compact::DICT_MINOR, 3);
/// ```
pub const DICT_MINOR: u16 = 3;

/// Flag bit of a compact lead's flags byte (format 1.3): the header frame is compressed with
/// the header dictionary (codec 7). A 1.2 reader refuses the archive at its lead (a flag it
/// does not know).
///
/// ```
/// assert_eq!(nc3pack::format::compact::FLAG_HEADER_DICT, 4);
/// ```
pub const FLAG_HEADER_DICT: u8 = 4;

/// The writer writes the compact form (by default) for an original file of at most this many
/// bytes; a stream no longer than this is read whole and packed as the file of its bytes.
///
/// ```
/// assert_eq!(nc3pack::format::compact::COMPACT_FILE_MAX, 16 << 10);
/// ```
pub const COMPACT_FILE_MAX: u64 = 16 << 10;

/// The longest compact archive a reader expands (it reads it whole into memory): 1 MiB.
///
/// ```
/// assert_eq!(nc3pack::format::compact::COMPACT_MAX, 1 << 20);
/// ```
pub const COMPACT_MAX: u64 = 1 << 20;

/// Length of the compact footer: index length (u32), CRC32C, magic.
///
/// ```
/// assert_eq!(nc3pack::format::compact::COMPACT_FOOTER_LEN, 12);
/// ```
pub const COMPACT_FOOTER_LEN: usize = 12;

/// The shortest compact archive: a compact lead (13 bytes, four one-byte varints, the hash and
/// its CRC) and a compact footer.
///
/// ```
/// assert_eq!(nc3pack::format::compact::COMPACT_MIN_LEN, 49);
/// ```
pub const COMPACT_MIN_LEN: u64 = 13 + 4 + 16 + 4 + COMPACT_FOOTER_LEN as u64;

/// The first four bytes of every Zstandard frame, left out of compact zstd payloads.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Whether `b` (an archive's first bytes, at least 13) starts a compact archive: the archive
/// magic, major version 1, a minor version of at least 2 and the compact flag.
///
/// ```
/// use nc3pack::format::compact::is_compact;
/// assert!(!is_compact(b"\x89NC3Z\r\n\x1a\x01\x00\x00\x00\x00"));
/// assert!(is_compact(b"\x89NC3Z\r\n\x1a\x01\x00\x02\x00\x02"));
/// ```
pub fn is_compact(b: &[u8]) -> bool {
    b.len() >= 13
        && b[..8] == LEAD_MAGIC
        && u16::from_le_bytes([b[8], b[9]]) == VERSION_MAJOR
        && u16::from_le_bytes([b[10], b[11]]) >= COMPACT_MINOR
        && b[12] & FLAG_COMPACT != 0
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over compact bytes; every read fails (None) past the end or on an overlong varint.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cur<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let byte = *self.b.get(self.at)?;
            self.at += 1;
            let bits = u64::from(byte & 0x7f);
            if i == 9 && byte > 1 {
                return None;
            }
            v |= bits << (7 * i);
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn u32v(&mut self) -> Option<u32> {
        u32::try_from(self.varint()?).ok()
    }
    fn byte(&mut self) -> Option<u8> {
        let b = *self.b.get(self.at)?;
        self.at += 1;
        Some(b)
    }
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
}

/// Stream id in a compact frame: the id plus 8, mod 2^32, so that the special streams
/// (`0xFFFFFFF9` ..= `0xFFFFFFFF`) and small variable ids take one byte.
fn stream_code(id: u32) -> u64 {
    u64::from(id.wrapping_add(8))
}

/// Whether a frame's payload is a Zstandard frame (stored without its magic in the compact form).
fn is_zstd(codec: Codec) -> bool {
    matches!(codec, Codec::Zstd | Codec::ZstdDict)
}

fn compact_lead(lead: &Lead, dict: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(48);
    b.extend_from_slice(&LEAD_MAGIC);
    b.extend_from_slice(&VERSION_MAJOR.to_le_bytes());
    let (minor, flag) = if dict {
        (DICT_MINOR, FLAG_HEADER_DICT)
    } else {
        (COMPACT_MINOR, 0)
    };
    b.extend_from_slice(&minor.to_le_bytes());
    b.push(FLAG_COMPACT | flag | u8::from(lead.block_sizes_frame));
    put_varint(&mut b, lead.file_len);
    put_varint(&mut b, lead.numrecs);
    put_varint(&mut b, lead.header_len);
    put_varint(&mut b, u64::from(lead.block_size));
    b.extend_from_slice(&lead.hash.to_le_bytes());
    let c = crc(&b);
    b.extend_from_slice(&c.to_le_bytes());
    b
}

/// Decodes a compact lead at the start of `b`: the lead (as the full form has it) and the
/// compact lead's length.
///
/// ```
/// use nc3pack::format::{compact, Lead};
/// let lead = Lead { file_len: 700, numrecs: 21, header_len: 352, block_size: 1 << 20, hash: 9, block_sizes_frame: false };
/// let b = compact::encode_lead(&lead);
/// assert_eq!(b.len(), 41);
/// assert_eq!(compact::decode_lead(&b), Ok((lead, 41)));
/// ```
///
/// # Errors
///
/// A [`LeadError`]: too short, not compact, a checksum mismatch, flags this reader does not
/// know, or a field out of range (as [`Lead::decode`] checks them).
pub fn decode_lead(b: &[u8]) -> Result<(Lead, usize), LeadError> {
    if b.len() < 13 {
        return Err(LeadError::TooShort { len: b.len() });
    }
    if b[..8] != LEAD_MAGIC {
        return Err(LeadError::Magic);
    }
    let major = u16::from_le_bytes([b[8], b[9]]);
    let minor = u16::from_le_bytes([b[10], b[11]]);
    if major != VERSION_MAJOR {
        return Err(LeadError::Version { major, minor });
    }
    let flags = b[12];
    let dict = flags & FLAG_HEADER_DICT != 0;
    if minor < COMPACT_MINOR
        || flags & FLAG_COMPACT == 0
        || flags & !(FLAG_COMPACT | FLAG_HEADER_DICT | 1) != 0
        || (dict && minor < DICT_MINOR)
    {
        return Err(LeadError::Flags {
            flags: u32::from(flags),
            minor,
        });
    }
    let mut c = Cur { b, at: 13 };
    let short = LeadError::TooShort { len: b.len() };
    let (file_len, numrecs, header_len, block_size) =
        match (c.varint(), c.varint(), c.varint(), c.varint()) {
            (Some(f), Some(n), Some(h), Some(s)) => (f, n, h, s),
            _ => return Err(short),
        };
    let hash = c.take(16).ok_or(short.clone())?;
    let hash = u128::from_le_bytes(hash.try_into().map_err(|_| short.clone())?);
    let end = c.at;
    let stored = c.take(4).ok_or(short)?;
    if crc(&b[..end]).to_le_bytes() != stored {
        return Err(LeadError::Checksum);
    }
    // The full lead's checks (block size, header length) on what it would hold.
    let lead = Lead {
        file_len,
        numrecs,
        header_len,
        block_size: u32::try_from(block_size).unwrap_or(0),
        hash,
        block_sizes_frame: flags & 1 != 0,
    };
    Lead::decode(&lead.encode())?;
    Ok((lead, end + 4))
}

/// Encodes `lead` as a compact lead (format 1.2; the lead of an archive whose header frame
/// does not use the header dictionary).
///
/// ```
/// use nc3pack::format::{compact, Lead};
/// let lead = Lead { file_len: 700, numrecs: 21, header_len: 352, block_size: 1 << 20, hash: 9, block_sizes_frame: false };
/// assert_eq!(&compact::encode_lead(&lead)[8..13], &[1, 0, 2, 0, 2]);
/// ```
pub fn encode_lead(lead: &Lead) -> Vec<u8> {
    compact_lead(lead, false)
}

/// The compact form of the full archive `full`, or `None` when `full` is not an archive this
/// writer would write (its structures do not decode, are not in the canonical order, or a zstd
/// payload lacks the Zstandard magic); [`expand`] of the result is `full` again.
///
/// ```
/// use nc3pack::format::compact;
/// let full = std::fs::read("samples/archives_1_0/truncated_record.nc3z")?;
/// let small = compact::compact(&full).unwrap();
/// assert_eq!((full.len(), small.len()), (299, 175));
/// assert_eq!(compact::expand(&small)?, full);
/// assert_eq!(compact::compact(&small), None); // not a full archive
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compact(full: &[u8]) -> Option<Vec<u8>> {
    let lead = Lead::decode(full).ok()?;
    if lead.encode()[..] != full[..LEAD_LEN] {
        return None;
    }
    let foot = Footer::decode(full.get(full.len().checked_sub(FOOTER_LEN)?..)?).ok()?;
    let index_at = usize::try_from(foot.index_offset).ok()?;
    let index = full.get(index_at..full.len() - FOOTER_LEN)?;
    if crc(index) != foot.index_crc {
        return None;
    }
    // Format 1.3 when the header frame uses the header dictionary.
    let dict = FrameHeader::decode(full.get(LEAD_LEN..)?)
        .ok()
        .is_some_and(|h| h.stream == super::HEADER_ID && h.codec == Codec::ZstdDict);
    let mut out = compact_lead(&lead, dict);
    // The frames, in archive order; their offsets, to match the index entries with.
    let mut offsets = Vec::new();
    let mut at = LEAD_LEN;
    while at < index_at {
        let h = FrameHeader::decode(full.get(at..)?).ok()?;
        if h.encode()[..] != full[at..at + FRAME_HEADER_LEN] {
            return None;
        }
        let payload =
            full.get(at + FRAME_HEADER_LEN..at + FRAME_HEADER_LEN + h.stored_len as usize)?;
        if crc(payload) != h.payload_crc {
            return None;
        }
        let start = out.len();
        put_varint(&mut out, u64::from(h.stored_len));
        put_varint(&mut out, u64::from(h.decoded_len));
        put_varint(&mut out, stream_code(h.stream));
        put_varint(&mut out, h.block);
        out.push(h.codec as u8);
        out.push(h.filter as u8);
        put_varint(&mut out, u64::from(h.esize));
        if is_zstd(h.codec) {
            out.extend_from_slice(payload.strip_prefix(&ZSTD_MAGIC)?);
        } else {
            out.extend_from_slice(payload);
        }
        let c = crc(&out[start..]);
        out.extend_from_slice(&c.to_le_bytes());
        offsets.push(at as u64);
        at += FRAME_HEADER_LEN + payload.len();
    }
    if at != index_at {
        return None;
    }
    let index_start = out.len();
    if index.get(..4)? != INDEX_MAGIC {
        return None;
    }
    let c_count = u32::from_le_bytes(index[4..8].try_into().ok()?);
    let n = u64::from_le_bytes(index[8..16].try_into().ok()?);
    put_varint(&mut out, n);
    put_varint(&mut out, u64::from(c_count));
    let entries = index.get(INDEX_HEADER_LEN..)?;
    let count = usize::try_from(n).ok()?.checked_add(c_count as usize)?;
    if entries.len() != count.checked_mul(INDEX_ENTRY_LEN)? {
        return None;
    }
    for raw in entries.chunks_exact(INDEX_ENTRY_LEN) {
        let e = IndexEntry::decode(raw).ok()?;
        if e.encode()[..] != *raw {
            return None;
        }
        if e.flags == FLAG_LOST {
            if e != lost_entry() {
                return None;
            }
            out.push(1);
        } else if e.flags == FLAG_CONSTANT {
            if e.stored_len != 0 || e.codec != Codec::Constant || e.filter != Filter::None {
                return None;
            }
            out.push(2);
            put_varint(&mut out, u64::from_le_bytes(raw[..8].try_into().ok()?));
        } else {
            let k = offsets.binary_search(&e.offset).ok()?;
            let h = FrameHeader::decode(&full[offsets[k] as usize..]).ok()?;
            if e.flags != 0
                || e.stored_len != h.stored_len
                || e.codec != h.codec
                || e.filter != h.filter
            {
                return None;
            }
            out.push(0);
            put_varint(&mut out, k as u64);
        }
    }
    let index_len = u32::try_from(out.len() - index_start).ok()?;
    out.extend_from_slice(&index_len.to_le_bytes());
    let c = crc(&out[index_start..]);
    out.extend_from_slice(&c.to_le_bytes());
    out.extend_from_slice(&FOOTER_MAGIC);
    Some(out)
}

fn lost_entry() -> IndexEntry {
    IndexEntry {
        offset: 0,
        stored_len: 0,
        codec: Codec::None,
        filter: Filter::None,
        flags: FLAG_LOST,
    }
}

/// The full form of the compact archive `b`. Damage is carried over, not hidden: a compact
/// frame whose checksum fails becomes a full frame whose payload checksum fails (or, in an
/// archive whose index does not check, ends the frames); frames after one whose fields do not
/// decode are left out; an index or footer that does not check is left out (the full form then has no footer, as a cut archive, and `nc3pack reindex` recovers
/// its intact frames by scanning).
///
/// ```
/// use nc3pack::format::{compact, Lead, LEAD_LEN};
/// let lead = Lead { file_len: 8, numrecs: 0, header_len: 8, block_size: 1 << 20, hash: 9, block_sizes_frame: false };
/// let full = compact::expand(&compact::encode_lead(&lead))?; // a lead and nothing else
/// assert_eq!(full, lead.encode().to_vec());
/// assert_eq!(full.len(), LEAD_LEN);
/// # Ok::<(), nc3pack::error::LeadError>(())
/// ```
///
/// # Errors
///
/// A [`LeadError`] when the compact lead does not decode (a lead is what every other part is
/// read with), or when `b` is longer than [`COMPACT_MAX`].
pub fn expand(b: &[u8]) -> Result<Vec<u8>, LeadError> {
    if b.len() as u64 > COMPACT_MAX {
        return Err(LeadError::CompactTooLong {
            len: b.len() as u64,
            max: COMPACT_MAX,
        });
    }
    let (lead, lead_len) = decode_lead(b)?;
    let mut out = lead.encode().to_vec();
    // The index and footer, when they check: where the frames end.
    let index = compact_index(b, lead_len).ok();
    let frames_end = index.map_or(b.len(), |(at, _)| at);
    let mut offsets = Vec::new();
    let mut c = Cur {
        b: &b[..frames_end],
        at: lead_len,
    };
    while c.at < frames_end {
        let start = c.at;
        let Some((h, payload)) = compact_frame(&mut c) else {
            break;
        };
        let fields_end = c.at;
        let ok = c
            .take(4)
            .is_some_and(|s| crc(&b[start..fields_end]).to_le_bytes() == *s);
        if !ok && index.is_none() {
            // Without the index, a frame that does not check may be the cut: the walk stops.
            break;
        }
        let mut full = Vec::with_capacity(payload.len() + 4);
        if is_zstd(h.codec) {
            full.extend_from_slice(&ZSTD_MAGIC);
        }
        full.extend_from_slice(payload);
        // A frame whose compact checksum fails keeps a payload checksum that fails.
        let payload_crc = crc(&full) ^ if ok { 0 } else { u32::MAX };
        offsets.push(out.len() as u64);
        out.extend_from_slice(&FrameHeader { payload_crc, ..h }.encode());
        out.extend_from_slice(&full);
    }
    if let Some(index) = index.and_then(|(at, end)| full_index(&b[at..end], &offsets, &out)) {
        let footer = Footer {
            index_offset: out.len() as u64,
            index_len: index.len() as u64,
            index_crc: crc(&index),
            flags: 0,
        };
        out.extend_from_slice(&index);
        out.extend_from_slice(&footer.encode());
    }
    Ok(out)
}

/// Where the compact index lies (its start and end), when the compact footer's magic and
/// checksum check and the index lies after the lead; else where the compact footer starts (or
/// the archive's length, when it is too short for one) and what is wrong with it.
fn compact_index(b: &[u8], lead_len: usize) -> Result<(usize, usize), (u64, FooterError)> {
    let Some(f) = b
        .len()
        .checked_sub(COMPACT_FOOTER_LEN)
        .filter(|&f| f >= lead_len)
    else {
        return Err((b.len() as u64, FooterError::Truncated));
    };
    let damaged = |what| Err((f as u64, what));
    if b[f + 8..] != FOOTER_MAGIC {
        return damaged(FooterError::CompactNoMagic);
    }
    let len = u32::from_le_bytes([b[f], b[f + 1], b[f + 2], b[f + 3]]);
    let at = match f.checked_sub(len as usize) {
        Some(at) if at >= lead_len => at,
        _ => {
            return damaged(FooterError::CompactIndexLength {
                index_len: u64::from(len),
                lead_end: lead_len as u64,
            })
        }
    };
    let stored = u32::from_le_bytes([b[f + 4], b[f + 5], b[f + 6], b[f + 7]]);
    let computed = crc(&b[at..f + 4]);
    if computed != stored {
        return damaged(FooterError::CompactChecksum { stored, computed });
    }
    Ok((at, f))
}

/// What is wrong with the footer of the compact archive `b`, and where (its offset in `b`):
/// `None` when the footer checks, or when the lead does not decode. [`expand`] leaves such a
/// footer out of the full form (as a cut archive's, for `nc3pack reindex`); a reader opening
/// the archive reports this instead of the full form's missing footer, whose offset lies
/// past the end of the compact archive.
///
/// ```
/// use nc3pack::{error::FooterError, format::compact};
/// # let dir = std::env::temp_dir().join(format!("nc3pack-doc-{}-footer_damage", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let z = dir.join("x.nc3z");
/// # let opts = nc3pack::PackOptions::default().with_threads(1).with_force(true);
/// # nc3pack::pack_file("samples/scalars.nc".as_ref(), &z, &opts)?;
/// let mut b = std::fs::read(&z)?; // a small file, packed: a compact archive
/// assert_eq!(compact::footer_damage(&b), None);
/// let n = b.len();
/// b[n - 8] ^= 1; // the footer's checksum (after the index length)
/// let (at, what) = compact::footer_damage(&b).unwrap();
/// assert_eq!(at, n as u64 - 12);
/// assert!(matches!(what, FooterError::CompactChecksum { .. }), "{what}");
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn footer_damage(b: &[u8]) -> Option<(u64, FooterError)> {
    let (_, lead_len) = decode_lead(b).ok()?;
    compact_index(b, lead_len).err()
}

/// Reads one compact frame's fields and payload (not its checksum).
fn compact_frame<'a>(c: &mut Cur<'a>) -> Option<(FrameHeader, &'a [u8])> {
    let stored_len = c.u32v()?;
    let decoded_len = c.u32v()?;
    let stream = c.u32v().map(|s| s.wrapping_sub(8))?;
    let block = c.varint()?;
    let codec = c.byte()?;
    let filter = c.byte()?;
    let esize = u16::try_from(c.varint()?).ok()?;
    let h = FrameHeader {
        stored_len,
        decoded_len,
        stream,
        block,
        codec: Codec::from_id(codec)?,
        filter: Filter::from_id(filter)?,
        esize,
        payload_crc: 0,
    };
    let n = if is_zstd(h.codec) {
        (stored_len as usize).checked_sub(4)?
    } else {
        stored_len as usize
    };
    let b: &'a [u8] = c.b;
    let at = c.at;
    let payload = b.get(at..at.checked_add(n)?)?;
    c.at += n;
    Some((h, payload))
}

/// The full index section of the compact index `b`, with the frames at `offsets` of the full
/// form `full`; `None` if it does not decode.
fn full_index(b: &[u8], offsets: &[u64], full: &[u8]) -> Option<Vec<u8>> {
    let mut c = Cur { b, at: 0 };
    let n = c.varint()?;
    let consts = c.u32v()?;
    let count = n.checked_add(u64::from(consts))?;
    // Each entry takes at least a byte: a count beyond the bytes allocates nothing.
    if count > (b.len() - c.at) as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(INDEX_HEADER_LEN + count as usize * INDEX_ENTRY_LEN);
    out.extend_from_slice(&INDEX_MAGIC);
    out.extend_from_slice(&consts.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    for _ in 0..count {
        match c.byte()? {
            0 => {
                let k = usize::try_from(c.varint()?).ok()?;
                let at = *offsets.get(k)?;
                let h = FrameHeader::decode(full.get(at as usize..)?).ok()?;
                let e = IndexEntry {
                    offset: at,
                    stored_len: h.stored_len,
                    codec: h.codec,
                    filter: h.filter,
                    flags: 0,
                };
                out.extend_from_slice(&e.encode());
            }
            1 => out.extend_from_slice(&lost_entry().encode()),
            2 => {
                let mut e = IndexEntry::constant(&[]);
                e.offset = c.varint()?;
                out.extend_from_slice(&e.encode());
            }
            _ => return None,
        }
    }
    (c.at == b.len()).then_some(out)
}

/// A reader that sees a compact archive in its full form: a compact archive (at most
/// [`COMPACT_MAX`] bytes) is read whole and expanded in memory when opened; any other source
/// is read as it is.
///
/// ```
/// use nc3pack::{ReadAt, format::compact::Expanded};
/// let f = std::fs::File::open("samples/scalars.nc")?; // not an archive: read as it is
/// let r = Expanded::new(f)?;
/// assert_eq!(r.size()?, std::fs::metadata("samples/scalars.nc")?.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub enum Expanded<R> {
    /// A source read as it is.
    Plain(R),
    /// The full form of a compact archive, the compact archive's length, and what is wrong with
    /// its footer, where ([`footer_damage`]; the full form then has no footer).
    Memory(Vec<u8>, u64, Option<(u64, FooterError)>),
}

impl<R: ReadAt> Expanded<R> {
    /// Opens `r`: expands it when it is a compact archive.
    ///
    /// # Errors
    ///
    /// The source's I/O error, or ([`io::ErrorKind::InvalidData`], carrying a [`LeadError`])
    /// a compact archive whose lead does not decode or that is too long.
    ///
    /// ```
    /// use nc3pack::format::compact::Expanded;
    /// let r = Expanded::new(b"not an archive".to_vec())?;
    /// assert!(matches!(r, Expanded::Plain(_)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(r: R) -> io::Result<Expanded<R>> {
        let len = r.size()?;
        let mut start = [0u8; 13];
        if len < start.len() as u64 {
            return Ok(Expanded::Plain(r));
        }
        r.read_exact_at(&mut start, 0)?;
        if !is_compact(&start) {
            return Ok(Expanded::Plain(r));
        }
        if len > COMPACT_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                LeadError::CompactTooLong {
                    len,
                    max: COMPACT_MAX,
                },
            ));
        }
        let mut b = vec![0u8; len as usize];
        r.read_exact_at(&mut b, 0)?;
        let full = expand(&b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(Expanded::Memory(full, len, footer_damage(&b)))
    }

    /// The length of the source as stored (for a compact archive, its compact length).
    ///
    /// ```
    /// use nc3pack::{ReadAt, format::compact::Expanded};
    /// let r = Expanded::new(vec![1u8; 20])?;
    /// assert_eq!(r.stored_len()?, 20);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The source's I/O error.
    pub fn stored_len(&self) -> io::Result<u64> {
        match self {
            Expanded::Plain(r) => r.size(),
            Expanded::Memory(_, len, _) => Ok(*len),
        }
    }
}

impl<R: ReadAt> ReadAt for Expanded<R> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Expanded::Plain(r) => r.read_exact_at(buf, offset),
            Expanded::Memory(v, ..) => v.read_exact_at(buf, offset),
        }
    }
    fn size(&self) -> io::Result<u64> {
        match self {
            Expanded::Plain(r) => r.size(),
            Expanded::Memory(v, ..) => Ok(v.len() as u64),
        }
    }
    fn prefetch(&self, ranges: &[(u64, u64)]) -> io::Result<()> {
        match self {
            Expanded::Plain(r) => r.prefetch(ranges),
            Expanded::Memory(..) => Ok(()),
        }
    }
    fn wants_prefetch(&self) -> bool {
        match self {
            Expanded::Plain(r) => r.wants_prefetch(),
            Expanded::Memory(..) => false,
        }
    }
}

#[cfg(test)]
mod tests;
