// SPDX-License-Identifier: GPL-2.0

//! A character device whose `mmap()` gives memory the driver owns page by
//! page, shared by every mapping (fork() children included), with
//! copy-on-write decided by the driver at fault time.
//!
//! The C side (`rust/helpers/mapdev.c`) owns the file and VM operations; this
//! file turns its callbacks into a [`MapDevice`] implementation.
//!
//! # Invariants
//!
//! What every [`MapDevice`] keeps (and `mapdev.c` relies on), for each slot
//! (page index) of a region:
//!
//! 1. Every PTE of a region maps the page in its slot: a slot changes
//!    ([`MapDevice::install`], a copy-on-write replacement) only under the
//!    region's lock with the slot's PTEs zapped from every mapping before the
//!    new page can be mapped (faults map it under that lock).
//! 2. A region PTE is writable only while the region holds the only
//!    reference to that page: [`MapDevice::grab`] zaps before it takes a
//!    reference; a write fault maps writable only the slot's page nobody else
//!    holds; [`MapDevice::mkwrite`] lets a read-only PTE become writable only
//!    when its pfn is the slot's page and nobody else holds it.
//!
//! Mappings take no page reference (`VM_PFNMAP`), so without (1) a PTE could
//! outlive its page, and without (2) a page TCP, another region or another
//! process holds could be written through a stale PTE.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use super::ext;
use super::netstat::NetRef;
use super::pageref::PageRef;
use core::{marker::PhantomData, pin::Pin, ptr::NonNull};
use kernel::{bindings, ffi, prelude::*, types::ForeignOwnable};

/// One open file's mapping, as its driver state sees it: what it calls to
/// take pages out of every process's page tables.
///
/// # Invariants
///
/// `self.0` is the C side's per-file state, which lives until after the
/// driver state that holds this handle is destroyed.
pub struct Map(NonNull<ffi::c_void>);

// SAFETY: The per-file state may be used from any context that may sleep;
// `unmap_mapping_range` takes its own locks.
unsafe impl Send for Map {}
// SAFETY: As above; `&Map` only zaps.
unsafe impl Sync for Map {}

impl Map {
    /// Removes pages `idx..idx + n` from every mapping, in every process; the
    /// next access faults. May sleep. What keeps the module's invariants
    /// 1 and 2 when a slot changes or its page gains a holder.
    pub fn zap(&self, idx: usize, n: usize) {
        // SAFETY: By the type invariant the per-file state is alive; its
        // offsets are its own (mapdev.c's invariant 3), so the zap reaches
        // exactly these pages' PTEs.
        unsafe { ext::zcnet_helper_mapdev_zap(self.0.as_ptr(), idx, n) };
    }
}

/// A fault being handled: [`Fault::map`] maps the page the driver chose.
///
/// # Invariants
///
/// `self.0` is the `struct vm_fault` of a fault of this device in progress.
pub struct Fault(*mut ffi::c_void);

impl Fault {
    /// Maps `page` at the faulting address, writable when `write`; call it
    /// under the lock that keeps the page in the region (so that no
    /// write-protection of it can come between the choice and the mapping),
    /// with `page` the slot's, and `write` only when nobody else holds it
    /// (the module's invariants 1 and 2). The result for the fault handler.
    pub fn map(self, page: &PageRef, write: bool) -> u32 {
        // SAFETY: By the type invariant the fault is in progress; the driver
        // holds `page` while it may be mapped (mappings take no reference),
        // and keeps it in the slot until it zaps it (invariant 1).
        unsafe { ext::zcnet_helper_mapdev_insert(self.0, page.pfn(), write) }
    }
}

/// Where [`MapDevice::map_range`] maps pages: the installing task's own
/// mapping of the range.
///
/// # Invariants
///
/// `self.0` is a `struct zcnet_mapdev_at` of a batch being completed, whose
/// task holds its mapping lock.
pub struct MapAt(*mut ffi::c_void);

