// SPDX-License-Identifier: GPL-2.0

//! Regions ("fast buffers", paper §2.1): `mmap()` of `/dev/zcsock` gives
//! memory mapped in user and kernel space ahead of time, whose pages can go
//! to TCP by reference.
//!
//! Copy-on-write (Balaji §4.2.4): a page TCP holds (a reference besides the
//! region's own) is write-protected in every mapping of it; the first write
//! then gives the region a fresh copy in its place, so the bytes in flight
//! stay those of the `send()` call. Mappings are `VM_PFNMAP` and take no page
//! reference, so "held by someone else" is simply `refs() > 1`.
//!
//! # Invariants
//!
//! The layer's (`zcnet::mapdev`), kept here under `Region::pages`' lock:
//! every PTE of a region maps the page in its slot (a slot changes only with
//! its PTEs zapped first: [`Region::set`]), and a region PTE is writable only
//! while the region holds the only reference to that page (a reference is
//! taken only after a zap: `grab`; `mkwrite` checks the faulting PTE's pfn
//! against the slot). A received page may be shared with another region or
//! process (loopback), so a stale PTE of it would write into theirs.

use crate::stat;
use crate::stat::s;
use crate::zcnet::mapdev::{Fault, Map, MapAt, MapDevice};
use crate::zcnet::memlock::MemlockCharge;
use crate::zcnet::netstat::NetRef;
use crate::zcnet::pageref::{self, PageRef};
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// One mapped file's pages.
#[pin_data(PinnedDrop)]
pub(crate) struct Region {
    /// The pages, by index in the mapping; mappings point at them.
    #[pin]
    pages: Mutex<KVec<PageRef>>,
    net: NetRef,
    map: Map,
    /// The slots, charged to the user who mapped the region (its
    /// `RLIMIT_MEMLOCK`), given back after the pages (declared last: dropped
    /// last) when the last mapping and the file are gone.
    _charge: MemlockCharge,
}

/// The device whose mappings are regions.
pub(crate) struct Regions;

impl MapDevice for Regions {
    type Region = Region;

    fn create(npages: usize, net: NetRef, map: Map) -> Result<Pin<KBox<Region>>> {
        // The user's charge first: nothing is allocated beyond its limit,
        // whichever process (a fork() child, an exec()ed program) maps.
        let charge = MemlockCharge::new(npages)?;
        // Memory the user asked for: its memory cgroup's too.
        let mut pages = KVec::with_capacity(npages, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..npages {
            // Up to 2^24 pages, under the mapping lock: killable.
            pageref::alloc_pause()?;
            pages.push(PageRef::alloc_zeroed()?, GFP_KERNEL_ACCOUNT)?;
        }
        let r = KBox::pin_init(
            pin_init!(Region {
                pages <- new_mutex!(pages),
                net,
                map,
                _charge: charge,
            }),
            GFP_KERNEL_ACCOUNT,
        )?;
        // Counted once the region exists (its drop uncounts it).
        stat::add(r.net.net(), s::REGIONS, 1);
        stat::add(r.net.net(), s::REGION_PAGES, npages as i64);
        Ok(r)
    }

    fn fault(r: &Region, idx: usize, write: bool, f: Fault) -> Result<u32> {
        let mut pages = r.pages.lock();
        let held = pages.get(idx).ok_or(EFAULT)?.refs() > 1;
        if write && held {
            r.replace(&mut pages, idx)?;
        }
        let page = pages.get(idx).ok_or(EFAULT)?;
        // Read-only while TCP holds it; a later write comes to `mkwrite`.
        Ok(f.map(page, write))
    }

    fn mkwrite(r: &Region, idx: usize, pfn: usize) -> Result<bool> {
        let mut pages = r.pages.lock();
        let page = pages.get(idx).ok_or(EFAULT)?;
        if page.pfn() != pfn {
            // A PTE of a page no longer in the slot: never made writable.
            r.map.zap(idx, 1);
            return Ok(true);
        }
        if page.refs() > 1 {
            r.replace(&mut pages, idx)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn grab(r: &Region, idx: usize, out: &mut [Option<PageRef>]) -> usize {
        let pages = r.pages.lock();
        let n = out.len().min(pages.len().saturating_sub(idx));
        // Read-only everywhere before anyone else holds them.
        r.map.zap(idx, n);
        for (o, p) in out.iter_mut().zip(pages.iter().skip(idx)).take(n) {
            *o = Some(p.clone());
        }
        n
    }

    fn install(r: &Region, idx: usize, page: PageRef) -> Result<PageRef> {
        let mut pages = r.pages.lock();
        // The old page goes to the caller (it stays alive where else it is
        // held).
        r.set(&mut pages, idx, page)
    }

    fn map_range(r: &Region, idx: usize, n: usize, at: MapAt) {
        let pages = r.pages.lock();
        // Read-only: a write asks first (`mkwrite`).
        at.map(pages.iter().skip(idx).take(n));
    }
}

impl Region {
    /// Gives page `idx` a private copy in place of a page someone else
    /// holds, and takes the old one out of every mapping.
    fn replace(&self, pages: &mut KVec<PageRef>, idx: usize) -> Result {
        let copy = pages.get(idx).ok_or(EFAULT)?.copy()?;
        // Out of every mapping before it goes: TCP may have let it go
        // meanwhile, and no mapping may point at a freed page.
        drop(self.set(pages, idx, copy)?);
        stat::add(self.net.net(), s::TX_COW_FAULTS, 1);
        Ok(())
    }

    /// Puts `page` in slot `idx` (the lock of `pages` held) and returns the
    /// page it replaces, whose PTEs were zapped first: the one place a slot
    /// changes (the invariants).
    fn set(&self, pages: &mut KVec<PageRef>, idx: usize, page: PageRef) -> Result<PageRef> {
        let slot = pages.get_mut(idx).ok_or(EFAULT)?;
        self.map.zap(idx, 1);
        Ok(core::mem::replace(slot, page))
    }
}

#[pinned_drop]
impl PinnedDrop for Region {
    fn drop(self: Pin<&mut Self>) {
        let n = self.pages.lock().len() as i64;
        stat::add(self.net.net(), s::REGIONS, -1);
        stat::add(self.net.net(), s::REGION_PAGES, -n);
    }
}
