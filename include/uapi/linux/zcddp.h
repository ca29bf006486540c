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
 *   setsockopt(fd, SOL_ZCDDP, ZCDDP_REG_MR ... ZCDDP_POLL_CQ, ...)
 *       the verbs (below), in RDMA mode; a protocol error of the peer ends
 *       the connection with a Terminate (RFC 5040 codes), and the verbs
 *       then fail with the error (EPROTO, ECONNRESET ...)
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
	/* The verbs, in RDMA mode: setsockopt() as a command, its results
	 * written through the user pointers in the struct. */
	ZCDDP_REG_MR = 3,	/* set: struct zcddp_reg_mr; the STag to *stag */
	ZCDDP_DEREG_MR = 4,	/* set: __u32 STag: invalid at once; returns
				 * once TCP holds none of its pages (lent by
				 * zero-copy transmit), waiting up to
				 * SO_SNDTIMEO, else EBUSY (still invalid;
				 * call again) */
	ZCDDP_POST_RECV = 5,	/* set: struct zcddp_recv */
	ZCDDP_POST_SEND = 6,	/* set: struct zcddp_send */
	ZCDDP_POLL_CQ = 7,	/* set: struct zcddp_poll */
	ZCDDP_SEND_QUEUE = 8,	/* set (before start-up) / get: __u32, the send
				 * queue's depth (1 .. ZCDDP_SQ_DEPTH_MAX) */
	ZCDDP_OOO = 9,		/* set / get: __u32, 1 (the default): tagged
				 * segments that arrive ahead of a hole are
				 * placed at once (CRC on, registrations with
				 * ZCDDP_ACCESS_NO_REMOTE_INV only); 0: in order
				 * only. Any time; the set takes effect at once. */
	ZCDDP_POST_RECV_SG = 10,	/* set: struct zcddp_recv_sg: one receive
				 * over a scatter list */
	ZCDDP_CQ_RING = 11,	/* set (in RDMA mode): struct zcddp_ring;
				 * completions go into a ring in registered
				 * memory, read without a system call (below);
				 * entries 0 clears it */
	ZCDDP_RQ_RING = 12,	/* set (in RDMA mode): struct zcddp_ring;
				 * receives posted into a ring in registered
				 * memory, without a system call (below);
				 * entries 0 clears it */
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

/*
 * Verbs. Each socket (connection) has its own registrations (an STag of
 * another connection is unknown here), a receive queue of at most
 * ZCDDP_RQ_DEPTH posted buffers, a send queue of ZCDDP_SQ_DEPTH work
 * requests unless ZCDDP_SEND_QUEUE says otherwise, at most ORD outstanding
 * RDMA Reads, and a completion queue: a post fails with ENOSPC when the
 * posted work not yet completed and the unpolled completions would exceed
 * ZCDDP_CQ_DEPTH. ZCDDP_POST_SEND never waits: the work request is queued
 * and goes out as TCP takes it; with the send queue full (a peer that does
 * not read) it fails at once with ENOMEM, as siw's post_send does.
 * Addresses are the registering process's virtual addresses: the tagged
 * offset of an STag is the address it was registered at (as ibv_reg_mr's).
 */
#define ZCDDP_RQ_DEPTH		64
#define ZCDDP_CQ_DEPTH		256
#define ZCDDP_SQ_DEPTH		64	/* the send queue's default depth */
#define ZCDDP_SQ_DEPTH_MAX	256
#define ZCDDP_MR_MAX		64	/* registrations per connection */

/* struct zcddp_reg_mr.access */
#define ZCDDP_ACCESS_LOCAL_WRITE	0x1	/* receives, Read Responses land here */
#define ZCDDP_ACCESS_REMOTE_WRITE	0x2	/* the peer may RDMA Write */
#define ZCDDP_ACCESS_REMOTE_READ	0x4	/* the peer may RDMA Read */
#define ZCDDP_ACCESS_NO_REMOTE_INV	0x8	/* the peer cannot invalidate it (a Send
						 * with Invalidate naming it is refused);
						 * out-of-order placement lands only in
						 * such registrations */

