// SPDX-License-Identifier: GPL-2.0

//! A character device whose `mmap()` gives memory the driver owns page by
//! page, shared by every mapping (fork() children included), with
//! copy-on-write decided by the driver at fault time.
//!
//! The device is a [`MiscDevice`] (open, release, `mmap`), its mappings'
//! `vm_operations_struct` is declared here ([`VM_OPS`], as binder's
//! `page_range.rs` does) and the driver's [`MapDevice`] decides what each
//! fault maps. What Rust cannot reach in 7.2 is in `rust/helpers/mapdev.c`
//! (the file-offset ids and their module parameter, a PTE's pfn, the
//! page-table walk of [`MapAt::map`], rate-limited log lines).
//!
//! Pages are mapped with `VM_PFNMAP`: mappings take no page references and
//! `get_user_pages` refuses them; every page can be write-protected in every
//! mapping at once (`unmap_mapping_pages` on the file's offsets).
//!
//! # Invariants
//!
//! For each slot (page index) of a region, kept by every [`MapDevice`] and by
//! this file; each `unsafe` block that maps, zaps or hands out a page cites
//! them:
//!
//! 1. Every PTE of a region maps the page in its slot: a slot changes
//!    ([`MapDevice::install`], a copy-on-write replacement) only under the
//!    region's lock with the slot's PTEs zapped from every mapping before the
//!    new page can be mapped (faults map it under that lock).
//! 2. A region PTE is writable only while the region holds the only
//!    reference to that page: [`MapDevice::grab`] zaps before it takes a
//!    reference; a write fault maps writable only the slot's page nobody else
//!    holds; [`MapDevice::mkwrite`] lets a read-only PTE become writable only
//!    when its pfn (the faulting PTE's, not the slot's) is the slot's page
//!    and nobody else holds it.
//! 3. Each open file's offsets are its own: pages `[id << SHIFT, (id + 1) <<
//!    SHIFT)` for an id no other open file has (an IDA, given back when the
//!    file is released), and the last id keeps every byte offset below 2^63;
//!    `mmap()` refuses when no id is free rather than reuse one. So a zap of
//!    a file's page offsets reaches exactly that file's PTEs.
//!
//! Mappings take no page reference (`VM_PFNMAP`), so without (1) a PTE could
//! outlive its page, without (2) a page TCP, another region or another
//! process holds could be written through a stale PTE, and without (3) a zap
//! could miss its own PTEs.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use super::ext;
use super::netstat::NetRef;
use super::pageref::PageRef;
use core::{marker::PhantomData, pin::Pin, ptr, ptr::NonNull};
use kernel::{
    bindings, ffi,
    fs::File,
    miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration},
    mm::{
        virt::{flags, VmaNew, VmaRef},
        Mm, MmapReadGuard,
    },
    new_mutex,
    page::{PAGE_SHIFT, PAGE_SIZE},
    prelude::*,
    sync::{aref::ARef, Mutex, SetOnce},
    types::{ForeignOwnable, Opaque},
    ThisModule,
};

/// Pages of file offsets per open file (invariant 3).
const SHIFT: usize = ext::ZCNET_MAPDEV_SHIFT as usize;

/// One open file's mapping, as its driver state sees it: what it calls to
/// take pages out of every process's page tables.
///
/// # Invariants
///
/// `mapping` is the device file's `f_mapping`, alive while the file is
/// (the driver state holding this handle is dropped before the file is
/// released); `base` is the file's first page offset (invariant 3).
pub struct Map {
    mapping: NonNull<bindings::address_space>,
    base: usize,
}

// SAFETY: The address space may be used from any context that may sleep;
// `unmap_mapping_pages` takes its own locks.
unsafe impl Send for Map {}
// SAFETY: As above; `&Map` only zaps.
unsafe impl Sync for Map {}

