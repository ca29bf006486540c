// SPDX-License-Identifier: GPL-2.0
/* Pages that receive payload (see page.h). */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/skbuff.h>

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

int zcnet_helper_page_from_skb(struct page *page, unsigned int off, const struct sk_buff *skb,
			       unsigned int from, unsigned int len)
{
	if (off > PAGE_SIZE || len > PAGE_SIZE - off)
		return -EINVAL;
	return skb_copy_bits(skb, from, page_address(page) + off, len);
}

void zcnet_helper_page_fill(struct page *page, unsigned int off, unsigned int len, int byte)
{
	if (off <= PAGE_SIZE && len <= PAGE_SIZE - off)
		memset(page_address(page) + off, byte, len);
}

void zcnet_helper_page_read(struct page *page, unsigned int off, void *out, unsigned int len)
{
	if (off <= PAGE_SIZE && len <= PAGE_SIZE - off)
		memcpy(out, page_address(page) + off, len);
}

void zcnet_helper_page_copy_all(struct page *dst, struct page *src)
{
	memcpy(page_address(dst), page_address(src), PAGE_SIZE);
}