struct zcddp_reg_mr {
	__u64 addr;		/* user address (any alignment) */
	__u64 len;		/* bytes; pinned pages count against RLIMIT_MEMLOCK */
	__u32 access;		/* ZCDDP_ACCESS_* */
	__u32 reserved;		/* 0 */
	__u64 stag;		/* user pointer: the __u32 STag goes here */
};

/* One receive buffer (untagged; one scatter element). */
struct zcddp_recv {
	__u64 wr_id;
	__u64 addr;		/* in the registration lkey, LOCAL_WRITE */
	__u32 len;
	__u32 lkey;
};

/* One receive over a scatter list: a Send's bytes fill the elements in
 * order, each in its own registration or the same (LOCAL_WRITE), the
 * message at most the sum of their lengths (below 4 GiB). Elements of
 * length 0 are skipped; num_sge 0 takes only a zero-length Send. */
#define ZCDDP_RECV_SGE_MAX	6	/* elements per receive (siw's too) */

struct zcddp_sge {
	__u64 addr;
	__u32 len;
	__u32 lkey;
};

struct zcddp_recv_sg {
	__u64 wr_id;
	__u64 sg_list;		/* user pointer: num_sge struct zcddp_sge */
	__u32 num_sge;		/* 0 .. ZCDDP_RECV_SGE_MAX */
	__u32 reserved;		/* 0 */
};

/* struct zcddp_send.opcode, struct zcddp_cqe.opcode */
enum {
	ZCDDP_WR_SEND = 0,
	ZCDDP_WR_SEND_SE = 1,		/* Send with Solicited Event */
	ZCDDP_WR_SEND_INV = 2,		/* Send with Invalidate (inv_stag) */
	ZCDDP_WR_WRITE = 3,		/* RDMA Write to rkey at raddr */
	ZCDDP_WR_READ = 4,		/* RDMA Read of rkey at raddr into addr */
	ZCDDP_WC_RECV = 5,		/* completion of a posted receive */
};

/* struct zcddp_send.flags */
#define ZCDDP_SEND_SIGNALED	0x1	/* a completion when done (Reads always) */

struct zcddp_send {
	__u64 wr_id;
	__u32 opcode;		/* ZCDDP_WR_* */
	__u32 flags;		/* ZCDDP_SEND_* */
	__u64 addr;		/* local data (the sink, for a Read) */
	__u32 len;
	__u32 lkey;		/* its registration (0 with len 0) */
	__u64 raddr;		/* Write / Read: the peer's tagged offset */
	__u32 rkey;		/* Write / Read: the peer's STag */
	__u32 inv_stag;		/* Send with Invalidate: the peer's STag to invalidate */
};

/* struct zcddp_cqe.status */
enum {
	ZCDDP_WC_SUCCESS = 0,
	ZCDDP_WC_LOC_PROT_ERR = 1,	/* a local STag, bound or access check failed */
	ZCDDP_WC_REM_ERR = 2,		/* the peer terminated the connection */
	ZCDDP_WC_FLUSH_ERR = 3,		/* flushed: the connection is in error */
};

/* struct zcddp_cqe.flags */
#define ZCDDP_WC_SOLICITED	0x1	/* a Send with Solicited Event */
#define ZCDDP_WC_INVALIDATED	0x2	/* a Send with Invalidate: inv_stag is invalid now */

struct zcddp_cqe {
	__u64 wr_id;
	__u32 opcode;		/* ZCDDP_WR_* / ZCDDP_WC_RECV */
	__u32 status;		/* ZCDDP_WC_* */
	__u32 byte_len;
	__u32 flags;		/* ZCDDP_WC_SOLICITED, ZCDDP_WC_INVALIDATED */
	__u32 inv_stag;
	__u32 reserved;
};

struct zcddp_poll {
	__u64 cqe;		/* user pointer: room for max struct zcddp_cqe */
	__u32 max;
	__u32 timeout_ms;	/* wait this long for the first completion (0: none) */
	__u64 count;		/* user pointer: the __u32 number written */
};

