// SPDX-License-Identifier: GPL-2.0
/* TCP upper-layer protocol data calls (see tcp_ulp.h). */
#include <linux/bvec.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/overflow.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/pagemap.h>
#include <linux/poll.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/inet_connection_sock.h>
#include <net/inet_hashtables.h>
#include <net/inet6_hashtables.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/transp_v6.h>

#include "tcp_ulp.h"

static const struct zcnet_tcp_ulp_cbs *zcnet_ulp_cbs;
/* TCP's proto per family as first seen, and the ULP's copy of it. */
enum { ZCNET_ULP_V4, ZCNET_ULP_V6, ZCNET_ULP_FAMILIES };
static struct proto *zcnet_ulp_base[ZCNET_ULP_FAMILIES];
static struct proto zcnet_ulp_prot[ZCNET_ULP_FAMILIES];
/* The socket layer's ops per family as first seen, and a copy with the
 * ULP's poll (sockets with a work item). */
static const struct proto_ops *zcnet_ulp_base_ops[ZCNET_ULP_FAMILIES];
static struct proto_ops zcnet_ulp_ops[ZCNET_ULP_FAMILIES];
static DEFINE_MUTEX(zcnet_ulp_mutex);

/*
 * TCP's own proto of family fam: the only one a copy is built from (as
 * tls_build_proto() keeps a copy per base it sees; here a proto a BPF
 * sockmap put on the first socket would be every later socket's base, and
 * they would be refused or closed through it).
 */
static bool zcnet_ulp_tcp_own(int fam, const struct proto *prot)
{
	if (fam == ZCNET_ULP_V4)
		return prot == &tcp_prot;
#if IS_ENABLED(CONFIG_IPV6)
	return prot == &tcpv6_prot;
#else
	return false;
#endif
}

static struct proto *zcnet_ulp_base_of(const struct sock *sk)
{
	return smp_load_acquire(&zcnet_ulp_base[sk->sk_family == AF_INET6 ?
						ZCNET_ULP_V6 : ZCNET_ULP_V4]);
}

void zcnet_helper_tcp_ulp_set_cbs(const struct zcnet_tcp_ulp_cbs *cbs)
{
	zcnet_ulp_cbs = cbs;
}

void *zcnet_helper_tcp_ulp_ctx(const struct sock *sk)
{
	return inet_csk(sk)->icsk_ulp_data;
}

void zcnet_helper_tcp_ulp_set_ctx(struct sock *sk, void *ctx)
{
	rcu_assign_pointer(inet_csk(sk)->icsk_ulp_data, ctx);
}

int zcnet_helper_tcp_base_sendmsg(struct sock *sk, struct msghdr *msg, size_t size)
{
	return zcnet_ulp_base_of(sk)->sendmsg(sk, msg, size);
}

int zcnet_helper_tcp_base_recvmsg(struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
	return zcnet_ulp_base_of(sk)->recvmsg(sk, msg, len, flags);
}

static int zcnet_ulp_sendmsg(struct sock *sk, struct msghdr *msg, size_t size)
{
	return zcnet_ulp_cbs->sendmsg(sk, inet_csk(sk)->icsk_ulp_data, msg, size);
}

static int zcnet_ulp_recvmsg(struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
	return zcnet_ulp_cbs->recvmsg(sk, inet_csk(sk)->icsk_ulp_data, msg, len, flags);
}

#define ZCNET_ULP_OPT_MAX 64

static int zcnet_ulp_setsockopt(struct sock *sk, int level, int optname, sockptr_t optval,
				unsigned int optlen)
{
	u8 buf[ZCNET_ULP_OPT_MAX];
	int err;

	if (level != zcnet_ulp_cbs->sol) {
		err = zcnet_ulp_base_of(sk)->setsockopt(sk, level, optname, optval, optlen);
		if (!err && level == SOL_TCP && zcnet_ulp_cbs->tcp_opt_set) {
			lock_sock(sk);
			zcnet_ulp_cbs->tcp_opt_set(sk, inet_csk(sk)->icsk_ulp_data, optname);
			release_sock(sk);
		}
		return err;
	}
	if (optlen > sizeof(buf))
		return -EINVAL;
	if (copy_from_sockptr(buf, optval, optlen))
		return -EFAULT;
	if (zcnet_ulp_cbs->setopt_unlocked) {
		err = zcnet_ulp_cbs->setopt_unlocked(sk, inet_csk(sk)->icsk_ulp_data, optname,
						     buf, optlen);
		if (err != -ENOIOCTLCMD)
			return err;
	}
	lock_sock(sk);
	err = zcnet_ulp_cbs->setopt(sk, inet_csk(sk)->icsk_ulp_data, optname, buf, optlen);
	release_sock(sk);
	return err;
}

static int zcnet_ulp_getsockopt(struct sock *sk, int level, int optname, char __user *optval,
				int __user *optlen)
{
	u8 buf[ZCNET_ULP_OPT_MAX] = {};
	int len, r;

	if (level != zcnet_ulp_cbs->sol)
		return zcnet_ulp_base_of(sk)->getsockopt(sk, level, optname, optval, optlen);
	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;
	lock_sock(sk);
	r = zcnet_ulp_cbs->getopt(sk, inet_csk(sk)->icsk_ulp_data, optname, buf, sizeof(buf));
	release_sock(sk);
	if (r < 0)
		return r;
	len = min(len, r);
	if (copy_to_user(optval, buf, len) || put_user(len, optlen))
		return -EFAULT;
	return 0;
}

/* A socket's own progress (see zcnet_tcp_ulp_cbs.work). */
struct zcnet_ulp_work {
	struct work_struct work;
	struct sock *sk;
	/* TCP's data_ready (sock_def_readable), called first by the hook. */
	void (*saved_data_ready)(struct sock *sk);
	/* TCP's write_space (sk_stream_write_space), likewise. */
	void (*saved_write_space)(struct sock *sk);
	/* The socket's error_report (sock_def_error_report), hooked once the
	 * ULP sends with MSG_ZEROCOPY (zcnet_helper_tcp_ulp_zerocopy()). */
	void (*saved_error_report)(struct sock *sk);
	/* MSG_ZEROCOPY on: the ULP drains the error queue itself (poll does not
	 * report EPOLLERR for its notifications); sk locked to set. */
	bool zc;
	/* Set in close, sk locked: no more scheduling. */
	bool dead;
	/* What the ULP last said (zcnet_helper_tcp_ulp_set_ready()). */
	bool readable;
	/* Readable only when the ULP says so (zcnet_helper_tcp_ulp_own_readiness()). */
	bool own;
	/* The ULP's send queue is full (zcnet_helper_tcp_ulp_set_ready()):
	 * with own, no EPOLLOUT. */
	bool full;
	/* The socket's ops before ours (put back in close), or NULL. */
	const struct proto_ops *saved_ops;
	/* Kicked for data ahead of rcv_nxt (zcnet_helper_tcp_ulp_set_ofo_kick()),
	 * counted in zcnet_ulp_ofo_socks; sk locked to change. */
	bool ofo;
	/* ofo was ever set: a hook may be scheduling a kick (close waits). */
	bool ofo_used;
	/* The out-of-order kick: schedules ofo_walk a jiffy after a walk
	 * found the socket owned (a socket reference held while pending). */
	struct delayed_work ofo_kick;
	/* The receive path (rx) under the socket's spinlock, in softirq on
	 * the hook's CPU: what the hook and the kick schedule (a socket
	 * reference held while pending; see zcnet_ulp_ofo_walk_fn()). */
	struct work_struct ofo_walk;
	/* On zcnet_ulp_socks from start until close (or destroy). */
	struct list_head node;
};

