/* SPDX-License-Identifier: GPL-2.0 */
/* The skb of a packet whose payload was placed in a page (rust/zcnet/skbuff.rs). */
#ifndef ZCNET_HELPERS_PAGE_SKB_H
#define ZCNET_HELPERS_PAGE_SKB_H

struct net_device;
struct page;
struct sk_buff;

/*
 * Builds the skb of a speculated packet: `hdr` (Ethernet + IPv4 + transport
 * header, `eth_len` of it Ethernet) in the linear part, then `page` (the
 * reference passes to the skb) as fragment 0, `data_len` bytes at offset 0.
 * The skb's data starts at the IP header, its MAC header is the Ethernet one.
 * NULL on allocation failure (the page reference is then dropped).
 */
struct sk_buff *zcnet_helper_build_page_skb(const void *hdr, unsigned int hdr_len,
					    unsigned int eth_len, struct page *page,
					    unsigned int data_len, struct net_device *dev,
					    const struct sk_buff *meta);

#endif /* ZCNET_HELPERS_PAGE_SKB_H */