/*
 * The completion ring (ZCDDP_CQ_RING): struct zcddp_cq_ring at addr, in a
 * registration of this connection whose access is ZCDDP_ACCESS_LOCAL_WRITE
 * (with ZCDDP_ACCESS_NO_REMOTE_INV or not) and nothing else, so that the
 * peer can neither read, write nor invalidate it; addr 64-byte aligned,
 * the ring's ZCDDP_CQ_RING_BYTES(entries) bytes inside the registration.
 * From then on every completion is written into the ring, in order,
 * instead of being handed out by ZCDDP_POLL_CQ: zcddp writes cqe[tail %
 * entries], then advances tail (release); the application reads tail
 * (acquire), the entries from head up to it, then advances head (release).
 * Room is entries - (tail - head): completions that find none wait in the
 * kernel until a verb call or the socket's work item finds room. A ring
 * set while one is: EBUSY. The registration cannot be deregistered while
 * it holds the ring (EBUSY) and the peer cannot invalidate it.
 * ZCDDP_POLL_CQ then hands out nothing: it waits up to its timeout until
 * the ring holds a completion (or the connection failed, which it
 * reports) and writes 0 to count. poll/epoll report the socket readable
 * while the ring held completions when zcddp last let the connection go.
 */
struct zcddp_ring {
	__u64 addr;		/* 64-byte aligned, in the registration lkey */
	__u32 entries;		/* a power of two, 1 .. ZCDDP_CQ_DEPTH; 0: clear
				 * the ring (completions go to ZCDDP_POLL_CQ
				 * again; what the ring holds stays there) */
	__u32 lkey;
};

struct zcddp_cq_ring {
	__u32 head;		/* the application's: the next entry it reads */
	__u32 reserved0[15];
	__u32 tail;		/* zcddp's: the next entry it writes */
	__u32 reserved1[15];
	struct zcddp_cqe cqe[];	/* entries of them: a completion at cqe[i % entries] */
};

#define ZCDDP_CQ_RING_BYTES(entries) \
	(sizeof(struct zcddp_cq_ring) + (entries) * sizeof(struct zcddp_cqe))

/*
 * The receive ring (ZCDDP_RQ_RING): struct zcddp_rq_ring at addr, with
 * the completion ring's rules for the registration, alignment and size
 * (ZCDDP_RQ_RING_BYTES(entries)), and its own registration or the same.
 * zcddp starts at the head the application left there (0 in fresh
 * memory): entries written before the ring is set are posted. The
 * application posts a receive by writing rqe[tail % entries] (as for
 * ZCDDP_POST_RECV), then advancing tail (release); zcddp takes the
 * entries from head up to tail (acquire) when a Send needs a receive and
 * its receive queue is empty, as many as the queue and the completion
 * queue have room for, and advances head (release) past those it took:
 * room for the application is entries - (tail - head). zcddp keeps its
 * own copy of head and treats tail as any number: a tail more than
 * entries ahead of head posts nothing. An entry whose buffer fails the
 * checks of ZCDDP_POST_RECV (STag, bounds, LOCAL_WRITE) completes with
 * ZCDDP_WC_LOC_PROT_ERR in its turn and takes no message. A Send that
 * finds neither a posted receive nor an entry ends the connection (a
 * Terminate, as without the ring). Once the connection failed, the
 * entries left in the ring complete with ZCDDP_WC_FLUSH_ERR as the
 * completion queue has room. While the ring is set ZCDDP_POST_RECV and
 * ZCDDP_POST_RECV_SG fail with EBUSY (receives posted before it come
 * first), its registration cannot be deregistered (EBUSY) nor invalidated
 * by the peer, and a second ring is EBUSY. Cleared (entries 0), the
 * entries zcddp has not taken stay in the ring.
 */
struct zcddp_rq_ring {
	__u32 head;		/* zcddp's: the next entry it takes */
	__u32 reserved0[15];
	__u32 tail;		/* the application's: the next entry it writes */
	__u32 reserved1[15];
	struct zcddp_recv rqe[];	/* entries of them: a receive at rqe[i % entries] */
};

#define ZCDDP_RQ_RING_BYTES(entries) \
	(sizeof(struct zcddp_rq_ring) + (entries) * sizeof(struct zcddp_recv))

#endif /* _UAPI_LINUX_ZCDDP_H */
