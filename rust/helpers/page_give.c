// SPDX-License-Identifier: GPL-2.0
/* Giving pages back to zcfrag's receive page stash (see page_stash.h). */
#include <linux/mm.h>
#include <linux/module.h>

#include "page_stash.h"

void zcnet_page_give_back(struct page **pages, unsigned long n)
{
	void (*give)(struct page **pages, unsigned long n);
	unsigned long i;

	if (!n)
		return;
	/* A reference on zcfrag while it is used: zcfrag cannot unload
	 * meanwhile, and once it is unloading none is given. */
	give = symbol_get(zcfrag_stash_give);
	if (give) {
		give(pages, n);
		symbol_put(zcfrag_stash_give);
		return;
	}
	for (i = 0; i < n; i++)
		put_page(pages[i]);
}