/* The sockets with a work item, for the ULP's listing (/proc/net/NAME). */
static LIST_HEAD(zcnet_ulp_socks);
static DEFINE_SPINLOCK(zcnet_ulp_socks_lock);

static struct zcnet_ulp_work *zcnet_ulp_work_of(const struct sock *sk)
{
	const struct zcnet_ulp_holder *h = inet_csk(sk)->icsk_ulp_data;

	return h ? h->work : NULL;
}

/* Queues one of sk's work items on wq, unless the socket is closing: one
 * socket reference per queued run, which the run puts. */
static void zcnet_ulp_queue(struct sock *sk, struct zcnet_ulp_work *w,
			    struct workqueue_struct *wq, struct work_struct *work)
{
	if (READ_ONCE(w->dead))
		return;
	sock_hold(sk);
	if (!queue_work(wq, work))
		sock_put(sk);
}

static void zcnet_ulp_work_queue(struct sock *sk, struct zcnet_ulp_work *w)
{
	zcnet_ulp_queue(sk, w, system_dfl_long_wq, &w->work);
}

/*
 * sk_data_ready, in softirq (bh_lock_sock, no owner) or in the owner's
 * process context (its backlog in release_sock(), the owner still set; TCP
 * queues data only there when the socket has an owner). Either way the
 * ULP may take the bytes at once (cbs->rx_bh), as siw_qp_llp_data_ready()
 * and the strparser do: no work item's wake-up between a segment and its
 * placement. Close unhooks this under lock_sock(), which waits for the
 * spinlock held here or for the owner, so the ULP data is live.
 */
static void zcnet_ulp_data_ready(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);
	bool done = false;

	if (!w)
		return;
	if (zcnet_ulp_cbs->rx_bh && !READ_ONCE(w->dead)) {
		if (sock_owned_by_user_nocheck(sk))
			sock_owned_by_me(sk);
		else
			lockdep_assert_held(&sk->sk_lock.slock);
		done = zcnet_ulp_cbs->rx_bh(sk, inet_csk(sk)->icsk_ulp_data);
	}
	/* Taken in softirq: the ULP woke the waiters if it has news for them
	 * (a waiter woken for bytes already taken would only lock the socket
	 * and send the next segments through the backlog). */
	if (done)
		return;
	w->saved_data_ready(sk);
	zcnet_ulp_work_queue(sk, w);
}

/*
 * sk_write_space: TCP freed send space after a send found none (SOCK_NOSPACE),
 * in softirq (bh_lock_sock) or from the owner's backlog. Once the stream is
 * writeable again the work item runs, to move the ULP's queued bytes.
 */
static void zcnet_ulp_write_space(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (!w)
		return;
	w->saved_write_space(sk);
	if (sk_stream_is_writeable(sk))
		zcnet_ulp_work_queue(sk, w);
}

/*
 * sk_error_report, from the kernel's MSG_ZEROCOPY completion
 * (__msg_zerocopy_callback(), any context, no socket lock) once a
 * notification is on sk's error queue, or from TCP on an error: the work item
 * runs, to drain the error queue and deliver the completions it held back.
 * The kernel's own code frees the skbs and queues the notification; this
 * only schedules work (close unhooks it and waits an RCU grace period).
 */
static void zcnet_ulp_error_report(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (!w)
		return;
	w->saved_error_report(sk);
	zcnet_ulp_work_queue(sk, w);
}

/*
 * The walk runs from the BH workqueue: in softirq on the CPU that queued
 * it, after the softirq work under way, with no thread to wake and no
 * context switch (a kworker of system_dfl_wq, as before 2026-12-01, was
 * woken for nearly every segment that came ahead of a hole: about 1000
 * context switches a second under loss 1%, and three times the
 * receiver's CPU time of placement off; Documentation/networking/zcddp.rst,
 * "The walk in softirq"). Queued from the hook, it runs after TCP has
 * processed the segment that hook saw (the hook is called in the same
 * softirq, on the same CPU, before TCP), so the segment is in TCP's
 * out-of-order queue by then, or on the backlog of the socket's owner.
 */
static void zcnet_ulp_ofo_walk_queue(struct sock *sk, struct zcnet_ulp_work *w)
{
	zcnet_ulp_queue(sk, w, system_bh_wq, &w->ofo_walk);
}

/*
 * Out-of-order data to place, in softirq: behind a hole no in-order
 * segment comes, so no data_ready runs the receive path. This takes the
 * socket as TCP's softirq does -- its spinlock, only while no one owns it
 * -- and calls the ULP's rx_bh (the in-order path, then the walk). Taking
 * it with lock_sock() instead, as the work item does, would send every
 * segment that arrives meanwhile to the owner's backlog, processed in a
 * worker at release_sock(): under loss that was a fifth of all CPU time.
 * With an owner, or when rx_bh leaves work (a reply to send, an error),
 * the work item runs; with an owner, the segment may wait on its backlog
 * until it lets the socket go, so the kick walks again a jiffy later.
 */
static void zcnet_ulp_ofo_walk_fn(struct work_struct *work)
{
	struct zcnet_ulp_work *w = container_of(work, struct zcnet_ulp_work, ofo_walk);
	struct sock *sk = w->sk;
	bool done = false, owned;

	/* BH work runs with bottom halves off; this keeps it so anyway. */
	local_bh_disable();
	bh_lock_sock(sk);
	owned = sock_owned_by_user(sk);
	/* close sets dead owning the socket: with no owner it is final. */
	if (!owned && !READ_ONCE(w->dead) && zcnet_ulp_cbs->rx_bh)
		done = zcnet_ulp_cbs->rx_bh(sk, inet_csk(sk)->icsk_ulp_data);
	bh_unlock_sock(sk);
	local_bh_enable();
	if (owned && !READ_ONCE(w->dead)) {
		sock_hold(sk);
		if (!queue_delayed_work(system_dfl_wq, &w->ofo_kick, 1))
			sock_put(sk);
	}
	if (!done)
		zcnet_ulp_work_queue(sk, w);
	sock_put(sk);
}

/*
 * A jiffy after a walk found the socket owned: by then the owner has most
 * often let it go, and queued what waited on its backlog.
 */
static void zcnet_ulp_ofo_kick_fn(struct work_struct *work)
{
	struct zcnet_ulp_work *w = container_of(to_delayed_work(work), struct zcnet_ulp_work,
						ofo_kick);

	zcnet_ulp_ofo_walk_queue(w->sk, w);
	sock_put(w->sk);
}

