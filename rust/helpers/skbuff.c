// SPDX-License-Identifier: GPL-2.0
/* Socket buffers (see skbuff.h). */
#include <linux/bottom_half.h>
#include <linux/etherdevice.h>
#include <linux/icmpv6.h>
#include <linux/if_packet.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>

#include "skbuff.h"

struct sk_buff *zcnet_helper_skb_share_check(struct sk_buff *skb)
{
	return skb_share_check(skb, GFP_ATOMIC);
}

void zcnet_helper_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

void zcnet_helper_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

bool zcnet_helper_skb_payload_frag(struct sk_buff *skb, unsigned int from, struct page **page,
				   unsigned int *off, unsigned int *len)
{
	const skb_frag_t *f;

	if (skb_headlen(skb) != from || skb_shinfo(skb)->nr_frags != 1 || skb_has_frag_list(skb))
		return false;
	f = &skb_shinfo(skb)->frags[0];
	if (PageHighMem(skb_frag_page(f)) || skb_frag_size(f) != skb->len - from)
		return false;
	*page = skb_frag_page(f);
	*off = skb_frag_off(f);
	*len = skb_frag_size(f);
	return true;
}

bool zcnet_helper_skb_may_pull(struct sk_buff *skb, unsigned int len)
{
	return pskb_may_pull(skb, len);
}

/*
 * skb_checksum_help, but an skb whose fragments are shared (spliced pages:
 * zcsock's regions, vmsplice, sendfile) is not linearised -- that is a copy
 * of its whole payload. skb_checksum_help copies so that nobody can change
 * a page between the checksum and the wire; here the frame goes to the
 * wire at once, and a sharer that still writes a page meanwhile gets a
 * segment its peer drops and TCP sends again (zcsock's pages cannot change:
 * they are copy-on-write while an skb holds them). Only the header's
 * checksum field is written (the head unshared first if cloned).
 */
int zcnet_helper_skb_resolve_csum(struct sk_buff *skb)
{
	int offset, ret;
	__wsum csum;

	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return 0;
	if (!skb_has_shared_frag(skb) || skb_is_gso(skb))
		return skb_checksum_help(skb);
	offset = skb_checksum_start_offset(skb);
	if (offset < 0 || offset >= skb_headlen(skb) ||
	    offset + skb->csum_offset + sizeof(__sum16) > skb_headlen(skb))
		return skb_checksum_help(skb);
	csum = skb_checksum(skb, offset, skb->len - offset, 0);
	offset += skb->csum_offset;
	ret = skb_ensure_writable(skb, offset + sizeof(__sum16));
	if (ret)
		return ret;
	*(__sum16 *)(skb->data + offset) = csum_fold(csum) ?: CSUM_MANGLED_0;
	skb->ip_summed = CHECKSUM_NONE;
	return 0;
}

/*
 * An Ethernet frame of `len` bytes (destination, source, EtherType, payload;
 * padded to the Ethernet minimum) ready for dev_queue_xmit on `dev`.
 */
struct sk_buff *zcnet_helper_build_frame(struct net_device *dev, const void *data,
					 unsigned int len)
{
	unsigned int flen = max_t(unsigned int, len, ETH_ZLEN);
	struct sk_buff *skb;

	if (len < ETH_HLEN)
		return NULL;
	skb = alloc_skb(LL_RESERVED_SPACE(dev) + flen, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	skb_put_data(skb, data, len);
	if (flen > len)
		skb_put_zero(skb, flen - len);
	skb_reset_mac_header(skb);
	skb_reset_network_header(skb);
	skb->protocol = ((const struct ethhdr *)data)->h_proto;
	skb->dev = dev;
	return skb;
}

int zcnet_helper_netif_receive_skb(struct sk_buff *skb)
{
	int r;

	/* Softirq callers nest; a process-context caller gets BHs off. */
	local_bh_disable();
	r = netif_receive_skb(skb);
	local_bh_enable();
	return r;
}

u16 zcnet_helper_skb_protocol(const struct sk_buff *skb)
{
	return (__force u16)skb->protocol;
}

struct net_device *zcnet_helper_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

void zcnet_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev)
{
	skb->dev = dev;
}

struct sk_buff *zcnet_helper_skb_next(const struct sk_buff *skb)
{
	return skb->next;
}

void zcnet_helper_skb_set_next(struct sk_buff *skb, struct sk_buff *next)
{
	skb->next = next;
}

unsigned int zcnet_helper_skb_mac_len(const struct sk_buff *skb)
{
	return skb_mac_header_was_set(skb) ? skb->data - skb_mac_header(skb) : 0;
}

const unsigned char *zcnet_helper_skb_mac_header(const struct sk_buff *skb)
{
	return skb_mac_header(skb);
}

bool zcnet_helper_skb_is_loopback(const struct sk_buff *skb)
{
	return skb->pkt_type == PACKET_LOOPBACK;
}

bool zcnet_helper_skb_for_host(const struct sk_buff *skb)
{
	return skb->pkt_type == PACKET_HOST;
}

bool zcnet_helper_skb_vlan_tagged(const struct sk_buff *skb)
{
	return skb_vlan_tag_present(skb);
}

void zcnet_helper_icmpv6_too_big(struct sk_buff *skb, u32 mtu)
{
	icmpv6_ndo_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);
}
