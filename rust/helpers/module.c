// SPDX-License-Identifier: GPL-2.0
/* What any module may ask of the running kernel (see module.h). */
#include <linux/random.h>
#include <linux/utsname.h>

#include "module.h"

const char *zcnet_helper_kernel_release(void)
{
	return init_utsname()->release;
}

u32 zcnet_helper_random_u32(void)
{
	return get_random_u32();
}
