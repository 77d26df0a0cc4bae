//! The index section: an entry per block (where its frame is, its codec and filter, its
//! flags), then one per constants frame; its encoding, and its decoding whole or in pieces.

use super::error::{EntryError, IndexError};
use super::{
    is_constants_codec, u16_at, u32_at, u64_at, Codec, Filter, FLAG_CONSTANT, FLAG_LOST,
    FRAME_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_HEADER_LEN, INDEX_MAGIC,
};

/// Where a block is, as recorded in the index.
///
/// ```
/// use nc3pack::format::{Codec, Filter, IndexEntry};
/// let e = IndexEntry { offset: 1234, stored_len: 99, codec: Codec::Deflate, filter: Filter::None, flags: 0 };
/// assert_eq!(IndexEntry::decode(&e.encode()), Ok(e));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Archive offset of the frame header.
    pub offset: u64,
    /// Payload bytes (the frame is `FRAME_HEADER_LEN + stored_len` bytes).
    pub stored_len: u32,
    /// Codec (repeated from the frame, so a reader can plan without reading it).
    pub codec: Codec,
    /// Filter.
    pub filter: Filter,
    /// Flags: [`FLAG_LOST`].
    pub flags: u16,
}

impl IndexEntry {
    /// Encodes the entry.
    ///
    /// ```
    /// use nc3pack::format::{Codec, Filter, IndexEntry};
    /// let e = IndexEntry { offset: 1234, stored_len: 99, codec: Codec::Deflate, filter: Filter::None, flags: 0 };
    /// let b = e.encode();
    /// assert_eq!(b[..8], 1234u64.to_le_bytes());
    /// assert_eq!(b[12], 2); // deflate's codec id
    /// ```
    pub fn encode(&self) -> [u8; INDEX_ENTRY_LEN] {
        let mut b = [0u8; INDEX_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.stored_len.to_le_bytes());
        b[12] = self.codec as u8;
        b[13] = self.filter as u8;
        b[14..16].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// Decodes an entry.
    ///
    /// ```
    /// use nc3pack::format::{error::IndexError, IndexEntry};
    /// let mut b = IndexEntry::constant(&[1]).encode();
    /// assert!(IndexEntry::decode(&b).unwrap().is_constant());
    /// b[12] = 200;
    /// assert_eq!(IndexEntry::decode(&b), Err(IndexError::UnknownCodec { id: 200 }));
    /// ```
    ///
    /// # Errors
    ///
    /// [`IndexError::UnknownCodec`] (also for codec 7, [`Codec::ZstdDict`], which only the
    /// header frame, never indexed, may have) or [`IndexError::UnknownFilter`].
    pub fn decode(b: &[u8]) -> Result<IndexEntry, IndexError> {
        let codec = Codec::from_id(b[12]).filter(|c| *c != Codec::ZstdDict);
        Ok(IndexEntry {
            offset: u64_at(b, 0),
            stored_len: u32_at(b, 8),
            codec: codec.ok_or(IndexError::UnknownCodec { id: b[12] })?,
            filter: Filter::from_id(b[13]).ok_or(IndexError::UnknownFilter { id: b[13] })?,
            flags: u16_at(b, 14),
        })
    }

    /// Bytes of the entry's frame: its header and payload (`FRAME_HEADER_LEN + stored_len`).
    ///
    /// ```
    /// use nc3pack::format::{Codec, Filter, IndexEntry, FRAME_HEADER_LEN};
    /// let e = IndexEntry { offset: 0, stored_len: 99, codec: Codec::Zstd, filter: Filter::None, flags: 0 };
    /// assert_eq!(e.frame_len(), FRAME_HEADER_LEN as u64 + 99);
    /// ```
    pub fn frame_len(&self) -> u64 {
        FRAME_HEADER_LEN as u64 + u64::from(self.stored_len)
    }

    /// Whether the block is marked lost.
    ///
    /// ```
    /// use nc3pack::format::{Codec, Filter, IndexEntry, FLAG_LOST};
    /// let mut e = IndexEntry { offset: 0, stored_len: 0, codec: Codec::None, filter: Filter::None, flags: 0 };
    /// assert!(!e.is_lost());
    /// e.flags = FLAG_LOST;
    /// assert!(e.is_lost());
    /// ```
    pub fn is_lost(&self) -> bool {
        self.flags & FLAG_LOST != 0
    }

    /// The entry of a block whose elements all equal `value` (1 to 8 bytes): no frame, the
    /// element in the offset field's first bytes (the rest zero), codec constant, stored
    /// length 0, flag [`FLAG_CONSTANT`].
    ///
    /// ```
    /// use nc3pack::format::IndexEntry;
    /// let e = IndexEntry::constant(&[0x7f, 0xc0, 0, 0]);
    /// assert!(e.is_constant());
    /// assert_eq!(e.offset.to_le_bytes(), [0x7f, 0xc0, 0, 0, 0, 0, 0, 0]);
    /// assert_eq!(e.constant_value(4), &[0x7f, 0xc0, 0, 0]);
    /// ```
    pub fn constant(value: &[u8]) -> IndexEntry {
        let mut v = [0u8; 8];
        let n = value.len().min(8);
        v[..n].copy_from_slice(&value[..n]);
        IndexEntry {
            offset: u64::from_le_bytes(v),
            stored_len: 0,
            codec: Codec::Constant,
            filter: Filter::None,
            flags: FLAG_CONSTANT,
        }
    }

    /// Whether the block is constant and lives in the index only.
    ///
    /// ```
    /// use nc3pack::format::{Codec, Filter, IndexEntry};
    /// assert!(IndexEntry::constant(&[0; 4]).is_constant());
    /// let e = IndexEntry { offset: 64, stored_len: 9, codec: Codec::Zstd, filter: Filter::None, flags: 0 };
    /// assert!(!e.is_constant());
    /// ```
    pub fn is_constant(&self) -> bool {
        self.flags & FLAG_CONSTANT != 0
    }

    /// The first `esize` bytes (at most 8) of the offset field: a constant block's element.
    ///
    /// ```
    /// use nc3pack::format::IndexEntry;
    /// let e = IndexEntry::constant(&1.5f64.to_be_bytes());
    /// assert_eq!(e.constant_value(8), 1.5f64.to_be_bytes());
    /// assert_eq!(e.constant_value(2), &1.5f64.to_be_bytes()[..2]);
    /// ```
    pub fn constant_value(&self, esize: usize) -> Vec<u8> {
        self.offset.to_le_bytes()[..esize.min(8)].to_vec()
    }

    /// Checks the combination of fields: flags 0, [`FLAG_LOST`] (with every other field 0) or
    /// [`FLAG_CONSTANT`] (codec constant, no filter, stored length 0, and the offset field's
    /// bytes past `esize` zero).
    ///
    /// ```
    /// use nc3pack::format::{error::EntryError, Codec, Filter, IndexEntry};
    /// assert_eq!(IndexEntry::constant(&[1, 2]).check(2), Ok(()));
    /// // A value wider than the element size is refused.
    /// assert!(IndexEntry::constant(&[1, 2, 3]).check(2).is_err());
    /// let e = IndexEntry { offset: 0, stored_len: 0, codec: Codec::Constant, filter: Filter::None, flags: 0 };
    /// assert_eq!(e.check(4), Err(EntryError::ConstantWithoutFlag));
    /// ```
    ///
    /// # Errors
    ///
    /// An [`EntryError`] saying what is wrong.
    pub fn check(&self, esize: usize) -> Result<(), EntryError> {
        match self.flags {
            0 if self.codec == Codec::Constant && self.stored_len == 0 => {
                Err(EntryError::ConstantWithoutFlag)
            }
            0 => Ok(()),
            FLAG_LOST
                if self.offset == 0
                    && self.stored_len == 0
                    && self.codec == Codec::None
                    && self.filter == Filter::None =>
            {
                Ok(())
            }
            FLAG_CONSTANT
                if self.stored_len == 0
                    && self.codec == Codec::Constant
                    && self.filter == Filter::None
                    && (1..=8).contains(&esize)
                    && (esize == 8 || self.offset >> (8 * esize) == 0) =>
            {
                Ok(())
            }
            flags => Err(EntryError::Invalid {
                flags,
                codec: self.codec,
                filter: self.filter,
                stored_len: self.stored_len,
            }),
        }
    }
}

/// Encodes an index section: its header, the block entries, then the entries of the constants
/// frames (their count in the header's second word).
///
/// ```
/// use nc3pack::format::{decode_index, encode_index, index_len, Codec, Filter, IndexEntry};
/// let block = IndexEntry { offset: 100, stored_len: 9, codec: Codec::Zstd, filter: Filter::Shuffle, flags: 0 };
/// let constants = IndexEntry { offset: 145, stored_len: 32, codec: Codec::None, filter: Filter::None, flags: 0 };
/// let b = encode_index(&[block], &[constants]);
/// assert_eq!(Some(b.len() as u64), index_len(1, 1));
/// assert_eq!(decode_index(&b, 1), Ok((vec![block], vec![constants])));
/// ```
pub fn encode_index(entries: &[IndexEntry], constants_frames: &[IndexEntry]) -> Vec<u8> {
    let n = entries.len() + constants_frames.len();
    let mut b = Vec::with_capacity(INDEX_HEADER_LEN + n * INDEX_ENTRY_LEN);
    b.extend_from_slice(&INDEX_MAGIC);
    b.extend_from_slice(&(constants_frames.len() as u32).to_le_bytes());
    b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for e in entries.iter().chain(constants_frames) {
        b.extend_from_slice(&e.encode());
    }
    b
}

/// Length of an index section of `blocks` block entries and `constants_frames` constants frame
/// entries; `None` if it does not fit 64 bits.
///
/// ```
/// assert_eq!(nc3pack::format::index_len(3, 1), Some(16 + 4 * 16));
/// assert_eq!(nc3pack::format::index_len(u64::MAX, 1), None);
/// ```
pub fn index_len(blocks: u64, constants_frames: u64) -> Option<u64> {
    blocks
        .checked_add(constants_frames)?
        .checked_mul(INDEX_ENTRY_LEN as u64)?
        .checked_add(INDEX_HEADER_LEN as u64)
}

/// Decodes an index section of which `expected` block entries are expected: returns the block
/// entries and the constants frames' entries (see [`encode_index`] for an example). The same
/// as giving all of `b` to an [`IndexDecoder`].
///
/// ```
/// use nc3pack::{error::IndexError, format::{decode_index, encode_index}};
/// let b = encode_index(&[], &[]);
/// assert_eq!(decode_index(&b, 2), Err(IndexError::Count { found: 0, expected: 2 }));
/// ```
///
/// # Errors
///
/// An [`IndexError`] saying what is wrong.
pub fn decode_index(
    b: &[u8],
    expected: u64,
) -> Result<(Vec<IndexEntry>, Vec<IndexEntry>), IndexError> {
    let mut d = IndexDecoder::new(b.len() as u64, expected);
    d.push(b);
    d.finish()
}

/// Decodes an index section given in pieces, in order, to the entries and errors that
/// [`decode_index`] gives for the whole, and computes the section's CRC32C on the way: a reader
/// reads a large index through a small buffer instead of holding its bytes and its entries at
/// once (the entries take the memory the section takes).
///
/// ```
/// use nc3pack::format::{crc, encode_index, Codec, Filter, IndexDecoder, IndexEntry};
/// let block = IndexEntry { offset: 100, stored_len: 9, codec: Codec::Zstd, filter: Filter::Shuffle, flags: 0 };
/// let b = encode_index(&[block, block], &[]);
/// let mut d = IndexDecoder::new(b.len() as u64, 2);
/// for piece in b.chunks(7) {
///     d.push(piece);
/// }
/// assert_eq!(d.crc(), crc(&b));
/// assert_eq!(d.finish(), Ok((vec![block, block], vec![])));
/// ```
#[derive(Debug)]
pub struct IndexDecoder {
    /// The section's length: what the pieces add up to.
    len: u64,
    /// Block entries the layout needs.
    expected: u64,
    /// Bytes given so far.
    seen: u64,
    /// CRC32C of those bytes.
    crc: u32,
    /// The start of a header or entry cut by the end of a piece.
    carry: [u8; INDEX_ENTRY_LEN],
    /// How many bytes of `carry` hold it.
    carried: usize,
    /// Block entries the header declares (`None` before the header).
    blocks: Option<u64>,
    /// Constants frames the header declares.
    constants_frames: u32,
    /// The entries decoded so far, block entries first.
    entries: Vec<IndexEntry>,
    /// The first thing found wrong; nothing is decoded after it.
    err: Option<IndexError>,
}

impl IndexDecoder {
    /// A decoder for a section of `len` bytes whose layout needs `expected` block entries.
    /// Nothing is allocated before the section's header agrees with `len` (then one vector
    /// of `len / 16` entries).
    ///
    /// ```
    /// let d = nc3pack::format::IndexDecoder::new(16, 0);
    /// assert_eq!(d.crc(), 0);
    /// ```
    pub fn new(len: u64, expected: u64) -> Self {
        IndexDecoder {
            len,
            expected,
            seen: 0,
            crc: 0,
            carry: [0; INDEX_ENTRY_LEN],
            carried: 0,
            blocks: None,
            constants_frames: 0,
            entries: Vec::new(),
            err: None,
        }
    }

