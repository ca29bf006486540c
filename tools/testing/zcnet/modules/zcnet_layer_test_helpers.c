// SPDX-License-Identifier: GPL-2.0
/*
 * This module's copy of the zcnet C helpers its layer files call
 * (rust/helpers/): page.rs needs page.c, page_reuse.c and page_stash.c.
 */
#include "../../../../rust/helpers/page.c"
#include "../../../../rust/helpers/percpu.c"
#include "../../../../rust/helpers/page_reuse.c"
#include "../../../../rust/helpers/page_stash.c"
