// SPDX-License-Identifier: GPL-2.0
/*
 * This module's copy of the zcnet C helpers its layer files call
 * (rust/helpers/): ulp.rs tcp_ulp.c; mapdev.rs mapdev.c and page_give.c
 * (replaced region pages back to zcfrag's stash); memlock.rs memlock.c;
 * netstat.rs netstat.c;
 * pageref.rs pageref.c and page.c.
 */
#include "../../rust/helpers/mapdev.c"
#include "../../rust/helpers/memlock.c"
#include "../../rust/helpers/netstat.c"
#include "../../rust/helpers/page.c"
#include "../../rust/helpers/page_give.c"
#include "../../rust/helpers/pageref.c"
#include "../../rust/helpers/tcp_ulp.c"