    /// Takes the next `piece` of the section (any length).
    ///
    /// ```
    /// use nc3pack::format::{encode_index, IndexDecoder};
    /// let b = encode_index(&[], &[]);
    /// let mut d = IndexDecoder::new(b.len() as u64, 0);
    /// d.push(&b[..5]);
    /// d.push(&b[5..]);
    /// assert_eq!(d.finish(), Ok((vec![], vec![])));
    /// ```
    pub fn push(&mut self, mut piece: &[u8]) {
        self.crc = crc32c::crc32c_append(self.crc, piece);
        self.seen += piece.len() as u64;
        if self.err.is_some() {
            return;
        }
        if self.carried > 0 {
            let k = (INDEX_ENTRY_LEN - self.carried).min(piece.len());
            self.carry[self.carried..self.carried + k].copy_from_slice(&piece[..k]);
            self.carried += k;
            piece = &piece[k..];
            if self.carried < INDEX_ENTRY_LEN {
                return;
            }
            self.carried = 0;
            let record = self.carry;
            self.record(&record);
        }
        let mut records = piece.chunks_exact(INDEX_ENTRY_LEN);
        for r in &mut records {
            if self.err.is_some() {
                return;
            }
            self.record(r);
        }
        let rest = records.remainder();
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carried = rest.len();
    }

