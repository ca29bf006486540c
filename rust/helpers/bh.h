/* SPDX-License-Identifier: GPL-2.0 */
/* Bottom halves and monotonic time (rust/zcnet/bh.rs, rust/zcnet/stacked.rs). */
#ifndef ZCNET_HELPERS_BH_H
#define ZCNET_HELPERS_BH_H

#include <linux/types.h>

/* local_bh_disable() / local_bh_enable() */
void zcnet_helper_bh_disable(void);
void zcnet_helper_bh_enable(void);
/* ktime_get_ns() */
u64 zcnet_helper_now_ns(void);

#endif /* ZCNET_HELPERS_BH_H */