impl MapAt {
    /// Maps `pages` read-only as the range's pages, in order (at most
    /// [`RX_BATCH`], and no more than the range has), each where nothing is
    /// mapped, so that the task's next read of it does not fault; call it
    /// under the lock that keeps the pages in the region.
    pub fn map<'a>(&self, pages: impl Iterator<Item = &'a PageRef>) {
        let mut pfns = [0usize; RX_BATCH];
        let mut n = 0;
        for (slot, page) in pfns.iter_mut().zip(pages) {
            *slot = page.pfn();
            n += 1;
        }
        // SAFETY: By the type invariant the batch is being completed with
        // the mapping lock held; `pfns[..n]` are pages the driver holds while
        // they may be mapped (mappings take no reference) and, under its
        // lock, the slots' (invariant 1), mapped read-only (invariant 2);
        // `n` is at most the range's length (the caller's `n`).
        unsafe { ext::zcnet_helper_mapdev_insert_at(self.0, pfns.as_ptr(), n) }
    }
}

/// Pages one [`RxBatch`] completes at once, and [`MapAt::map`] maps at most.
pub const RX_BATCH: usize = ext::ZCNET_MAPDEV_BATCH as usize;

/// A device of driver-owned shared mappings.
pub trait MapDevice: Sync + 'static {
    /// The state of one mapped file.
    type Region: Send + Sync + 'static;

    /// An `mmap()` of `npages` pages in namespace `net`.
    fn create(npages: usize, net: NetRef, map: Map) -> Result<Pin<KBox<Self::Region>>>;

    /// Maps the page at `idx` with [`Fault::map`] and returns its result;
    /// `write`: the access writes, so the page must be one nobody else holds.
    /// May sleep.
    fn fault(r: &Self::Region, idx: usize, write: bool, f: Fault) -> Result<u32>;

    /// A write to page `idx` through a read-only PTE of `pfn`: `Ok(false)`
    /// when it may become writable in place (`pfn` is the slot's page and
    /// nobody else holds it: invariant 2), `Ok(true)` when the driver zapped
    /// the PTE (it put another page there, or `pfn` was not the slot's) and
    /// the access retries. May sleep.
    fn mkwrite(r: &Self::Region, idx: usize, pfn: usize) -> Result<bool>;

    /// References to the pages from `idx` into `out`: how many, each zapped
    /// from every mapping (with [`Map::zap`], under the region's lock) before
    /// its reference is taken (invariant 2). Called with the task's mapping
    /// lock held.
    fn grab(r: &Self::Region, idx: usize, out: &mut [Option<PageRef>]) -> usize;

    /// Puts `page` at `idx` in place of the page there, zapped from every
    /// mapping first under the region's lock (invariant 1), and returns that
    /// one. May sleep.
    fn install(r: &Self::Region, idx: usize, page: PageRef) -> Result<PageRef>;

    /// Maps the pages at `idx..idx + n` (`n` at most [`RX_BATCH`]) with one
    /// [`MapAt::map`], for the task that installed them. May sleep.
    fn map_range(r: &Self::Region, idx: usize, n: usize, at: MapAt);
}

/// Installs by [`install_user`] in consecutive pages, completed together:
/// the replaced pages leave every mapping at once (one TLB flush for the
/// batch) and the new ones are mapped for the task, when the batch is full,
/// the next install is elsewhere, or the batch drops. It remembers the
/// mapping it installed in last (and holds its file), so that the following
/// pages of one receive take no mapping lock.
pub struct RxBatch(ext::zcnet_mapdev_batch);

impl RxBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self(ext::zcnet_mapdev_batch::default())
    }
}

impl Default for RxBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for RxBatch {
    fn drop(&mut self) {
        // SAFETY: The batch is ours, filled only by the install helper, in
        // this task (the batch does not leave the receive call); the helper
        // takes the task's mapping lock.
        unsafe { ext::zcnet_helper_mapdev_batch_end(&mut self.0) };
    }
}

