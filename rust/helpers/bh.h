/* SPDX-License-Identifier: GPL-2.0 */
/* Bottom halves (rust/zcnet/bh.rs, rust/zcnet/stacked.rs). */
#ifndef ZCNET_HELPERS_BH_H
#define ZCNET_HELPERS_BH_H

/* local_bh_disable() / local_bh_enable() */
void zcnet_helper_bh_disable(void);
void zcnet_helper_bh_enable(void);

#endif /* ZCNET_HELPERS_BH_H */
