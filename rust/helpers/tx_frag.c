// SPDX-License-Identifier: GPL-2.0
/*
 * One IPv4 fragment of a packet being sent, its payload referenced, not
 * copied.
 *
 * zcfrag's transmit path cuts a packet larger than the lower device's MTU
 * into IPv4 fragments itself; this builds each of them. The caller rewrites
 * the Ethernet and IPv4 headers for the fragment and says which bytes of
 * `from` it carries.
 *
 * 1. Count the page fragments the range needs: one for payload in `from`'s
 *    linear part when the head is itself a page fragment (head_frag), one
 *    for each of `from`'s fragments the range overlaps.
 * 2. If that is at most MAX_SKB_FRAGS, build a new skb with the headers in
 *    its linear part and the payload as fragments that reference `from`'s
 *    pages at the right offsets and sizes (one page reference each). Payload
 *    in a head that is not a page (kmalloc'ed) is copied into the linear part
 *    instead; *copied reports those bytes.
 * 3. Otherwise, or when `from` has a frag_list, carries user-space zero-copy
 *    pages (their completion would fire when `from` is freed, before the
 *    fragments left), or the caller asked for a copy (`allow_ref` false, the
 *    lower device cannot take non-linear skbs), copy the whole range into a
 *    linear skb.
 *
 * Either way the fragment gets `from`'s priority, mark and queue, and stays
 * charged to the sending socket like a GSO segment (see the end).
 */
#include <linux/if_ether.h>
#include <linux/skbuff.h>
#include <linux/skbuff_ref.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tx_frag.h"

/* Copies priority, mark and queue mapping of `from` to `to` (fragments of one packet). */
static void zcnet_skb_copy_meta(struct sk_buff *to, const struct sk_buff *from)
{
	to->priority = from->priority;
	to->mark = from->mark;
	skb_set_queue_mapping(to, skb_get_queue_mapping(from));
}

/*
 * `hdr`: Ethernet + IPv4 header, already rewritten for the fragment; `off`,
 * `len`: the payload bytes it carries, in `from`'s data (which starts at the
 * Ethernet header); `headroom`: what the lower device wants in front. NULL
 * when memory is short or the range is out of bounds.
 */
struct sk_buff *zcnet_helper_build_tx_frag(struct sk_buff *from, const void *hdr,
					   unsigned int hdr_len, unsigned int off,
					   unsigned int len, unsigned int headroom,
					   bool allow_ref, unsigned int *copied)
{
	unsigned int headlen = skb_headlen(from), end = off + len, lin = 0, pos, nfr = 0;
	struct skb_shared_info *sh = skb_shinfo(from);
	struct sk_buff *skb;
	int i;

	*copied = 0;
	if (end < off || end > from->len)
		return NULL;
	if (!allow_ref || skb_has_frag_list(from) || skb_zcopy(from))
		goto copy_all;
	if (off < headlen) {
		lin = min(end, headlen) - off;
		if (from->head_frag)
			nfr++;
	}
	pos = headlen;
	for (i = 0; i < sh->nr_frags && pos < end; i++) {
		unsigned int fs = skb_frag_size(&sh->frags[i]);

		if (pos + fs > off)
			nfr++;
		pos += fs;
	}
	if (nfr > MAX_SKB_FRAGS)
		goto copy_all;

	skb = alloc_skb(headroom + hdr_len + (from->head_frag ? 0 : lin), GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	skb_put_data(skb, hdr, hdr_len);
	nfr = 0;
	if (lin) {
		if (from->head_frag) {
			struct page *page = virt_to_head_page(from->head);
			unsigned int po = from->data + off - (unsigned char *)page_address(page);

			get_page(page);
			__skb_fill_netmem_desc(skb, nfr++, page_to_netmem(page), po, lin);
			skb_len_add(skb, lin);
		} else {
			skb_put_data(skb, from->data + off, lin);
			*copied = lin;
		}
	}
	pos = headlen;
	for (i = 0; i < sh->nr_frags && pos < end; i++) {
		unsigned int fs = skb_frag_size(&sh->frags[i]);
		unsigned int a = max(pos, off), b = min(pos + fs, end);

		if (a < b) {
			skb_frag_t *f = &skb_shinfo(skb)->frags[nfr++];

			*f = sh->frags[i];
			skb_frag_off_add(f, a - pos);
			skb_frag_size_set(f, b - a);
			__skb_frag_ref(f);
			skb_len_add(skb, b - a);
		}
		pos += fs;
	}
	skb_shinfo(skb)->nr_frags = nfr;
	/* The pages may be shared (page cache, another skb): nobody writes them. */
	skb_shinfo(skb)->flags |= sh->flags & SKBFL_SHARED_FRAG;
	goto done;

copy_all:
	skb = alloc_skb(headroom + hdr_len + len, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	skb_put_data(skb, hdr, hdr_len);
	if (skb_copy_bits(from, off, skb_put(skb, len), len)) {
		kfree_skb(skb);
		return NULL;
	}
	*copied = len;
done:
	/*
	 * Headers where the lower device's qdisc and tc filters look for them
	 * (u32 reads from the network header; a fresh skb's is its head).
	 */
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, ETH_HLEN);
	skb->protocol = htons(ETH_P_IP);
	zcnet_skb_copy_meta(skb, from);
	/*
	 * The fragment stays charged to the sending socket until it leaves, as
	 * tcp_gso_segment() does for segments: TCP Small Queues and the send
	 * buffer then see what waits in the lower device's queue. Without it the
	 * packet's charge ends when the packet is freed, right after it is
	 * fragmented, and TCP floods the lower qdisc until it drops.
	 */
	if (from->sk && (from->destructor == tcp_wfree || from->destructor == sock_wfree)) {
		skb->sk = from->sk;
		skb->destructor = from->destructor;
		refcount_add(skb->truesize, &from->sk->sk_wmem_alloc);
	}
	return skb;
}
