/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust/zcnet/mapdev.rs (the device /dev/NAME, its mmap() and
 * vm_operations, the region invariants) cannot reach in Rust on 7.2; each
 * function in mapdev.c says why it is C.
 */
#ifndef ZCNET_MAPDEV_H
#define ZCNET_MAPDEV_H

#include <linux/types.h>

struct vm_area_struct;
struct vm_fault;

/* 2^24 pages (64 GiB with 4 KiB pages) of file offsets per open file. */
#define ZCNET_MAPDEV_SHIFT 24
/* Pages a batch of installs (rust/zcnet/mapdev.rs's RxBatch) holds at most. */
#define ZCNET_MAPDEV_BATCH 16

/*
 * A file-offset id no other open file has (pages [id << ZCNET_MAPDEV_SHIFT,
 * (id + 1) << ZCNET_MAPDEV_SHIFT), byte offsets below 2^63), from the
 * module parameter mapdev_first_id up; or -ENOMEM when none is left (logged,
 * rate-limited), never a reused one.
 */
int zcnet_helper_mapdev_id_get(void);
/* Gives back an id of zcnet_helper_mapdev_id_get(). */
void zcnet_helper_mapdev_id_put(int id);
/* The pfn the faulting PTE maps (vmf->orig_pte), for pfn_mkwrite. */
unsigned long zcnet_helper_mapdev_fault_pfn(struct vm_fault *vmf);
/*
 * Maps pfns[0..n] read-only (vma->vm_page_prot) at addr.. of vma (a mapping
 * of the device, its mm's mapping lock held, the range inside it), each
 * where nothing is mapped; a page where something is mapped stays as it is.
 */
void zcnet_helper_mapdev_insert_at(struct vm_area_struct *vma, unsigned long addr,
				   const unsigned long *pfns, unsigned long n);

/* Why mmap() refused, for zcnet_helper_mapdev_refused(). */
#define ZCNET_MAPDEV_NOT_SHARED 0
#define ZCNET_MAPDEV_NOT_AT_0 1
#define ZCNET_MAPDEV_BUSY 2
#define ZCNET_MAPDEV_NO_REGION 3
/* A rate-limited line in the kernel log: mmap() of npages by the current
 * task refused with err (-errno). */
void zcnet_helper_mapdev_refused(int why, unsigned long npages, long err);

#endif