    /// CRC32C of the bytes given so far: the footer's `index_crc` once all are given.
    ///
    /// ```
    /// let mut d = nc3pack::format::IndexDecoder::new(9, 0);
    /// d.push(b"123456789");
    /// assert_eq!(d.crc(), 0xe306_9283);
    /// ```
    pub fn crc(&self) -> u32 {
        self.crc
    }

    /// The block entries and the constants frames' entries, as [`decode_index`] gives them.
    ///
    /// ```
    /// use nc3pack::{error::IndexError, format::IndexDecoder};
    /// let mut d = IndexDecoder::new(16, 0);
    /// d.push(b"N3ZI");
    /// assert_eq!(d.finish(), Err(IndexError::NoMagic));
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`IndexError`] found; [`IndexError::NoMagic`] for fewer bytes than a header,
    /// [`IndexError::Length`] for bytes that do not add up to the length given to
    /// [`IndexDecoder::new`].
    pub fn finish(mut self) -> Result<(Vec<IndexEntry>, Vec<IndexEntry>), IndexError> {
        if let Some(e) = self.err {
            return Err(e);
        }
        let Some(blocks) = self.blocks else {
            return Err(IndexError::NoMagic);
        };
        if self.seen != self.len || self.carried != 0 {
            return Err(IndexError::Length {
                len: self.seen as usize,
                blocks,
                constants_frames: self.constants_frames,
            });
        }
        // One vector, cut in two (no copy of the block entries: opening an archive of many
        // blocks allocates and touches their entries once).
        let constants_frames = self.entries.split_off(blocks as usize);
        if let Some(t) = constants_frames
            .iter()
            .find(|t| t.flags != 0 || !is_constants_codec(t.codec, t.filter))
        {
            return Err(IndexError::ConstantsEntry {
                flags: t.flags,
                codec: t.codec,
                filter: t.filter,
            });
        }
        Ok((self.entries, constants_frames))
    }

