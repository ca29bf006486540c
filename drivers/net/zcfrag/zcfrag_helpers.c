// SPDX-License-Identifier: GPL-2.0
/*
 * This module's copy of the zcnet C helpers its layer files call
 * (rust/helpers/): bh.rs bh.c; netdev.rs netdev.c; page.rs page.c,
 * page_reuse.c and page_stash.c; skbuff.rs skbuff.c, tx_frag.c, tx_gso.c and page_skb.c; stacked.rs
 * rtnl.c and timer.c besides;
 * percpu.rs percpu.c; vnet.rs vnet.c.
 */
#include <linux/export.h>

#include "../../../rust/helpers/bh.c"
#include "../../../rust/helpers/netdev.c"
#include "../../../rust/helpers/page.c"
#include "../../../rust/helpers/percpu.c"
#include "../../../rust/helpers/page_reuse.c"
#include "../../../rust/helpers/page_stash.c"
#include "../../../rust/helpers/page_skb.c"
#include "../../../rust/helpers/rtnl.c"
#include "../../../rust/helpers/skbuff.c"
#include "../../../rust/helpers/timer.c"
#include "../../../rust/helpers/tx_frag.c"
#include "../../../rust/helpers/tx_gso.c"
#include "../../../rust/helpers/vnet.c"

/* The stash's door for zcsock's replaced region pages (page_stash.h). */
const struct zcnet_stash_door zcfrag_stash_door = {
	.owner = THIS_MODULE,
	.give = zcnet_helper_stash_give,
};
EXPORT_SYMBOL_GPL(zcfrag_stash_door);