impl Map {
    /// Removes pages `idx..idx + n` from every mapping, in every process; the
    /// next access faults. May sleep. What keeps the module's invariants
    /// 1 and 2 when a slot changes or its page gains a holder.
    pub fn zap(&self, idx: usize, n: usize) {
        // SAFETY: By the type invariant the address space is alive; page
        // offsets lose no bits, and the file's are its own (invariant 3), so
        // the zap reaches exactly these pages' PTEs, COW copies included.
        unsafe {
            bindings::unmap_mapping_pages(
                self.mapping.as_ptr(),
                (self.base + idx) as ffi::c_ulong,
                n as ffi::c_ulong,
                true,
            )
        };
    }
}

/// A fault being handled: [`Fault::map`] maps the page the driver chose.
///
/// # Invariants
///
/// `self.0` is the `struct vm_fault` of a fault of this device in progress.
pub struct Fault(*mut bindings::vm_fault);

impl Fault {
    /// Maps `page` at the faulting address, writable when `write`; call it
    /// under the lock that keeps the page in the region (so that no
    /// write-protection of it can come between the choice and the mapping),
    /// with `page` the slot's, and `write` only when nobody else holds it
    /// (the module's invariants 1 and 2). The result for the fault handler.
    pub fn map(self, page: &PageRef, write: bool) -> u32 {
        // SAFETY: By the type invariant the fault is in progress, so `vmf`
        // and its vma are valid; the driver holds `page` while it may be
        // mapped (mappings take no reference), keeps it in the slot until it
        // zaps it (invariant 1) and asks for `write` only when nobody else
        // holds it (invariant 2). vm_page_prot is read-only (pfn_mkwrite
        // makes the core ask before a write); a write fault maps the page
        // writable at once.
        unsafe {
            let vmf = self.0;
            let vma = (*vmf).__bindgen_anon_1.vma;
            let address = (*vmf).__bindgen_anon_1.address;
            let prot = if write {
                bindings::vm_get_page_prot((*vma).__bindgen_anon_2.vm_flags)
            } else {
                (*vma).vm_page_prot
            };
            bindings::vmf_insert_pfn_prot(vma, address, page.pfn() as ffi::c_ulong, prot)
        }
    }
}

/// Where [`MapDevice::map_range`] maps pages: the installing task's own
/// mapping of the range.
///
/// # Invariants
///
/// `vma` is a mapping of this device whose task holds its mapping lock for
/// as long as this value lives, and `addr..` lies in it for the range.
pub struct MapAt {
    vma: *mut bindings::vm_area_struct,
    addr: usize,
}