    /// Decodes one record: the header first, then an entry.
    fn record(&mut self, r: &[u8]) {
        if self.blocks.is_some() {
            match IndexEntry::decode(r) {
                Ok(e) => self.entries.push(e),
                Err(e) => self.err = Some(e),
            }
            return;
        }
        if r[0..4] != INDEX_MAGIC {
            self.err = Some(IndexError::NoMagic);
            return;
        }
        let constants_frames = u32_at(r, 4);
        let n = u64_at(r, 8);
        if n != self.expected {
            self.err = Some(IndexError::Count {
                found: n,
                expected: self.expected,
            });
        } else if index_len(n, u64::from(constants_frames)) != Some(self.len) {
            self.err = Some(IndexError::Length {
                len: self.len as usize,
                blocks: n,
                constants_frames,
            });
        } else {
            // Bounded by the section's length, which the caller has (an archive's is inside
            // the file).
            let count = (self.len as usize - INDEX_HEADER_LEN) / INDEX_ENTRY_LEN;
            self.entries = Vec::with_capacity(count);
            self.blocks = Some(n);
            self.constants_frames = constants_frames;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::crc;

    #[test]
    fn an_index_in_pieces_of_any_length_decodes_as_the_whole() {
        // 5,000 block entries and 2 constants frames: more than one of the 64 KiB pieces an
        // archive's index is read in.
        let codecs = [Codec::Zstd, Codec::None, Codec::Deflate];
        let filters = [Filter::Shuffle, Filter::None];
        let blocks: Vec<IndexEntry> = (0..5000u64)
            .map(|i| IndexEntry {
                offset: 64 + 100 * i,
                stored_len: (i % 97) as u32,
                codec: codecs[i as usize % 3],
                filter: filters[i as usize % 2],
                flags: 0,
            })
            .collect();
        let constants = vec![
            IndexEntry {
                offset: 600_000,
                stored_len: 32,
                codec: Codec::None,
                filter: Filter::None,
                flags: 0,
            };
            2
        ];
        let good = encode_index(&blocks, &constants);
        let at = |entry: usize, field: usize| INDEX_HEADER_LEN + entry * INDEX_ENTRY_LEN + field;
        let set = |edits: &[(usize, u8)]| {
            let mut b = good.clone();
            for &(i, v) in edits {
                b[i] = v;
            }
            b
        };
        type Want = Result<(Vec<IndexEntry>, Vec<IndexEntry>), IndexError>;
        let cases: Vec<(Vec<u8>, u64, Want)> = vec![
            (good.clone(), 5000, Ok((blocks.clone(), constants.clone()))),
            (set(&[(0, b'X')]), 5000, Err(IndexError::NoMagic)),
            (good[..7].to_vec(), 5000, Err(IndexError::NoMagic)),
            (
                good.clone(),
                4999,
                Err(IndexError::Count {
                    found: 5000,
                    expected: 4999,
                }),
            ),
            (
                good[..good.len() - 16].to_vec(),
                5000,
                Err(IndexError::Length {
                    len: good.len() - 16,
                    blocks: 5000,
                    constants_frames: 2,
                }),
            ),
            // The first entry found wrong is the one named, in either piece.
            (
                set(&[(at(4500, 12), 200)]),
                5000,
                Err(IndexError::UnknownCodec { id: 200 }),
            ),
            (
                set(&[(at(4500, 12), 200), (at(10, 13), 250)]),
                5000,
                Err(IndexError::UnknownFilter { id: 250 }),
            ),
            (
                set(&[(at(5001, 14), 1)]),
                5000,
                Err(IndexError::ConstantsEntry {
                    flags: 1,
                    codec: Codec::None,
                    filter: Filter::None,
                }),
            ),
        ];
        for (b, expected, want) in &cases {
            assert_eq!(&decode_index(b, *expected), want);
            for k in [1, 5, 15, 16, 17, 4096, 65536, 65537] {
                let mut d = IndexDecoder::new(b.len() as u64, *expected);
                for piece in b.chunks(k) {
                    d.push(piece);
                }
                assert_eq!(d.crc(), crc(b), "pieces of {k}");
                assert_eq!(&d.finish(), want, "pieces of {k}");
            }
        }
        // Pieces that add up to less than the length given.
        let mut d = IndexDecoder::new(good.len() as u64, 5000);
        d.push(&good[..good.len() - 8]);
        assert_eq!(
            d.finish(),
            Err(IndexError::Length {
                len: good.len() - 8,
                blocks: 5000,
                constants_frames: 2,
            })
        );
    }
}
