//! A counting global allocator for the "no allocation per packet" tests. A test
//! binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting;` and compares
//! [`allocs`] before and after the code under test. Counts are per thread, so
//! tests may run side by side.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The allocator: [`System`], counting each allocation on the calling thread.
pub struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

/// Allocations made so far on this thread.
pub fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}
