/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What any module may ask of the running kernel, whatever its subsystem
 * (rust/zcnet/helpers.rs).
 */
#ifndef ZCNET_HELPERS_MODULE_H
#define ZCNET_HELPERS_MODULE_H

#include <linux/types.h>

/* The kernel's release string (utsname()->release), for log lines. */
const char *zcnet_helper_kernel_release(void);
/* get_random_u32(): unpredictable, callable from any context. */
u32 zcnet_helper_random_u32(void);

#endif /* ZCNET_HELPERS_MODULE_H */
