// SPDX-License-Identifier: GPL-2.0
/*
 * This module's copy of the zcnet C helpers its layer files call
 * (rust/helpers/): ulp.rs tcp_ulp.c; ddp_sock.rs ddp_sock.c; ddp_mem.rs ddp_mem.c; memlock.rs memlock.c; netstat.rs
 * netstat.c; pageref.rs pageref.c and page.c.
 */
#include "../../rust/helpers/ddp_mem.c"
#include "../../rust/helpers/ddp_sock.c"
#include "../../rust/helpers/memlock.c"
#include "../../rust/helpers/netstat.c"
#include "../../rust/helpers/page.c"
#include "../../rust/helpers/pageref.c"
#include "../../rust/helpers/tcp_ulp.c"
