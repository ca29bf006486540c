// SPDX-License-Identifier: GPL-2.0
/* This module's copy of the zcnet C helpers (rust/helpers/). */
#include "../../../../rust/helpers/zcnet_helpers.c"
#include "../../../../rust/helpers/mapdev.c"
#include "../../../../rust/helpers/netstat.c"
#include "../../../../rust/helpers/tcp_ulp.c"
