/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * zcddp: DDP / RDMAP over MPA (iWARP) directly on a kernel TCP socket
 * (Documentation/networking/zcddp.rst).
 *
 *   setsockopt(fd, SOL_TCP, TCP_ULP, "zcddp", 5)      on a connected TCP
 *       socket (connect()ed or accept()ed): the socket is zcddp's from now
 *       on; plain send/recv are refused (EOPNOTSUPP)
 *   setsockopt(fd, SOL_ZCDDP, ZCDDP_STARTUP, &st, sizeof(st))
 *       runs MPA start-up (RFC 5044 §7.1, RFC 6581) as initiator or
 *       responder, bounded by st.timeout_ms; returns when the connection is
 *       in RDMA mode (0) or failed (-1, errno below). Once per socket.
 *   getsockopt(fd, SOL_ZCDDP, ZCDDP_INFO, &info, &len)
 *       the negotiated parameters and the state
 *   /proc/net/zcddp_stat                               per-namespace counters
 *
 * ZCDDP_STARTUP errors: ENOTCONN (not connected), EALREADY (start-up already
 * run or running), EINVAL (bad parameters), EFAULT (private data pointers),
 * ETIMEDOUT (the peer did not complete start-up in time), ECONNREFUSED (the
 * peer rejected, or this side refused the peer's parameters: a Reject reply
 * was sent), EPROTO (a malformed or unexpected frame from the peer),
 * ECONNRESET (the peer closed), EINTR (a signal; the connection is then
 * unusable). After an error the socket's state is ZCDDP_STATE_ERROR and
 * only close() is left.
 */
#ifndef _UAPI_LINUX_ZCDDP_H
#define _UAPI_LINUX_ZCDDP_H

#include <linux/types.h>

/* The socket level of zcddp's own options (after SOL_ZCSOCK, 300). */
#define SOL_ZCDDP		301

/* The ULP name for setsockopt(SOL_TCP, TCP_ULP). */
#define ZCDDP_ULP_NAME		"zcddp"

enum {
	ZCDDP_STARTUP = 1,	/* set: struct zcddp_startup; runs MPA start-up */
	ZCDDP_INFO = 2,		/* get: struct zcddp_info */
};

/* struct zcddp_startup.role */
enum {
	ZCDDP_INITIATOR = 1,	/* sends the MPA Request (usually the connect()er) */
	ZCDDP_RESPONDER = 2,	/* answers it with the MPA Reply */
};

/* struct zcddp_startup.flags */
#define ZCDDP_F_CRC		0x01	/* ask for CRCs (C): a peer asking gets them anyway */
#define ZCDDP_F_CRC_STRICT	0x02	/* refuse a connection whose CRC use differs from
					 * ZCDDP_F_CRC (siw's mpa_crc_strict and
					 * mpa_crc_required together) */
#define ZCDDP_F_MARKERS		0x04	/* ask the peer to send markers to us (M) */
#define ZCDDP_F_NO_MARKERS	0x08	/* refuse to send markers when the peer asks (as
					 * siw does) */
#define ZCDDP_F_P2P		0x10	/* revision 2: the peer-to-peer model, with a
					 * ready-to-receive message of a type in rtr */
#define ZCDDP_F_ALL		0x1f

/* struct zcddp_startup.rtr, struct zcddp_info.rtr: RFC 6581 RTR types */
#define ZCDDP_RTR_SEND		0x01	/* zero-length Send */
#define ZCDDP_RTR_WRITE		0x02	/* zero-length RDMA Write */
#define ZCDDP_RTR_READ		0x04	/* zero-length RDMA Read (responder only) */

/* Start-up of 0 ms means this; at most ZCDDP_TIMEOUT_MAX_MS. */
#define ZCDDP_TIMEOUT_DEFAULT_MS	10000
#define ZCDDP_TIMEOUT_MAX_MS		60000
/* Largest private data length: MPA's 512 less the enhanced data. */
#define ZCDDP_PRIVATE_DATA_MAX		508
/* Largest IRD and ORD (MPA's 14 bits allow more; zcddp's queues do not). */
#define ZCDDP_IRD_ORD_MAX		128

struct zcddp_startup {
	__u32 role;		/* ZCDDP_INITIATOR or ZCDDP_RESPONDER */
	__u32 flags;		/* ZCDDP_F_* */
	__u8 revision;		/* 1 or 2; a responder answers min(its own, the request's) */
	__u8 rtr;		/* ZCDDP_RTR_*: offered (initiator) or accepted (responder) */
	__u16 pd_len;		/* bytes of private data at pd */
	__u16 ird;		/* revision 2: inbound RDMA Read depth wanted */
	__u16 ord;		/* revision 2: outbound RDMA Read depth wanted */
	__u32 timeout_ms;	/* the whole start-up; 0: ZCDDP_TIMEOUT_DEFAULT_MS */
	__u32 peer_pd_cap;	/* room at peer_pd */
	__u64 pd;		/* user pointer: our private data */
	__u64 peer_pd;		/* user pointer: the peer's private data goes here
				 * (its length in zcddp_info.peer_pd_len) */
};

/* struct zcddp_info.state */
enum {
	ZCDDP_STATE_IDLE = 0,		/* attached, no start-up yet */
	ZCDDP_STATE_STARTING = 1,	/* start-up running */
	ZCDDP_STATE_RTS = 2,		/* RDMA mode: start-up done */
	ZCDDP_STATE_ERROR = 3,		/* failed (error says why) */
};

struct zcddp_info {
	__u32 state;		/* ZCDDP_STATE_* */
	__u32 role;		/* ZCDDP_INITIATOR / ZCDDP_RESPONDER, 0 before start-up */
	__u8 revision;		/* negotiated MPA revision */
	__u8 crc;		/* CRCs in use (both directions) */
	__u8 markers_tx;	/* we send markers */
	__u8 markers_rx;	/* the peer sends markers */
	__u8 p2p;		/* peer-to-peer model with an RTR message */
	__u8 rtr;		/* the RTR type used (ZCDDP_RTR_*), 0 for none */
	__u16 peer_pd_len;	/* the peer's private data length */
	__u16 ird;		/* negotiated inbound RDMA Read depth */
	__u16 ord;		/* negotiated outbound RDMA Read depth */
	__s32 error;		/* ZCDDP_STATE_ERROR: the positive errno */
};

#endif /* _UAPI_LINUX_ZCDDP_H */
