/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A TCP upper-layer protocol that takes over a socket's data calls the way
 * kTLS does (net/tls/tls_main.c): the socket's `struct proto` is replaced by
 * a copy of TCP's (one per address family) whose sendmsg, recvmsg and the
 * options of the ULP's own socket level go to the driver; the rest stays TCP.
 * Close and destroy put TCP's proto back first, so nothing runs through the
 * copy once the ULP lets the module go.
 */
#ifndef ZCNET_TCP_ULP_H
#define ZCNET_TCP_ULP_H

#include <linux/types.h>

struct sock;
struct msghdr;
struct page;

struct zcnet_tcp_ulp_cbs {
	int sol;	/* the ULP's socket level */
	/* ctx: the socket's icsk_ulp_data (NULL when the ULP has none). */
	int (*sendmsg)(struct sock *sk, void *ctx, struct msghdr *msg, size_t size);
	int (*recvmsg)(struct sock *sk, void *ctx, struct msghdr *msg, size_t len, int flags);
	/* Options of level `sol`, in kernel buffers of at most 64 bytes:
	 * get returns the length written or -errno. */
	int (*setopt)(struct sock *sk, void *ctx, int name, const void *val, unsigned int len);
	int (*getopt)(struct sock *sk, void *ctx, int name, void *val, unsigned int len);
	/* Optional: an option of level `sol` before the socket is locked
	 * (for work that must not hold the lock, such as pinning pages; the
	 * ULP locks the socket itself to publish): -ENOIOCTLCMD when the ULP
	 * leaves the option to setopt. */
	int (*setopt_unlocked)(struct sock *sk, void *ctx, int name, const void *val,
			       unsigned int len);
	/* Optional: TCP's own option name was set on sk (socket locked). */
	void (*tcp_opt_set)(struct sock *sk, void *ctx, int name);
	/*
	 * Optional: the socket's own progress. With it, every socket of the
	 * ULP gets a work item that data arriving (sk_data_ready) schedules,
	 * holding a socket reference, and that calls work(sk, ctx) in process
	 * context with sk locked; TCP freeing send space after a send found
	 * none (sk_write_space, once the stream is writeable) schedules it
	 * too; and sk is readable for poll/epoll while the ULP says so
	 * (zcnet_helper_tcp_ulp_set_ready()). Stopped (hooks removed, work
	 * cancelled) in close.
	 */
	void (*work)(struct sock *sk, void *ctx);
	/*
	 * Optional, with work: data arrived and TCP queued it, in softirq
	 * with sk's spinlock held and no owner (tcp_v4_rcv()), or in the
	 * owner's release_sock() (its backlog); or a run was asked for
	 * (zcnet_helper_tcp_ulp_kick_rx(), the out-of-order hook), in process
	 * context with bottom halves off, sk's spinlock held and no owner.
	 * The ULP may take the bytes now (no sleeping, no sending). True when
	 * nothing is left for work; false schedules it.
	 */
	bool (*rx_bh)(struct sock *sk, void *ctx);
	/*
	 * Optional, with work: the socket is being closed (sk locked, the work
	 * item stopped and its hooks removed); the ULP lets go of what it
	 * holds for the application (queued work, pinned memory) at once,
	 * instead of when TCP destroys the socket, which for an orphan with
	 * unsent bytes may be minutes later.
	 */
	void (*close)(struct sock *sk, void *ctx);
	/*
	 * Optional, with work: the text of the socket's line in the ULP's
	 * listing (zcnet_helper_tcp_ulp_proc_register()), after its
	 * addresses, into buf: the bytes written, at most len. Called with
	 * the list's spinlock held (BHs off), not the socket lock: it reads
	 * only what the ULP published for it, and never sleeps.
	 */
	int (*describe)(struct sock *sk, void *ctx, char *buf, unsigned int len);
	/*
	 * The ULP's state belongs to one connection (its tcp_ulp_ops has no
	 * clone, so TCP refuses listen() with EINVAL): connect(AF_UNSPEC),
	 * which would make the socket a fresh one that may listen or connect
	 * again under the same state, is refused with EOPNOTSUPP, as kTLS
	 * refuses it (tls_disconnect()).
	 */
	bool no_disconnect;
};

