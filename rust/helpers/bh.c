// SPDX-License-Identifier: GPL-2.0
/* Bottom halves and monotonic time (see bh.h). */
#include <linux/bottom_half.h>
#include <linux/timekeeping.h>

#include "bh.h"

void zcnet_helper_bh_disable(void)
{
	local_bh_disable();
}

void zcnet_helper_bh_enable(void)
{
	local_bh_enable();
}

u64 zcnet_helper_now_ns(void)
{
	return ktime_get_ns();
}