/// Puts `page` at the page-aligned user address `uaddr` of the current task
/// when it lies in a writable mapping of this device ([`MapDevice::install`]),
/// completed with `batch`: `Ok(false)` when it does not.
pub fn install_user(uaddr: usize, page: &PageRef, batch: &mut RxBatch) -> Result<bool> {
    let p = page.clone().into_raw();
    // SAFETY: `p` is a reference of ours; the helper passes it to the driver
    // when it returns 1 or an error, and leaves it to us on 0; `batch` is
    // ours and only the helpers touch it.
    let r = unsafe { ext::zcnet_helper_mapdev_install(uaddr, p, &mut batch.0) };
    match r {
        0 => {
            // SAFETY: Still ours (see above); `p` is not null (from a `PageRef`).
            drop(unsafe { PageRef::from_raw(NonNull::new_unchecked(p)) });
            Ok(false)
        }
        r if r < 0 => Err(Error::from_errno(r as i32)),
        _ => Ok(true),
    }
}

/// Pages of the current task's memory in a mapping of this device, taken by
/// reference and write-protected everywhere ([`MapDevice::grab`]): from the
/// page-aligned user address `uaddr`, at most `max` (and [`GRAB_MAX`]).
/// `Ok(0)` when `uaddr` lies in no such mapping.
pub fn grab_user(uaddr: usize, max: usize, out: &mut [Option<PageRef>; GRAB_MAX]) -> Result<usize> {
    let mut raw = [core::ptr::null_mut::<bindings::page>(); GRAB_MAX];
    let max = max.min(GRAB_MAX);
    // SAFETY: `raw` has room for `GRAB_MAX >= max` pointers; the helper looks
    // the address up under the current task's mapping lock.
    let n = unsafe { ext::zcnet_helper_mapdev_grab(uaddr, max, raw.as_mut_ptr()) };
    if n < 0 {
        return Err(Error::from_errno(n as i32));
    }
    let n = (n as usize).min(GRAB_MAX);
    for (o, p) in out.iter_mut().zip(raw.iter()).take(n) {
        // SAFETY: `grab` put one reference per page into `raw[..n]`, handed
        // over to us; region pages are lowmem.
        *o = NonNull::new(*p).map(|p| unsafe { PageRef::from_raw(p) });
    }
    Ok(n)
}

/// Pages [`grab_user`] takes at most at once.
pub const GRAB_MAX: usize = 16;

/// The registered device; deregistered on drop.
pub struct Registration<T: MapDevice> {
    _t: PhantomData<T>,
}

impl<T: MapDevice> Registration<T> {
    const OPS: ext::zcnet_mapdev_ops = ext::zcnet_mapdev_ops {
        create: Some(Self::create_cb),
        destroy: Some(Self::destroy_cb),
        fault: Some(Self::fault_cb),
        mkwrite: Some(Self::mkwrite_cb),
        grab: Some(Self::grab_cb),
        install: Some(Self::install_cb),
        map_range: Some(Self::map_range_cb),
    };

