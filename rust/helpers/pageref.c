// SPDX-License-Identifier: GPL-2.0
/* Shared page references (see pageref.h). */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>

#include "pageref.h"

struct page *zcnet_helper_alloc_page_zeroed(void)
{
	return alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
}

int zcnet_helper_alloc_pause(void)
{
	if (fatal_signal_pending(current))
		return -EINTR;
	cond_resched();
	return 0;
}

int zcnet_helper_page_refs(struct page *page)
{
	return page_ref_count(page);
}

void zcnet_helper_copy_page(struct page *to, struct page *from)
{
	copy_highpage(to, from);
}

unsigned long zcnet_helper_page_pfn(struct page *page)
{
	return page_to_pfn(page);
}
