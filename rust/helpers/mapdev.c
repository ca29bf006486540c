// SPDX-License-Identifier: GPL-2.0
/*
 * Driver-owned shared mappings (see mapdev.h): the misc device, its mmap()
 * and vm_operations. One mapping per open file; the file's pages get their
 * own range of file offsets (vm_pgoff), so that unmap_mapping_pages() on the
 * device's address_space reaches exactly the mappings of that file's pages,
 * in every process that shares them after fork().
 *
 * # Invariants (what the driver's callbacks keep, rust/zcnet/mapdev.rs)
 *
 * 1. Every PTE of a mapping maps the page in its slot: a slot changes only
 *    with the page's PTEs zapped, under the driver's lock, before the new
 *    page can be mapped (faults map under that lock).
 * 2. A PTE is writable only while the driver holds the only reference to the
 *    page in its slot: a reference is taken only with the page's PTEs zapped
 *    first (under the same lock), a write fault maps a page writable only
 *    when it is the slot's and nobody else holds it, and pfn_mkwrite
 *    checks the faulting PTE's pfn against the slot.
 * 3. Each open file's offsets are its own: [id << SHIFT, (id + 1) << SHIFT)
 *    pages for an id no other open file has (an IDA, given back at release),
 *    and the last id keeps every byte offset below 2^63; mmap() refuses
 *    when no id is free rather than reuse one.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/idr.h>
#include <net/net_namespace.h>

#include "mapdev.h"
#include "page_stash.h"

struct zcnet_mapdev_file {
	struct file *file;
	void *priv;			/* the driver's, after the mmap */
	unsigned long base;		/* vm_pgoff of page 0 (id << SHIFT) */
	int id;				/* from zcnet_mapdev_ids, or -1 */
	unsigned long npages;
	struct mm_struct *mm;		/* its pinned_vm counts the pages (mmgrab) */
	struct mutex lock;		/* serialises mmap against mmap */
};

static const struct zcnet_mapdev_ops *zcnet_mapdev_ops;
/* 2^24 pages (64 GiB with 4 KiB pages) of file offsets per open file. */
#define ZCNET_MAPDEV_SHIFT 24
/* The last id: its byte offsets end below 2^63 (loff_t). */
#define ZCNET_MAPDEV_LAST_ID ((unsigned int)(LLONG_MAX >> (ZCNET_MAPDEV_SHIFT + PAGE_SHIFT)) - 1)
static DEFINE_IDA(zcnet_mapdev_ids);
/* The lowest id given: tests start it near the last (invariant 3). */
static uint mapdev_first_id;
module_param(mapdev_first_id, uint, 0444);
MODULE_PARM_DESC(mapdev_first_id, "lowest file-offset id of a region (a test knob)");

static const struct vm_operations_struct zcnet_mapdev_vm_ops;

static struct zcnet_mapdev_file *zcnet_mapdev_of(struct vm_area_struct *vma,
						  unsigned long pgoff, unsigned long *idx)
{
	struct zcnet_mapdev_file *f = vma->vm_file->private_data;

	if (pgoff < f->base || pgoff - f->base >= f->npages)
		return NULL;
	*idx = pgoff - f->base;
	return f;
}

/* A driver callback's -errno as a fault result. */
static vm_fault_t zcnet_mapdev_error(long err)
{
	return err == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
}

static vm_fault_t zcnet_mapdev_fault(struct vm_fault *vmf)
{
	struct zcnet_mapdev_file *f;
	unsigned long idx;
	long r;

	f = zcnet_mapdev_of(vmf->vma, vmf->pgoff, &idx);
	if (!f)
		return VM_FAULT_SIGBUS;
	r = zcnet_mapdev_ops->fault(f->priv, idx, vmf->flags & FAULT_FLAG_WRITE, vmf);
	if (r < 0)
		return zcnet_mapdev_error(r);
	return (vm_fault_t)r;
}

