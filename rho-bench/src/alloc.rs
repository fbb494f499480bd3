//! A global allocator that counts, when asked to: allocations, bytes
//! allocated, and bytes live.
//!
//! Counting is off by default. Off, each allocation costs one relaxed load
//! of a flag nobody writes while a figure is timed, so the timed figures
//! run at the system allocator's speed. On, every allocation and free of
//! every thread (the loop's and the workers') goes through shared atomics:
//! it is switched on only around the passes that count, never while timing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// The system allocator, counted while [`Counting::start`] is in force.
pub(crate) struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

/// What was counted between two reads.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    /// Allocations (`alloc`, `alloc_zeroed`, and each `realloc`).
    pub(crate) allocations: u64,
    /// Bytes asked for by those allocations.
    pub(crate) bytes: u64,
    /// Bytes allocated and not yet freed (frees of memory allocated before
    /// counting started are subtracted too).
    pub(crate) live: i64,
}

impl Counting {
    /// Switches counting on and returns the counts so far.
    pub(crate) fn start() -> Counts {
        ON.store(true, Ordering::SeqCst);
        Self::read()
    }

    /// Switches counting off and returns the counts so far.
    pub(crate) fn stop() -> Counts {
        ON.store(false, Ordering::SeqCst);
        Self::read()
    }

    /// The counts so far.
    pub(crate) fn read() -> Counts {
        Counts {
            allocations: ALLOCATIONS.load(Ordering::SeqCst),
            bytes: BYTES.load(Ordering::SeqCst),
            live: LIVE.load(Ordering::SeqCst),
        }
    }
}

impl Counts {
    /// What was counted from `earlier` to `self`.
    pub(crate) fn since(self, earlier: Counts) -> Counts {
        Counts {
            allocations: self.allocations - earlier.allocations,
            bytes: self.bytes - earlier.bytes,
            live: self.live - earlier.live,
        }
    }
}

#[inline]
fn note_alloc(size: usize) {
    if ON.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
        LIVE.fetch_add(size as i64, Ordering::Relaxed);
    }
}

#[inline]
fn note_free(size: usize) {
    if ON.load(Ordering::Relaxed) {
        LIVE.fetch_sub(size as i64, Ordering::Relaxed);
    }
}

// The crate's only unsafe code. `GlobalAlloc` is an unsafe trait, so a
// counting allocator cannot be written without it; every method forwards
// its arguments unchanged to `System` and only adds to the counters above.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, and
        // `System` gets the very same layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        // SAFETY: `ptr` was allocated by `System` (every allocation of this
        // allocator is) with `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_free(layout.size());
        note_alloc(new_size);
        // SAFETY: as for `dealloc`; the caller upholds `realloc`'s contract
        // for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
