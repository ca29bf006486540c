// SPDX-License-Identifier: GPL-2.0
/* Bottom halves (see bh.h). */
#include <linux/bottom_half.h>

#include "bh.h"

void zcnet_helper_bh_disable(void)
{
	local_bh_disable();
}

void zcnet_helper_bh_enable(void)
{
	local_bh_enable();
}
