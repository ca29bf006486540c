/* SPDX-License-Identifier: GPL-2.0 */
/* Pages that receive payload (rust/zcnet/page.rs). */
#ifndef ZCNET_HELPERS_PAGE_H
#define ZCNET_HELPERS_PAGE_H

struct page;

/* alloc_page(GFP_ATOMIC): a lowmem page, no warning when memory is short. */
struct page *zcnet_helper_alloc_page(void);
/* page_address(page) */
void *zcnet_helper_page_address(struct page *page);
/* get_page(page): one more reference. */
void zcnet_helper_get_page(struct page *page);
/* put_page(page) */
void zcnet_helper_put_page(struct page *page);

#endif /* ZCNET_HELPERS_PAGE_H */
