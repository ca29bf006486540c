// SPDX-License-Identifier: GPL-2.0

//! Counted references to pages that several owners share: a region's page
//! that TCP also holds while it is in flight, a received page mapped into a
//! region.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use super::errno::to_result;
use super::ext;
use core::ptr::NonNull;
use kernel::{bindings, prelude::*};

/// Between the allocations of a long run (a region of up to millions of
/// pages): lets others run; `EINTR` when the task was killed (it need not
/// finish, and its mapping lock is held meanwhile). May sleep.
pub fn alloc_pause() -> Result {
    // SAFETY: No argument; called where the caller may sleep (it allocates
    // pages with `GFP_KERNEL`).
    to_result(unsafe { ext::zcnet_helper_alloc_pause() })
}

/// One reference to a page of the kernel's linear map (allocated without
/// `__GFP_HIGHMEM`).
///
/// # Invariants
///
/// `self.0` is a lowmem page this value holds one reference to.
pub struct PageRef(NonNull<bindings::page>);

// SAFETY: A page reference may move between contexts and be dropped anywhere
// (`put_page` may be called in any context).
unsafe impl Send for PageRef {}
// SAFETY: `&PageRef` only reads the reference count and the page's frame number.
unsafe impl Sync for PageRef {}

impl PageRef {
    /// A zeroed page for the calling task's user space, charged to its
    /// memory cgroup (`GFP_KERNEL_ACCOUNT`: may sleep).
    pub fn alloc_zeroed() -> Result<Self> {
        // SAFETY: Allocating a page has no precondition.
        let p = unsafe { ext::zcnet_helper_alloc_page_zeroed() };
        // INVARIANT: a fresh page, its one reference ours, lowmem (no __GFP_HIGHMEM).
        NonNull::new(p).map(Self).ok_or(ENOMEM)
    }

    /// A new page holding a copy of `self`'s bytes (allocated as
    /// [`PageRef::alloc_zeroed`]).
    pub fn copy(&self) -> Result<Self> {
        let new = Self::alloc_zeroed()?;
        // SAFETY: Both pages are valid while the references live; `new` is
        // nobody else's yet.
        unsafe { ext::zcnet_helper_copy_page(new.as_raw(), self.as_raw()) };
        Ok(new)
    }

    /// How many references the page has, this one included.
    pub fn refs(&self) -> i32 {
        // SAFETY: The page is valid while this reference lives.
        unsafe { ext::zcnet_helper_page_refs(self.as_raw()) }
    }

    /// The page frame number.
    pub fn pfn(&self) -> usize {
        // SAFETY: The page is valid while this reference lives.
        unsafe { ext::zcnet_helper_page_pfn(self.as_raw()) as usize }
    }

    /// The raw pointer; the reference stays with `self`.
    pub(crate) fn as_raw(&self) -> *mut bindings::page {
        self.0.as_ptr()
    }

    /// Gives the reference to C code (which puts it or returns it through
    /// [`PageRef::from_raw`]).
    pub(crate) fn into_raw(self) -> *mut bindings::page {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }

    /// # Safety
    ///
    /// `p` is a lowmem page whose reference the caller owns and hands over.
    pub(crate) unsafe fn from_raw(p: NonNull<bindings::page>) -> Self {
        // INVARIANT: the caller hands over one reference to a lowmem page.
        Self(p)
    }
}

impl Clone for PageRef {
    fn clone(&self) -> Self {
        // SAFETY: The page is valid while this reference lives; `get_page`
        // takes another reference, which the clone owns.
        unsafe { ext::zcnet_helper_get_page(self.as_raw()) };
        Self(self.0)
    }
}

impl Drop for PageRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this value owns one reference.
        unsafe { ext::zcnet_helper_put_page(self.as_raw()) };
    }
}