impl MapAt {
    /// Maps `pages` read-only as the range's pages, in order (at most
    /// [`RX_BATCH`], and no more than the range has), each where nothing is
    /// mapped, so that the task's next read of it does not fault; call it
    /// under the lock that keeps the pages in the region.
    pub fn map<'a>(&self, pages: impl Iterator<Item = &'a PageRef>) {
        let mut pfns = [0 as ffi::c_ulong; RX_BATCH];
        let mut n = 0;
        for (slot, page) in pfns.iter_mut().zip(pages) {
            *slot = page.pfn() as ffi::c_ulong;
            n += 1;
        }
        // SAFETY: By the type invariant the mapping lock is held and `vma`
        // is this device's; `pfns[..n]` are pages the driver holds while
        // they may be mapped (mappings take no reference) and, under its
        // lock, the slots' (invariant 1), mapped read-only (invariant 2);
        // the helper refuses a range past the mapping's end.
        unsafe {
            ext::zcnet_helper_mapdev_insert_at(
                self.vma,
                self.addr as ffi::c_ulong,
                pfns.as_ptr(),
                n,
            )
        }
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

/// A region as the device's callbacks see it, whatever its driver: the
/// [`MapDevice`] calls of one region.
trait DynRegion: Send + Sync {
    fn fault(&self, idx: usize, write: bool, f: Fault) -> Result<u32>;
    fn mkwrite(&self, idx: usize, pfn: usize) -> Result<bool>;
    fn grab(&self, idx: usize, out: &mut [Option<PageRef>]) -> usize;
    fn install(&self, idx: usize, page: PageRef) -> Result<PageRef>;
    fn map_range(&self, idx: usize, n: usize, at: MapAt);
}

/// A region of driver `T`.
struct Held<T: MapDevice>(Pin<KBox<T::Region>>);

impl<T: MapDevice> DynRegion for Held<T> {
    fn fault(&self, idx: usize, write: bool, f: Fault) -> Result<u32> {
        T::fault(&self.0, idx, write, f)
    }
    fn mkwrite(&self, idx: usize, pfn: usize) -> Result<bool> {
        T::mkwrite(&self.0, idx, pfn)
    }
    fn grab(&self, idx: usize, out: &mut [Option<PageRef>]) -> usize {
        T::grab(&self.0, idx, out)
    }
    fn install(&self, idx: usize, page: PageRef) -> Result<PageRef> {
        T::install(&self.0, idx, page)
    }
    fn map_range(&self, idx: usize, n: usize, at: MapAt) {
        T::map_range(&self.0, idx, n, at)
    }
}

/// `T::create`, its region behind [`DynRegion`].
fn create_dyn<T: MapDevice>(npages: usize, net: NetRef, map: Map) -> Result<KBox<dyn DynRegion>> {
    let held = KBox::new(Held::<T>(T::create(npages, net, map)?), GFP_KERNEL_ACCOUNT)?;
    let raw: *mut dyn DynRegion = KBox::into_raw(held);
    // SAFETY: `raw` is the box just given up, as a trait object (same
    // allocation, same allocator).
    Ok(unsafe { KBox::from_raw(raw) })
}

/// A file-offset id of `mapdev.c`'s IDA (invariant 3), given back on drop.
struct Id(i32);

impl Id {
    fn get() -> Result<Self> {
        // SAFETY: No precondition; the helper logs a refusal. Invariant 3:
        // the id is no other open file's until it is given back.
        let id = unsafe { ext::zcnet_helper_mapdev_id_get() };
        if id < 0 {
            return Err(Error::from_errno(id));
        }
        Ok(Self(id))
    }
}

impl Drop for Id {
    fn drop(&mut self) {
        // SAFETY: The id is ours (from `get`), given back once.
        unsafe { ext::zcnet_helper_mapdev_id_put(self.0) };
    }
}

/// A line in the kernel log, rate-limited: `mmap()` refused.
fn refused(why: u32, npages: usize, err: Error) {
    // SAFETY: No precondition (the helper reads the current task's name).
    unsafe {
        ext::zcnet_helper_mapdev_refused(
            why as ffi::c_int,
            npages as ffi::c_ulong,
            err.to_errno() as ffi::c_long,
        )
    };
}

/// A mapped file's region and what its mappings need.
struct Mapped {
    /// Dropped first (`Drop`), before the pinned pages are uncounted.
    region: Option<KBox<dyn DynRegion>>,
    /// `vm_pgoff` of page 0: `id << SHIFT` (invariant 3).
    base: usize,
    npages: usize,
    /// Its `pinned_vm` counts the pages (`VmPin`, as io_uring's buffers).
    mm: ARef<Mm>,
    _id: Id,
}

impl Mapped {
    /// `pinned_vm` of `mm`, changed by `delta` pages.
    fn pin(mm: &Mm, delta: i64) {
        // SAFETY: `mm` is alive (we hold it); `pinned_vm` is an
        // `atomic64_t`, only ever changed atomically.
        let pinned = unsafe {
            kernel::sync::atomic::Atomic::<i64>::from_ptr(ptr::addr_of_mut!(
                (*mm.as_raw()).__bindgen_anon_1.pinned_vm.counter
            ))
        };
        pinned.add(delta, kernel::sync::atomic::Relaxed);
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // Every mapping held the file, and the file is released: no fault,
        // zap or install reaches the region any more.
        drop(self.region.take());
        Self::pin(&self.mm, -(self.npages as i64));
    }
}

/// One open file of the device.
#[pin_data]
pub struct MapFile {
    /// Serialises `mmap()` against `mmap()` (two processes sharing the file).
    #[pin]
    lock: Mutex<()>,
    /// Set once, by the first `mmap()` that succeeds.
    mapped: SetOnce<Mapped>,
    /// The file's `f_mapping` (see [`Map`]).
    mapping: NonNull<bindings::address_space>,
    /// The driver's `create`.
    create: fn(usize, NetRef, Map) -> Result<KBox<dyn DynRegion>>,
}

// SAFETY: `mapping` is only passed to `unmap_mapping_pages` (any context that
// may sleep); the rest is `Send`/`Sync` by itself (`DynRegion: Send + Sync`).
unsafe impl Send for MapFile {}
// SAFETY: As above.
unsafe impl Sync for MapFile {}

impl MapFile {
    /// The region and the slot of page offset `pgoff`, when it is one of
    /// this file's.
    fn slot(&self, pgoff: usize) -> Option<(&Mapped, &dyn DynRegion, usize)> {
        let m = self.mapped.as_ref()?;
        let idx = pgoff.checked_sub(m.base).filter(|&i| i < m.npages)?;
        Some((m, m.region.as_deref()?, idx))
    }
}

/// The state of an open file of this device.
///
/// # Safety
///
/// `file` is a file of this device ([`VM_OPS`]'s or [`Device`]'s), alive for
/// `'a`.
unsafe fn map_file<'a>(file: *mut bindings::file) -> Pin<&'a MapFile> {
    // SAFETY: The caller's file is ours, so its private data is the
    // `Pin<KBox<MapFile>>` of `Device::open`, alive until its release, which
    // comes after `'a`.
    unsafe { <Pin<KBox<MapFile>> as ForeignOwnable>::borrow((*file).private_data) }
}

/// The mappings' operations. Also what marks a vma as this device's (its
/// identity is compared, as binder's `BINDER_VM_OPS`).
struct AssertSync<T>(T);
// SAFETY: Never written after initialisation; the C side only reads it.
unsafe impl<T> Sync for AssertSync<T> {}

static VM_OPS: AssertSync<bindings::vm_operations_struct> =
    AssertSync(bindings::vm_operations_struct {
        fault: Some(vm_fault),
        pfn_mkwrite: Some(vm_pfn_mkwrite),
        ..pin_init::zeroed()
    });

/// A driver's error as a fault result.
fn fault_error(e: Error) -> bindings::vm_fault_t {
    if e == ENOMEM {
        bindings::vm_fault_reason_VM_FAULT_OOM
    } else {
        bindings::vm_fault_reason_VM_FAULT_SIGBUS
    }
}

/// The file and slot a fault of this device is for.
///
/// # Safety
///
/// `vmf` is a fault in progress of a mapping with [`VM_OPS`]; the returned
/// borrows do not outlive it.
unsafe fn fault_slot<'a>(
    vmf: *mut bindings::vm_fault,
) -> Option<(&'a Mapped, &'a dyn DynRegion, usize)> {
    // SAFETY: The fault is in progress, so the vma is valid; its vm_ops are
    // `VM_OPS`, set only on mappings of this device, which hold their file.
    let f = unsafe { map_file((*(*vmf).__bindgen_anon_1.vma).vm_file) };
    // SAFETY: As above.
    let pgoff = unsafe { (*vmf).__bindgen_anon_1.pgoff };
    f.get_ref().slot(pgoff)
}

