/* SPDX-License-Identifier: GPL-2.0 */
/* One IPv4 fragment of a packet being sent (rust/zcnet/skbuff.rs). */
#ifndef ZCNET_HELPERS_TX_FRAG_H
#define ZCNET_HELPERS_TX_FRAG_H

#include <linux/types.h>

struct sk_buff;

/*
 * One IPv4 fragment of `from`: `hdr` (Ethernet + IPv4) linear, then `len`
 * payload bytes from offset `off` of `from` referenced as page fragments
 * (copied when `allow_ref` is false or referencing is impossible); *copied
 * gets the payload bytes copied. NULL when memory is short or out of range.
 */
struct sk_buff *zcnet_helper_build_tx_frag(struct sk_buff *from, const void *hdr,
					   unsigned int hdr_len, unsigned int off,
					   unsigned int len, unsigned int headroom,
					   bool allow_ref, unsigned int *copied);

#endif /* ZCNET_HELPERS_TX_FRAG_H */
