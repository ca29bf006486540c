/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * zcsock: copy-on-write, page-remapping zero-copy TCP sockets
 * (Documentation/networking/zcsock.rst).
 *
 *   setsockopt(fd, SOL_TCP, TCP_ULP, "zcsock", 6)    turns it on for a TCP
 *       socket (before or after connect; on a listener, accepted sockets
 *       inherit it)
 *   open("/dev/zcsock", O_RDWR) + mmap(MAP_SHARED)   a region ("fast buffer")
 *   getsockopt/setsockopt(fd, SOL_ZCSOCK, ...)       the options below
 *   /proc/net/zcsock_stat                            per-namespace counters
 */
#ifndef _UAPI_ZCNET_ZCSOCK_H
#define _UAPI_ZCNET_ZCSOCK_H

#include <linux/types.h>

/* The socket level of zcsock's own options (after SOL_VSOCK, 287). */
#define SOL_ZCSOCK		300

/* The ULP name for setsockopt(SOL_TCP, TCP_ULP). */
#define ZCSOCK_ULP_NAME		"zcsock"
/* The device whose mmap() gives a region. */
#define ZCSOCK_DEVICE		"/dev/zcsock"

enum {
	ZCSOCK_STATS = 1,		/* get: struct zcsock_stats */
	ZCSOCK_COPY_THRESHOLD = 2,	/* get/set: __u32 bytes; sends and
					 * receives shorter than this copy */
};

/* Per-socket counters (getsockopt ZCSOCK_STATS); all bytes are payload. */
struct zcsock_stats {
	__u64 tx_pages_by_ref;		/* region pages handed to TCP by reference */
	__u64 tx_bytes_by_ref;
	__u64 tx_bytes_copied;		/* sent bytes TCP copied from the caller */
	__u64 rx_pages_remapped;	/* received pages mapped into a region */
	__u64 rx_bytes_remapped;
	__u64 rx_bytes_copied;		/* received bytes copied to the caller */
};

#endif /* _UAPI_ZCNET_ZCSOCK_H */
