/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared page references (rust/zcnet/pageref.rs): pages a region and TCP,
 * or a region and a received skb, hold at once. get_page/put_page are in
 * page.h.
 */
#ifndef ZCNET_PAGEREF_H
#define ZCNET_PAGEREF_H

#include <linux/types.h>

struct page;

/* alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO): charged to the calling
 * task's memory cgroup (a page of memory user space asked for), no warning
 * when memory is short */
struct page *zcnet_helper_alloc_page_zeroed(void);
/* Between the allocations of a long run (a region of up to millions of
 * pages, allocated in mmap() under the mapping lock): -EINTR when the task
 * was killed (it need not finish), else 0 after letting others run. */
int zcnet_helper_alloc_pause(void);
/* page_ref_count(page) */
int zcnet_helper_page_refs(struct page *page);
/* copy_highpage(to, from) */
void zcnet_helper_copy_page(struct page *to, struct page *from);
/* page_to_pfn(page) */
unsigned long zcnet_helper_page_pfn(struct page *page);
#endif
