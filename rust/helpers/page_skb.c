// SPDX-License-Identifier: GPL-2.0
/*
 * The skb of a received packet whose payload was placed in a page.
 *
 * zcfrag's receive path copies the payload of IPv4 fragments straight to its
 * final offset in a page (rust/zcnet/page.rs); once every fragment of the
 * packet is in, the packet is handed up the stack as if it had arrived
 * whole, without the copy the kernel's reassembly would make:
 *
 * 1. A small linear part holds the headers the caller rebuilt for the whole
 *    packet (Ethernet, IPv4 with the fragment fields cleared, the transport
 *    header), with the usual NET_SKB_PAD + NET_IP_ALIGN headroom so the IP
 *    header is aligned.
 * 2. The MAC header is set at the Ethernet header and the data pulled past
 *    it, as eth_type_trans() leaves a received frame: data and the network
 *    header start at the IP header, mac_len is the Ethernet length.
 * 3. The page becomes fragment 0 (skb_add_rx_frag(): len, data_len and
 *    truesize, a whole page, grow with it; a page from the emergency reserves
 *    marks the skb pfmemalloc). The caller's page reference passes to the skb.
 * 4. The skb is a host-bound IPv4 packet whose checksum nobody has verified
 *    (CHECKSUM_NONE: the transport layer checks it in software).
 * 5. It takes the metadata ip_frag_reasm() would keep from the fragment that
 *    completed the packet (`meta`): mark, priority, receive timestamp, flow
 *    hash and receive queue, so RPS, packet marks and timestamps behave as
 *    for a reassembled packet.
 */
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/mm.h>
#include <linux/skbuff.h>

#include "page_skb.h"

struct sk_buff *zcnet_helper_build_page_skb(const void *hdr, unsigned int hdr_len,
					    unsigned int eth_len, struct page *page,
					    unsigned int data_len, struct net_device *dev,
					    const struct sk_buff *meta)
{
	struct sk_buff *skb = alloc_skb(NET_SKB_PAD + NET_IP_ALIGN + hdr_len, GFP_ATOMIC);

	if (!skb) {
		put_page(page);
		return NULL;
	}
	skb_reserve(skb, NET_SKB_PAD + NET_IP_ALIGN);
	skb_put_data(skb, hdr, hdr_len);
	skb_reset_mac_header(skb);
	skb_pull(skb, eth_len);
	skb_reset_network_header(skb);
	skb->mac_len = eth_len;
	skb_add_rx_frag(skb, 0, page, 0, data_len, PAGE_SIZE);
	skb->dev = dev;
	skb->protocol = htons(ETH_P_IP);
	skb->pkt_type = PACKET_HOST;
	skb->ip_summed = CHECKSUM_NONE;
	/* What ip_frag_reasm() keeps of the fragments. */
	skb->mark = meta->mark;
	skb->priority = meta->priority;
	skb->tstamp = meta->tstamp;
	skb->tstamp_type = meta->tstamp_type;
	skb_copy_hash(skb, meta);
	skb_set_queue_mapping(skb, skb_get_queue_mapping(meta));
	return skb;
}
