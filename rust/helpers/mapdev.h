/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A character device whose mmap() gives memory the driver owns page by page
 * (rust/zcnet/mapdev.rs): the pages are mapped with VM_PFNMAP (so mappings
 * take no page references and get_user_pages refuses them), every page can be
 * write-protected in every mapping at once (fork() children included), and
 * each fault asks the driver which page to map and whether writing is allowed.
 */
#ifndef ZCNET_MAPDEV_H
#define ZCNET_MAPDEV_H

#include <linux/types.h>

struct page;
struct net;

/* The driver's callbacks; `priv` is what create() returned. */
struct zcnet_mapdev_ops {
	/* mmap of npages pages by the current task: the driver's state, or an
	 * ERR_PTR. */
	void *(*create)(unsigned long npages, struct net *net, void *map);
	/* The last mapping and the file are gone. */
	void (*destroy)(void *priv);
	/* Maps page idx with zcnet_helper_mapdev_insert(vmf, ...) under the
	 * driver's lock and returns its result; write: the access writes (the
	 * driver maps a page nobody else holds). Or -errno. */
	long (*fault)(void *priv, unsigned long idx, bool write, void *vmf);
	/* A write to page idx mapped read-only, through a PTE of pfn: 0 when
	 * it may become writable in place (pfn is the slot's page and nobody
	 * else holds it), 1 when the driver zapped the PTE (another page is
	 * there, or pfn was not the slot's: the access retries and faults the
	 * slot's page in), or -errno. */
	int (*mkwrite)(void *priv, unsigned long idx, unsigned long pfn);
	/* References on n pages from idx into pages[]: how many (the driver
	 * holds the pages while the mapping lock is held), each page zapped
	 * from every mapping before its reference is taken. */
	long (*grab)(void *priv, unsigned long idx, unsigned long n, struct page **pages);
	/* Put page (a reference for the driver) at idx in place of the page
	 * there, zapped from every mapping first (under the driver's lock),
	 * which goes to *old (a reference for the caller): 1, or -errno
	 * (page's reference then dropped by the driver). */
	long (*install)(void *priv, unsigned long idx, struct page *page, struct page **old);
	/* Map pages idx..idx+n with one zcnet_helper_mapdev_insert_at(at,
	 * pfns, n) under the driver's lock (the pages it has there now). */
	void (*map_range)(void *priv, unsigned long idx, unsigned long n, void *at);
};

/* Registers the misc device /dev/NAME (0666) with these callbacks. */
int zcnet_helper_mapdev_register(const char *name, const struct zcnet_mapdev_ops *ops);
void zcnet_helper_mapdev_unregister(void);
/*
 * Removes page idx..idx+n of the mapping `map` (create()'s argument) from
 * every process's page tables, so the next access faults.
 */
void zcnet_helper_mapdev_zap(void *map, unsigned long idx, unsigned long n);
/*
 * Up to max whole pages of the current task's memory from the page-aligned
 * user address uaddr, when they lie in one mapping of this device: each
 * page's reference in pages[], taken after every mapping of it was zapped
 * (so a later write faults and gets its own copy while the page is held).
 * The count, 0 when uaddr is not in such a mapping, or -errno.
 */
long zcnet_helper_mapdev_grab(unsigned long uaddr, unsigned long max, struct page **pages);

/* Maps pfn at the faulting address: writable when `write`, else read-only.
 * The vm_fault_t for the fault handler to return. */
unsigned int zcnet_helper_mapdev_insert(void *vmf, unsigned long pfn, bool write);
/* Maps pfns[0..n] read-only as the pages of map_range()'s `at` (the
 * installing task's own mapping, its mapping lock held; n at most the
 * range's), each where nothing is mapped: the task's next read does not
 * fault. A page where something is mapped stays as it is. */
void zcnet_helper_mapdev_insert_at(void *at, const unsigned long *pfns, unsigned long n);

/* Pages a batch of installs holds at most. */
#define ZCNET_MAPDEV_BATCH 16

/*
 * Installs in consecutive pages of one mapping, pending: the pages are the
 * driver's already, and the pages they replaced left every mapping at their
 * install (mapdev.c's invariant 1) but are held here until the batch
 * completes: they go back to the receive side's stash together, and the new
 * ones are mapped for the installing task. The
 * batch also remembers the last mapping an install looked up, so that the
 * following installs of a receive take no mapping lock. Zero-initialised;
 * ended with zcnet_helper_mapdev_batch_end() before the caller returns to
 * user space.
 */
struct zcnet_mapdev_batch {
	struct file *dfile;		/* [dlo, dhi)'s file, held; or NULL */
	unsigned long dlo, dhi;		/* the mapping looked up last */
	unsigned long didx;		/* dfile's page index at dlo */
	unsigned long uaddr;		/* the user address of page idx */
	unsigned long idx, n;		/* pending installs */
	struct page *old[ZCNET_MAPDEV_BATCH];
};

/*
 * Puts `page` (the caller's reference passes to the driver on success) at
 * the page-aligned user address uaddr of the current task when it lies in a
 * writable mapping of this device, in place of the page there, pending in
 * batch b (completed first when full or not contiguous): 1, 0 when uaddr is
 * not in such a mapping (the reference stays the caller's), or -errno. May
 * sleep.
 */
long zcnet_helper_mapdev_install(unsigned long uaddr, struct page *page,
				 struct zcnet_mapdev_batch *b);
/* Completes b's installs (see struct zcnet_mapdev_batch) and lets its
 * mapping go; may sleep. */
void zcnet_helper_mapdev_batch_end(struct zcnet_mapdev_batch *b);

#endif
