//! The decoding space a thread reuses from frame to frame ([`Space`]): buffers any codec or
//! filter may use, and each codec's own scratch ([`Scratch`]), kept by its type, so that no
//! file names every codec's scratch.

use std::any::Any;

use super::error::FrameError;
use super::pages::{prefault, PageBuf};

/// The buffers of a `DecodeScratch`, reused from frame to frame by the thread that holds it.
#[derive(Default)]
pub(crate) struct Space {
    /// Each codec's and front-end's own scratch (zstd's context, pco's words, what a
    /// front-end's prefix said, fit's working values).
    pub(crate) codecs: Scratch,
    /// A codec's output before the filter is undone (bytes, or a front-end's numbers).
    pub(crate) filtered: Vec<u8>,
    /// A codec's output when a front-end asks for residuals (plane, fit), as native numbers
    /// (aligned).
    pub(crate) words: Vec<u64>,
    /// A whole block, for a part of a block with a filter that does not undo a part.
    pub(crate) block: Vec<u8>,
    /// The buffer of a part decoder: the block decompressed, then the payload.
    pub(crate) part: Option<PageBuf>,
}

impl Space {
    /// The bytes its buffers hold (their capacity; a zstd context counts as 1).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.filtered.capacity()
            + self.block.capacity()
            + 8 * self.words.capacity()
            + self.codecs.kept.iter().map(|k| k.held()).sum::<usize>()
            + self.part.as_ref().map_or(0, |p| p.len())
    }
}

/// Scratch a codec keeps in a thread's [`Scratch`]: made empty ([`Default`]) at its first
/// frame, then reused.
pub(crate) trait KeptScratch: Any + Send {
    /// The bytes it holds.
    #[cfg(test)]
    fn held(&self) -> usize;
}

/// Each codec's scratch, one of each type, made at its first use.
#[derive(Default)]
pub(crate) struct Scratch {
    kept: Vec<Box<dyn KeptScratch>>,
}

impl Scratch {
    /// The scratch of type `T` (made empty if there is none yet).
    pub(crate) fn get<T: KeptScratch + Default>(&mut self) -> &mut T {
        let at = self.kept.iter().position(|k| (&**k as &dyn Any).is::<T>());
        let at = at.unwrap_or_else(|| {
            self.kept.push(Box::new(T::default()));
            self.kept.len() - 1
        });
        match (&mut *self.kept[at] as &mut dyn Any).downcast_mut() {
            Some(t) => t,
            None => unreachable!("kept by its type"),
        }
    }
}

/// Grows `v` to at least `n` elements (the new ones zero), or [`FrameError::NoMemory`]: the
/// buffers of decoding are sized by a frame's decoded length, which the machine may not have.
pub(crate) fn grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) -> Result<(), FrameError> {
    if v.len() < n {
        v.try_reserve(n - v.len())
            .map_err(|_| FrameError::NoMemory {
                len: n.saturating_mul(std::mem::size_of::<T>()) as u64,
            })?;
        prefault(v, n);
        v.resize(n, T::default());
    }
    Ok(())
}