/*
 * The head of the ULP data (icsk_ulp_data) of a socket of this layer: the
 * Rust side's Holder (rust/zcnet/ulp.rs) starts with these fields.
 */
struct zcnet_ulp_work;
struct zcnet_ulp_holder {
	struct callback_head rcu;
	struct zcnet_ulp_work *work;	/* NULL without cbs->work */
};

/* The callbacks, set once before the ULP is registered. */
void zcnet_helper_tcp_ulp_set_cbs(const struct zcnet_tcp_ulp_cbs *cbs);
/* In the ULP's init: switch sk to the ULP's proto (0, or -EBUSY when another
 * layer already replaced TCP's proto). */
int zcnet_helper_tcp_ulp_install(struct sock *sk);
void *zcnet_helper_tcp_ulp_ctx(const struct sock *sk);
void zcnet_helper_tcp_ulp_set_ctx(struct sock *sk, void *ctx);
/*
 * In the ULP's init, after zcnet_helper_tcp_ulp_install() (sk locked, its
 * holder set): the socket's work item and data_ready hook (0, or -ENOMEM
 * with TCP's proto put back).
 */
int zcnet_helper_tcp_ulp_work_start(struct sock *sk);
/*
 * /proc/net/name in every namespace (cbs->describe needed): the header,
 * then per socket of the namespace "LOCAL REMOTE" and what describe()
 * writes; at most 256 sockets per read, 4096 bytes each.
 */
int zcnet_helper_tcp_ulp_proc_register(const char *name, const char *header);
void zcnet_helper_tcp_ulp_proc_unregister(void);
/* Frees what zcnet_helper_tcp_ulp_work_start() allocated (the holder's
 * work, NULL allowed), once the socket is gone. */
void zcnet_helper_tcp_ulp_work_free(struct zcnet_ulp_work *w);
/*
 * sk (locked) is readable for poll/epoll (or not) beyond TCP's own bytes,
 * and may be written to (or not): with zcnet_helper_tcp_ulp_own_readiness(),
 * poll/epoll report EPOLLOUT only while the ULP says so and TCP's stream is
 * writeable. Becoming readable wakes its waiters (poll, epoll, a thread in
 * zcnet_helper_ddp_wait()); becoming writable wakes its writers. Nothing
 * done when neither changed. False without a work item (no effect).
 */
bool zcnet_helper_tcp_ulp_set_ready(struct sock *sk, bool readable, bool writable);
/*
 * From now on sk (locked) is readable for poll/epoll only as the ULP says
 * (or on an error, shutdown or hang-up), not for TCP's own queued bytes:
 * the socket's poll is TCP's with those masked (its ops are a copy of the
 * socket layer's with that poll, installed with the work item and put
 * back in close).
 */
void zcnet_helper_tcp_ulp_own_readiness(struct sock *sk);
/* Wakes sk's waiters (poll, epoll, zcnet_helper_ddp_wait()). */
void zcnet_helper_tcp_ulp_wake(struct sock *sk);
/* Whether the ULP said sk is readable. */
bool zcnet_helper_tcp_ulp_readable(struct sock *sk);
/*
 * sk (locked, with a work item) sends with MSG_ZEROCOPY from now on:
 * SOCK_ZEROCOPY set, and sk_error_report hooked to schedule the work item
 * when the kernel queues a notification on the error queue (the ULP drains
 * it, zcnet_helper_ddp_zc_reap()); poll reports EPOLLERR only for a socket
 * error, not for queued notifications. Unhooked in close. False without a
 * work item.
 */