static void zcnet_ulp_work_fn(struct work_struct *work)
{
	struct zcnet_ulp_work *w = container_of(work, struct zcnet_ulp_work, work);
	struct sock *sk = w->sk;

	lock_sock(sk);
	/* close stops the work (and waits for it) before the ULP data goes. */
	if (!w->dead)
		zcnet_ulp_cbs->work(sk, inet_csk(sk)->icsk_ulp_data);
	release_sock(sk);
	sock_put(sk);
}

/*
 * The socket's poll: TCP's, except that once the ULP owns readiness its
 * stream bytes do not make the socket readable, only the ULP's word does
 * (or an error, a shutdown, a hang-up: those stay). The poller holds the
 * file, so close (and the ULP data's release) has not run.
 */
static __poll_t zcnet_ulp_poll(struct file *file, struct socket *sock, poll_table *wait)
{
	struct sock *sk = sock->sk;
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);
	const struct proto_ops *base = w ? READ_ONCE(w->saved_ops) : NULL;
	__poll_t mask;

	if (!base)
		base = zcnet_ulp_base_ops[sk->sk_family == AF_INET6 ? ZCNET_ULP_V6 : ZCNET_ULP_V4];
	mask = base->poll(file, sock, wait);
	if (!w || !READ_ONCE(w->own))
		return mask;
	/* tcp_poll() reports EPOLLERR for a non-empty error queue: with
	 * MSG_ZEROCOPY that is the ULP's notifications, which its work item
	 * drains; only a socket error stays EPOLLERR. */
	if (READ_ONCE(w->zc) && !READ_ONCE(sk->sk_err))
		mask &= ~EPOLLERR;
	if (!READ_ONCE(w->readable) && !(mask & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		mask &= ~(EPOLLIN | EPOLLRDNORM);
	/*
	 * Writable only while the ULP's send queue has room as well as TCP's
	 * stream (or on an error or hang-up): the poller is on the wait queue
	 * (base->poll) before it reads the flag, and the flag's falling edge
	 * wakes it (zcnet_helper_tcp_ulp_set_ready()).
	 */
	smp_mb();
	if (READ_ONCE(w->full) && !(mask & (EPOLLERR | EPOLLHUP)))
		mask &= ~(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	return mask;
}

/* sk (locked, of a file) gets the socket ops with the ULP's poll. */
static void zcnet_ulp_ops_install(struct sock *sk, struct zcnet_ulp_work *w)
{
	int fam = sk->sk_family == AF_INET6 ? ZCNET_ULP_V6 : ZCNET_ULP_V4;
	struct socket *sock = sk->sk_socket;
	const struct proto_ops *ops;

	if (!sock)
		return;
	ops = READ_ONCE(sock->ops);
	mutex_lock(&zcnet_ulp_mutex);
	if (!zcnet_ulp_base_ops[fam]) {
		zcnet_ulp_ops[fam] = *ops;
		zcnet_ulp_ops[fam].poll = zcnet_ulp_poll;
		smp_store_release(&zcnet_ulp_base_ops[fam], ops);
	}
	mutex_unlock(&zcnet_ulp_mutex);
	/* Only over the socket layer's own ops (inet_stream_ops). */
	if (ops != zcnet_ulp_base_ops[fam] || !ops->poll)
		return;
	w->saved_ops = ops;
	WRITE_ONCE(sock->ops, &zcnet_ulp_ops[fam]);
}

/* In close: the socket's own ops back (its release is running already). */
static void zcnet_ulp_ops_restore(struct sock *sk, struct zcnet_ulp_work *w)
{
	if (w->saved_ops && sk->sk_socket)
		WRITE_ONCE(sk->sk_socket->ops, w->saved_ops);
}

void zcnet_helper_tcp_ulp_own_readiness(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (w)
		WRITE_ONCE(w->own, true);
}

int zcnet_helper_tcp_ulp_work_start(struct sock *sk)
{
	struct zcnet_ulp_holder *h = inet_csk(sk)->icsk_ulp_data;
	struct zcnet_ulp_work *w;

	if (!zcnet_ulp_cbs || !zcnet_ulp_cbs->work || !h)
		return 0;
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w) {
		/* Back to TCP's proto: the ULP is not attached. */
		WRITE_ONCE(sk->sk_prot, zcnet_ulp_base_of(sk));
		return -ENOMEM;
	}
	INIT_WORK(&w->work, zcnet_ulp_work_fn);
	INIT_DELAYED_WORK(&w->ofo_kick, zcnet_ulp_ofo_kick_fn);
	INIT_WORK(&w->ofo_walk, zcnet_ulp_ofo_walk_fn);
	w->sk = sk;
	h->work = w;
	write_lock_bh(&sk->sk_callback_lock);
	w->saved_data_ready = sk->sk_data_ready;
	w->saved_write_space = sk->sk_write_space;
	WRITE_ONCE(sk->sk_data_ready, zcnet_ulp_data_ready);
	WRITE_ONCE(sk->sk_write_space, zcnet_ulp_write_space);
	write_unlock_bh(&sk->sk_callback_lock);
	spin_lock_bh(&zcnet_ulp_socks_lock);
	list_add_tail(&w->node, &zcnet_ulp_socks);
	spin_unlock_bh(&zcnet_ulp_socks_lock);
	zcnet_ulp_ops_install(sk, w);
	return 0;
}

void zcnet_helper_tcp_ulp_work_free(struct zcnet_ulp_work *w)
{
	kfree(w);
}

/*
 * Out-of-order kicks. Netfilter hooks per namespace at NF_INET_LOCAL_IN
 * (IPv4 and IPv6, after every other hook: a packet a firewall drops kicks nothing),
 * registered while the module is loaded. It returns at once while no socket
 * asked for kicks; otherwise, for a TCP segment with payload to a socket of
 * this ULP that asked (TCP's own established-socket lookup, or the socket
 * early demux already found) and whose sequence number lies after rcv_nxt,
 * it schedules the socket's work item. The hook runs before TCP checks the
 * segment: it only kicks; the work item reads TCP's out-of-order queue,
 * which holds only what TCP accepted.
 */
static atomic_t zcnet_ulp_ofo_socks = ATOMIC_INIT(0);

static void zcnet_ulp_ofo_off(struct zcnet_ulp_work *w)
{
	if (w->ofo) {
		WRITE_ONCE(w->ofo, false);
		atomic_dec(&zcnet_ulp_ofo_socks);
	}
}

#if IS_ENABLED(CONFIG_NETFILTER)
static bool zcnet_ulp_is_ours(const struct sock *sk)
{
	const struct proto *p = READ_ONCE(sk->sk_prot);

	return p == &zcnet_ulp_prot[ZCNET_ULP_V4] || p == &zcnet_ulp_prot[ZCNET_ULP_V6];
}

/*
 * Kicks sk's work item if it is a socket of this ULP that asked for kicks
 * and the segment th begins after rcv_nxt. Puts sk when ref (a lookup's
 * reference). Netfilter hooks run under rcu_read_lock(); the ULP data is
 * a holder, freed an RCU grace period after release.
 */
static void zcnet_ulp_ofo_check(struct sock *sk, const struct tcphdr *th, bool ref)
{
	struct zcnet_ulp_work *w;

	if (sk_fullsock(sk) && zcnet_ulp_is_ours(sk)) {
		w = zcnet_ulp_work_of(sk);
		if (w && READ_ONCE(w->ofo) && !READ_ONCE(w->dead) &&
		    after(ntohl(th->seq), READ_ONCE(tcp_sk(sk)->rcv_nxt)))
			/* A walk once this softirq has given the segment to
			 * TCP (zcnet_ulp_ofo_walk_queue()). */
			zcnet_ulp_ofo_walk_queue(sk, w);
	}
	if (ref)
		sock_gen_put(sk);
}

static unsigned int zcnet_ulp_ofo_hook(void *priv, struct sk_buff *skb,
				       const struct nf_hook_state *state)
{
	const struct iphdr *iph;
	const struct tcphdr *th;
	struct tcphdr _th;
	unsigned int hl, len;
	struct sock *sk;
	bool ref = false;

	if (!atomic_read(&zcnet_ulp_ofo_socks))
		return NF_ACCEPT;
	iph = ip_hdr(skb);
	if (iph->protocol != IPPROTO_TCP || ip_is_fragment(iph))
		return NF_ACCEPT;
	hl = iph->ihl * 4;
	th = skb_header_pointer(skb, hl, sizeof(_th), &_th);
	len = ntohs(iph->tot_len);
	if (!th || len <= hl + th->doff * 4)
		return NF_ACCEPT;
	/* Early demux's socket (referenced by the skb), or TCP's own lookup. */
	sk = skb->sk;
	if (!sk) {
		sk = __inet_lookup_established(state->net, iph->saddr, th->source, iph->daddr,
					       ntohs(th->dest), inet_iif(skb), inet_sdif(skb));
		if (!sk)
			return NF_ACCEPT;
		ref = true;
	}
	zcnet_ulp_ofo_check(sk, th, ref);
	return NF_ACCEPT;
}

#if IS_ENABLED(CONFIG_IPV6)
/* The same for IPv6: the TCP header found past any extension headers. */
static unsigned int zcnet_ulp_ofo_hook6(void *priv, struct sk_buff *skb,
					const struct nf_hook_state *state)
{
	const struct ipv6hdr *ip6h;
	const struct tcphdr *th;
	struct tcphdr _th;
	unsigned int len;
	struct sock *sk;
	__be16 frag_off;
	u8 nexthdr;
	int hl;
	bool ref = false;

	if (!atomic_read(&zcnet_ulp_ofo_socks))
		return NF_ACCEPT;
	ip6h = ipv6_hdr(skb);
	nexthdr = ip6h->nexthdr;
	hl = ipv6_skip_exthdr(skb, skb_network_offset(skb) + sizeof(*ip6h), &nexthdr,
			      &frag_off);
	if (hl < 0 || nexthdr != IPPROTO_TCP || frag_off)
		return NF_ACCEPT;
	th = skb_header_pointer(skb, hl, sizeof(_th), &_th);
	len = skb_network_offset(skb) + sizeof(*ip6h) + ntohs(ip6h->payload_len);
	if (!th || len <= hl + th->doff * 4)
		return NF_ACCEPT;
	sk = skb->sk;
	if (!sk) {
		sk = __inet6_lookup_established(state->net, &ip6h->saddr, th->source,
						&ip6h->daddr, ntohs(th->dest), inet6_iif(skb),
						inet6_sdif(skb));
		if (!sk)
			return NF_ACCEPT;
		ref = true;
	}
	zcnet_ulp_ofo_check(sk, th, ref);
	return NF_ACCEPT;
}
#endif

static const struct nf_hook_ops zcnet_ulp_ofo_ops[] = {
	{
		.hook = zcnet_ulp_ofo_hook,
		.pf = NFPROTO_IPV4,
		.hooknum = NF_INET_LOCAL_IN,
		.priority = NF_IP_PRI_LAST,
	},
#if IS_ENABLED(CONFIG_IPV6)
	{
		.hook = zcnet_ulp_ofo_hook6,
		.pf = NFPROTO_IPV6,
		.hooknum = NF_INET_LOCAL_IN,
		.priority = NF_IP6_PRI_LAST,
	},
#endif
};

static int __net_init zcnet_ulp_ofo_init_net(struct net *net)
{
	return nf_register_net_hooks(net, zcnet_ulp_ofo_ops, ARRAY_SIZE(zcnet_ulp_ofo_ops));
}

static void __net_exit zcnet_ulp_ofo_exit_net(struct net *net)
{
	nf_unregister_net_hooks(net, zcnet_ulp_ofo_ops, ARRAY_SIZE(zcnet_ulp_ofo_ops));
}

static struct pernet_operations zcnet_ulp_ofo_pernet = {
	.init = zcnet_ulp_ofo_init_net,
	.exit = zcnet_ulp_ofo_exit_net,
};

int zcnet_helper_tcp_ulp_ofo_register(void)
{
	return register_pernet_subsys(&zcnet_ulp_ofo_pernet);
}

void zcnet_helper_tcp_ulp_ofo_unregister(void)
{
	unregister_pernet_subsys(&zcnet_ulp_ofo_pernet);
}
#else
/* Without netfilter nothing kicks: out-of-order data waits for the hole. */
int zcnet_helper_tcp_ulp_ofo_register(void)
{
	return 0;
}

void zcnet_helper_tcp_ulp_ofo_unregister(void)
{
}
#endif

void zcnet_helper_tcp_ulp_set_ofo_kick(struct sock *sk, bool on)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (!w || w->dead || w->ofo == on)
		return;
	if (on) {
		atomic_inc(&zcnet_ulp_ofo_socks);
		w->ofo_used = true;
	}
	WRITE_ONCE(w->ofo, on);
	if (!on)
		atomic_dec(&zcnet_ulp_ofo_socks);
}

