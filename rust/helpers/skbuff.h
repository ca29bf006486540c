/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Socket buffers: freeing, receiving, small builders, and the fields the Rust
 * side cannot read as plain ones (rust/zcnet/skbuff.rs, rust/zcnet/stacked.rs).
 */
#ifndef ZCNET_HELPERS_SKBUFF_H
#define ZCNET_HELPERS_SKBUFF_H

#include <linux/types.h>

struct net_device;
struct page;
struct sk_buff;

/* skb_share_check(skb, GFP_ATOMIC): NULL when the clone failed (skb freed). */
struct sk_buff *zcnet_helper_skb_share_check(struct sk_buff *skb);
/* consume_skb(skb): freed after use, not dropped. */
void zcnet_helper_consume_skb(struct sk_buff *skb);
/* kfree_skb(skb): a drop. */
void zcnet_helper_kfree_skb(struct sk_buff *skb);
/* pskb_may_pull(skb, len) */
bool zcnet_helper_skb_may_pull(struct sk_buff *skb, unsigned int len);
/* skb_checksum_help(skb) when skb->ip_summed == CHECKSUM_PARTIAL, else 0. */
int zcnet_helper_skb_resolve_csum(struct sk_buff *skb);
/* An Ethernet frame (header included, padded to 60 bytes) for `dev`. */
struct sk_buff *zcnet_helper_build_frame(struct net_device *dev, const void *data,
					 unsigned int len);
/*
 * netif_receive_skb(skb) with bottom halves off: the packet goes up the
 * stack now, in order with what the caller delivered before (the bridge
 * does the same from its rx handler).
 */
int zcnet_helper_netif_receive_skb(struct sk_buff *skb);

/*
 * Fields the Rust side does not read directly: dev and next are members of
 * anonymous unions; protocol, mac_header and vlan_all lie in the struct_group
 * `headers`, an anonymous union as well; pkt_type is a bitfield.
 */
u16 zcnet_helper_skb_protocol(const struct sk_buff *skb);
struct net_device *zcnet_helper_skb_dev(const struct sk_buff *skb);
void zcnet_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev);
/* skb->next, and setting it (for chains the caller owns; NULL when on none). */
struct sk_buff *zcnet_helper_skb_next(const struct sk_buff *skb);
void zcnet_helper_skb_set_next(struct sk_buff *skb, struct sk_buff *next);
/* skb_mac_header(skb) .. skb->data: the Ethernet header of a received frame. */
unsigned int zcnet_helper_skb_mac_len(const struct sk_buff *skb);
const unsigned char *zcnet_helper_skb_mac_header(const struct sk_buff *skb);
/* skb->pkt_type == PACKET_LOOPBACK */
bool zcnet_helper_skb_is_loopback(const struct sk_buff *skb);
/* skb->pkt_type == PACKET_HOST */
bool zcnet_helper_skb_for_host(const struct sk_buff *skb);
/* skb_vlan_tag_present(skb): the frame carried a VLAN tag (offloaded). */
bool zcnet_helper_skb_vlan_tagged(const struct sk_buff *skb);

/* When the bytes from `from` on are exactly one lowmem page fragment (the
 * linear part ends at `from`, one fragment, no frag list): true, with its
 * page (no reference taken), offset and length. */
bool zcnet_helper_skb_payload_frag(struct sk_buff *skb, unsigned int from, struct page **page,
				   unsigned int *off, unsigned int *len);

/* icmpv6_ndo_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu): a static inline in 7.2
 * without CONFIG_NF_NAT. It checks the packet itself (a network header
 * inside the linear part, a unicast source, not an ICMPv6 error) and is
 * rate-limited as every ICMPv6 error. */
void zcnet_helper_icmpv6_too_big(struct sk_buff *skb, u32 mtu);

#endif /* ZCNET_HELPERS_SKBUFF_H */
