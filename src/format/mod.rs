//! The .nc3z archive format, version 1.1: constants and the fixed-size structures.
//!
//! The byte-level specification is design/FORMAT.md; this module is its code. All integers are
//! little-endian. Every structure carries a CRC32C (Castagnoli) so that any damaged byte is
//! detected:
//!
//! ```text
//! lead (64 B) | header frame (36 + S B) | block frames ... | index (16 + 16 N B) | footer (32 B)
//! ```

/// First 8 bytes of every archive: `\x89 N C 3 Z \r \n \x1a` (PNG-style: a non-ASCII byte, then
/// line endings and a DOS EOF to detect text-mode transfer damage).
///
/// ```
/// use nc3pack::format::{Lead, LEAD_MAGIC};
/// let lead = Lead { file_len: 0, numrecs: 0, header_len: 0, block_size: 1 << 20, hash: 0, block_sizes_frame: false };
/// assert!(lead.encode().starts_with(&LEAD_MAGIC));
/// ```
pub const LEAD_MAGIC: [u8; 8] = *b"\x89NC3Z\r\n\x1a";
/// Format major version: readers refuse other majors.
///
/// ```
/// use nc3pack::format::{Lead, VERSION_MAJOR};
/// let lead = Lead { file_len: 0, numrecs: 0, header_len: 0, block_size: 1 << 20, hash: 0, block_sizes_frame: false };
/// assert_eq!(lead.encode()[8..10], VERSION_MAJOR.to_le_bytes());
/// ```
pub const VERSION_MAJOR: u16 = 1;
/// Format minor version: later minors add codecs, filters, flags or reserved-field meanings,
/// which older readers of the same major refuse by name (design/FORMAT.md, Versioning).
/// Version 1.1 adds per-variable block sizes (the lead's flag [`LEAD_FLAG_BLOCK_SIZES`] and a
/// block sizes frame); an archive that does not use them is written as 1.0, byte for byte as
/// before.
///
/// ```
/// use nc3pack::format::{Lead, VERSION_MINOR};
/// let lead = Lead { file_len: 0, numrecs: 0, header_len: 0, block_size: 1 << 20, hash: 0, block_sizes_frame: true };
/// assert_eq!(lead.encode()[10..12], VERSION_MINOR.to_le_bytes());
/// let lead = Lead { block_sizes_frame: false, ..lead };
/// assert_eq!(lead.encode()[10..12], [0, 0]); // 1.0
/// ```
pub const VERSION_MINOR: u16 = 1;
/// Lead flag (bit 0 of the flags at offset 12, format 1.1): a block sizes frame, giving each
/// variable's block size, follows the header frame (see [`BlockSizes`]).
///
/// ```
/// use nc3pack::format::{Lead, LEAD_FLAG_BLOCK_SIZES};
/// let lead = Lead { file_len: 0, numrecs: 0, header_len: 0, block_size: 1 << 20, hash: 0, block_sizes_frame: true };
/// assert_eq!(lead.encode()[12..16], LEAD_FLAG_BLOCK_SIZES.to_le_bytes());
/// ```
pub const LEAD_FLAG_BLOCK_SIZES: u32 = 1;
/// Size of the lead.
///
/// ```
/// use nc3pack::format::{Lead, LEAD_LEN};
/// assert_eq!(LEAD_LEN, 64);
/// let lead = Lead { file_len: 0, numrecs: 0, header_len: 0, block_size: 1 << 20, hash: 0, block_sizes_frame: false };
/// assert_eq!(lead.encode().len(), LEAD_LEN);
/// ```
pub const LEAD_LEN: usize = 64;
/// Sync magic at the start of every block frame.
///
/// ```
/// use nc3pack::format::{Codec, Filter, FrameHeader, FRAME_MAGIC};
/// let h = FrameHeader { stored_len: 0, decoded_len: 0, stream: 0, block: 0,
///     codec: Codec::None, filter: Filter::None, esize: 1, payload_crc: 0 };
/// assert!(h.encode().starts_with(&FRAME_MAGIC));
/// ```
pub const FRAME_MAGIC: [u8; 4] = *b"\xb7N3B";
/// Size of a frame header.
///
/// ```
/// assert_eq!(nc3pack::format::FRAME_HEADER_LEN, 36);
/// ```
pub const FRAME_HEADER_LEN: usize = 36;
/// Magic at the start of the index section.
///
/// ```
/// assert_eq!(&nc3pack::format::INDEX_MAGIC, b"N3ZI");
/// ```
pub const INDEX_MAGIC: [u8; 4] = *b"N3ZI";
/// Size of the index section's own header.
///
/// ```
/// assert_eq!(nc3pack::format::INDEX_HEADER_LEN, 16);
/// ```
pub const INDEX_HEADER_LEN: usize = 16;
/// Size of one index entry.
///
/// ```
/// use nc3pack::format::{IndexEntry, INDEX_ENTRY_LEN};
/// assert_eq!(IndexEntry::constant(&[1]).encode().len(), INDEX_ENTRY_LEN);
/// assert_eq!(INDEX_ENTRY_LEN, 16);
/// ```
pub const INDEX_ENTRY_LEN: usize = 16;
/// Size of the footer.
///
/// ```
/// use nc3pack::format::{Footer, FOOTER_LEN};
/// let f = Footer { index_offset: 0, index_len: 0, index_crc: 0, flags: 0 };
/// assert_eq!(f.encode().len(), FOOTER_LEN);
/// assert_eq!(FOOTER_LEN, 32);
/// ```
pub const FOOTER_LEN: usize = 32;
/// Last 4 bytes of every archive.
///
/// ```
/// use nc3pack::format::{Footer, FOOTER_MAGIC};
/// let f = Footer { index_offset: 0, index_len: 0, index_crc: 0, flags: 0 };
/// assert!(f.encode().ends_with(&FOOTER_MAGIC));
/// ```
pub const FOOTER_MAGIC: [u8; 4] = *b"N3Z\xef";
/// Frame variable id of the residual-bytes stream.
///
/// ```
/// assert_eq!(nc3pack::format::RESIDUAL_ID, u32::MAX);
/// ```
pub const RESIDUAL_ID: u32 = u32::MAX;
/// Frame variable id of the netCDF header frame (the original header, right after the lead).
///
/// ```
/// assert_eq!(nc3pack::format::HEADER_ID, u32::MAX - 2);
/// ```
pub const HEADER_ID: u32 = u32::MAX - 2;
/// Largest original header an archive may declare (1 GiB): the largest header the netCDF-3
/// parser takes (see design/FORMAT.md, "Limits").
pub use crate::nc3::MAX_HEADER_LEN;
/// Frame stream id of the early shared stream, which holds the small fixed variables of a large
/// file (see [`shared_max`], [`SPLIT_MIN`]).
///
/// ```
/// assert_eq!(nc3pack::format::SHARED_EARLY_ID, u32::MAX - 3);
/// ```
pub const SHARED_EARLY_ID: u32 = u32::MAX - 3;
/// Frame stream id of the late shared stream, which holds the other small streams.
///
/// ```
/// assert_eq!(nc3pack::format::SHARED_LATE_ID, u32::MAX - 4);
/// ```
pub const SHARED_LATE_ID: u32 = u32::MAX - 4;
/// Files whose header declares data ending past this many bytes keep their small fixed
/// variables in the early shared stream, which is written as soon as they have been read (a cut
/// archive then keeps them); smaller files have one shared stream.
///
/// ```
/// assert_eq!(nc3pack::format::SPLIT_MIN, 4 * 1024 * 1024);
/// ```
pub const SPLIT_MIN: u64 = 4 << 20;
/// Streams of at most this many bytes (and at most one block) live in a shared stream.
///
/// ```
/// assert_eq!(nc3pack::format::SHARED_MAX, 4096);
/// ```
pub const SHARED_MAX: u64 = 4096;
/// Index entry flag: the block was lost (set by reindex); reading it is an error.
///
/// ```
/// use nc3pack::format::{Codec, Filter, IndexEntry, FLAG_LOST};
/// let lost = IndexEntry { offset: 0, stored_len: 0, codec: Codec::None, filter: Filter::None, flags: FLAG_LOST };
/// assert!(lost.is_lost());
/// assert_eq!(lost.check(4), Ok(()));
/// ```
pub const FLAG_LOST: u16 = 1;
/// Index entry flag: the block is one element repeated and has no frame; the element is in the
/// entry's offset field (see [`IndexEntry::constant`]). Constants frames list these blocks so
/// that a scan can recover them.
///
/// ```
/// use nc3pack::format::{IndexEntry, FLAG_CONSTANT};
/// assert_eq!(IndexEntry::constant(&[9]).flags, FLAG_CONSTANT);
/// ```
pub const FLAG_CONSTANT: u16 = 2;
/// Frame stream id of a constants frame: a table of runs of constant blocks (see
/// [`ConstantRun`]), numbered 0, 1, 2, ... in the block field.
///
/// ```
/// assert_eq!(nc3pack::format::CONSTANTS_ID, u32::MAX - 5);
/// ```
pub const CONSTANTS_ID: u32 = u32::MAX - 5;
/// Size of one run record in a constants frame.
///
/// ```
/// use nc3pack::format::{ConstantRun, RUN_LEN};
/// let r = ConstantRun { stream: 0, first: 0, count: 1, value: [0; 8] };
/// assert_eq!(r.encode().len(), RUN_LEN);
/// ```
pub const RUN_LEN: usize = 32;
/// Most runs in one constants frame (128 KiB decoded).
///
/// ```
/// use nc3pack::format::{MAX_RUNS_PER_FRAME, RUN_LEN};
/// assert_eq!(MAX_RUNS_PER_FRAME * RUN_LEN, 128 * 1024);
/// ```
pub const MAX_RUNS_PER_FRAME: usize = 4096;
/// Largest block size an archive may declare (1 GiB).
///
/// ```
/// assert_eq!(nc3pack::format::MAX_BLOCK_SIZE, 1 << 30);
/// ```
pub const MAX_BLOCK_SIZE: u32 = 1 << 30;
/// Smallest block size an archive may declare: the largest element size.
///
/// ```
/// assert_eq!(nc3pack::format::MIN_BLOCK_SIZE, 8);
/// ```
pub const MIN_BLOCK_SIZE: u32 = 8;