/* Removes the hooks (sk locked): data_ready and write_space run under the
 * socket's spinlock or its owner, so none is inside a hook afterwards. */
static void zcnet_ulp_work_unhook(struct sock *sk, struct zcnet_ulp_work *w)
{
	spin_lock_bh(&zcnet_ulp_socks_lock);
	list_del_init(&w->node);
	spin_unlock_bh(&zcnet_ulp_socks_lock);
	write_lock_bh(&sk->sk_callback_lock);
	if (!w->dead) {
		WRITE_ONCE(sk->sk_data_ready, w->saved_data_ready);
		WRITE_ONCE(sk->sk_write_space, w->saved_write_space);
		if (w->saved_error_report)
			WRITE_ONCE(sk->sk_error_report, w->saved_error_report);
		WRITE_ONCE(w->dead, true);
	}
	write_unlock_bh(&sk->sk_callback_lock);
	zcnet_ulp_ofo_off(w);
}

/* In close, before TCP's: no run pending or running when it returns. */
static void zcnet_ulp_work_stop(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (!w)
		return;
	lock_sock(sk);
	zcnet_ulp_work_unhook(sk, w);
	zcnet_ulp_ops_restore(sk, w);
	release_sock(sk);
	/*
	 * A hook that read w->ofo and w->dead before the unhook may still be
	 * about to schedule a kick: it runs under rcu_read_lock(), so after a
	 * grace period it has, and the cancel below catches the kick. (Without
	 * this, a kick scheduled after the cancel would outlive the socket's
	 * ULP data, freed after destroy, and the module.) The same holds for
	 * the error_report hook of MSG_ZEROCOPY, which the kernel calls from
	 * skb frees in softirq or with BHs off, without the socket lock.
	 */
	if (w->ofo_used || w->saved_error_report)
		synchronize_rcu();
	/* A kick, a walk or a run that was queued and now will not run: its
	 * reference. In this order: the kick queues the walk, the walk the
	 * run, and the kick again; none is queued once w->dead, but a walk
	 * that read it before may still queue the kick, hence the second
	 * cancel, after the walk's. */
	if (cancel_delayed_work_sync(&w->ofo_kick))
		sock_put(sk);
	if (cancel_work_sync(&w->ofo_walk))
		sock_put(sk);
	if (cancel_delayed_work_sync(&w->ofo_kick))
		sock_put(sk);
	if (cancel_work_sync(&w->work))
		sock_put(sk);
	/* The ULP lets go of what it queued and holds for the application. */
	if (zcnet_ulp_cbs->close) {
		lock_sock(sk);
		zcnet_ulp_cbs->close(sk, inet_csk(sk)->icsk_ulp_data);
		release_sock(sk);
	}
}

