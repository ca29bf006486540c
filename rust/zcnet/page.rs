// SPDX-License-Identifier: GPL-2.0

//! Pages that receive payload at its final offset, and the ring that reuses
//! them.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use super::ext;
use core::ptr::NonNull;
use kernel::bindings;

/// A page that receives payload at its final offset; its reference passes to
/// the skb built from it, or is dropped with it.
///
/// # Invariants
///
/// `self.0` is a page this value holds one reference to, mapped in the
/// kernel's linear map (allocated without `__GFP_HIGHMEM`).
pub struct RxPage(NonNull<bindings::page>);

// SAFETY: A page reference may move between contexts.
unsafe impl Send for RxPage {}

/// Bytes in an [`RxPage`]: the kernel's page size.
pub use kernel::page::PAGE_SIZE;

/// Receive pages handed out again once their last user let go of them: the
/// ring keeps a reference on up to `N` pages; [`PageRing::get`] looks at the
/// next one and reuses it if that reference is the only one left (the stack
/// freed the packet), or else lets it go and allocates a fresh page in its
/// place. A page someone keeps (a socket's queue, a remapping) is never
/// reused. Not synchronised: the caller serialises (a lock or one context).
///
/// # Invariants
///
/// Each non-null entry of `pages` is a lowmem page the ring holds one
/// reference to.
pub struct PageRing<const N: usize> {
    pages: [*mut bindings::page; N],
    next: usize,
}

// SAFETY: Page references may move between contexts.
unsafe impl<const N: usize> Send for PageRing<N> {}

impl<const N: usize> PageRing<N> {
    /// An empty ring.
    pub const fn new() -> Self {
        Self {
            pages: [core::ptr::null_mut(); N],
            next: 0,
        }
    }

    /// A page for new payload, and whether it was a reused one; `None` when
    /// memory is short.
    pub fn get(&mut self) -> Option<(RxPage, bool)> {
        let i = self.next % N.max(1);
        self.next = i + 1;
        let slot = self.pages.get_mut(i)?;
        let p = *slot;
        if !p.is_null() {
            // SAFETY: By the type invariant the ring holds a reference to `p`.
            unsafe {
                if ext::zcnet_helper_page_reusable(p) {
                    // INVARIANT: the ring keeps its reference; the returned
                    // page holds a new one. Nobody else holds any, so nobody
                    // reads what is written into it now.
                    ext::zcnet_helper_get_page(p);
                    return Some((RxPage(NonNull::new_unchecked(p)), true));
                }
                // Still in use: let it go (its last user frees it).
                ext::zcnet_helper_put_page(p);
            }
            *slot = core::ptr::null_mut();
        }
        let page = RxPage::alloc()?;
        let q = page.0.as_ptr();
        // SAFETY: `page` holds a reference to `q`, a fresh lowmem page.
        // INVARIANT: the ring takes a reference of its own.
        unsafe {
            if ext::zcnet_helper_page_reusable(q) {
                ext::zcnet_helper_get_page(q);
                *slot = q;
            }
        }
        Some((page, false))
    }
}

impl<const N: usize> Default for PageRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Drop for PageRing<N> {
    fn drop(&mut self) {
        for p in self.pages.iter_mut().filter(|p| !p.is_null()) {
            // SAFETY: By the type invariant the ring holds this reference.
            unsafe { ext::zcnet_helper_put_page(*p) };
            *p = core::ptr::null_mut();
        }
    }
}

impl RxPage {
    /// The raw pointer; the reference stays with `self`.
    pub(crate) fn as_raw(&self) -> *mut bindings::page {
        self.0.as_ptr()
    }

    /// Gives up the page reference without putting it (the caller takes it).
    pub(crate) fn into_raw(self) -> *mut bindings::page {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }

    /// Allocates a page in atomic context; `None` when memory is short.
    pub fn alloc() -> Option<Self> {
        // SAFETY: The helper returns a fresh lowmem page or null.
        NonNull::new(unsafe { ext::zcnet_helper_alloc_page() }).map(Self)
    }

    /// The page's bytes, for placing payload.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: By the type invariant the page is mapped; `&mut self` makes
        // this the only access while the slice lives.
        unsafe {
            let p = ext::zcnet_helper_page_address(self.0.as_ptr()).cast::<u8>();
            core::slice::from_raw_parts_mut(p, PAGE_SIZE)
        }
    }
}

impl Drop for RxPage {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one reference.
        unsafe { ext::zcnet_helper_put_page(self.0.as_ptr()) };
    }
}