bool zcnet_helper_tcp_ulp_zerocopy(struct sock *sk);
/* Schedules sk's work item (a socket reference held for it), unless it is
 * pending or the socket is closing. */
void zcnet_helper_tcp_ulp_kick(struct sock *sk);
/* Schedules a run of sk's receive path (rx) under its spinlock, from
 * process context with bottom halves off, while no one owns sk; owned,
 * or when rx leaves work, the work item runs (it alone without rx). A
 * socket reference is held for it. */
void zcnet_helper_tcp_ulp_kick_rx(struct sock *sk);
/*
 * Out-of-order kicks: a netfilter hook in every namespace (IPv4 LOCAL_IN)
 * that schedules the work item of a socket that asked
 * (zcnet_helper_tcp_ulp_set_ofo_kick()) when a TCP segment with payload
 * arrives for it ahead of rcv_nxt. Register once at module load (0 or
 * -errno), unregister before the module goes.
 */
int zcnet_helper_tcp_ulp_ofo_register(void);
void zcnet_helper_tcp_ulp_ofo_unregister(void);
/* sk (locked, with a work item) is kicked for out-of-order data, or not;
 * off by itself in close. */
void zcnet_helper_tcp_ulp_set_ofo_kick(struct sock *sk, bool on);
/* TCP's own sendmsg / recvmsg for sk (the base proto). */
int zcnet_helper_tcp_base_sendmsg(struct sock *sk, struct msghdr *msg, size_t size);
int zcnet_helper_tcp_base_recvmsg(struct sock *sk, struct msghdr *msg, size_t len, int flags);
/* sock_net(sk) */
struct net *zcnet_helper_sock_net(const struct sock *sk);
/* Whether sk listens (stable while sk is locked: listen() locks it). */
bool zcnet_helper_sock_listening(const struct sock *sk);
void zcnet_helper_lock_sock(struct sock *sk);
void zcnet_helper_release_sock(struct sock *sk);
/*
 * A plain send: a user buffer (ITER_UBUF, or an iovec of one segment), no
 * address, no control data, none of MSG_OOB, MSG_FASTOPEN, MSG_ZEROCOPY,
 * MSG_SPLICE_PAGES. Its address, length and flags; false otherwise.
 */
bool zcnet_helper_msg_plain_user(const struct msghdr *msg, unsigned long *uaddr,
				 size_t *len, unsigned int *flags);
/* tcp_sendmsg_locked() of len user bytes at uaddr (copied), socket locked:
 * bytes sent or -errno. */
int zcnet_helper_tcp_send_user(struct sock *sk, unsigned long uaddr, size_t len,
			       unsigned int flags);
/*
 * Page-aligned cuts, socket locked. While every unsent byte of sk is in
 * segments of a whole page (the MSS is PAGE_SIZE and the last unsent skb a
 * whole number of pages), the cork bit makes a sender held back by the
 * receive window cut at a segment boundary (tcp_mss_split_point() rounds
 * down to the MSS when corked) instead of at the window's edge, inside a
 * page, which would shift every later page of the stream off its segment
 * (and a receiver would copy them instead of taking the pages). *ours: the
 * bit is the caller's, set by an earlier call. True when the caller must
 * uncork (tcp_sock_set_cork(sk, false), unlocked): a part page is queued.
 */
bool zcnet_helper_tcp_page_cork(struct sock *sk, bool *ours);
/* tcp_sock_set_cork(sk, false): clears the cork bit and pushes; locks sk. */
void zcnet_helper_tcp_uncork(struct sock *sk);
/*
 * tcp_sendmsg_locked() of n whole pages by reference (MSG_SPLICE_PAGES),
 * socket locked: bytes sent or -errno. The caller keeps its references. The
 * pages start a segment (an unsent skb that does not end on a whole page is
 * closed with its eor mark first), and under a narrow send window each page
 * is an skb of its own, so that a window probe cuts one page at most.
 */