bool zcnet_helper_tcp_ulp_set_ready(struct sock *sk, bool readable, bool writable)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);
	struct socket_wq *wq;
	bool was, was_full;

	if (!w)
		return false;
	was = w->readable;
	was_full = w->full;
	if (was == readable && was_full == !writable)
		return true;
	WRITE_ONCE(w->readable, readable);
	WRITE_ONCE(w->full, !writable);
	if (w->dead)
		return true;
	if (readable && !was)
		w->saved_data_ready(sk);
	if (!writable || !was_full)
		return true;
	/* Room again: wake the writers (poll, epoll, select) and SIGIO. */
	rcu_read_lock();
	wq = rcu_dereference(sk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_poll(&wq->wait, EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	if (wq && wq->fasync_list && !(sk->sk_shutdown & SEND_SHUTDOWN))
		sock_wake_async(wq, SOCK_WAKE_SPACE, POLL_OUT);
	rcu_read_unlock();
	return true;
}

void zcnet_helper_tcp_ulp_wake(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (w && !w->dead)
		w->saved_data_ready(sk);
}

bool zcnet_helper_tcp_ulp_readable(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	return w && READ_ONCE(w->readable);
}

bool zcnet_helper_tcp_ulp_zerocopy(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (!w || w->dead)
		return false;
	if (w->zc)
		return true;
	sock_set_flag(sk, SOCK_ZEROCOPY);
	write_lock_bh(&sk->sk_callback_lock);
	w->saved_error_report = sk->sk_error_report;
	WRITE_ONCE(sk->sk_error_report, zcnet_ulp_error_report);
	write_unlock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(w->zc, true);
	return true;
}

void zcnet_helper_tcp_ulp_kick(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (w)
		zcnet_ulp_work_queue(sk, w);
}

void zcnet_helper_tcp_ulp_kick_rx(struct sock *sk)
{
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	if (!w)
		return;
	if (zcnet_ulp_cbs->rx_bh)
		zcnet_ulp_ofo_walk_queue(sk, w);
	else
		zcnet_ulp_work_queue(sk, w);
}

/* proto.sock_is_readable (tcp_poll): the ULP's own readiness. The poller
 * holds the file, so close (and the ULP data's release) has not run. */
static bool zcnet_ulp_sock_is_readable(struct sock *sk)
{
	return zcnet_helper_tcp_ulp_readable(sk);
}

/* cbs->no_disconnect: connect(AF_UNSPEC) refused (close puts TCP's proto
 * back before TCP's own close, which may disconnect). */
static int zcnet_ulp_disconnect(struct sock *sk, int flags)
{
	return -EOPNOTSUPP;
}

static void zcnet_ulp_close(struct sock *sk, long timeout)
{
	struct proto *base = zcnet_ulp_base_of(sk);

	zcnet_ulp_work_stop(sk);

	WRITE_ONCE(sk->sk_prot, base);
	base->close(sk, timeout);
}

static void zcnet_ulp_destroy(struct sock *sk)
{
	struct proto *base = zcnet_ulp_base_of(sk);
	struct zcnet_ulp_work *w = zcnet_ulp_work_of(sk);

	/* Never closed (not a socket of a file): no run was queued through a
	 * file's verbs; take the hook away before the ULP data goes. */
	if (w && !w->dead) {
		spin_lock_bh(&zcnet_ulp_socks_lock);
		list_del_init(&w->node);
		spin_unlock_bh(&zcnet_ulp_socks_lock);
		WRITE_ONCE(sk->sk_data_ready, w->saved_data_ready);
		WRITE_ONCE(sk->sk_write_space, w->saved_write_space);
		if (w->saved_error_report)
			WRITE_ONCE(sk->sk_error_report, w->saved_error_report);
		WRITE_ONCE(w->dead, true);
	}
	if (w)
		zcnet_ulp_ofo_off(w);

	/* A child destroyed unaccepted never reaches close. */
	WRITE_ONCE(sk->sk_prot, base);
	base->destroy(sk);
}

/* The listing: at most this many sockets per read, this much text each. */
#define ZCNET_ULP_LIST_MAX 256
#define ZCNET_ULP_LINE_MAX 4096

static const char *zcnet_ulp_proc_name;
static const char *zcnet_ulp_proc_header;

static void zcnet_ulp_proc_tuple(struct seq_file *seq, struct sock *sk)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6 && !ipv6_addr_v4mapped(&sk->sk_v6_rcv_saddr)) {
		seq_printf(seq, "[%pI6c]:%u [%pI6c]:%u", &sk->sk_v6_rcv_saddr, sk->sk_num,
			   &sk->sk_v6_daddr, ntohs(sk->sk_dport));
		return;
	}
#endif
	seq_printf(seq, "%pI4:%u %pI4:%u", &sk->sk_rcv_saddr, sk->sk_num, &sk->sk_daddr,
		   ntohs(sk->sk_dport));
}

/*
 * Whether the listing shows sk to the file's opener: its own sockets (the
 * socket's owner, the uid /proc/net/tcp shows, is the opener's fsuid), and
 * every socket to an opener with CAP_NET_ADMIN in the
 * namespace's user namespace (the opener's credentials, not the reader's:
 * a descriptor passed on keeps what its opener could see). Others' lines
 * carry their buffer addresses and STags.
 */
static bool zcnet_ulp_proc_shows(const struct file *file, bool admin, const struct sock *sk)
{
	return admin || uid_eq(sk_uid(sk), file->f_cred->fsuid);
}

/*
 * One line per socket of the reader's namespace that the opener may see
 * (zcnet_ulp_proc_shows()): its addresses, then what the ULP's describe()
 * writes. No socket is locked (a verb may hold one for long, pinning
 * pages) and no work item scheduled: describe() reads what the ULP
 * published for the listing. The list's lock keeps each socket listed
 * live: close takes it off (zcnet_ulp_work_unhook()) before it stops the
 * work item and lets the ULP close, and destroy of a socket never closed
 * takes it off before the ULP data's release, which frees the holder and
 * the work an RCU grace period later.
 */
