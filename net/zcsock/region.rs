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

use crate::stat;
use crate::stat::s;
use crate::zcnet::mapdev::{Fault, Map, MapAt, MapDevice};
use crate::zcnet::netstat::NetRef;
use crate::zcnet::pageref::PageRef;
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// One mapped file's pages.
#[pin_data(PinnedDrop)]
pub(crate) struct Region {
    /// The pages, by index in the mapping; mappings point at them.
    #[pin]
    pages: Mutex<KVec<PageRef>>,
    net: NetRef,
    map: Map,
}

/// The device whose mappings are regions.
pub(crate) struct Regions;

impl MapDevice for Regions {
    type Region = Region;

    fn create(npages: usize, net: NetRef, map: Map) -> Result<Pin<KBox<Region>>> {
        let mut pages = KVec::with_capacity(npages, GFP_KERNEL)?;
        for _ in 0..npages {
            pages.push(PageRef::alloc_zeroed()?, GFP_KERNEL)?;
        }
        stat::add(net.net(), s::REGIONS, 1);
        stat::add(net.net(), s::REGION_PAGES, npages as i64);
        KBox::pin_init(
            pin_init!(Region {
                pages <- new_mutex!(pages),
                net,
                map,
            }),
            GFP_KERNEL,
        )
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

    fn mkwrite(r: &Region, idx: usize) -> Result<bool> {
        let mut pages = r.pages.lock();
        if pages.get(idx).ok_or(EFAULT)?.refs() > 1 {
            r.replace(&mut pages, idx)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn grab(r: &Region, idx: usize, out: &mut [Option<PageRef>]) -> usize {
        let pages = r.pages.lock();
        let mut n = 0;
        for (o, p) in out.iter_mut().zip(pages.iter().skip(idx)) {
            *o = Some(p.clone());
            n += 1;
        }
        n
    }

    fn install(r: &Region, idx: usize, page: PageRef) -> Result<PageRef> {
        let mut pages = r.pages.lock();
        let slot = pages.get_mut(idx).ok_or(EFAULT)?;
        // The old page goes to the caller, which zaps it before dropping it
        // (it stays alive where else it is held).
        Ok(core::mem::replace(slot, page))
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
        let slot = pages.get_mut(idx).ok_or(EFAULT)?;
        let copy = slot.copy()?;
        let old = core::mem::replace(slot, copy);
        self.map.zap(idx, 1);
        // Out of every mapping first: TCP may have let it go meanwhile, and
        // no mapping may point at a freed page.
        drop(old);
        stat::add(self.net.net(), s::TX_COW_FAULTS, 1);
        Ok(())
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