unsigned int zcnet_helper_mapdev_insert(void *p, unsigned long pfn, bool write)
{
	struct vm_fault *vmf = p;
	struct vm_area_struct *vma = vmf->vma;
	/*
	 * vm_page_prot is read-only (pfn_mkwrite makes the core ask before a
	 * write); a write fault maps the page writable at once.
	 */
	pgprot_t prot = write ? vm_get_page_prot(vma->vm_flags) : vma->vm_page_prot;

	return vmf_insert_pfn_prot(vma, vmf->address, pfn, prot);
}

/* map_range()'s place: the user address of its first page in a mapping of
 * this device, in a call that holds the task's mapping lock. */
struct zcnet_mapdev_at {
	struct vm_area_struct *vma;
	unsigned long addr;
};

struct zcnet_mapdev_fill {
	struct vm_area_struct *vma;
	pgprot_t prot;
	const unsigned long *pfn;
	unsigned long i;
};

/* apply_to_page_range()'s step, under the page table lock: what
 * insert_pfn() does for a PTE nobody has filled meanwhile. */
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

void zcnet_helper_mapdev_insert_at(void *p, const unsigned long *pfns, unsigned long n)
{
	struct zcnet_mapdev_at *at = p;
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
		.vma = at->vma,
		.prot = at->vma->vm_page_prot,
		.pfn = pfns,
	};

	if (at->addr + (n << PAGE_SHIFT) > at->vma->vm_end)
		return;
	apply_to_page_range(at->vma->vm_mm, at->addr, n << PAGE_SHIFT, zcnet_mapdev_fill_pte, &d);
}

static vm_fault_t zcnet_mapdev_pfn_mkwrite(struct vm_fault *vmf)
{
	struct zcnet_mapdev_file *f;
	unsigned long idx;
	int r;

	f = zcnet_mapdev_of(vmf->vma, vmf->pgoff, &idx);
	if (!f)
		return VM_FAULT_SIGBUS;
	/* Invariant 2: the PTE's page, checked against the slot. */
	r = zcnet_mapdev_ops->mkwrite(f->priv, idx, pte_pfn(vmf->orig_pte));
	if (r < 0)
		return zcnet_mapdev_error(r);
	/* Another page is there now (or the PTE was stale): the old mapping
	 * is gone, retry. */
	return r ? VM_FAULT_NOPAGE : 0;
}

static const struct vm_operations_struct zcnet_mapdev_vm_ops = {
	.fault = zcnet_mapdev_fault,
	.pfn_mkwrite = zcnet_mapdev_pfn_mkwrite,
};

static int zcnet_mapdev_open(struct inode *inode, struct file *file)
{
	struct zcnet_mapdev_file *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	f->id = -1;
	f->file = file;
	file->private_data = f;
	return 0;
}

static int zcnet_mapdev_release(struct inode *inode, struct file *file)
{
	struct zcnet_mapdev_file *f = file->private_data;

	/* Every mapping holds the file: none is left. */
	if (f->priv) {
		zcnet_mapdev_ops->destroy(f->priv);
		atomic64_sub(f->npages, &f->mm->pinned_vm);
		mmdrop(f->mm);
	}
	if (f->id >= 0)
		ida_free(&zcnet_mapdev_ids, f->id);
	kfree(f);
	return 0;
}