/// `vm_operations_struct::fault`.
///
/// # Safety
///
/// Called by the core for a fault of a mapping with [`VM_OPS`].
unsafe extern "C" fn vm_fault(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
    // SAFETY: The caller's fault is in progress for the call.
    let Some((_, r, idx)) = (unsafe { fault_slot(vmf) }) else {
        return bindings::vm_fault_reason_VM_FAULT_SIGBUS;
    };
    // SAFETY: As above.
    let write = unsafe { (*vmf).flags } & bindings::fault_flag_FAULT_FLAG_WRITE != 0;
    // INVARIANT: `vmf` is the fault in progress.
    match r.fault(idx, write, Fault(vmf)) {
        Ok(v) => v,
        Err(e) => fault_error(e),
    }
}

/// `vm_operations_struct::pfn_mkwrite`: a write through a read-only PTE.
///
/// # Safety
///
/// As for [`vm_fault`].
unsafe extern "C" fn vm_pfn_mkwrite(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
    // SAFETY: The caller's fault is in progress for the call.
    let Some((_, r, idx)) = (unsafe { fault_slot(vmf) }) else {
        return bindings::vm_fault_reason_VM_FAULT_SIGBUS;
    };
    // SAFETY: As above. Invariant 2: the page the faulting PTE maps,
    // checked against the slot (not the slot's page, which may be another
    // by now).
    let pfn = unsafe { ext::zcnet_helper_mapdev_fault_pfn(vmf) } as usize;
    match r.mkwrite(idx, pfn) {
        Ok(false) => 0,
        // Another page is there now (or the PTE was stale): the old mapping
        // is gone, retry.
        Ok(true) => bindings::vm_fault_reason_VM_FAULT_NOPAGE,
        Err(e) => fault_error(e),
    }
}

