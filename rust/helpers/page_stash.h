/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The receive page stash (page_stash.c, in zcfrag) and its giver
 * (page_give.c, in zcsock): the paper's page pool (speculative
 * defragmentation, §3.2.1). When zcsock remaps a received page into a
 * region, the region page it replaces goes back to the receive side instead
 * of the page allocator, and zcfrag's receive rings (PageRing in
 * rust/zcnet/page.rs) take it before allocating a new page.
 */
#ifndef ZCNET_HELPERS_PAGE_STASH_H
#define ZCNET_HELPERS_PAGE_STASH_H

#include <linux/types.h>

struct page;

/* Pages the stash holds at most (1 MiB of 4 KiB pages); beyond, a given
 * page is freed. */
#define ZCNET_STASH_PAGES 256

/*
 * Takes the caller's references to pages[0..n), keeping each page that may
 * take new data (page_reuse.h: nobody else holds it, not from the emergency
 * reserves, this node's; and a lowmem page) while the stash has room, and
 * putting the others; the entries of the pages kept become NULL. The pages
 * must be in no mapping, not even one that holds no reference (a PFN
 * mapping: zap it first). Any context but hard interrupts; one lock for the
 * batch.
 */
void zcnet_helper_stash_give(struct page **pages, unsigned long n);

/* The stash's door: zcfrag's export (zcfrag_helpers.c), which
 * zcnet_page_give_back() looks up; give is zcnet_helper_stash_give(). */
struct zcnet_stash_door {
	struct module *owner;
	void (*give)(struct page **pages, unsigned long n);
};
extern const struct zcnet_stash_door zcfrag_stash_door;

/* A stashed page, its reference now the caller's; NULL when the stash is
 * empty. Any context but hard interrupts. */
struct page *zcnet_helper_stash_take(void);

/* Puts every stashed page (zcfrag's unload, after its devices are gone). */
void zcnet_helper_stash_drain(void);

/*
 * Hands pages[0..n) (the caller's references, pages in no mapping) to
 * zcfrag's stash when zcfrag is loaded (its door found with symbol_get, so
 * that zcsock needs no zcfrag, and kept: page_give.c), or puts them; a page
 * charged to a memory cgroup is always put (uncharged when freed). Any
 * context but hard interrupts.
 */
void zcnet_page_give_back(struct page **pages, unsigned long n);
/* The module notifier that keeps the kept door current, from the module's
 * init (before any give) to its exit (after the last). */
int zcnet_page_give_init(void);
void zcnet_page_give_exit(void);

#endif /* ZCNET_HELPERS_PAGE_STASH_H */
