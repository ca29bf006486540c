// SPDX-License-Identifier: GPL-2.0
/*
 * The receive page stash (see page_stash.h): one for the module that
 * includes this file (zcfrag, which exports zcnet_helper_stash_give() through
 * zcfrag_stash_door in zcfrag_helpers.c). A bounded array under a spin
 * lock: givers are in process context (a zcsock receive), takers in NAPI
 * polls and receive handlers (softirq) and in process context (a device's
 * open), so interrupts are kept off while it is held, which also serves a
 * taker that has them off already.
 */
#include <linux/mm.h>
#include <linux/spinlock.h>

#include "page_reuse.h"
#include "page_stash.h"

static DEFINE_SPINLOCK(zcnet_stash_lock);
static struct page *zcnet_stash[ZCNET_STASH_PAGES];
static unsigned int zcnet_stash_n;

void zcnet_helper_stash_give(struct page **pages, unsigned long n)
{
	unsigned long flags, i;

	/* One lock for the batch: the pages kept leave the array. */
	spin_lock_irqsave(&zcnet_stash_lock, flags);
	for (i = 0; i < n && zcnet_stash_n < ZCNET_STASH_PAGES; i++) {
		if (PageHighMem(pages[i]) || !zcnet_helper_page_reusable(pages[i]))
			continue;
		zcnet_stash[zcnet_stash_n] = pages[i];
		WRITE_ONCE(zcnet_stash_n, zcnet_stash_n + 1);
		pages[i] = NULL;
	}
	spin_unlock_irqrestore(&zcnet_stash_lock, flags);
	for (i = 0; i < n; i++)
		if (pages[i])
			put_page(pages[i]);
}

struct page *zcnet_helper_stash_take(void)
{
	struct page *page = NULL;
	unsigned long flags;

	/* Unlocked peek: a page given meanwhile waits for the next take. */
	if (!READ_ONCE(zcnet_stash_n))
		return NULL;
	spin_lock_irqsave(&zcnet_stash_lock, flags);
	if (zcnet_stash_n) {
		WRITE_ONCE(zcnet_stash_n, zcnet_stash_n - 1);
		page = zcnet_stash[zcnet_stash_n];
	}
	spin_unlock_irqrestore(&zcnet_stash_lock, flags);
	return page;
}

void zcnet_helper_stash_drain(void)
{
	struct page *page;

	while ((page = zcnet_helper_stash_take()))
		put_page(page);
}
