// SPDX-License-Identifier: GPL-2.0
/*
 * Software segmentation of a TCP/IPv4 GSO packet that ends a segment short
 * wherever a page would otherwise begin inside one.
 *
 * zcfrag's receivers put each page-sized segment's payload in a page of its
 * own, and zcsock remaps such a page into a region only if it holds one
 * page the sender sent whole. A sender that writes whole pages of a region
 * hands TCP skbs whose fragments are those pages, and the core's
 * segmentation, which cuts every gso_size bytes from the payload's start,
 * keeps each segment on one page, as long as the skb starts on a page:
 *
 * - TCP cuts a segment below a page at the window's edge (a window probe, a
 *   retransmission into a small window, tcp_fragment): the rest of that skb
 *   starts inside a page, and every later segment of it (up to 64 KiB, 16
 *   pages) would straddle two pages, which the receiver must copy.
 * - A send of a few bytes (a message header, copied) followed by whole
 *   region pages: TCP puts both in one skb, and the pages after the header
 *   would straddle segments.
 *
 * Ending the segment where the page begins puts the rest back on the page
 * boundaries: one short segment more, instead of up to sixteen pages copied.
 *
 * Only the start of an order-0 page is taken as a page boundary worth
 * keeping (region and page-cache pages): TCP's own page fragments for copied
 * data are compound pages at arbitrary offsets, and cutting there would gain
 * nothing. Only a gso_size of whole pages keeps a realigned packet aligned.
 * Packets with a frag_list, user zero-copy pages (MSG_ZEROCOPY), timestamp
 * requests or payload in the linear part are segmented as the core would.
 */
#include <linux/ip.h>
#include <linux/skbuff.h>
#include <linux/skbuff_ref.h>
#include <linux/tcp.h>
#include <net/gso.h>
#include <net/ip.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tx_gso.h"

/* The features the segments are made for: scatter-gather, checksum still to do. */
#define ZCNET_GSO_FEATURES (NETIF_F_SG | NETIF_F_HW_CSUM)

bool zcnet_helper_skb_is_gso(const struct sk_buff *skb)
{
	return skb_is_gso(skb);
}

/*
 * The payload offset of the first byte of `skb` that begins an order-0 page
 * but would not begin a segment (it is not a multiple of gso_size), or 0:
 * the packet is then cut as the core would cut it.
 */
static unsigned int zcnet_gso_page_cut(struct sk_buff *skb)
{
	const struct skb_shared_info *sh = skb_shinfo(skb);
	unsigned int hdr, pos = 0, mss = sh->gso_size;
	int i;

	if (!(sh->gso_type & SKB_GSO_TCPV4) || skb->encapsulation ||
	    skb->protocol != htons(ETH_P_IP) || skb->ip_summed != CHECKSUM_PARTIAL ||
	    skb_has_frag_list(skb) || skb_zcopy(skb) || !skb_frags_readable(skb) ||
	    (sh->tx_flags & SKBTX_ANY_TSTAMP) || !sh->nr_frags || !mss || mss % PAGE_SIZE)
		return 0;
	hdr = skb_tcp_all_headers(skb);
	if (skb_headlen(skb) != hdr || skb->len <= hdr + mss)
		return 0;
	for (i = 0; i < sh->nr_frags; i++) {
		const skb_frag_t *f = &sh->frags[i];
		unsigned int size = skb_frag_size(f), c;

		if (!PageCompound(skb_frag_page(f))) {
			c = skb_frag_off(f) % PAGE_SIZE;
			for (c = pos + (c ? PAGE_SIZE - c : 0); c < pos + size; c += PAGE_SIZE)
				if (c % mss)
					return c;
		}
		pos += size;
	}
	return 0;
}

/*
 * Sets the IPv4 length and checksum and the TCP pseudo-header checksum of
 * `skb` (one segment or the GSO rest) after its length changed.
 */
static void zcnet_gso_fix_lengths(struct sk_buff *skb)
{
	struct iphdr *iph = ip_hdr(skb);

	iph->tot_len = htons(skb->len - skb_network_offset(skb));
	ip_send_check(iph);
	tcp_hdr(skb)->check = ~tcp_v4_check(skb->len - skb_transport_offset(skb), iph->saddr,
					    iph->daddr, 0);
}

/* Drops the first `len` payload bytes of `skb`, whose linear part holds only headers. */
static void zcnet_gso_trim_payload_head(struct sk_buff *skb, unsigned int len)
{
	struct skb_shared_info *sh = skb_shinfo(skb);
	unsigned int eat = len;
	int i, k = 0;

	for (i = 0; i < sh->nr_frags; i++) {
		unsigned int size = skb_frag_size(&sh->frags[i]);

		if (size <= eat) {
			skb_frag_unref(skb, i);
			eat -= size;
		} else {
			sh->frags[k] = sh->frags[i];
			if (eat) {
				skb_frag_off_add(&sh->frags[k], eat);
				skb_frag_size_sub(&sh->frags[k], eat);
				eat = 0;
			}
			k++;
		}
	}
	sh->nr_frags = k;
	skb->data_len -= len;
	skb->len -= len;
}