static int zcnet_ulp_proc_show(struct seq_file *seq, void *v)
{
	struct net *net = seq_file_single_net(seq);
	struct zcnet_ulp_work *w;
	unsigned int n = 0, more = 0;
	bool admin;
	char *buf;
	int len;

	buf = kmalloc(ZCNET_ULP_LINE_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	admin = file_ns_capable(seq->file, net->user_ns, CAP_NET_ADMIN);
	seq_puts(seq, zcnet_ulp_proc_header);
	spin_lock_bh(&zcnet_ulp_socks_lock);
	list_for_each_entry(w, &zcnet_ulp_socks, node) {
		struct sock *sk = w->sk;

		if (!net_eq(sock_net(sk), net) || !zcnet_ulp_proc_shows(seq->file, admin, sk))
			continue;
		if (n == ZCNET_ULP_LIST_MAX) {
			more++;
			continue;
		}
		n++;
		len = zcnet_ulp_cbs->describe(sk, inet_csk(sk)->icsk_ulp_data, buf,
					      ZCNET_ULP_LINE_MAX);
		if (len > 0) {
			zcnet_ulp_proc_tuple(seq, sk);
			seq_write(seq, buf, min(len, ZCNET_ULP_LINE_MAX));
		}
	}
	spin_unlock_bh(&zcnet_ulp_socks_lock);
	if (more)
		seq_printf(seq, "# %u more not listed\n", more);
	kfree(buf);
	return 0;
}

static int __net_init zcnet_ulp_proc_init_net(struct net *net)
{
	if (!proc_create_net_single(zcnet_ulp_proc_name, 0444, net->proc_net,
				    zcnet_ulp_proc_show, NULL))
		return -ENOMEM;
	return 0;
}

static void __net_exit zcnet_ulp_proc_exit_net(struct net *net)
{
	remove_proc_entry(zcnet_ulp_proc_name, net->proc_net);
}

static struct pernet_operations zcnet_ulp_proc_ops = {
	.init = zcnet_ulp_proc_init_net,
	.exit = zcnet_ulp_proc_exit_net,
};

int zcnet_helper_tcp_ulp_proc_register(const char *name, const char *header)
{
	if (!zcnet_ulp_cbs || !zcnet_ulp_cbs->work || !zcnet_ulp_cbs->describe)
		return -EINVAL;
	zcnet_ulp_proc_name = name;
	zcnet_ulp_proc_header = header;
	return register_pernet_subsys(&zcnet_ulp_proc_ops);
}

void zcnet_helper_tcp_ulp_proc_unregister(void)
{
	unregister_pernet_subsys(&zcnet_ulp_proc_ops);
}

int zcnet_helper_tcp_ulp_install(struct sock *sk)
{
	int fam = sk->sk_family == AF_INET6 ? ZCNET_ULP_V6 : ZCNET_ULP_V4;
	struct proto *prot = READ_ONCE(sk->sk_prot);

	if (sk->sk_family != AF_INET && sk->sk_family != AF_INET6)
		return -EOPNOTSUPP;
	if (unlikely(prot != smp_load_acquire(&zcnet_ulp_base[fam]))) {
		mutex_lock(&zcnet_ulp_mutex);
		if (!zcnet_ulp_base[fam]) {
			/* Only TCP's own proto: not one a BPF sockmap replaced. */
			if (!zcnet_ulp_tcp_own(fam, prot)) {
				mutex_unlock(&zcnet_ulp_mutex);
				return -EBUSY;
			}
			zcnet_ulp_prot[fam] = *prot;
			zcnet_ulp_prot[fam].sendmsg = zcnet_ulp_sendmsg;
			zcnet_ulp_prot[fam].recvmsg = zcnet_ulp_recvmsg;
			zcnet_ulp_prot[fam].setsockopt = zcnet_ulp_setsockopt;
			zcnet_ulp_prot[fam].getsockopt = zcnet_ulp_getsockopt;
			zcnet_ulp_prot[fam].close = zcnet_ulp_close;
			zcnet_ulp_prot[fam].destroy = zcnet_ulp_destroy;
			if (zcnet_ulp_cbs->no_disconnect)
				zcnet_ulp_prot[fam].disconnect = zcnet_ulp_disconnect;
			if (zcnet_ulp_cbs->work)
				zcnet_ulp_prot[fam].sock_is_readable =
					zcnet_ulp_sock_is_readable;
			smp_store_release(&zcnet_ulp_base[fam], prot);
		}
		mutex_unlock(&zcnet_ulp_mutex);
		if (prot != zcnet_ulp_base[fam])
			return -EBUSY;
	}
	WRITE_ONCE(sk->sk_prot, &zcnet_ulp_prot[fam]);
	return 0;
}

bool zcnet_helper_sock_listening(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state) == TCP_LISTEN;
}

struct net *zcnet_helper_sock_net(const struct sock *sk)
{
	return sock_net(sk);
}

void zcnet_helper_lock_sock(struct sock *sk)
{
	lock_sock(sk);
}

void zcnet_helper_release_sock(struct sock *sk)
{
	release_sock(sk);
}

bool zcnet_helper_msg_plain_user(const struct msghdr *msg, unsigned long *uaddr,
				 size_t *len, unsigned int *flags)
{
	const struct iov_iter *it = &msg->msg_iter;

	if (msg->msg_name || msg->msg_controllen ||
	    (msg->msg_flags & (MSG_OOB | MSG_FASTOPEN | MSG_ZEROCOPY | MSG_SPLICE_PAGES)))
		return false;
	if (iter_is_ubuf(it)) {
		*uaddr = (unsigned long)it->ubuf + it->iov_offset;
		*len = iov_iter_count(it);
	} else if (iter_is_iovec(it) && it->nr_segs == 1) {
		*uaddr = (unsigned long)iter_iov(it)->iov_base + it->iov_offset;
		*len = iov_iter_count(it);
	} else {
		return false;
	}
	*flags = msg->msg_flags;
	return true;
}

int zcnet_helper_tcp_send_user(struct sock *sk, unsigned long uaddr, size_t len,
			       unsigned int flags)
{
	struct msghdr msg = { .msg_flags = flags };
	int err;

	err = import_ubuf(ITER_SOURCE, (void __user *)uaddr, len, &msg.msg_iter);
	if (err)
		return err;
	return tcp_sendmsg_locked(sk, &msg, len);
}

bool zcnet_helper_tcp_page_cork(struct sock *sk, bool *ours)
{
	struct tcp_sock *tp = tcp_sk(sk);
	const struct sk_buff *tail = tcp_write_queue_tail(sk);

	/* mss_cache: the MSS of the path with the options every segment has. */
	if (tp->mss_cache == PAGE_SIZE && (!tail || !(tail->len % PAGE_SIZE))) {
		if (!(tp->nonagle & TCP_NAGLE_CORK)) {
			tp->nonagle |= TCP_NAGLE_CORK;
			*ours = true;
		}
		return false;
	}
	if (!*ours)
		return false;
	*ours = false;
	return true;
}

