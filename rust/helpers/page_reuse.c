// SPDX-License-Identifier: GPL-2.0
/*
 * The reuse policy of receive pages.
 *
 * A receive ring (PageRing in rust/zcnet/page.rs) keeps one reference on each
 * page it handed out; the page itself goes into an skb as a fragment and up
 * the stack. When the ring comes round to the page again, it asks this
 * policy whether the page may take new data, and otherwise lets its
 * reference go and allocates a fresh page. A page is reused only when all of
 * these hold:
 *
 * - The ring's reference is the only one left (page_ref_count() == 1): the
 *   skb that carried it was freed and no socket queue, splice, remapping or
 *   clone holds it, so nothing can still read what is about to be
 *   overwritten. New references are taken only from existing ones, so none
 *   can appear while the ring holds the last one.
 * - The page was not allocated from the emergency reserves
 *   (page_is_pfmemalloc()): such a page must go back to the allocator as soon
 *   as possible, and skbs built on it are dropped by sockets that are not
 *   themselves reclaiming memory.
 * - The page is on this CPU's memory node (page_to_nid() == numa_mem_id()):
 *   a remote page would keep every write to it crossing nodes.
 *
 * The last two are the network drivers' own test, dev_page_is_reusable().
 */
#include <linux/mm.h>
#include <linux/skbuff.h>

#include "page_reuse.h"

bool zcnet_helper_page_reusable(struct page *page)
{
	return page_ref_count(page) == 1 && dev_page_is_reusable(page);
}
