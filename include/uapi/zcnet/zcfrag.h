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

/*
 * Explicit admission (Documentation/networking/zcfrag.rst, "Admission
 * control"): ioctl(sock, SIOCDEVPRIVATE, &ifr) on a zcfrag device, ifr_data
 * pointing to a struct zcfrag_admission. Integers in host byte order,
 * addresses in network order; 32 bytes, no padding.
 */
#include <linux/types.h>

enum zcfrag_adm_cmd {
	ZCFRAG_ADM_REQUEST = 1,		/* ask the peer for a slot (CAP_NET_ADMIN) */
	ZCFRAG_ADM_QUERY = 2,		/* read the flow's state */
	ZCFRAG_ADM_RELEASE = 3,		/* give the slot back (CAP_NET_ADMIN) */
};

enum zcfrag_adm_state {
	ZCFRAG_ADM_NONE = 0,
	ZCFRAG_ADM_PENDING = 1,
	ZCFRAG_ADM_GRANTED = 2,
	ZCFRAG_ADM_REFUSED = 3,
	ZCFRAG_ADM_NO_ANSWER = 4,
};

struct zcfrag_admission {
	__u32 cmd;		/* enum zcfrag_adm_cmd */
	__u32 state;		/* out: enum zcfrag_adm_state */
	__u8  peer[6];		/* request: the receiver's MAC address */
	__u8  protocol;		/* 6 (TCP) or 17 (UDP) */
	__u8  slot;		/* out: the slot granted */
	__u8  src[4];		/* the flow's IPv4 source and destination */
	__u8  dst[4];
	__u16 sport;		/* informational */
	__u16 dport;
	__u32 tries;		/* out: requests sent (pending) */
};

#endif /* _UAPI_ZCNET_ZCFRAG_H */