void zcnet_helper_tcp_uncork(struct sock *sk)
{
	tcp_sock_set_cork(sk, false);
}

#define ZCNET_ULP_SEND_PAGES 16

/* A send window below this (bytes): each page is its own skb (see below). */
#define ZCNET_ULP_NARROW_WND (64 * PAGE_SIZE)

static int zcnet_ulp_send_bvec(struct sock *sk, struct bio_vec *bv, unsigned int n,
			       unsigned int flags)
{
	/*
	 * Not SKBFL_SHARED_FRAG: while TCP holds them, region pages are
	 * read-only in every mapping (a write gets the region a copy), so
	 * nobody writes them; a zcsock receiver may take them.
	 */
	struct msghdr msg = { .msg_flags = flags | MSG_SPLICE_PAGES | MSG_NO_SHARED_FRAGS };

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, n, (size_t)n * PAGE_SIZE);
	return tcp_sendmsg_locked(sk, &msg, (size_t)n * PAGE_SIZE);
}

int zcnet_helper_tcp_send_pages(struct sock *sk, struct page **pages, unsigned int n,
				unsigned int flags)
{
	struct bio_vec bv[ZCNET_ULP_SEND_PAGES];
	struct sk_buff *tail = tcp_write_queue_tail(sk);
	unsigned int i;
	int done = 0, r;

	if (n > ZCNET_ULP_SEND_PAGES)
		return -EINVAL;
	for (i = 0; i < n; i++)
		bvec_set_page(&bv[i], pages[i], PAGE_SIZE, 0);
	/*
	 * The pages start a segment: an unsent skb that does not end on a
	 * whole page (a copied head, or what a window probe left of a page)
	 * takes no more bytes, or every later page would straddle segments.
	 */
	if (tail && tail->len % PAGE_SIZE)
		TCP_SKB_CB(tail)->eor = 1;
	if (tcp_sk(sk)->snd_wnd >= ZCNET_ULP_NARROW_WND)
		return zcnet_ulp_send_bvec(sk, bv, n, flags);
	/*
	 * A narrow window: the sender will stall with less than a segment of
	 * window and send a probe of what fits, cutting a page. One skb per
	 * page (MSG_EOR) keeps the rest of that page its own segment, and the
	 * next page whole.
	 */
	for (i = 0; i < n; i++) {
		r = zcnet_ulp_send_bvec(sk, &bv[i], 1,
					flags | MSG_EOR | (i + 1 < n ? MSG_MORE : 0));
		if (r < 0)
			return done ? done : r;
		done += r;
		if (r < PAGE_SIZE)
			break;
	}
	return done;
}

struct zcnet_rx {
	long (*act)(void *arg, struct sk_buff *skb, unsigned int off, size_t n, bool defer_ok,
		    bool *defer);
	void *arg;
	long err;
	/* Bytes act() took ahead, in a page that spans skbs: consumed next. */
	size_t skip;
	/* This read: bytes the call had before it, its target, desc->count at
	 * its start, and whether the call may wait for the rest of a page. */
	size_t have, target, round;
	bool may_wait;
	/* act() left a page's first pieces queued: wait for the rest, or end
	 * the call with what it has. */
	bool wait, stop;
};

static int zcnet_rx_actor(read_descriptor_t *desc, struct sk_buff *skb, unsigned int off,
			  size_t len)
{
	struct zcnet_rx *rx = desc->arg.data;
	size_t n = min(len, desc->count), took;
	bool defer = false, more;
	long r;

	if (!n)
		return 0;
	if (rx->skip) {
		r = min(n, rx->skip);
		rx->skip -= r;
		desc->count -= r;
		return r;
	}
	/*
	 * A page's first pieces at the end of the queue may stay there: when
	 * the call would wait for more bytes anyway, or it has some to return.
	 * Otherwise (a call that would return them at once) they are taken.
	 */
	took = rx->have + (rx->round - desc->count);
	more = rx->may_wait && took + n < rx->target;
	r = rx->act(rx->arg, skb, off, n, more || took, &defer);
	if (defer) {
		if (more)
			rx->wait = true;
		else
			rx->stop = true;
		return 0;
	}
	if (r < 0) {
		rx->err = r;
		return 0;
	}
	if (r > n) {
		rx->skip = r - n;
		r = n;
	}
	desc->count -= r;
	return r;
}

/* Waits until more of the stream arrives (or an error, a shutdown, a signal,
 * the timeout): sk_wait_data(), which waits for a new last skb, would miss
 * bytes TCP coalesces into the last one. */
static void zcnet_rx_wait_more(struct sock *sk, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	u32 nxt = tcp_sk(sk)->rcv_nxt;

	add_wait_queue(sk_sleep(sk), &wait);
	sk_set_bit(SOCKWQ_ASYNC_WAITDATA, sk);
	sk_wait_event(sk, timeo,
		      READ_ONCE(tcp_sk(sk)->rcv_nxt) != nxt || READ_ONCE(sk->sk_err) ||
		      (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN), &wait);
	sk_clear_bit(SOCKWQ_ASYNC_WAITDATA, sk);
	remove_wait_queue(sk_sleep(sk), &wait);
}

int zcnet_helper_tcp_recv_actor(struct sock *sk, size_t len, int flags,
				long (*act)(void *arg, struct sk_buff *skb, unsigned int off,
					    size_t n, bool defer_ok, bool *defer),
				void *arg, bool *fallback)
{
	struct zcnet_rx rx = { .act = act, .arg = arg };
	read_descriptor_t desc;
	size_t copied = 0;
	int target, err = 0, n;
	long timeo;

	*fallback = false;
	lock_sock(sk);
	if (sock_flag(sk, SOCK_RCVTSTAMP) || tcp_sk(sk)->recvmsg_inq ||
	    READ_ONCE(tcp_sk(sk)->urg_data)) {
		*fallback = true;
		goto out;
	}
	if (sk->sk_state == TCP_LISTEN) {
		err = -ENOTCONN;
		goto out;
	}
	timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);
	rx.target = target;
	while (copied < len) {
		desc.arg.data = &rx;
		desc.count = len - copied;
		desc.error = 0;
		desc.written = 0;
		rx.have = copied;
		rx.round = desc.count;
		/* Waiting for a page's rest cannot stall the sender: the window
		 * it was given already admits a page more. */
		rx.may_wait = timeo && !signal_pending(current) && !READ_ONCE(sk->sk_err) &&
			      !(READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) &&
			      tcp_receive_window(tcp_sk(sk)) >= PAGE_SIZE;
		n = tcp_read_sock(sk, &desc, zcnet_rx_actor);
		if (n < 0) {
			err = n;
			break;
		}
		copied += n;
		if (rx.err) {
			err = rx.err;
			break;
		}
		/*
		 * A page taken ahead completes in the same tcp_read_sock() (its
		 * rest is queued and the socket stays locked); never stop short
		 * of it, or its bytes would be read twice.
		 */
		if (rx.stop || (copied >= target && !rx.skip))
			break;
		if (rx.wait) {
			rx.wait = false;
			zcnet_rx_wait_more(sk, &timeo);
			continue;
		}
		if (n > 0)
			continue;
		/* Nothing taken while data waits (an urgent mark): TCP's recvmsg. */
		if (!skb_queue_empty(&sk->sk_receive_queue)) {
			*fallback = !copied;
			break;
		}
		if (copied) {
			if (sk->sk_err || sk->sk_state == TCP_CLOSE ||
			    (sk->sk_shutdown & RCV_SHUTDOWN) || !timeo || signal_pending(current))
				break;
		} else {
			if (sock_flag(sk, SOCK_DONE))
				break;
			if (sk->sk_err) {
				err = sock_error(sk);
				break;
			}
			if (sk->sk_shutdown & RCV_SHUTDOWN)
				break;
			if (sk->sk_state == TCP_CLOSE) {
				err = -ENOTCONN;
				break;
			}
			if (!timeo) {
				err = -EAGAIN;
				break;
			}
			if (signal_pending(current)) {
				err = sock_intr_errno(timeo);
				break;
			}
		}
		sk_wait_data(sk, &timeo, NULL);
	}
