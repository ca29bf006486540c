// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers shared by every zcnet module (see zcnet_helpers.h). Included by one
 * small file in each module directory instead of being linked as a shared
 * object, so that each .ko gets its own copy with its own KBUILD_MODNAME.
 */
#include <linux/module.h>
#include <linux/utsname.h>

#include "zcnet_helpers.h"

struct module *zcnet_helper_this_module(void)
{
	return THIS_MODULE;
}

const char *zcnet_helper_kernel_release(void)
{
	return init_utsname()->release;
}