pub(crate) mod codecs;
pub mod compact;
pub mod error;
pub(crate) mod filters;
mod index;
pub(crate) mod streams;

pub use index::{decode_index, encode_index, index_len, IndexDecoder, IndexEntry};

use self::error::{BlockSizesError, ConstantsError, FooterError, FrameHeaderError, LeadError};

/// CRC32C of `b`.
///
/// ```
/// // The check value of CRC-32C (Castagnoli), as design/FORMAT.md states it.
/// assert_eq!(nc3pack::format::crc(b"123456789"), 0xE306_9283);
/// ```
pub fn crc(b: &[u8]) -> u32 {
    crc32c::crc32c(b)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Defines [`Codec`] from the registry's lines ([`codecs`]): the variants with their wire ids,
/// [`Codec::from_id`] and [`Codec::name`].
macro_rules! wire_codecs {
    ($(
        $(#[doc = $doc:literal])*
        $(#[cfg($cfg:meta)])?
        $v:ident = $id:literal, $name:literal, $($imp:ident)::+, [$($flag:ident),*];
    )*) => {
        /// Block compression codec, recorded per block (one line each in the codec registry,
        /// `src/format/codecs.rs`).
        ///
        /// ```
        /// use nc3pack::format::Codec;
        /// assert_eq!(Codec::Deflate as u8, 2);
        /// assert_eq!(Codec::from_id(2).map(Codec::name), Some("deflate"));
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Codec {
            $(
                $(#[doc = $doc])*
                $(#[cfg($cfg)])?
                $v = $id,
            )*
        }

        impl Codec {
            /// Every codec, in the registry's order.
            pub(crate) const ALL: &'static [Codec] = &[$($(#[cfg($cfg)])? Codec::$v,)*];

            /// The codec with id `id`.
            ///
            /// ```
            /// use nc3pack::format::Codec;
            /// assert_eq!(Codec::from_id(1), Some(Codec::Zstd));
            /// assert_eq!(Codec::from_id(9), None);
            /// ```
            pub fn from_id(id: u8) -> Option<Codec> {
                match id {
                    $($(#[cfg($cfg)])? $id => Some(Codec::$v),)*
                    _ => None,
                }
            }

            /// Name as on the command line.
            ///
            /// ```
            /// use nc3pack::format::Codec;
            /// assert_eq!(Codec::Deflate.name(), "deflate");
            /// assert_eq!("deflate".parse::<Codec>().unwrap(), Codec::Deflate);
            /// ```
            pub const fn name(self) -> &'static str {
                match self {
                    $($(#[cfg($cfg)])? Codec::$v => $name,)*
                }
            }

            /// The capabilities of its registry line.
            const fn flags(self) -> u8 {
                match self {
                    $($(#[cfg($cfg)])? Codec::$v => 0 $(| $flag)*,)*
                }
            }
        }
    };
}
codecs::codecs!(wire_codecs);

/// Capability of a codec's registry line: a `--codec` choice.
const USER: u8 = 1;
/// Capability of a codec's registry line: its data may follow the refs filter's prefix.
const REFS: u8 = 2;
/// Capability of a codec's registry line: it decodes bytes (`BlockCodec::decompress_into`),
/// which a byte filter then undoes.
const BYTES: u8 = 4;
/// Capability of a codec's registry line: it decodes the numbers a numeric front-end leaves
/// (`BlockCodec::decode_numbers`).
const NUMBERS: u8 = 8;
/// Capability of a codec's registry line: it decodes the start of a block without the rest
/// (`BlockCodec::decompress_upto` stops early); of a filter's: it undoes a part of a block from
/// the start of the codec's bytes.
const PART: u8 = 16;

impl Codec {
    /// Whether a user may choose the codec (`--codec`, [`Codec::NAMES`]): its registry line's
    /// `USER`.
    pub(crate) const fn user_choice(self) -> bool {
        self.flags() & USER != 0
    }

    /// Whether the codec decodes bytes that a byte filter then undoes: its registry line's
    /// `BYTES` (pco and context decode numbers instead).
    pub(crate) const fn decodes_bytes(self) -> bool {
        self.flags() & BYTES != 0
    }

    /// Whether the codec decodes the start of a block without the rest, so that a small read
    /// stops early: its registry line's `PART`.
    pub(crate) const fn decodes_part(self) -> bool {
        self.flags() & PART != 0
    }
}

/// Defines [`Filter`] from the registry's lines ([`filters`]): the variants with their wire
/// ids, [`Filter::from_id`], [`Filter::name`] and the capabilities.
macro_rules! wire_filters {
    ($(
        $(#[doc = $doc:literal])*
        $(#[cfg($cfg:meta)])?
        $v:ident = $id:literal, $name:literal, $kind:ident $($imp:ident)::+, $needs:ident,
            [$($flag:ident),*];
    )*) => {
        /// Reversible transform applied before the codec, recorded per block (one line each in
        /// the filter registry, `src/format/filters.rs`).
        ///
        /// ```
        /// use nc3pack::format::Filter;
        /// assert_eq!(Filter::ZigZagDelta as u8, 4);
        /// assert_eq!(Filter::from_id(4).map(Filter::name), Some("zzdelta"));
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Filter {
            $(
                $(#[doc = $doc])*
                $(#[cfg($cfg)])?
                $v = $id,
            )*
        }

        impl Filter {
            /// Every filter, in the registry's order.
            pub(crate) const ALL: &'static [Filter] = &[$($(#[cfg($cfg)])? Filter::$v,)*];

            /// The filter with id `id`.
            ///
            /// ```
            /// use nc3pack::format::Filter;
            /// assert_eq!(Filter::from_id(1), Some(Filter::Shuffle));
            /// ```
            pub fn from_id(id: u8) -> Option<Filter> {
                match id {
                    $($(#[cfg($cfg)])? $id => Some(Filter::$v),)*
                    _ => None,
                }
            }

            /// Name for display.
            ///
            /// ```
            /// assert_eq!(nc3pack::format::Filter::ZigZagDelta.name(), "zzdelta");
            /// ```
            pub const fn name(self) -> &'static str {
                match self {
                    $($(#[cfg($cfg)])? Filter::$v => $name,)*
                }
            }

            /// The capability of the codec registry its codec must have.
            const fn needs(self) -> u8 {
                match self {
                    $($(#[cfg($cfg)])? Filter::$v => $needs,)*
                }
            }

            /// The capabilities of its registry line.
            const fn flags(self) -> u8 {
                match self {
                    $($(#[cfg($cfg)])? Filter::$v => 0 $(| $flag)*,)*
                }
            }
        }
    };
}
filters::filters!(wire_filters);

/// What a filter's registry line asks of its codec when it goes with every codec (`none`).
const ANY: u8 = 0;
/// Capability of a filter's registry line: it leaves the bytes as they are. (Its `PART` is the
/// codecs' bit: it undoes a part of a block from the start of the codec's bytes.)
const SAME: u8 = 32;

impl Filter {
    /// Whether a user may choose the filter (`--filter`, [`crate::FilterMode::NAMES`]): its
    /// registry line's `USER`.
    pub(crate) const fn user_choice(self) -> bool {
        self.flags() & USER != 0
    }

    /// Whether a frame with codec `codec` and this filter is a valid pair (design/FORMAT.md,
    /// "Valid pairs"): the codec has the capability the filter's registry line asks for.
    pub(crate) const fn goes_with(self, codec: Codec) -> bool {
        codec.flags() & self.needs() == self.needs()
    }

    /// Whether the filter undoes a part of a block from the start of its codec's bytes (its
    /// registry line's `PART`), so that a small read of a frame whose codec decodes bytes
    /// need not decode the rest.
    pub(crate) const fn undoes_part(self) -> bool {
        self.flags() & PART != 0
    }

    /// Whether the filter leaves the bytes as they are (its registry line's `SAME`: `none`),
    /// so that the codec decodes straight into the block.
    pub(crate) const fn is_same(self) -> bool {
        self.flags() & SAME != 0
    }
}

/// The archive's fixed-size first structure.
///
/// ```
/// use nc3pack::format::Lead;
/// let lead = Lead { file_len: 1000, numrecs: 3, header_len: 200, block_size: 1 << 20, hash: 7, block_sizes_frame: false };
/// let bytes = lead.encode();
/// assert_eq!(Lead::decode(&bytes), Ok(lead));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lead {
    /// Length of the original netCDF-3 file.
    pub file_len: u64,
    /// Materialized number of records.
    pub numrecs: u64,
    /// Length of the netCDF-3 header that follows the lead.
    pub header_len: u64,
    /// Nominal block size in decoded bytes (each variable snaps it down to whole elements).
    pub block_size: u32,
    /// XXH3-128 of the original file.
    pub hash: u128,
    /// Whether a block sizes frame follows the header frame (format 1.1, lead flag
    /// [`LEAD_FLAG_BLOCK_SIZES`]): then the variables' block sizes are its, and `block_size` is
    /// that of the residual and shared streams (and the default). Written as 1.0 when false.
    pub block_sizes_frame: bool,
}

impl Lead {
    /// Encodes the lead.
    ///
    /// ```
    /// use nc3pack::format::{Lead, LEAD_LEN, LEAD_MAGIC};
    /// let lead = Lead { file_len: 1000, numrecs: 3, header_len: 200, block_size: 1 << 20, hash: 7, block_sizes_frame: false };
    /// let b = lead.encode();
    /// assert_eq!(b.len(), LEAD_LEN);
    /// assert_eq!(b[..8], LEAD_MAGIC);
    /// assert_eq!(b[16..24], 1000u64.to_le_bytes()); // file_len, little-endian
    /// ```
    pub fn encode(&self) -> [u8; LEAD_LEN] {
        let mut b = [0u8; LEAD_LEN];
        b[0..8].copy_from_slice(&LEAD_MAGIC);
        b[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
        if self.block_sizes_frame {
            b[10..12].copy_from_slice(&VERSION_MINOR.to_le_bytes());
            b[12..16].copy_from_slice(&LEAD_FLAG_BLOCK_SIZES.to_le_bytes());
        }
        // Otherwise version 1.0 and flags 0, as every archive before 1.1.
        b[16..24].copy_from_slice(&self.file_len.to_le_bytes());
        b[24..32].copy_from_slice(&self.numrecs.to_le_bytes());
        b[32..40].copy_from_slice(&self.header_len.to_le_bytes());
        b[40..44].copy_from_slice(&self.block_size.to_le_bytes());
        b[44..60].copy_from_slice(&self.hash.to_le_bytes());
        let c = crc(&b[..60]);
        b[60..64].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Decodes and checks a lead.
    ///
    /// ```
    /// use nc3pack::format::{error::LeadError, Lead};
    /// let lead = Lead { file_len: 1000, numrecs: 3, header_len: 200, block_size: 1 << 20, hash: 7, block_sizes_frame: false };
    /// let mut b = lead.encode();
    /// assert_eq!(Lead::decode(&b), Ok(lead));
    /// b[20] ^= 1; // a flipped bit fails the checksum
    /// assert_eq!(Lead::decode(&b), Err(LeadError::Checksum));
    /// assert_eq!(Lead::decode(&b[..10]), Err(LeadError::TooShort { len: 10 }));
    /// ```
    ///
    /// # Errors
    ///
    /// A [`LeadError`] saying what is wrong.
    pub fn decode(b: &[u8]) -> Result<Lead, LeadError> {
        if b.len() < LEAD_LEN {
            return Err(LeadError::TooShort { len: b.len() });
        }
        if b[0..8] != LEAD_MAGIC {
            return Err(LeadError::Magic);
        }
        let stored = u32_at(b, 60);
        if crc(&b[..60]) != stored {
            return Err(LeadError::Checksum);
        }
        let major = u16_at(b, 8);
        if major != VERSION_MAJOR {
            return Err(LeadError::Version {
                major,
                minor: u16_at(b, 10),
            });
        }
        let flags = u32_at(b, 12);
        let minor = u16_at(b, 10);
        if flags & !LEAD_FLAG_BLOCK_SIZES != 0 || (flags != 0 && minor < 1) {
            return Err(LeadError::Flags { flags, minor });
        }
        let lead = Lead {
            file_len: u64_at(b, 16),
            numrecs: u64_at(b, 24),
            header_len: u64_at(b, 32),
            block_size: u32_at(b, 40),
            hash: u128::from_le_bytes(b[44..60].try_into().unwrap_or([0; 16])),
            block_sizes_frame: flags & LEAD_FLAG_BLOCK_SIZES != 0,
        };
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&lead.block_size) {
            return Err(LeadError::BlockSize {
                block_size: lead.block_size,
            });
        }
        if lead.header_len > MAX_HEADER_LEN {
            return Err(LeadError::HeaderTooLong {
                header_len: lead.header_len,
            });
        }
        if lead.header_len > lead.file_len {
            return Err(LeadError::HeaderPastFile {
                header_len: lead.header_len,
                file_len: lead.file_len,
            });
        }
        Ok(lead)
    }
}

/// The header of a block frame.
///
/// ```
/// use nc3pack::format::{Codec, Filter, FrameHeader};
/// let h = FrameHeader { stored_len: 10, decoded_len: 40, stream: 2, block: 7,
///     codec: Codec::Zstd, filter: Filter::Shuffle, esize: 4, payload_crc: 0xdeadbeef };
/// assert_eq!(FrameHeader::decode(&h.encode()), Ok(h));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Bytes of payload after the header.
    pub stored_len: u32,
    /// Bytes after decoding.
    pub decoded_len: u32,
    /// Stream id: a variable's number, or [`RESIDUAL_ID`], [`HEADER_ID`], [`SHARED_EARLY_ID`],
    /// [`SHARED_LATE_ID`], [`CONSTANTS_ID`].
    pub stream: u32,
    /// Block number within the variable.
    pub block: u64,
    /// Codec.
    pub codec: Codec,
    /// Filter.
    pub filter: Filter,
    /// Element size the filter used.
    pub esize: u16,
    /// CRC32C of the payload.
    pub payload_crc: u32,
}

impl FrameHeader {
    /// Encodes the frame header, with its own CRC at the end.
    ///
    /// ```
    /// use nc3pack::format::{Codec, Filter, FrameHeader, FRAME_HEADER_LEN};
    /// let h = FrameHeader { stored_len: 10, decoded_len: 40, stream: 2, block: 7,
    ///     codec: Codec::Zstd, filter: Filter::Shuffle, esize: 4, payload_crc: 0 };
    /// let b = h.encode();
    /// assert_eq!(b.len(), FRAME_HEADER_LEN);
    /// assert_eq!(b[4..8], 10u32.to_le_bytes()); // stored_len
    /// ```
    pub fn encode(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        b[0..4].copy_from_slice(&FRAME_MAGIC);
        b[4..8].copy_from_slice(&self.stored_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.decoded_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.stream.to_le_bytes());
        b[16..24].copy_from_slice(&self.block.to_le_bytes());
        b[24] = self.codec as u8;
        b[25] = self.filter as u8;
        b[26..28].copy_from_slice(&self.esize.to_le_bytes());
        b[28..32].copy_from_slice(&self.payload_crc.to_le_bytes());
        let c = crc(&b[..32]);
        b[32..36].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Decodes and checks a frame header (magic, header CRC, codec and filter ids, and that the
    /// stored length does not exceed the decoded length).
    ///
    /// ```
    /// use nc3pack::format::{Codec, Filter, FrameHeader};
    /// let h = FrameHeader { stored_len: 10, decoded_len: 40, stream: 2, block: 7,
    ///     codec: Codec::Zstd, filter: Filter::Shuffle, esize: 4, payload_crc: 0 };
    /// let mut b = h.encode();
    /// assert_eq!(FrameHeader::decode(&b), Ok(h));
    /// b[5] ^= 1; // a flipped bit fails the header checksum
    /// assert!(FrameHeader::decode(&b).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`FrameHeaderError`] saying what is wrong.
    pub fn decode(b: &[u8]) -> Result<FrameHeader, FrameHeaderError> {
        if b.len() < FRAME_HEADER_LEN {
            return Err(FrameHeaderError::Short);
        }
        if b[0..4] != FRAME_MAGIC {
            return Err(FrameHeaderError::NoMagic);
        }
        if crc(&b[..32]) != u32_at(b, 32) {
            return Err(FrameHeaderError::HeaderChecksum);
        }
        let codec = Codec::from_id(b[24]).ok_or(FrameHeaderError::UnknownCodec { id: b[24] })?;
        let filter = Filter::from_id(b[25]).ok_or(FrameHeaderError::UnknownFilter { id: b[25] })?;
        let h = FrameHeader {
            stored_len: u32_at(b, 4),
            decoded_len: u32_at(b, 8),
            stream: u32_at(b, 12),
            block: u64_at(b, 16),
            codec,
            filter,
            esize: u16_at(b, 26),
            payload_crc: u32_at(b, 28),
        };
        if h.stored_len > h.decoded_len {
            return Err(FrameHeaderError::LengthMismatch {
                stored: h.stored_len,
                decoded: h.decoded_len,
            });
        }
        Ok(h)
    }
}

/// A run of constant blocks, as a constants frame records it: blocks `first .. first + count`
/// of stream `stream` (a frame stream id) all hold the element `value` (its first esize bytes;
/// the rest zero).
///
/// On disk, 32 bytes little-endian: stream (4), reserved 0 (4), first (8), count (8), value (8).
///
/// ```
/// use nc3pack::format::ConstantRun;
/// let r = ConstantRun { stream: 3, first: 10, count: 5, value: [0, 0, 0x80, 0x3f, 0, 0, 0, 0] };
/// assert_eq!(ConstantRun::decode_all(&r.encode()), Ok(vec![r]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantRun {
    /// Frame stream id (variable number, [`RESIDUAL_ID`], a shared stream's id).
    pub stream: u32,
    /// First block of the run.
    pub first: u64,
    /// Number of blocks (at least 1).
    pub count: u64,
    /// The element, in its first esize bytes.
    pub value: [u8; 8],
}

impl ConstantRun {
    /// Encodes the run record.
    ///
    /// ```
    /// use nc3pack::format::ConstantRun;
    /// let r = ConstantRun { stream: 3, first: 10, count: 5, value: [7, 0, 0, 0, 0, 0, 0, 0] };
    /// let b = r.encode();
    /// assert_eq!(b[..4], 3u32.to_le_bytes());
    /// assert_eq!(b[4..8], [0; 4]); // reserved
    /// assert_eq!(b[24], 7);
    /// ```
    pub fn encode(&self) -> [u8; RUN_LEN] {
        let mut b = [0u8; RUN_LEN];
        b[0..4].copy_from_slice(&self.stream.to_le_bytes());
        b[8..16].copy_from_slice(&self.first.to_le_bytes());
        b[16..24].copy_from_slice(&self.count.to_le_bytes());
        b[24..32].copy_from_slice(&self.value);
        b
    }

    /// Decodes a constants frame's decoded payload: whole records, reserved fields 0, counts at
    /// least 1 and no run past block 2^64.
    ///
    /// ```
    /// use nc3pack::format::{error::ConstantsError, ConstantRun};
    /// let a = ConstantRun { stream: 1, first: 0, count: 2, value: [0; 8] };
    /// let b = ConstantRun { stream: 2, first: 4, count: 1, value: [1; 8] };
    /// let bytes = [a.encode(), b.encode()].concat();
    /// assert_eq!(ConstantRun::decode_all(&bytes), Ok(vec![a, b]));
    /// assert_eq!(ConstantRun::decode_all(&bytes[..40]), Err(ConstantsError::Length { len: 40 }));
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConstantsError::Length`] or [`ConstantsError::Record`].
    pub fn decode_all(b: &[u8]) -> Result<Vec<ConstantRun>, ConstantsError> {
        if !b.len().is_multiple_of(RUN_LEN) {
            return Err(ConstantsError::Length { len: b.len() });
        }
        b.chunks_exact(RUN_LEN)
            .enumerate()
            .map(|(i, r)| {
                let run = ConstantRun {
                    stream: u32_at(r, 0),
                    first: u64_at(r, 8),
                    count: u64_at(r, 16),
                    value: r[24..32].try_into().unwrap_or([0; 8]),
                };
                if u32_at(r, 4) != 0 || run.count == 0 || run.first.checked_add(run.count).is_none()
                {
                    return Err(ConstantsError::Record { index: i });
                }
                Ok(run)
            })
            .collect()
    }
}

/// Whether a constants frame may have this codec and filter: none or zstd, no filter, as the
/// packer writes it.
///
/// ```
/// use nc3pack::format::{is_constants_codec, Codec, Filter};
/// assert!(is_constants_codec(Codec::Zstd, Filter::None));
/// assert!(!is_constants_codec(Codec::Deflate, Filter::None));
/// ```
pub fn is_constants_codec(codec: Codec, filter: Filter) -> bool {
    matches!(codec, Codec::None | Codec::Zstd) && filter == Filter::None
}

/// A frame of bytes (esize 1, no filter) of stream id `stream`, block `block`: `payload`, which
/// `codec` decodes to `decoded_len` bytes. The header frame, the constants frames and the block
/// sizes frame are such frames (their payload compressed by `codec`, which this module knows
/// nothing of).
///
/// ```
/// use nc3pack::format::{bytes_frame, Codec, FrameHeader, FRAME_HEADER_LEN, HEADER_ID};
/// let f = bytes_frame(HEADER_ID, 0, 3, Codec::None, b"CDF");
/// let h = FrameHeader::decode(&f).unwrap();
/// assert_eq!((h.stream, h.stored_len, h.decoded_len), (HEADER_ID, 3, 3));
/// assert_eq!(&f[FRAME_HEADER_LEN..], b"CDF");
/// ```
pub fn bytes_frame(
    stream: u32,
    block: u64,
    decoded_len: usize,
    codec: Codec,
    payload: &[u8],
) -> Vec<u8> {
    let h = FrameHeader {
        stored_len: payload.len() as u32,
        decoded_len: decoded_len as u32,
        stream,
        block,
        codec,
        filter: Filter::None,
        esize: 1,
        payload_crc: crc(payload),
    };
    let mut out = h.encode().to_vec();
    out.extend_from_slice(payload);
    out
}

/// The archive's fixed-size last structure.
///
/// ```
/// use nc3pack::format::Footer;
/// let f = Footer { index_offset: 500, index_len: 48, index_crc: 7, flags: 0 };
/// assert_eq!(Footer::decode(&f.encode()), Ok(f));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Archive offset of the index section.
    pub index_offset: u64,
    /// Length of the index section.
    pub index_len: u64,
    /// CRC32C of the index section.
    pub index_crc: u32,
    /// Flags: reserved, 0.
    pub flags: u32,
}

impl Footer {
    /// Encodes the footer.
    ///
    /// ```
    /// use nc3pack::format::{Footer, FOOTER_LEN};
    /// let f = Footer { index_offset: 500, index_len: 48, index_crc: 7, flags: 0 };
    /// let b = f.encode();
    /// assert_eq!(b.len(), FOOTER_LEN);
    /// assert_eq!(b[..8], 500u64.to_le_bytes());
    /// ```
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.index_len.to_le_bytes());
        b[16..20].copy_from_slice(&self.index_crc.to_le_bytes());
        b[20..24].copy_from_slice(&self.flags.to_le_bytes());
        let c = crc(&b[..24]);
        b[24..28].copy_from_slice(&c.to_le_bytes());
        b[28..32].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    /// Decodes and checks a footer.
    ///
    /// ```
    /// use nc3pack::format::Footer;
    /// let f = Footer { index_offset: 500, index_len: 48, index_crc: 7, flags: 0 };
    /// let mut b = f.encode();
    /// assert_eq!(Footer::decode(&b), Ok(f));
    /// b[0] ^= 1; // a flipped bit fails the footer's checksum
    /// assert!(Footer::decode(&b).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`FooterError`] saying what is wrong.
    pub fn decode(b: &[u8]) -> Result<Footer, FooterError> {
        if b.len() < FOOTER_LEN {
            return Err(FooterError::Short);
        }
        if b[28..32] != FOOTER_MAGIC {
            return Err(FooterError::NoMagic);
        }
        if crc(&b[..24]) != u32_at(b, 24) {
            return Err(FooterError::Checksum);
        }
        let flags = u32_at(b, 20);
        if flags != 0 {
            return Err(FooterError::Flags { flags });
        }
        Ok(Footer {
            index_offset: u64_at(b, 0),
            index_len: u64_at(b, 8),
            index_crc: u32_at(b, 16),
            flags,
        })
    }
}

/// Frame stream id of the block sizes frame (format 1.1), right after the header frame when the
/// lead has [`LEAD_FLAG_BLOCK_SIZES`].
///
/// ```
/// assert_eq!(nc3pack::format::BLOCK_SIZES_ID, u32::MAX - 6);
/// ```
pub const BLOCK_SIZES_ID: u32 = u32::MAX - 6;

/// The nominal block size of each stream: `default` (the lead's) for the residual and shared
/// streams and for every variable without one of its own in `vars` (one entry per variable in
/// header order, or empty when every variable uses the default).
///
/// ```
/// use nc3pack::format::BlockSizes;
/// let s = BlockSizes { default: 1 << 20, vars: vec![1 << 20, 4096] };
/// assert_eq!((s.var(0), s.var(1), s.var(7)), (1 << 20, 4096, 1 << 20));
/// assert!(!s.is_uniform());
/// assert!(BlockSizes::uniform(65536).is_uniform());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSizes {
    /// The lead's block size.
    pub default: u32,
    /// Per variable, in header order (empty: all `default`).
    pub vars: Vec<u32>,
}

impl BlockSizes {
    /// Every stream with block size `block_size`.
    ///
    /// ```
    /// assert_eq!(nc3pack::format::BlockSizes::uniform(8).var(3), 8);
    /// ```
    pub fn uniform(block_size: u32) -> BlockSizes {
        BlockSizes {
            default: block_size,
            vars: Vec::new(),
        }
    }

    /// Nominal block size of variable `v`.
    ///
    /// ```
    /// let s = nc3pack::format::BlockSizes { default: 64, vars: vec![8] };
    /// assert_eq!((s.var(0), s.var(1)), (8, 64));
    /// ```
    pub fn var(&self, v: usize) -> u32 {
        self.vars.get(v).copied().unwrap_or(self.default)
    }

    /// Whether every variable uses the default (then the archive has no block sizes frame and
    /// is format 1.0).
    ///
    /// ```
    /// let s = nc3pack::format::BlockSizes { default: 64, vars: vec![64, 64] };
    /// assert!(s.is_uniform());
    /// ```
    pub fn is_uniform(&self) -> bool {
        self.vars.iter().all(|&b| b == self.default)
    }

    /// The decoded payload of the block sizes frame for `nvars` variables (stream
    /// [`BLOCK_SIZES_ID`], block 0, esize 1, filter none, codec none or zstd): `nvars`
    /// little-endian u32 block sizes; [`BlockSizes::decode`] reads it back.
    ///
    /// ```
    /// use nc3pack::format::BlockSizes;
    /// let s = BlockSizes { default: 1 << 20, vars: vec![65536] };
    /// let table = s.table(2);
    /// assert_eq!(table.len(), 8);
    /// assert_eq!(BlockSizes::decode(&table, 1 << 20).unwrap().vars, vec![65536, 1 << 20]);
    /// ```
    pub fn table(&self, nvars: usize) -> Vec<u8> {
        (0..nvars).flat_map(|v| self.var(v).to_le_bytes()).collect()
    }

    /// Checks a block sizes frame's header for `nvars` variables (before its payload is read):
    /// stream, block, element size, codec, filter and decoded length as the packer writes them.
    ///
    /// ```
    /// use nc3pack::format::{bytes_frame, BlockSizes, Codec, FrameHeader, BLOCK_SIZES_ID};
    /// let table = BlockSizes { default: 64, vars: vec![8] }.table(1);
    /// let f = bytes_frame(BLOCK_SIZES_ID, 0, table.len(), Codec::None, &table);
    /// let h = FrameHeader::decode(&f).unwrap();
    /// assert!(BlockSizes::check_frame(&h, 1).is_ok());
    /// assert!(BlockSizes::check_frame(&h, 2).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`BlockSizesError::NotBlockSizesFrame`] naming what the frame header holds.
    pub fn check_frame(h: &FrameHeader, nvars: usize) -> Result<(), BlockSizesError> {
        let want = (nvars as u64).checked_mul(4);
        if h.stream != BLOCK_SIZES_ID
            || h.block != 0
            || h.esize != 1
            || !is_constants_codec(h.codec, h.filter)
            || want != Some(u64::from(h.decoded_len))
        {
            return Err(BlockSizesError::NotBlockSizesFrame {
                stream: h.stream,
                block: h.block,
                decoded: h.decoded_len,
                nvars: nvars as u64,
            });
        }
        Ok(())
    }

    /// The block sizes of a block sizes frame's decoded payload, with the lead's `default`.
    ///
    /// ```
    /// use nc3pack::format::BlockSizes;
    /// let table = [8u32.to_le_bytes(), 4096u32.to_le_bytes()].concat();
    /// assert_eq!(BlockSizes::decode(&table, 1 << 20), Ok(BlockSizes { default: 1 << 20, vars: vec![8, 4096] }));
    /// assert!(BlockSizes::decode(&0u32.to_le_bytes(), 1 << 20).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`BlockSizesError::Length`] for a table that is not whole u32s,
    /// [`BlockSizesError::OutOfRange`] for a size outside 8..=2^30 bytes.
    pub fn decode(table: &[u8], default: u32) -> Result<BlockSizes, BlockSizesError> {
        if !table.len().is_multiple_of(4) {
            return Err(BlockSizesError::Length { len: table.len() });
        }
        let vars: Vec<u32> = table.chunks_exact(4).map(|c| u32_at(c, 0)).collect();
        if let Some(var) = vars
            .iter()
            .position(|b| !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(b))
        {
            return Err(BlockSizesError::OutOfRange {
                var: var as u64,
                block_size: vars[var],
            });
        }
        Ok(BlockSizes { default, vars })
    }
}

/// Block size of variable data with element size `esize` for the nominal `block_size`: the
/// largest whole number of elements that fits, at least one element.
///
/// ```
/// assert_eq!(nc3pack::format::var_block_bytes(1000, 8), 1000);
/// assert_eq!(nc3pack::format::var_block_bytes(1001, 8), 1000);
/// assert_eq!(nc3pack::format::var_block_bytes(8, 8), 8);
/// ```
pub fn var_block_bytes(block_size: u32, esize: usize) -> u64 {
    let e = esize.max(1) as u64;
    (u64::from(block_size) / e).max(1) * e
}

/// Largest stream, in bytes, stored as a member of a shared stream for the nominal
/// `block_size`: [`SHARED_MAX`] or one block, whichever is smaller.
///
/// ```
/// assert_eq!(nc3pack::format::shared_max(1 << 20), 4096);
/// assert_eq!(nc3pack::format::shared_max(64), 64);
/// ```
pub fn shared_max(block_size: u32) -> u64 {
    SHARED_MAX.min(u64::from(block_size))
}

/// Number of blocks for `total` bytes in blocks of `block_bytes`.
///
/// ```
/// assert_eq!(nc3pack::format::block_count(10, 4), 3);
/// assert_eq!(nc3pack::format::block_count(0, 4), 0);
/// ```
pub fn block_count(total: u64, block_bytes: u64) -> u64 {
    total.div_ceil(block_bytes)
}

/// Decodes an archive's lead and footer (of an archive of `len` bytes) and checks them
/// against the input's `size` and `hash`; returns the lead's hash.
pub(crate) fn check_decoded(
    lead: &[u8],
    foot: &[u8],
    len: u64,
    size: u64,
    hash: Option<u128>,
) -> Result<u128, error::EndsError> {
    let lead = if compact::is_compact(lead) {
        // The compact form: its lead, and a footer whose index lies after the lead.
        let (lead, lead_len) = compact::decode_lead(lead).map_err(error::EndsError::Lead)?;
        let f = foot
            .len()
            .checked_sub(compact::COMPACT_FOOTER_LEN)
            .ok_or(error::EndsError::Footer(FooterError::Short))?;
        if foot[f + 8..] != FOOTER_MAGIC {
            return Err(error::EndsError::Footer(FooterError::NoMagic));
        }
        let index_len = u64::from(u32_at(foot, f));
        if (lead_len + compact::COMPACT_FOOTER_LEN) as u64 + index_len > len {
            return Err(error::EndsError::IndexEnd);
        }
        lead
    } else {
        if len < (LEAD_LEN + FOOTER_LEN) as u64 {
            return Err(error::EndsError::TooShort { len });
        }
        let lead = Lead::decode(lead).map_err(error::EndsError::Lead)?;
        let foot = Footer::decode(foot).map_err(error::EndsError::Footer)?;
        if foot.index_offset.checked_add(foot.index_len) != Some(len - FOOTER_LEN as u64) {
            return Err(error::EndsError::IndexEnd);
        }
        lead
    };
    if lead.file_len != size {
        return Err(error::EndsError::Size {
            restores: lead.file_len,
            size,
        });
    }
    if let Some(h) = hash.filter(|&h| h != lead.hash) {
        return Err(error::EndsError::Hash {
            found: lead.hash,
            recorded: h,
        });
    }
    Ok(lead.hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value_matches_the_spec() {
        // The standard check value of CRC-32C (iSCSI), as design/FORMAT.md states.
        assert_eq!(crc(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn lead_fields_sit_at_the_documented_offsets() {
        let b = Lead {
            file_len: 0x0102_0304_0506_0708,
            numrecs: 9,
            header_len: 10,
            block_size: 4096,
            hash: 0x1112_1314_1516_1718_191a_1b1c_1d1e_1f20,
            block_sizes_frame: false,
        }
        .encode();
        assert_eq!(&b[0..8], b"\x89NC3Z\r\n\x1a");
        assert_eq!(&b[8..12], &[1, 0, 0, 0]);
        assert_eq!(&b[16..24], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(b[24], 9);
        assert_eq!(b[32], 10);
        assert_eq!(&b[40..44], &[0, 0x10, 0, 0]);
        assert_eq!((b[44], b[59]), (0x20, 0x11));
        assert_eq!(&b[60..64], &crc(&b[..60]).to_le_bytes());
        let mut bad = b;
        bad[20] ^= 1;
        assert_eq!(Lead::decode(&bad), Err(LeadError::Checksum));
    }

    #[test]
    fn frame_and_footer_reject_damage() {
        let h = FrameHeader {
            stored_len: 5,
            decoded_len: 4,
            stream: 0,
            block: 0,
            codec: Codec::None,
            filter: Filter::None,
            esize: 1,
            payload_crc: 0,
        };
        assert_eq!(
            FrameHeader::decode(&h.encode()),
            Err(FrameHeaderError::LengthMismatch {
                stored: 5,
                decoded: 4
            })
        );
        let f = Footer {
            index_offset: 1,
            index_len: 2,
            index_crc: 3,
            flags: 0,
        }
        .encode();
        for i in 0..FOOTER_LEN {
            let mut g = f;
            g[i] ^= 0x40;
            assert!(Footer::decode(&g).is_err(), "flip at {i} not caught");
        }
    }
}