/*
 * Splits the first `len` payload bytes of `skb` off as a packet of their own
 * (returned; a GSO packet itself if longer than gso_size); `skb` keeps the
 * rest, still a GSO packet. NULL when memory is short (`skb` unchanged then).
 */
static struct sk_buff *zcnet_gso_split_head(struct sk_buff *skb, unsigned int len)
{
	unsigned int hdr = skb_tcp_all_headers(skb), mss = skb_shinfo(skb)->gso_size;
	unsigned int segs = DIV_ROUND_UP(len, mss);
	struct skb_shared_info *sh;
	struct sk_buff *head;
	struct tcphdr *th;
	struct iphdr *iph;

	/* The rest's headers and fragment array are rewritten: its own. */
	if (skb_unclone(skb, GFP_ATOMIC))
		return NULL;
	/* The head: a copy of the headers, the payload pages referenced. */
	head = pskb_copy(skb, GFP_ATOMIC);
	if (!head)
		return NULL;
	if (pskb_trim(head, hdr + len)) {
		kfree_skb(head);
		return NULL;
	}
	sh = skb_shinfo(head);
	if (segs > 1) {
		sh->gso_segs = segs;
	} else {
		sh->gso_size = 0;
		sh->gso_segs = 0;
		sh->gso_type = 0;
	}
	th = tcp_hdr(head);
	th->fin = 0;
	th->psh = 0;
	zcnet_gso_fix_lengths(head);
	/* Charged to the socket until it leaves, as tcp_gso_segment() does. */
	if (skb->sk && skb->destructor == tcp_wfree) {
		head->sk = skb->sk;
		head->destructor = tcp_wfree;
		refcount_add(head->truesize, &skb->sk->sk_wmem_alloc);
	}

	/* The rest: `len` bytes and `segs` IP IDs later. */
	zcnet_gso_trim_payload_head(skb, len);
	sh = skb_shinfo(skb);
	th = tcp_hdr(skb);
	th->seq = htonl(ntohl(th->seq) + len);
	if (!(sh->gso_type & SKB_GSO_TCP_ACCECN))
		th->cwr = 0;
	iph = ip_hdr(skb);
	if (!(sh->gso_type & SKB_GSO_TCP_FIXEDID))
		iph->id = htons(ntohs(iph->id) + segs);
	skb->ooo_okay = 0;
	sh->gso_segs = DIV_ROUND_UP(skb->len - hdr, mss);
	zcnet_gso_fix_lengths(skb);
	return head;
}

/*
 * Segments `skb` as the core does, appending the segments at *tail. The
 * packet is freed on error.
 */
static int zcnet_gso_segment_to(struct sk_buff *skb, struct sk_buff ***tail)
{
	struct sk_buff *segs = NULL;

	if (skb_is_gso(skb))
		segs = skb_gso_segment(skb, ZCNET_GSO_FEATURES);
	if (IS_ERR(segs)) {
		kfree_skb(skb);
		return PTR_ERR(segs);
	}
	if (segs) {
		consume_skb(skb);
	} else {
		/* Nothing to cut: one segment. */
		skb_shinfo(skb)->gso_size = 0;
		skb_shinfo(skb)->gso_segs = 0;
		skb_shinfo(skb)->gso_type = 0;
		segs = skb;
	}
	**tail = segs;
	while (segs->next)
		segs = segs->next;
	*tail = &segs->next;
	return 0;
}

int zcnet_helper_gso_segment_paged(struct sk_buff *skb, struct sk_buff **segs,
				   unsigned int *realigned)
{
	struct sk_buff *list = NULL, **tail = &list, *part;
	unsigned int q, a, mss = skb_shinfo(skb)->gso_size;
	int err;

	*realigned = 0;
	/*
	 * Each round ends a segment where a page begins: the payload before the
	 * last multiple of gso_size below it goes as the core would cut it, the
	 * bytes up to the page as one short segment. Each round takes a page
	 * start that is not the first byte: at most one per fragment page.
	 */
	while ((q = zcnet_gso_page_cut(skb))) {
		a = q - q % mss;
		if (a) {
			part = zcnet_gso_split_head(skb, a);
			if (!part)
				break;
			err = zcnet_gso_segment_to(part, &tail);
			if (err)
				goto fail;
		}
		part = zcnet_gso_split_head(skb, q - a);
		if (!part)
			break;
		err = zcnet_gso_segment_to(part, &tail);
		if (err)
			goto fail;
		(*realigned)++;
	}
	err = zcnet_gso_segment_to(skb, &tail);
	if (err) {
		kfree_skb_list(list);
		return err;
	}
	*segs = list;
	return 0;
fail:
	kfree_skb_list(list);
	kfree_skb(skb);
	return err;
}
