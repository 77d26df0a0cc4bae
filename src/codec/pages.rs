//! Memory a cold read writes: the pages of a fresh buffer mapped with one call instead of one
//! fault each ([`prefault`]), and the buffer of a first small read of a block ([`PageBuf`]:
//! its frame and the part of its block decoded), in a huge page where the system gives one.
//!
//! A fresh process that reads one value of a 1 MiB block reads its frame and decompresses
//! most of the block into memory it has never touched: on a virtual machine, mapping those
//! 350-odd pages costs as much as decompressing them. One 2 MiB huge page is mapped (and
//! zeroed) by the kernel in a fifth of that time.

/// The huge page size of x86-64 and of 4 KiB-page aarch64 (the transparent huge pages Linux
/// gives a region that asks for them).
const HUGE: usize = 2 << 20;

/// A [`PageBuf`] of at least this many bytes asks for huge pages: below it, mapping its
/// ordinary pages costs no more than zeroing a huge page.
const HUGE_MIN: usize = 512 << 10;

/// Spare capacity below which [`prefault`] does nothing: a few pages fault in cheaply.
const PREFAULT_MIN: usize = 64 << 10;

/// Has the system map the pages of `v`'s spare capacity up to element `upto` (when that is at
/// least [`PREFAULT_MIN`] bytes) now, with one call, instead of one page fault per page when they are first written: a
/// fresh buffer for a block of 1 MiB costs 256 faults, most of a cold one-value read's system
/// time. Pages already mapped stay as they are; the contents do not change. Linux (5.14 and
/// later) only; elsewhere, or when the call fails, the pages fault in as they are written.
/// True when the pages were mapped.
pub(crate) fn prefault<T>(v: &mut Vec<T>, upto: usize) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let want = upto.saturating_sub(v.len());
        let spare = v.spare_capacity_mut();
        let keep = want.min(spare.len());
        let spare = &mut spare[..keep];
        let bytes = std::mem::size_of_val(spare);
        if bytes < PREFAULT_MIN {
            return false;
        }
        let page = page_size();
        let start = spare.as_mut_ptr() as usize;
        let (lo, hi) = (start.next_multiple_of(page), (start + bytes) / page * page);
        // SAFETY: [lo, hi) lies within `v`'s allocation, owned here; MADV_POPULATE_WRITE
        // only maps its pages (as a write would), changing no byte of it.
        hi > lo
            && unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_POPULATE_WRITE) }
                == 0
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (v, upto);
        false
    }
}

/// The system's page size (4096 if it cannot be known), looked up once.
#[cfg(unix)]
fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf only reads a system value.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// A buffer of zero bytes in pages of its own (a memory map on Unix; elsewhere an ordinary
/// allocation): a buffer of at least [`HUGE_MIN`] bytes is aligned to [`HUGE`] bytes and asks
/// the system for huge pages (Linux: `MADV_HUGEPAGE`; when the system says no, it has
/// ordinary pages). Its pages are mapped as they are first written, or all at once by
/// [`PageBuf::prefault`].
pub(crate) struct PageBuf {
    #[cfg(unix)]
    ptr: std::ptr::NonNull<u8>,
    #[cfg(not(unix))]
    mem: Box<[u8]>,
    len: usize,
    /// The map `ptr` lies in: its start and length.
    #[cfg(unix)]
    map: (*mut libc::c_void, usize),
}

