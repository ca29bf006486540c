/* SPDX-License-Identifier: GPL-2.0 */
/* When a receive page may take new data (rust/zcnet/page.rs, PageRing). */
#ifndef ZCNET_HELPERS_PAGE_REUSE_H
#define ZCNET_HELPERS_PAGE_REUSE_H

#include <linux/types.h>

struct page;

/*
 * Whether the caller's reference is the only one left on `page` (nobody else
 * can read or write it), and the page is an ordinary local one (not from the
 * emergency reserves): then it may receive new data.
 */
bool zcnet_helper_page_reusable(struct page *page);

#endif /* ZCNET_HELPERS_PAGE_REUSE_H */
