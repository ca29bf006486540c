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
};

/* The callbacks, set once before the ULP is registered. */
void zcnet_helper_tcp_ulp_set_cbs(const struct zcnet_tcp_ulp_cbs *cbs);
/* In the ULP's init: switch sk to the ULP's proto (0, or -EBUSY when another
 * layer already replaced TCP's proto). */
int zcnet_helper_tcp_ulp_install(struct sock *sk);
void *zcnet_helper_tcp_ulp_ctx(const struct sock *sk);
void zcnet_helper_tcp_ulp_set_ctx(struct sock *sk, void *ctx);
/* TCP's own sendmsg / recvmsg for sk (the base proto). */
int zcnet_helper_tcp_base_sendmsg(struct sock *sk, struct msghdr *msg, size_t size);
int zcnet_helper_tcp_base_recvmsg(struct sock *sk, struct msghdr *msg, size_t len, int flags);
/* sock_net(sk) */
struct net *zcnet_helper_sock_net(const struct sock *sk);
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
/* tcp_sendmsg_locked() of n whole pages by reference (MSG_SPLICE_PAGES),
 * socket locked: bytes sent or -errno. The caller keeps its references. */
int zcnet_helper_tcp_send_pages(struct sock *sk, struct page **pages, unsigned int n,
				unsigned int flags);
#endif

struct sk_buff;
/*
 * recvmsg() of up to len bytes through tcp_read_sock(): act(arg, skb, off, n)
 * takes bytes from skb at off (at most n): how many, or -errno. Waits as
 * tcp_recvmsg() does (timeout, MSG_DONTWAIT, MSG_WAITALL, SO_RCVLOWAT,
 * signals, shutdown, errors). *fallback: nothing was taken and the socket
 * needs TCP's own recvmsg (urgent data, receive timestamps, TCP_INQ).
 */
int zcnet_helper_tcp_recv_actor(struct sock *sk, size_t len, int flags,
				long (*act)(void *arg, struct sk_buff *skb, unsigned int off,
					    size_t n),
				void *arg, bool *fallback);
/*
 * The page at byte off of skb's data when a whole page of it starts there:
 * an order-0 kernel page at page offset 0 (not page cache or anonymous
 * memory, not a page pool's), in a page fragment holding all PAGE_SIZE
 * bytes. NULL otherwise. No reference taken (the skb holds one).
 */
struct page *zcnet_helper_skb_whole_page(const struct sk_buff *skb, unsigned int off);
/* Copies n bytes of skb from off to user memory at uaddr: 0 or -EFAULT. */
int zcnet_helper_skb_copy_to_user(const struct sk_buff *skb, unsigned int off,
				  unsigned long uaddr, size_t n);
/* iov_iter_advance(&msg->msg_iter, n): the bytes a data call took itself. */
void zcnet_helper_msg_advance(struct msghdr *msg, size_t n);
/*
 * For the ULP's clone: TCP copied the listener's ULP to the new socket and
 * will put a module reference when that socket lets it go, but took none
 * (inet_clone_ulp); take it. The listener's reference keeps the module live.
 */
void zcnet_helper_tcp_ulp_clone_ref(void);
/* fault_in_readable(uaddr, len) == 0: all of it can be read. */
bool zcnet_helper_user_readable(unsigned long uaddr, size_t len);