// SAFETY: a PageBuf owns its memory, as a Box<[u8]> does.
#[cfg(unix)]
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// `len` (at least 1) zero bytes, or None when the memory cannot be had.
    #[cfg(unix)]
    pub(crate) fn new(len: usize) -> Option<PageBuf> {
        let len = len.max(1);
        let huge = len >= HUGE_MIN;
        // Whole huge pages and one more, to start at a 2 MiB boundary.
        let map = if huge {
            len.checked_next_multiple_of(HUGE)?.checked_add(HUGE)?
        } else {
            len
        };
        // SAFETY: an anonymous private map of `map` bytes: fresh zero pages, owned here.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let mut start = p as usize;
        if huge {
            // The system gives a huge page only to an aligned 2 MiB of a map: the buffer starts
            // at the first boundary (the map's parts before and after it are never touched, so
            // they take no memory, and are left in place: cutting them off costs more).
            start = start.next_multiple_of(HUGE);
            #[cfg(any(target_os = "linux", target_os = "android"))]
            // SAFETY: the range is this map; MADV_HUGEPAGE changes no byte, only how its
            // pages are mapped when first written (an error leaves them ordinary).
            unsafe {
                libc::madvise(p, map, libc::MADV_HUGEPAGE);
            }
        }
        Some(PageBuf {
            ptr: std::ptr::NonNull::new(start as *mut u8)?,
            len,
            map: (p, map),
        })
    }

    /// `len` (at least 1) zero bytes, or None when the memory cannot be had.
    #[cfg(not(unix))]
    pub(crate) fn new(len: usize) -> Option<PageBuf> {
        let len = len.max(1);
        let mut v = Vec::new();
        v.try_reserve_exact(len).ok()?;
        v.resize(len, 0);
        Some(PageBuf {
            mem: v.into_boxed_slice(),
            len,
        })
    }

    /// Has the system map the pages of bytes `from..to` now, with one call (Linux 5.14 and
    /// later; elsewhere they fault in as they are written), when they are at least
    /// [`PREFAULT_MIN`] bytes. True when they were mapped.
    pub(crate) fn prefault(&mut self, from: usize, to: usize) -> bool {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let page = page_size();
            let start = self.ptr.as_ptr() as usize;
            let lo = (start + from.min(self.len)) / page * page;
            let hi = (start + to.min(self.len)).next_multiple_of(page);
            // SAFETY: [lo, hi) lies within the map (whole pages of it), owned here;
            // MADV_POPULATE_WRITE only maps its pages (as a write would), changing no byte.
            hi >= lo + PREFAULT_MIN
                && unsafe {
                    libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_POPULATE_WRITE)
                } == 0
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = (from, to);
            false
        }
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        #[cfg(unix)]
        // SAFETY: `len` bytes of the map, zero or written since, owned here.
        return unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        #[cfg(not(unix))]
        return &self.mem;
    }
}

impl std::ops::DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        #[cfg(unix)]
        // SAFETY: as in `deref`, borrowed mutably through `self`.
        return unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) };
        #[cfg(not(unix))]
        return &mut self.mem;
    }
}

#[cfg(unix)]
impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: the map made in `new`.
        unsafe {
            libc::munmap(self.map.0, self.map.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's minor page faults so far.
    #[cfg(target_os = "linux")]
    fn thread_faults() -> i64 {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes the struct it is given.
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
        u.ru_minflt
    }

    /// Page buffers of every size are zero, hold what is written, a big one starts on a
    /// huge page's boundary, and one whose pages were mapped in one call is then written with
    /// almost no page faults (it took one per page).
    #[test]
    fn page_buffers_are_zero_and_hold_what_is_written() {
        for n in [1usize, 4095, 100_000, HUGE_MIN, 1 << 20, (3 << 20) + 5] {
            let mut b = PageBuf::new(n).unwrap();
            assert_eq!(b.len(), n);
            if n >= HUGE_MIN {
                assert_eq!(b.as_ptr() as usize % HUGE, 0, "{n}");
            }
            #[cfg(target_os = "linux")]
            let (mapped, before) = (b.prefault(0, n), thread_faults());
            assert!(b.iter().all(|&x| x == 0), "{n}");
            for (i, x) in b.iter_mut().enumerate() {
                *x = (i % 251) as u8;
            }
            #[cfg(target_os = "linux")]
            if mapped {
                let faults = thread_faults() - before;
                assert!(faults < 32, "{faults} faults writing {n} prefaulted bytes");
            }
            assert!(b.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
        }
        // Too few to bother: nothing done.
        assert!(!PageBuf::new(4096).unwrap().prefault(0, 4096));
        // An impossible size: no buffer, no panic.
        assert!(PageBuf::new(usize::MAX - 4096).is_none());
    }
}
