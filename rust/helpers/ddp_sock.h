/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte-exact kernel I/O on a locked TCP socket, for a ULP's own protocol
 * exchanges in process context (zcddp's MPA start-up): read exactly n bytes
 * of the stream through tcp_read_sock() (never more: the bytes after them
 * belong to the next layer), waiting with the socket's lock released as
 * tcp_recvmsg() does, bounded by a timeout; send kernel bytes with
 * tcp_sendmsg_locked().
 */
#ifndef ZCNET_DDP_SOCK_H
#define ZCNET_DDP_SOCK_H

#include <linux/types.h>

struct sock;

/*
 * Reads exactly len bytes of sk's stream into buf (sk locked by the caller;
 * released while waiting). *timeo: jiffies left, decremented by the waits.
 * 0, or -ETIMEDOUT, -ECONNRESET (the peer closed or reset), -EINTR (a
 * signal), -ENOTCONN, or the socket's error; bytes read before an error are
 * consumed.
 */
int zcnet_helper_ddp_recv_exact(struct sock *sk, void *buf, size_t len, long *timeo);
/* Sends len bytes of buf (sk locked), waiting for send space at most *timeo
 * jiffies: 0 or -errno. */
int zcnet_helper_ddp_send_exact(struct sock *sk, const void *buf, size_t len, long *timeo);
/* Bytes queued for reading on sk (locked). */
unsigned int zcnet_helper_ddp_inq(struct sock *sk);
/* Sends what TCP takes of buf now, without waiting (sk locked): the bytes
 * taken (maybe fewer than len), -EAGAIN for none (sk_write_space follows
 * when space frees), or the socket's error. eor: all of buf taken ends
 * TCP's skb (MSG_EOR: later bytes start a new segment); more: more bytes of
 * the segment follow at once (MSG_MORE: not pushed on their own). */
int zcnet_helper_ddp_send_some(struct sock *sk, const void *buf, size_t len, bool eor, bool more);
/* The MSS sk (locked) sends with now, as tcp_current_mss() has it. */
unsigned int zcnet_helper_ddp_mss(struct sock *sk);
/* Whether sk is an established TCP socket. */
bool zcnet_helper_ddp_established(const struct sock *sk);
/* TCP_NODELAY on sk (locked), as siw sets it: FPDUs go out at once. */
void zcnet_helper_ddp_nodelay(struct sock *sk);
/* Shuts sk's (locked) sending side, as shutdown(SHUT_WR): a FIN follows
 * what TCP has queued. */
void zcnet_helper_ddp_shutdown_send(struct sock *sk);
/* Logs (rate-limited) that zcddp terminates sk's connection: the peer,
 * the Terminate's layer, type and code, and how far the received stream
 * was parsed then (bytes after start-up). */
void zcnet_helper_ddp_log_term(const struct sock *sk, u8 layer, u8 etype, u8 ecode, u32 pos,
			       const u8 *hdr, size_t hdr_len);
/* Logs (rate-limited) an FPDU of len bytes at stream byte pos whose CRC
 * (got) is not the one it carries (want), with its first head_len bytes
 * (at most 32) and, when recurs >= 0, the offset inside it at which its
 * first 16 bytes occur again. */
void zcnet_helper_ddp_log_crc(const struct sock *sk, u32 pos, u32 len, u32 got, u32 want,
			      const u8 *head, size_t head_len, int recurs);
/* msecs_to_jiffies(ms) */
long zcnet_helper_ddp_ms_to_jiffies(unsigned int ms);

/* Copies up to len bytes of sk's stream (locked) into buf without waiting:
 * bytes copied (0: none queued), or -errno. */
int zcnet_helper_ddp_recv_avail(struct sock *sk, void *buf, size_t len);
/* Waits (lock released) until the stream holds at least need bytes, the ULP
 * marks the socket readable (zcnet_helper_tcp_ulp_set_ready()) or *timeo
 * runs out; with need 0, until any wake-up of the socket's waiters
 * (zcnet_helper_tcp_ulp_wake()) or *timeo runs out: 0 (look again),
 * -ETIMEDOUT, -ECONNRESET, -EINTR, or the socket's error. need is more than
 * one byte when the reader left an incomplete frame queued on purpose. */
int zcnet_helper_ddp_wait(struct sock *sk, long *timeo, unsigned int need);

/* TCP's copied_seq (the next byte to read) and rcv_nxt of sk (locked). */
void zcnet_helper_ddp_rcv_seqs(struct sock *sk, u32 *copied, u32 *rcv_nxt);
/*
 * Out-of-order placement reads TCP's out-of-order queue in place (sk
 * locked, or its spinlock held with no owner; it holds only segments TCP
 * accepted). zcnet_helper_ddp_ofo_next()
 * finds the first queued skb whose data ends after sequence number from:
 * 1 with *seq its first byte from from on and *end just past its data, 0
 * when none is queued.
 */
int zcnet_helper_ddp_ofo_next(struct sock *sk, u32 from, u32 *seq, u32 *end);
/*
 * The queued skb that holds the bytes [seq, seq + len) whole, and the
 * offset of seq in its data; NULL when none does.
 */
struct sk_buff *zcnet_ddp_ofo_span(struct sock *sk, u32 seq, size_t len, int *off);
/* Copies those bytes into buf: 0 or -ENODATA. */
int zcnet_helper_ddp_ofo_read(struct sock *sk, u32 seq, void *buf, size_t len);
/* Their CRC32c (MPA's: initial ~0, final inversion) into *crc: 0 or -ENODATA. */
int zcnet_helper_ddp_ofo_crc32c(struct sock *sk, u32 seq, size_t len, u32 *crc);
/*
 * Takes the next MSG_ZEROCOPY notification off sk's error queue (any other
 * entry is dropped on the way): 1 with its id range *lo..*hi (inclusive,
 * ids wrap) and whether the kernel reported it copied the data
 * (SO_EE_CODE_ZEROCOPY_COPIED, e.g. delivered on this host: the receive
 * path's skb_orphan_frags_rx() copies the frags; adjacent notifications are
 * merged keeping the first's code), 0 when none is queued.
 */
int zcnet_helper_ddp_zc_reap(struct sock *sk, u32 *lo, u32 *hi, bool *copied);
/*
 * In-order direct placement reads TCP's receive queue in place (sk locked):
 * the bytes [off, off + len) of the stream counted from copied_seq.
 * zcnet_ddp_queue_walk() calls fn on each piece (skb, offset in its data,
 * length): 0, -ENODATA when the queue holds fewer bytes, or fn's error.
 */
struct sk_buff;
int zcnet_ddp_queue_walk(struct sock *sk, u32 off, size_t len,
			 int (*fn)(const struct sk_buff *skb, int o, int n, void *arg), void *arg);
/* Copies them into buf: 0 or -ENODATA. */
int zcnet_helper_ddp_peek(struct sock *sk, u32 off, void *buf, size_t len);
/* Their CRC32c (MPA's: initial ~0, final inversion) into *crc: 0 or -ENODATA. */
int zcnet_helper_ddp_queue_crc32c(struct sock *sk, u32 off, size_t len, u32 *crc);
/* Consumes len bytes of the stream without copying them (tcp_read_sock(),
 * which also updates the window): the bytes consumed, or -errno. */
int zcnet_helper_ddp_consume(struct sock *sk, size_t len);
/* sk's receive buffer size (sk_rcvbuf). */
unsigned int zcnet_helper_ddp_rcvbuf(const struct sock *sk);
/*
 * Whether a reader of sk (locked) may leave the bytes queued and wait for
 * missing more: TCP holds nothing out of order (no hole whose filling
 * competes for receive memory), its receive memory is under half the
 * buffer, and the window it advertised lets the peer send them
 * (tcp_receive_window()). TCP opens its window only as bytes are read and
 * drops what it has no memory for, so waiting otherwise could stall the
 * stream.
 */
bool zcnet_helper_ddp_can_wait(const struct sock *sk, unsigned int missing);
/* Whether TCP holds segments out of order (sk locked or its spinlock held). */
bool zcnet_helper_ddp_ofo_queued(const struct sock *sk);
#endif