out:
	WARN_ON_ONCE(rx.skip);
	release_sock(sk);
	return copied ? (int)min_t(size_t, copied, INT_MAX) : err;
}

/*
 * Whether page, a fragment of skb, may become a region's page: ZCNET_RX_PAGE
 * when it may, ZCNET_RX_NO_PAGE when it is not an order-0 page of its own
 * (compound, a page pool's, highmem), ZCNET_RX_PAGE_REFUSED when someone
 * else may write it while the region holds it. A region makes a page
 * writable by its reference count alone (rust/zcnet/mapdev.rs's invariant 2), which
 * covers only writers that hold a reference and write through the region's
 * own copy-on-write: so no page of an skb whose fragments are shared
 * (SKBFL_SHARED_FRAG: spliced, vmsplice()d, sendfile()d pages, MSG_ZEROCOPY,
 * and so any vmalloc or driver-ring page such a path brought; TCP keeps the
 * flag when it coalesces, GRO and splitting do too), no page cache or
 * anonymous page (mapping), no page mapped anywhere (a driver's
 * vm_insert_page()), no zero page or reserved page (global), no typed page
 * (slab, page tables, ...).
 */
static enum zcnet_rx_page zcnet_rx_page_ok(const struct sk_buff *skb, struct page *page)
{
	if (PageCompound(page) || page_pool_page_is_pp(page) || PageHighMem(page))
		return ZCNET_RX_NO_PAGE;
	if (skb_has_shared_frag(skb) || is_zero_page(page) || PageReserved(page) ||
	    page_has_type(page) || page->mapping || folio_mapped(page_folio(page)))
		return ZCNET_RX_PAGE_REFUSED;
	return ZCNET_RX_PAGE;
}

int zcnet_helper_rx_page(struct sock *sk, const struct sk_buff *skb, unsigned int off,
			 struct page **pagep)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct page *page = NULL;
	unsigned int have = 0;
	enum zcnet_rx_page ok;
	u32 next;

	/*
	 * tcp_read_sock() offers no byte from the urgent mark on (while
	 * urg_data is set): a page holding it is not taken whole, or the
	 * call would claim bytes it never reads.
	 */
	if (READ_ONCE(tp->urg_data) &&
	    READ_ONCE(tp->urg_seq) - (TCP_SKB_CB(skb)->seq + off) < PAGE_SIZE)
		return ZCNET_RX_NO_PAGE;
	for (;;) {
		const struct skb_shared_info *sh = skb_shinfo(skb);
		unsigned int pos = skb_headlen(skb);
		int i;

		if (off < pos || !skb_frags_readable(skb) ||
		    (TCP_SKB_CB(skb)->tcp_flags & TCPHDR_SYN))
			return ZCNET_RX_NO_PAGE;
		for (i = 0; i < sh->nr_frags; i++) {
			const skb_frag_t *f = &sh->frags[i];
			unsigned int fs = skb_frag_size(f), in;

			if (off >= pos + fs) {
				pos += fs;
				continue;
			}
			in = off - pos;
			if (!page)
				page = skb_frag_page(f);
			/* Each piece continues the page where the last ended. */
			if (skb_frag_page(f) != page || skb_frag_off(f) + in != have)
				return ZCNET_RX_NO_PAGE;
			/* Checked in every skb the page's pieces are in. */
			ok = zcnet_rx_page_ok(skb, page);
			if (ok != ZCNET_RX_PAGE)
				return ok;
			have += min(fs - in, (unsigned int)PAGE_SIZE - have);
			if (have == PAGE_SIZE) {
				*pagep = page;
				return ZCNET_RX_PAGE;
			}
			off = pos += fs;
		}
		/* Bytes beyond the fragments (a frag_list), or the stream's end. */
		if (off != skb->len || (TCP_SKB_CB(skb)->tcp_flags & TCPHDR_FIN))
			return ZCNET_RX_NO_PAGE;
		next = TCP_SKB_CB(skb)->seq + skb->len;
		skb = skb_peek_next((struct sk_buff *)skb, &sk->sk_receive_queue);
		if (!skb)
			return ZCNET_RX_PAGE_HEAD;
		if (after(TCP_SKB_CB(skb)->seq, next))
			return ZCNET_RX_NO_PAGE;
		off = next - TCP_SKB_CB(skb)->seq;
		if (off >= skb->len)
			return ZCNET_RX_NO_PAGE;
	}
}

int zcnet_helper_skb_copy_to_user(const struct sk_buff *skb, unsigned int off,
				  unsigned long uaddr, size_t n)
{
	struct iov_iter it;
	int err;

	err = import_ubuf(ITER_DEST, (void __user *)uaddr, n, &it);
	if (err)
		return err;
	return skb_copy_datagram_iter(skb, off, &it, n) ? -EFAULT : 0;
}

void zcnet_helper_msg_advance(struct msghdr *msg, size_t n)
{
	iov_iter_advance(&msg->msg_iter, n);
}

void zcnet_helper_tcp_ulp_clone_init(struct sock *newsk)
{
	int fam = newsk->sk_family == AF_INET6 ? ZCNET_ULP_V6 : ZCNET_ULP_V4;

	__module_get(THIS_MODULE);
	/* The copy was made from the base: same slab, same object size. */
	if (newsk->sk_prot_creator == &zcnet_ulp_prot[fam])
		newsk->sk_prot_creator = zcnet_ulp_base_of(newsk);
}

bool zcnet_helper_user_readable(unsigned long uaddr, size_t len)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long end;
	bool ok = true;

	if (!len)
		return true;
	if (!mm || check_add_overflow(uaddr, len, &end) ||
	    !access_ok((const void __user *)uaddr, len))
		return false;
	/* Mappings, not pages: faulting a region's pages in would only map
	 * what the send then takes out of the mapping again. */
	if (mmap_read_lock_killable(mm))
		return false;
	for (; uaddr < end; uaddr = vma->vm_end) {
		vma = vma_lookup(mm, uaddr);
		if (!vma || !(vma->vm_flags & VM_READ)) {
			ok = false;
			break;
		}
	}
	mmap_read_unlock(mm);
	return ok;
}
