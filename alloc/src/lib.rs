//! The global allocator of the `kruise` binary (issue 16): mimalloc, called with the least
//! alignment work each layout needs. Its own crate, so that the `kruise` crate keeps
//! `unsafe_code = "forbid"`.
//!
//! The `mimalloc` crate's `MiMalloc` sends every allocation through `mi_malloc_aligned`, even
//! when the layout asks for no more alignment than every mimalloc block has. For the 300 or so
//! small allocations of a pod review, that path cost about twice mimalloc's plain `mi_malloc`,
//! and every allocation above 1 KiB went through its generic path, which over-allocates by the
//! alignment (callgrind: `mi_malloc_aligned` 13.9k instructions per review in-process).
//!
//! mimalloc rounds every size up to whole machine words, and its blocks start on word boundaries
//! (`_mi_wsize_from_size`; power-of-two sizes are even naturally aligned up to 4 KiB): a layout
//! aligned to a word or less is served by `mi_malloc`, `mi_zalloc` and `mi_realloc`, any larger
//! alignment by their `_aligned` forms, as `MiMalloc` does for every layout.

#![no_std]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use libmimalloc_sys as ffi;

/// The alignment every mimalloc block has.
const WORD: usize = core::mem::size_of::<usize>();

/// mimalloc as the global allocator.
pub struct Mimalloc;

// SAFETY: every method returns what mimalloc returns for the layout: a block of at least
// `layout.size()` bytes aligned to `layout.align()` (by mimalloc's word alignment when
// `align <= WORD`, by the `_aligned` functions otherwise), or null when memory is exhausted;
// `dealloc` and `realloc` get blocks this allocator returned.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain C calls; any size is accepted.
        unsafe {
            if layout.align() <= WORD {
                ffi::mi_malloc(layout.size()).cast()
            } else {
                ffi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= WORD {
                ffi::mi_zalloc(layout.size()).cast()
            } else {
                ffi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator, so by mimalloc.
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was returned by this allocator for `layout`; the new block keeps the
        // alignment as `alloc` would give it.
        unsafe {
            if layout.align() <= WORD {
                ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Every layout comes back aligned, writable and zeroed by `alloc_zeroed`, and keeps its
    /// bytes through `realloc` growing and then shrinking, on both sides of the word, of 1 KiB
    /// and of mimalloc's large sizes; blocks stay allocated side by side until the end.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn blocks_are_aligned_zeroed_and_kept() {
        let a = Mimalloc;
        let sizes = [1usize, 3, 7, 8, 9, 15, 16, 17, 24, 31, 33, 48, 100, 1023, 1024, 1025, 4095, 4097, 70_000];
        let mut live = Vec::new();
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for &size in &sizes {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; every block is written within its size and freed
                // once, with the layout it has then.
                unsafe {
                    let z = a.alloc_zeroed(layout);
                    assert!(!z.is_null());
                    assert_eq!(z as usize % align, 0, "alloc_zeroed {size} bytes at {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0), "alloc_zeroed {size} bytes at {align}");
                    live.push((z, layout));

                    let mut p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "alloc {size} bytes at {align}");
                    p.write_bytes(0xa5, size);
                    let mut current = layout;
                    for new_size in [size * 3 + 5, size.div_ceil(2)] {
                        let kept = current.size().min(new_size);
                        p = a.realloc(p, current, new_size);
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "realloc {size} -> {new_size} at {align}");
                        assert!((0..kept).all(|i| *p.add(i) == 0xa5), "realloc {size} -> {new_size} at {align}");
                        p.write_bytes(0xa5, new_size);
                        current = Layout::from_size_align(new_size, align).unwrap();
                    }
                    live.push((p, current));
                }
            }
        }
        for (p, layout) in live {
            // SAFETY: allocated above with this layout, freed once.
            unsafe { a.dealloc(p, layout) };
        }
    }
}