static int zcnet_mapdev_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct zcnet_mapdev_file *f = file->private_data;
	unsigned long npages = vma_pages(vma);
	void *priv;
	int err;

	if (!(vma->vm_flags & VM_SHARED)) {
		pr_warn_ratelimited("%s: a region needs MAP_SHARED\n", KBUILD_MODNAME);
		return -EINVAL;
	}
	if (vma->vm_pgoff) {
		pr_warn_ratelimited("%s: a region is mapped from offset 0\n", KBUILD_MODNAME);
		return -EINVAL;
	}
	if (npages == 0 || npages > (1UL << ZCNET_MAPDEV_SHIFT))
		return -EINVAL;
	mutex_lock(&f->lock);
	if (f->priv) {
		mutex_unlock(&f->lock);
		pr_warn_ratelimited("%s: one region per open file; open the device again\n",
				    KBUILD_MODNAME);
		return -EBUSY;
	}
	/* Invariant 3: an id of its own, or no region (never a wrapped one). */
	f->id = ida_alloc_range(&zcnet_mapdev_ids, min(mapdev_first_id, ZCNET_MAPDEV_LAST_ID),
				ZCNET_MAPDEV_LAST_ID, GFP_KERNEL);
	if (f->id < 0) {
		err = f->id;
		f->id = -1;
		mutex_unlock(&f->lock);
		pr_warn_ratelimited("%s: no file offsets left for a region (%d)\n",
				    KBUILD_MODNAME, err);
		return err == -ENOSPC ? -ENOMEM : err;
	}
	f->base = (unsigned long)f->id << ZCNET_MAPDEV_SHIFT;
	f->npages = npages;
	/*
	 * The driver charges the pages to the user (RLIMIT_MEMLOCK, logging
	 * why it refuses) before it allocates them, and gives the charge back
	 * in destroy(). The mapping process's pinned_vm (VmPin) shows them
	 * too, as io_uring's buffers; the limit is the user's, so a fork()
	 * child or an exec()ed program maps no more than its user may.
	 */
	priv = zcnet_mapdev_ops->create(npages, current->nsproxy->net_ns, f);
	if (IS_ERR(priv)) {
		ida_free(&zcnet_mapdev_ids, f->id);
		f->id = -1;
		mutex_unlock(&f->lock);
		pr_warn_ratelimited("%s: no region of %lu pages for %s[%d] (error %ld)\n",
				    KBUILD_MODNAME, npages, current->comm, task_pid_nr(current),
				    PTR_ERR(priv));
		return PTR_ERR(priv);
	}
	f->priv = priv;
	f->mm = current->mm;
	mmgrab(f->mm);
	atomic64_add(npages, &f->mm->pinned_vm);
	mutex_unlock(&f->lock);
	vma->vm_pgoff = f->base;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &zcnet_mapdev_vm_ops;
	return 0;
}

static const struct file_operations zcnet_mapdev_fops = {
	.owner = THIS_MODULE,
	.open = zcnet_mapdev_open,
	.release = zcnet_mapdev_release,
	.mmap = zcnet_mapdev_mmap,
};

static struct miscdevice zcnet_mapdev_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.fops = &zcnet_mapdev_fops,
	.mode = 0666,
};

int zcnet_helper_mapdev_register(const char *name, const struct zcnet_mapdev_ops *ops)
{
	int err;

	zcnet_mapdev_ops = ops;
	zcnet_mapdev_misc.name = name;
	/* Where the replaced pages go (zcnet_mapdev_flush()). */
	err = zcnet_page_give_init();
	if (err)
		return err;
	err = misc_register(&zcnet_mapdev_misc);
	if (err)
		zcnet_page_give_exit();
	return err;
}

void zcnet_helper_mapdev_unregister(void)
{
	misc_deregister(&zcnet_mapdev_misc);
	zcnet_page_give_exit();
}

void zcnet_helper_mapdev_zap(void *map, unsigned long idx, unsigned long n)
{
	struct zcnet_mapdev_file *f = map;

	/* Page offsets: no shift can lose bits (invariant 3). */
	unmap_mapping_pages(f->file->f_mapping, f->base + idx, n, true);
}

/* The mapping of this device at user address uaddr of mm (its mapping lock
 * held), its file's state and the page index there; NULL when there is none. */
static struct zcnet_mapdev_file *zcnet_mapdev_at_addr(struct mm_struct *mm, unsigned long uaddr,
						      struct vm_area_struct **vmap,
						      unsigned long *idx)
{
	struct vm_area_struct *vma = vma_lookup(mm, uaddr);

	if (!vma || vma->vm_ops != &zcnet_mapdev_vm_ops)
		return NULL;
	*vmap = vma;
	return zcnet_mapdev_of(vma, vma->vm_pgoff + ((uaddr - vma->vm_start) >> PAGE_SHIFT), idx);
}

long zcnet_helper_mapdev_grab(unsigned long uaddr, unsigned long max, struct page **pages)
{
	struct mm_struct *mm = current->mm;
	struct zcnet_mapdev_file *f;
	struct vm_area_struct *vma;
	unsigned long idx, n;
	long got = 0;

	if (!mm || !max || offset_in_page(uaddr))
		return 0;
	mmap_read_lock(mm);
	f = zcnet_mapdev_at_addr(mm, uaddr, &vma, &idx);
	if (!f)
		goto out;
	n = min(max, (vma->vm_end - uaddr) >> PAGE_SHIFT);
	/* The driver zaps the pages before it takes them (invariant 2). */
	got = zcnet_mapdev_ops->grab(f->priv, idx, n, pages);
out:
	mmap_read_unlock(mm);
	return got;
}

