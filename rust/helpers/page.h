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

struct sk_buff;
/* Copies len bytes of skb from byte `from` to offset off of page (a lowmem
 * page; off + len <= PAGE_SIZE): 0 or -errno. */
int zcnet_helper_page_from_skb(struct page *page, unsigned int off, const struct sk_buff *skb,
			       unsigned int from, unsigned int len);
/* memset(page_address(page) + off, byte, len); off + len <= PAGE_SIZE. */
void zcnet_helper_page_fill(struct page *page, unsigned int off, unsigned int len, int byte);
/* Copies len bytes at offset off of page to out; off + len <= PAGE_SIZE. */
void zcnet_helper_page_read(struct page *page, unsigned int off, void *out, unsigned int len);
/* Copies all of src into dst (both lowmem). */
void zcnet_helper_page_copy_all(struct page *dst, struct page *src);

#endif /* ZCNET_HELPERS_PAGE_H */
