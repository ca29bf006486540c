/* SPDX-License-Identifier: GPL-2.0 */
/* Software segmentation of a TCP/IPv4 GSO packet on page boundaries (rust/zcnet/skbuff.rs). */
#ifndef ZCNET_HELPERS_TX_GSO_H
#define ZCNET_HELPERS_TX_GSO_H

#include <linux/types.h>

struct sk_buff;

/*
 * Segments the GSO packet `skb` (which this takes) into the chain *segs
 * (linked by `next`), ending a segment short wherever an order-0 page would
 * otherwise begin inside one; *realigned counts those short segments. A
 * negative errno when memory is short or the packet cannot be segmented:
 * `skb` has then been freed.
 */
int zcnet_helper_gso_segment_paged(struct sk_buff *skb, struct sk_buff **segs,
				   unsigned int *realigned);

/* Whether `skb` is a GSO packet (to be segmented before it leaves). */
bool zcnet_helper_skb_is_gso(const struct sk_buff *skb);

#endif /* ZCNET_HELPERS_TX_GSO_H */
