/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * zcfrag link attributes: IFLA_INFO_DATA of `ip link add/set ... type zcfrag`
 * (Documentation/networking/zcfrag.rst). Every attribute is a u32; the kernel
 * refuses a value outside its range with EINVAL and a message, and applies
 * nothing of a request that has one bad value.
 */
#ifndef _UAPI_ZCNET_ZCFRAG_H
#define _UAPI_ZCNET_ZCFRAG_H

enum {
	IFLA_ZCFRAG_UNSPEC,
	IFLA_ZCFRAG_SLOTS,		/* speculation slots, 1..32 (default 8) */
	IFLA_ZCFRAG_TIMEOUT_US,		/* speculation timeout, 100..1000000 us */
	IFLA_ZCFRAG_ADMISSION,		/* receiver policy: 0 open, 1 required */
	IFLA_ZCFRAG_IMPLICIT,		/* implicit admission requests: 0 off, 1 on */
	IFLA_ZCFRAG_GRANT_TIMEOUT_MS,	/* idle grant lifetime, 10..600000 ms */
	__IFLA_ZCFRAG_MAX,
};
#define IFLA_ZCFRAG_MAX (__IFLA_ZCFRAG_MAX - 1)

#endif /* _UAPI_ZCNET_ZCFRAG_H */