    /// Registers `/dev/NAME` (one device per module).
    pub fn register(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` and `OPS` are static; one registration per module,
        // undone in `drop`.
        super::errno::to_result(unsafe {
            ext::zcnet_helper_mapdev_register(name.as_char_ptr(), &Self::OPS)
        })?;
        Ok(Self { _t: PhantomData })
    }

    /// # Safety
    ///
    /// The C side calls it from `mmap()` with its per-file state `map`, which
    /// outlives the returned state, and the task's namespace `net`.
    unsafe extern "C" fn create_cb(
        npages: ffi::c_ulong,
        net: *mut bindings::net,
        map: *mut ffi::c_void,
    ) -> *mut ffi::c_void {
        let Some(map) = NonNull::new(map) else {
            return EINVAL.to_ptr();
        };
        // SAFETY: `net` is the current task's namespace, valid for the call;
        // `NetRef::get` takes a reference.
        let net = unsafe { NetRef::get(net) };
        // INVARIANT: the caller guarantees `map` outlives the state.
        match T::create(npages, net, Map(map)) {
            Ok(r) => r.into_foreign(),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// `priv_` came from `create_cb` and is not used again.
    unsafe extern "C" fn destroy_cb(priv_: *mut ffi::c_void) {
        // SAFETY: The caller hands back ownership of what `create_cb` made.
        drop(unsafe { <Pin<KBox<T::Region>> as ForeignOwnable>::from_foreign(priv_) });
    }

    /// # Safety
    ///
    /// `priv_` came from `create_cb` and is not destroyed during the call;
    /// `vmf` is the fault in progress.
    unsafe extern "C" fn fault_cb(
        priv_: *mut ffi::c_void,
        idx: ffi::c_ulong,
        write: bool,
        vmf: *mut ffi::c_void,
    ) -> ffi::c_long {
        // SAFETY: The mapping being faulted holds the file, so the state lives.
        let r = unsafe { <Pin<KBox<T::Region>> as ForeignOwnable>::borrow(priv_) };
        // INVARIANT: `vmf` is the fault in progress.
        match T::fault(&r, idx, write, Fault(vmf)) {
            Ok(v) => v as ffi::c_long,
            Err(e) => e.to_errno() as ffi::c_long,
        }
    }

    /// # Safety
    ///
    /// As for `fault_cb`.
    unsafe extern "C" fn mkwrite_cb(
        priv_: *mut ffi::c_void,
        idx: ffi::c_ulong,
        pfn: ffi::c_ulong,
    ) -> ffi::c_int {
        // SAFETY: The mapping being faulted holds the file, so the state lives.
        let r = unsafe { <Pin<KBox<T::Region>> as ForeignOwnable>::borrow(priv_) };
        match T::mkwrite(&r, idx, pfn) {
            Ok(replaced) => i32::from(replaced),
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As for `fault_cb`; `pages` has room for `n` pointers.
    unsafe extern "C" fn grab_cb(
        priv_: *mut ffi::c_void,
        idx: ffi::c_ulong,
        n: ffi::c_ulong,
        pages: *mut *mut bindings::page,
    ) -> ffi::c_long {
        // SAFETY: The mapping being looked up holds the file, so the state lives.
        let r = unsafe { <Pin<KBox<T::Region>> as ForeignOwnable>::borrow(priv_) };
        let mut out: [Option<PageRef>; GRAB_MAX] = Default::default();
        let n = n.min(GRAB_MAX);
        let got = T::grab(&r, idx, &mut out[..n]);
        let mut k = 0;
        for p in out.into_iter().take(got).flatten() {
            // SAFETY: `pages` has room for `n >= got` entries; the reference
            // goes to the caller.
            unsafe { *pages.add(k) = p.into_raw() };
            k += 1;
        }
        k as ffi::c_long
    }
}

impl<T: MapDevice> Registration<T> {
    /// # Safety
    ///
    /// As for `fault_cb`; `page` is a reference the caller hands over.
    unsafe extern "C" fn install_cb(
        priv_: *mut ffi::c_void,
        idx: ffi::c_ulong,
        page: *mut bindings::page,
        old: *mut *mut bindings::page,
    ) -> ffi::c_long {
        let Some(p) = NonNull::new(page) else {
            return EINVAL.to_errno() as ffi::c_long;
        };
        // SAFETY: The caller hands over one reference to a lowmem page.
        let page = unsafe { PageRef::from_raw(p) };
        // SAFETY: The mapping being looked up holds the file, so the state lives.
        let r = unsafe { <Pin<KBox<T::Region>> as ForeignOwnable>::borrow(priv_) };
        match T::install(&r, idx, page) {
            Ok(o) => {
                // SAFETY: `old` is writable; the old page's reference passes
                // to the caller (the driver zapped it: invariant 1).
                unsafe { *old = o.into_raw() };
                1
            }
            Err(e) => e.to_errno() as ffi::c_long,
        }
    }

    /// # Safety
    ///
    /// The C side calls it while completing a batch, with the task's mapping
    /// lock held, the file (and so the state) held, and `at` the batch's
    /// place.
    unsafe extern "C" fn map_range_cb(
        priv_: *mut ffi::c_void,
        idx: ffi::c_ulong,
        n: ffi::c_ulong,
        at: *mut ffi::c_void,
    ) {
        // SAFETY: The batch holds the file, so the state lives.
        let r = unsafe { <Pin<KBox<T::Region>> as ForeignOwnable>::borrow(priv_) };
        // INVARIANT: The caller's batch is being completed, its lock held.
        T::map_range(&r, idx, n, MapAt(at));
    }
}

impl<T: MapDevice> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`; open files hold the module, so
        // none is left when the module's registration goes.
        unsafe { ext::zcnet_helper_mapdev_unregister() };
    }
}