int zcnet_helper_tcp_send_pages(struct sock *sk, struct page **pages, unsigned int n,
				unsigned int flags);

struct sk_buff;
/*
 * recvmsg() of up to len bytes through tcp_read_sock(): act(arg, skb, off, n,
 * defer_ok, &defer) takes bytes from skb at off (at most n): how many, or
 * -errno. It may say more than n only for a page zcnet_helper_rx_page()
 * found whole: the rest of that page is the head of the following data,
 * consumed without another call (in the same tcp_read_sock(): the socket
 * stays locked). With defer_ok it may instead set *defer and leave the first
 * pieces of a page at the end of the queue (ZCNET_RX_PAGE_HEAD): the call
 * then waits for the rest when it would wait for more bytes anyway (and the
 * window it gave admits a page more), or returns what it has; defer_ok is
 * false when the call would return those bytes at once. Waits as
 * tcp_recvmsg() does (timeout, MSG_DONTWAIT, MSG_WAITALL, SO_RCVLOWAT,
 * signals, shutdown, errors). *fallback: nothing was taken and the socket
 * needs TCP's own recvmsg (urgent data, receive timestamps, TCP_INQ).
 */
int zcnet_helper_tcp_recv_actor(struct sock *sk, size_t len, int flags,
				long (*act)(void *arg, struct sk_buff *skb, unsigned int off,
					    size_t n, bool defer_ok, bool *defer),
				void *arg, bool *fallback);

enum zcnet_rx_page {
	ZCNET_RX_NO_PAGE,	/* the bytes there are not a page's */
	ZCNET_RX_PAGE,		/* *pagep: the page, all of it queued */
	ZCNET_RX_PAGE_HEAD,	/* a page's first pieces, at the queue's end */
	ZCNET_RX_PAGE_REFUSED,	/* a page others may write (shared, global) */
};

/*
 * Whether the next PAGE_SIZE bytes of sk's stream, from byte off of skb (an
 * skb of sk's receive queue, sk locked), are bytes 0 to PAGE_SIZE of one
 * page: an order-0 kernel page (not page cache or anonymous memory, not a
 * page pool's), in one page fragment, or in consecutive pieces of it where a
 * segment was cut inside the page (the rest then heads the following
 * fragments or the following skbs of the queue). No reference taken (the
 * skbs hold theirs). ZCNET_RX_PAGE_REFUSED: such a page, but one others may
 * write (see zcnet_rx_page_ok()): the caller copies it. ZCNET_RX_NO_PAGE
 * also when the urgent mark lies in the page (tcp_read_sock() stops there).
 */
int zcnet_helper_rx_page(struct sock *sk, const struct sk_buff *skb, unsigned int off,
			 struct page **pagep);
/* Copies n bytes of skb from off to user memory at uaddr: 0 or -EFAULT. */
int zcnet_helper_skb_copy_to_user(const struct sk_buff *skb, unsigned int off,
				  unsigned long uaddr, size_t n);
/* iov_iter_advance(&msg->msg_iter, n): the bytes a data call took itself. */
void zcnet_helper_msg_advance(struct msghdr *msg, size_t n);
/*
 * For the ULP's clone: TCP copied the listener's ULP to the new socket and
 * will put a module reference when that socket lets it go, but took none
 * (inet_clone_ulp); take it. The listener's reference keeps the module live.
 * The new socket's creator proto goes back to TCP's own: sk_clone_lock()
 * made it the listener's sk_prot, the ULP's copy in this module, and the
 * socket's final free (sk_prot_free()) and its TIME_WAIT successor
 * (inet_twsk_alloc(), tw_prot) read it long after the ULP, and the module,
 * let the socket go.
 */
void zcnet_helper_tcp_ulp_clone_init(struct sock *newsk);
/* Every byte of uaddr..uaddr+len lies in a readable mapping (no fault-in). */
bool zcnet_helper_user_readable(unsigned long uaddr, size_t len);
#endif
