// SPDX-License-Identifier: GPL-2.0
/*
 * The part of the mapping device (rust/zcnet/mapdev.rs: the misc device, its
 * mmap(), the vm_operations and the region invariants, all in Rust) that
 * Rust cannot reach in 7.2. Each function says why; listed in
 * Documentation/rust-layer.rst.
 */
#include <linux/idr.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>

#include "mapdev.h"

/* The last id: its byte offsets end below 2^63 (loff_t). */
#define ZCNET_MAPDEV_LAST_ID ((unsigned int)(LLONG_MAX >> (ZCNET_MAPDEV_SHIFT + PAGE_SHIFT)) - 1)

/*
 * C: DEFINE_IDA is a static initialiser (an xarray and its spin lock) and
 * 7.2's kernel crate has no IDA; the test knob is a module_param readable in
 * sysfs (0444), which 7.2's module! parameters are not (they have no sysfs
 * file).
 */
static DEFINE_IDA(zcnet_mapdev_ids);
/* The lowest id given: tests start it near the last (mapdev.rs, invariant 3). */
static uint mapdev_first_id;
module_param(mapdev_first_id, uint, 0444);
MODULE_PARM_DESC(mapdev_first_id, "lowest file-offset id of a region (a test knob)");

int zcnet_helper_mapdev_id_get(void)
{
	int id = ida_alloc_range(&zcnet_mapdev_ids, min(mapdev_first_id, ZCNET_MAPDEV_LAST_ID),
				 ZCNET_MAPDEV_LAST_ID, GFP_KERNEL);

	if (id < 0) {
		pr_warn_ratelimited("%s: no file offsets left for a region (%d)\n",
				    KBUILD_MODNAME, id);
		return id == -ENOSPC ? -ENOMEM : id;
	}
	return id;
}

void zcnet_helper_mapdev_id_put(int id)
{
	ida_free(&zcnet_mapdev_ids, id);
}

/* C: pte_pfn() is the architecture's inline on its pte_t encoding. */
unsigned long zcnet_helper_mapdev_fault_pfn(struct vm_fault *vmf)
{
	return pte_pfn(vmf->orig_pte);
}

struct zcnet_mapdev_fill {
	struct vm_area_struct *vma;
	pgprot_t prot;
	const unsigned long *pfn;
	unsigned long i;
};

/*
 * C: apply_to_page_range()'s step, under the page table lock, works on a
 * pte_t with the architecture's inlines and macros (ptep_get, pte_none,
 * pfn_pte, pte_mkspecial, set_pte_at, update_mmu_cache): what insert_pfn()
 * does for a PTE nobody has filled meanwhile.
 */
static int zcnet_mapdev_fill_pte(pte_t *pte, unsigned long addr, void *data)
{
	struct zcnet_mapdev_fill *d = data;
	unsigned long pfn = d->pfn[d->i++];

	if (pte_none(ptep_get(pte))) {
		set_pte_at(d->vma->vm_mm, addr, pte, pte_mkspecial(pfn_pte(pfn, d->prot)));
		/* The architecture's hook for a new PTE (a no-op on x86). */
		update_mmu_cache(d->vma, addr, pte);
	}
	return 0;
}

void zcnet_helper_mapdev_insert_at(struct vm_area_struct *vma, unsigned long addr,
				   const unsigned long *pfns, unsigned long n)
{
	/*
	 * Read-only: vm_page_prot asks (pfn_mkwrite) before a write. One walk
	 * and one page table lock for the range, and no PAT lookup per page
	 * (vmf_insert_pfn_prot's): the pages are order-0 kernel pages from
	 * skbs or the driver's own allocations, write-back memory as
	 * vm_page_prot says (only set_memory_uc/wc() give RAM another type,
	 * and such pages are not network buffers). A failed page table
	 * allocation leaves the rest to fault in.
	 */
	struct zcnet_mapdev_fill d = {
		.vma = vma,
		.prot = vma->vm_page_prot,
		.pfn = pfns,
	};

	if (addr + (n << PAGE_SHIFT) > vma->vm_end)
		return;
	apply_to_page_range(vma->vm_mm, addr, n << PAGE_SHIFT, zcnet_mapdev_fill_pte, &d);
}

/*
 * C: pr_warn_ratelimited() keeps its rate-limit state in a static per call
 * site (a macro); 7.2's kernel crate has no rate-limited print.
 */
void zcnet_helper_mapdev_refused(int why, unsigned long npages, long err)
{
	switch (why) {
	case ZCNET_MAPDEV_NOT_SHARED:
		pr_warn_ratelimited("%s: a region needs MAP_SHARED\n", KBUILD_MODNAME);
		break;
	case ZCNET_MAPDEV_NOT_AT_0:
		pr_warn_ratelimited("%s: a region is mapped from offset 0\n", KBUILD_MODNAME);
		break;
	case ZCNET_MAPDEV_BUSY:
		pr_warn_ratelimited("%s: one region per open file; open the device again\n",
				    KBUILD_MODNAME);
		break;
	case ZCNET_MAPDEV_NO_REGION:
		pr_warn_ratelimited("%s: no region of %lu pages for %s[%d] (error %ld)\n",
				    KBUILD_MODNAME, npages, current->comm, task_pid_nr(current), err);
		break;
	}
}
