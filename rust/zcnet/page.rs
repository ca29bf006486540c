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

/// Where [`PageRing::get`] found a page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PageFrom {
    /// The ring's own, which the stack had let go of.
    Reused,
    /// The module's stash: a page given back (a region page zcsock replaced
    /// with a received one).
    Stash,
    /// The page allocator.
    New,
}

/// Receive pages handed out again once their last user let go of them: the
/// ring keeps a reference on up to `N` pages; [`PageRing::get`] looks at the
/// next one and reuses it if that reference is the only one left (the stack
/// freed the packet), or else lets it go and takes a page from the module's
/// stash ([`stash_take`]) or the allocator in its place. A page someone keeps
/// (a socket's queue, a remapping) is never reused. Not synchronised: the
/// caller serialises (a lock or one context).
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

    /// A page for new payload, and where it came from; `None` when memory
    /// is short.
    pub fn get(&mut self) -> Option<(RxPage, PageFrom)> {
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
                    return Some((RxPage(NonNull::new_unchecked(p)), PageFrom::Reused));
                }
                // Still in use: let it go (its last user frees it).
                ext::zcnet_helper_put_page(p);
            }
            *slot = core::ptr::null_mut();
        }
        let (page, from) = match stash_take() {
            Some(p) => (p, PageFrom::Stash),
            None => (RxPage::alloc()?, PageFrom::New),
        };
        let q = page.0.as_ptr();
        // INVARIANT: the ring takes a reference of its own.
        // SAFETY: `page` holds a reference to `q`, a lowmem page (fresh, or
        // from the stash, which keeps only pages nobody else holds).
        unsafe {
            if ext::zcnet_helper_page_reusable(q) {
                ext::zcnet_helper_get_page(q);
                *slot = q;
            }
        }
        Some((page, from))
    }
}

/// A page from the module's stash of given-back pages
/// (`rust/helpers/page_stash.h`), or `None` when it is empty.
pub fn stash_take() -> Option<RxPage> {
    // SAFETY: The helper returns a page whose one reference passes to us (a
    // lowmem page nobody else holds: the stash keeps no other kind), or null.
    NonNull::new(unsafe { ext::zcnet_helper_stash_take() }).map(RxPage)
}

/// Gives `page` to the module's stash, which keeps it when nobody else holds
/// it and there is room, or else lets it go (zcsock gives through zcfrag's
/// export, `zcfrag_stash_door`).
pub fn stash_give(page: RxPage) {
    let mut one = [page.into_raw()];
    // SAFETY: The page's one reference passes to the helper; an `RxPage` is
    // in no mapping (the kernel's linear map aside).
    unsafe { ext::zcnet_helper_stash_give(one.as_mut_ptr(), 1) };
}

/// Frees the module's stash when dropped: the module holds one, after the
/// devices whose rings take from it.
pub struct StashDrain;

impl Drop for StashDrain {
    fn drop(&mut self) {
        // SAFETY: Only puts the references the stash holds.
        unsafe { ext::zcnet_helper_stash_drain() };
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

    // The page's bytes are only ever reached through range copies (here and
    // `SkBuff::copy_to_page`), never as a Rust slice: a device may be
    // writing another range of the same page meanwhile (a receive chain of
    // the native front end), and several values may share the page.

    /// Sets `len` bytes from offset `off` to `byte` (nothing if the range
    /// passes the page's end).
    pub fn fill(&self, off: usize, len: usize, byte: u8) {
        // SAFETY: By the type invariant the page is mapped; the helper checks
        // the range.
        unsafe { ext::zcnet_helper_page_fill(self.as_raw(), off as u32, len as u32, byte.into()) }
    }

    /// Reads `out.len()` bytes from offset `off` (nothing if the range
    /// passes the page's end).
    pub fn read(&self, off: usize, out: &mut [u8]) {
        // SAFETY: By the type invariant the page is mapped; `out` is
        // writable for its length; the helper checks the range.
        unsafe {
            ext::zcnet_helper_page_read(
                self.as_raw(),
                off as u32,
                out.as_mut_ptr().cast(),
                out.len() as u32,
            )
        }
    }

    /// Another reference to the same page.
    pub fn share(&self) -> Self {
        // SAFETY: By the type invariant we hold a reference, so the page is
        // live; the new value holds its own.
        unsafe { ext::zcnet_helper_get_page(self.as_raw()) };
        Self(self.0)
    }

    /// A new page holding a copy of this one's bytes; `None` when memory is
    /// short.
    pub fn copy(&self) -> Option<Self> {
        let new = Self::alloc()?;
        // SAFETY: Both pages are mapped (type invariant).
        unsafe { ext::zcnet_helper_page_copy_all(new.as_raw(), self.as_raw()) };
        Some(new)
    }

    /// Whether `self` and `other` are references to the same page.
    pub fn same(&self, other: &Self) -> bool {
        self.0 == other.0
    }

    /// # Safety
    ///
    /// `p` is a lowmem page whose reference the caller hands over.
    pub(crate) unsafe fn from_raw(p: NonNull<bindings::page>) -> Self {
        // INVARIANT: as the caller guarantees.
        Self(p)
    }
}

impl Drop for RxPage {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one reference.
        unsafe { ext::zcnet_helper_put_page(self.0.as_ptr()) };
    }
}
