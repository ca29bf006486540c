// SPDX-License-Identifier: GPL-2.0
/* Pages that receive payload (see page.h). */
#include <linux/gfp.h>
#include <linux/mm.h>

#include "page.h"

struct page *zcnet_helper_alloc_page(void)
{
	return alloc_page(GFP_ATOMIC | __GFP_NOWARN);
}

void *zcnet_helper_page_address(struct page *page)
{
	return page_address(page);
}

void zcnet_helper_get_page(struct page *page)
{
	get_page(page);
}

void zcnet_helper_put_page(struct page *page)
{
	put_page(page);
}
