/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers for the kernel interfaces zcnet needs that `kernel::bindings` lacks.
 *
 * scripts/gen-bindings.sh runs bindgen over this file with the target kernel's
 * own clang flags and the allow-list in rust/bindings/allowlist.txt. The
 * allow-list is not recursive: every type an allow-listed item refers to must
 * either come from `kernel::bindings` or be allow-listed itself, so that the
 * generated items and `kernel::bindings` share one set of Rust types.
 */
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/module.h>
#include <linux/utsname.h>
#include <net/rtnetlink.h>
#include <net/tcp.h>
#include <net/ip.h>

/* The C helpers of rust/helpers/, one header each. */
#include "../helpers/bh.h"
#include "../helpers/ddp_mem.h"
#include "../helpers/ddp_sock.h"
#include "../helpers/mapdev.h"
#include "../helpers/memlock.h"
#include "../helpers/netdev.h"
#include "../helpers/netstat.h"
#include "../helpers/page.h"
#include "../helpers/page_reuse.h"
#include "../helpers/page_skb.h"
#include "../helpers/page_stash.h"
#include "../helpers/pageref.h"
#include "../helpers/rtnl.h"
#include "../helpers/skbuff.h"
#include "../helpers/tcp_ulp.h"
#include "../helpers/timer.h"
#include "../helpers/tx_frag.h"
#include "../helpers/tx_gso.h"
#include "../helpers/vnet.h"
#include "../helpers/percpu.h"
#include "../../include/uapi/zcnet/zcfrag.h"
#include "../../include/uapi/zcnet/zcsock.h"
#include "../../include/uapi/linux/zcddp.h"