/// A mapping of this device, with the lock of its `mm` held (`'a`): its
/// vma, its file's region and the slot of user address `uaddr`.
fn at_addr<'a>(
    guard: &'a MmapReadGuard<'_>,
    uaddr: usize,
) -> Option<(&'a VmaRef, Pin<&'a MapFile>, &'a dyn DynRegion, usize)> {
    let vma = guard.vma_lookup(uaddr)?;
    // SAFETY: Reading the vm_ops pointer of a vma whose mm's lock we hold.
    if !ptr::eq(unsafe { (*vma.as_ptr()).vm_ops }, &VM_OPS.0) {
        return None;
    }
    // SAFETY: A vma with `VM_OPS` maps this device and holds its file while
    // it exists, so at least while the lock is held (`'a`).
    let f = unsafe { map_file((*vma.as_ptr()).vm_file) };
    // SAFETY: As above; vm_pgoff is stable under the lock.
    let first = unsafe { (*vma.as_ptr()).vm_pgoff };
    let pgoff = first + ((uaddr - vma.start()) >> PAGE_SHIFT);
    let (_, r, idx) = f.get_ref().slot(pgoff)?;
    Some((vma, f, r, idx))
}

/// The device's open files (`T` decides their regions).
pub struct Device<T>(PhantomData<T>);

#[vtable]
impl<T: MapDevice> MiscDevice for Device<T> {
    type Ptr = Pin<KBox<MapFile>>;