/* Completes b's installs (see struct zcnet_mapdev_batch). */
static void zcnet_mapdev_flush(struct zcnet_mapdev_batch *b)
{
	struct mm_struct *mm = current->mm;
	struct zcnet_mapdev_file *f, *now;
	struct vm_area_struct *vma;
	unsigned long idx;

	if (!b->n)
		return;
	f = b->dfile->private_data;
	/* Out of every mapping since their install (invariant 1): back to the
	 * receive side's stash (or freed), where a page nobody else holds may
	 * take a later packet's payload. */
	zcnet_page_give_back(b->old, b->n);
	/* The new pages, for the installing task at once (no read fault),
	 * where the mapping is still the one the installs went through. */
	mmap_read_lock(mm);
	now = zcnet_mapdev_at_addr(mm, b->uaddr, &vma, &idx);
	if (now == f && idx == b->idx && b->uaddr + (b->n << PAGE_SHIFT) <= vma->vm_end) {
		struct zcnet_mapdev_at at = { .vma = vma, .addr = b->uaddr };

		zcnet_mapdev_ops->map_range(f->priv, b->idx, b->n, &at);
	}
	mmap_read_unlock(mm);
	b->n = 0;
}

void zcnet_helper_mapdev_batch_end(struct zcnet_mapdev_batch *b)
{
	zcnet_mapdev_flush(b);
	if (b->dfile)
		fput(b->dfile);
	b->dfile = NULL;
	b->dlo = b->dhi = 0;
}

/*
 * Looks up the mapping at uaddr for b's installs (the pending ones
 * completed first): the whole mapping, [dlo, dhi), is remembered, with its
 * file held when it is a writable mapping of this device, so that the
 * following pages of a receive need neither the mapping lock nor a lookup.
 * A mapping replaced meanwhile by another thread of the task keeps getting
 * the pages (its file is held): they land in the region the buffer was in
 * when the receive reached it, as a copy would have written them there.
 */
static void zcnet_mapdev_dest(struct zcnet_mapdev_batch *b, unsigned long uaddr)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct zcnet_mapdev_file *f;
	unsigned long idx;

	zcnet_helper_mapdev_batch_end(b);
	if (!mm)
		return;
	mmap_read_lock(mm);
	vma = vma_lookup(mm, uaddr);
	if (vma) {
		b->dlo = vma->vm_start;
		b->dhi = vma->vm_end;
		f = zcnet_mapdev_at_addr(mm, vma->vm_start, &vma, &idx);
		if (f && (vma->vm_flags & VM_WRITE) && idx + vma_pages(vma) <= f->npages) {
			b->dfile = get_file(vma->vm_file);
			b->didx = idx;
		}
	}
	mmap_read_unlock(mm);
}

long zcnet_helper_mapdev_install(unsigned long uaddr, struct page *page,
				 struct zcnet_mapdev_batch *b)
{
	struct zcnet_mapdev_file *f;
	struct page *old = NULL;
	unsigned long idx;
	long r;

	if (offset_in_page(uaddr))
		return 0;
	if (uaddr < b->dlo || uaddr >= b->dhi)
		zcnet_mapdev_dest(b, uaddr);
	if (!b->dfile)
		return 0;
	f = b->dfile->private_data;
	idx = b->didx + ((uaddr - b->dlo) >> PAGE_SHIFT);
	if (b->n && (b->n == ZCNET_MAPDEV_BATCH || idx != b->idx + b->n))
		zcnet_mapdev_flush(b);
	r = zcnet_mapdev_ops->install(f->priv, idx, page, &old);
	if (r > 0 && old) {
		if (!b->n) {
			b->uaddr = uaddr;
			b->idx = idx;
		}
		b->old[b->n++] = old;
	}
	return r;
}
