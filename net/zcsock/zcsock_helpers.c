// SPDX-License-Identifier: GPL-2.0
/* This module's copy of the zcnet C helpers (rust/helpers/). */
#include "../../rust/helpers/bh.c"
#include "../../rust/helpers/module.c"
#include "../../rust/helpers/netdev.c"
#include "../../rust/helpers/page.c"
#include "../../rust/helpers/page_reuse.c"
#include "../../rust/helpers/page_skb.c"
#include "../../rust/helpers/rtnl.c"
#include "../../rust/helpers/skbuff.c"
#include "../../rust/helpers/timer.c"
#include "../../rust/helpers/tx_frag.c"