    fn open(file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<Pin<KBox<MapFile>>> {
        // SAFETY: The file is being opened; `f_mapping` (the inode's) is set
        // before `open` and stays for the file's life.
        let mapping = NonNull::new(unsafe { (*file.as_ptr()).f_mapping }).ok_or(EINVAL)?;
        KBox::pin_init(
            pin_init!(MapFile {
                lock <- new_mutex!(()),
                mapped: SetOnce::new(),
                mapping,
                create: create_dyn::<T>,
            }),
            GFP_KERNEL,
        )
    }

    fn mmap(f: Pin<&MapFile>, _file: &File, vma: &VmaNew) -> Result {
        let npages = (vma.end() - vma.start()) >> PAGE_SHIFT;
        if vma.flags() & flags::SHARED == 0 {
            refused(ext::ZCNET_MAPDEV_NOT_SHARED, npages, EINVAL);
            return Err(EINVAL);
        }
        // SAFETY: The vma is being set up by this call.
        if unsafe { (*vma.as_ptr()).vm_pgoff } != 0 {
            refused(ext::ZCNET_MAPDEV_NOT_AT_0, npages, EINVAL);
            return Err(EINVAL);
        }
        if npages == 0 || npages > 1 << SHIFT {
            return Err(EINVAL);
        }
        let current = kernel::current!();
        let mm = ARef::<Mm>::from(&**current.mm().ok_or(EINVAL)?);
        let base;
        {
            let _g = f.lock.lock();
            if f.mapped.as_ref().is_some() {
                refused(ext::ZCNET_MAPDEV_BUSY, npages, EBUSY);
                return Err(EBUSY);
            }
            // Invariant 3: an id of its own, or no region (never a wrapped one).
            let id = Id::get()?;
            base = (id.0 as usize) << SHIFT;
            // SAFETY: `current`'s nsproxy is only changed by the task
            // itself, and its namespace lives while it is there; `NetRef`
            // takes a reference.
            let net = unsafe { NetRef::get((*(*current.as_ptr()).nsproxy).net_ns) };
            // The driver charges the pages to the user (RLIMIT_MEMLOCK,
            // logging why it refuses) before it allocates them, and gives the
            // charge back when the region drops. The mapping process's
            // pinned_vm (VmPin) shows them too, as io_uring's buffers; the
            // limit is the user's, so a fork() child or an exec()ed program
            // maps no more than its user may.
            let map = Map {
                mapping: f.mapping,
                base,
            };
            let region = (f.create)(npages, net, map).inspect_err(|&e| {
                refused(ext::ZCNET_MAPDEV_NO_REGION, npages, e);
            })?;
            Mapped::pin(&mm, npages as i64);
            f.mapped.populate(Mapped {
                region: Some(region),
                base,
                npages,
                mm,
                _id: id,
            });
        }
        // SAFETY: The vma is being set up by this call and not yet shared;
        // `VM_OPS` is static and its callbacks find the file through
        // `vm_file` (this file, held by the vma). The flags are valid for a
        // shared mapping of PFNs: no page references, not expanded by
        // mremap (so the vma never reaches past the region's offsets), not
        // in core dumps. Invariant 3: the vma's offsets are the file's own,
        // so `Map::zap` reaches its PTEs; invariants 1 and 2 hold from the
        // first fault on (nothing is mapped yet).
        unsafe {
            let v = vma.as_ptr();
            (*v).vm_pgoff = base as ffi::c_ulong;
            (*v).__bindgen_anon_2.vm_flags |= flags::PFNMAP | flags::DONTEXPAND | flags::DONTDUMP;
            (*v).vm_ops = &VM_OPS.0;
        }
        Ok(())
    }
}

/// The registered device `/dev/NAME` (mode 0666, one per module); its file
/// operations are the kernel's `MiscDevice` table with the module as owner
/// (open files and mappings keep the module loaded). Deregistered on drop.
pub struct Registration<T: MapDevice> {
    inner: KBox<RegInner>,
    _t: PhantomData<T>,
}

/// What `misc_register` points at: it must not move (boxed).
struct RegInner {
    fops: bindings::file_operations,
    misc: Opaque<bindings::miscdevice>,
}

// SAFETY: Registration and deregistration may run on any thread; nothing is
// accessed through `&Registration`.
unsafe impl<T: MapDevice> Send for Registration<T> {}
// SAFETY: As above.
unsafe impl<T: MapDevice> Sync for Registration<T> {}

impl<T: MapDevice> Registration<T> {
    /// Registers `/dev/NAME` (one device per module).
    pub fn register(name: &'static CStr, module: &'static ThisModule) -> Result<Self> {
        let raw = MiscDeviceOptions { name }.into_raw::<Device<T>>();
        // SAFETY: `raw.fops` is the kernel's static table for `Device<T>`.
        let mut fops = unsafe { *raw.fops };
        fops.owner = module.as_ptr();
        let inner = KBox::new(
            RegInner {
                fops,
                misc: Opaque::uninit(),
            },
            GFP_KERNEL,
        )?;
        let mut misc = raw;
        misc.mode = 0o666;
        misc.fops = &inner.fops;
        // SAFETY: The box is ours and does not move until dropped.
        unsafe { inner.misc.get().write(misc) };
        // Where replaced pages go (`RxBatch`).
        // SAFETY: Once per module, undone in `drop` (or below).
        super::errno::to_result(unsafe { ext::zcnet_page_give_init() })?;
        // SAFETY: `misc` is initialised and lives in the box until `drop`
        // deregisters it. The kernel's open callback casts it to a
        // `MiscDeviceRegistration<Device<T>>`, a `repr(transparent)` wrapper
        // of the same `miscdevice`, and `Device::open` does not use it.
        let err = unsafe { bindings::misc_register(inner.misc.get()) };
        if err != 0 {
            // SAFETY: Initialised above.
            unsafe { ext::zcnet_page_give_exit() };
            return Err(Error::from_errno(err));
        }
        Ok(Self {
            inner,
            _t: PhantomData,
        })
    }
}

impl<T: MapDevice> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`; open files and mappings hold the
        // module (`fops.owner`), so none is left when the module goes.
        unsafe { bindings::misc_deregister(self.inner.misc.get()) };
        // SAFETY: Initialised in `register`; no batch is left (no file).
        unsafe { ext::zcnet_page_give_exit() };
    }
}

/// Installs by [`install_user`] in consecutive pages, completed together:
/// the replaced pages leave every mapping at their install (invariant 1) but
/// are held here until the batch completes, when they go back to the receive
/// side's stash together and the new ones are mapped for the installing
/// task, when the batch is full, the next install is elsewhere, or the batch
/// drops. It remembers the mapping it installed in last (and holds its
/// file), so that the following pages of one receive take no mapping lock.
/// A mapping replaced meanwhile by another thread of the task keeps getting
/// the pages (its file is held): they land in the region the buffer was in
/// when the receive reached it, as a copy would have written them there.
pub struct RxBatch {
    /// `[dlo, dhi)`'s file, when it is a writable mapping of this device.
    dfile: Option<ARef<File>>,
    /// The mapping looked up last.
    dlo: usize,
    dhi: usize,
    /// `dfile`'s page index at `dlo`.
    didx: usize,
    /// The user address of page `idx`, and the pending installs.
    uaddr: usize,
    idx: usize,
    n: usize,
    old: [Option<PageRef>; RX_BATCH],
}

impl RxBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self {
            dfile: None,
            dlo: 0,
            dhi: 0,
            didx: 0,
            uaddr: 0,
            idx: 0,
            n: 0,
            old: Default::default(),
        }
    }

    /// The held file's region.
    fn region(&self) -> Option<(Pin<&MapFile>, &dyn DynRegion)> {
        let file = self.dfile.as_ref()?;
        // SAFETY: `dfile` is only ever a file of this device (`dest`), held.
        let f = unsafe { map_file(file.as_ptr()) };
        let m = f.get_ref().mapped.as_ref()?;
        Some((f, m.region.as_deref()?))
    }

    /// Completes the pending installs.
    fn flush(&mut self) {
        if self.n == 0 {
            return;
        }
        let n = core::mem::replace(&mut self.n, 0);
        // Out of every mapping since their install (invariant 1): back to the
        // receive side's stash (or freed), where a page nobody else holds may
        // take a later packet's payload.
        let mut raw = [ptr::null_mut::<bindings::page>(); RX_BATCH];
        let mut k = 0;
        for p in self.old.iter_mut().take(n).filter_map(Option::take) {
            raw[k] = p.into_raw();
            k += 1;
        }
        // SAFETY: `raw[..k]` are references of ours, handed over; each page
        // left every mapping at its install (invariant 1), so none is mapped.
        unsafe { ext::zcnet_page_give_back(raw.as_mut_ptr(), k as ffi::c_ulong) };
        // The new pages, for the installing task at once (no read fault),
        // where the mapping is still the one the installs went through.
        let Some((f, _)) = self.region() else {
            return;
        };
        let current = kernel::current!();
        let Some(mm) = current.mm() else {
            return;
        };
        let guard = mm.mmap_read_lock();
        if let Some((vma, now, r, idx)) = at_addr(&guard, self.uaddr) {
            if ptr::eq(now.get_ref(), f.get_ref())
                && idx == self.idx
                && self.uaddr + (n << PAGE_SHIFT) <= vma.end()
            {
                // INVARIANT: the lock of the vma's mm is held for the call,
                // and the range lies in it.
                r.map_range(
                    self.idx,
                    n,
                    MapAt {
                        vma: vma.as_ptr(),
                        addr: self.uaddr,
                    },
                );
            }
        }
    }

    /// Completes the installs and lets the mapping go.
    fn end(&mut self) {
        self.flush();
        self.dfile = None;
        self.dlo = 0;
        self.dhi = 0;
    }

    /// Looks up the mapping at `uaddr` for the installs (the pending ones
    /// completed first): the whole mapping, `[dlo, dhi)`, is remembered, with
    /// its file held when it is a writable mapping of this device, so that
    /// the following pages of a receive need neither the mapping lock nor a
    /// lookup.
    fn dest(&mut self, uaddr: usize) {
        self.end();
        let current = kernel::current!();
        let Some(mm) = current.mm() else {
            return;
        };
        let guard = mm.mmap_read_lock();
        let Some(vma) = guard.vma_lookup(uaddr) else {
            return;
        };
        self.dlo = vma.start();
        self.dhi = vma.end();
        if let Some((vma, _, _, idx)) = at_addr(&guard, self.dlo) {
            let (start, end) = (vma.start(), vma.end());
            let npages = (end - start) >> PAGE_SHIFT;
            // SAFETY: A vma of this device holds its file (positive refcount
            // while the lock is held); the file is never used for `f_pos`.
            let file = unsafe { File::from_raw_file((*vma.as_ptr()).vm_file) };
            let fits = self
                .region_of(file)
                .is_some_and(|m| idx + npages <= m.npages);
            if vma.flags() & flags::WRITE != 0 && fits {
                self.dfile = Some(ARef::from(file));
                self.didx = idx;
            }
        }
    }

    fn region_of<'a>(&self, file: &'a File) -> Option<&'a Mapped> {
        // SAFETY: `file` is a file of this device (the caller's vma has
        // `VM_OPS`), held by its vma while the caller holds the lock.
        let f = unsafe { map_file(file.as_ptr()) };
        f.get_ref().mapped.as_ref()
    }
}

impl Default for RxBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for RxBatch {
    fn drop(&mut self) {
        self.end();
    }
}

/// Puts `page` at the page-aligned user address `uaddr` of the current task
/// when it lies in a writable mapping of this device ([`MapDevice::install`]),
/// completed with `batch`: `Ok(false)` when it does not. May sleep.
pub fn install_user(uaddr: usize, page: &PageRef, batch: &mut RxBatch) -> Result<bool> {
    if uaddr % PAGE_SIZE != 0 {
        return Ok(false);
    }
    if uaddr < batch.dlo || uaddr >= batch.dhi {
        batch.dest(uaddr);
    }
    if batch.dfile.is_none() {
        return Ok(false);
    }
    let idx = batch.didx + ((uaddr - batch.dlo) >> PAGE_SHIFT);
    if batch.n != 0 && (batch.n == RX_BATCH || idx != batch.idx + batch.n) {
        batch.flush();
    }
    let Some((_, r)) = batch.region() else {
        return Ok(false);
    };
    let old = r.install(idx, page.clone())?;
    if batch.n == 0 {
        batch.uaddr = uaddr;
        batch.idx = idx;
    }
    batch.old[batch.n] = Some(old);
    batch.n += 1;
    Ok(true)
}

/// Pages of the current task's memory in a mapping of this device, taken by
/// reference and write-protected everywhere ([`MapDevice::grab`]): from the
/// page-aligned user address `uaddr`, at most `max` (and [`GRAB_MAX`]).
/// `Ok(0)` when `uaddr` lies in no such mapping.
pub fn grab_user(uaddr: usize, max: usize, out: &mut [Option<PageRef>; GRAB_MAX]) -> Result<usize> {
    if max == 0 || uaddr % PAGE_SIZE != 0 {
        return Ok(0);
    }
    let current = kernel::current!();
    let Some(mm) = current.mm() else {
        return Ok(0);
    };
    let guard = mm.mmap_read_lock();
    let Some((vma, _, r, idx)) = at_addr(&guard, uaddr) else {
        return Ok(0);
    };
    let n = max.min(GRAB_MAX).min((vma.end() - uaddr) >> PAGE_SHIFT);
    // The driver zaps the pages before it takes them (invariant 2).
    Ok(r.grab(idx, &mut out[..n]))
}

/// Pages [`grab_user`] takes at most at once.
pub const GRAB_MAX: usize = 16;
