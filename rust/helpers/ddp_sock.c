// SPDX-License-Identifier: GPL-2.0
/* Byte-exact kernel I/O on a locked TCP socket (see ddp_sock.h). */
#include <linux/errqueue.h>
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "ddp_sock.h"
#include "tcp_ulp.h"

struct zcnet_ddp_rd {
	u8 *buf;
	size_t got;
};

static int zcnet_ddp_rd_actor(read_descriptor_t *desc, struct sk_buff *skb, unsigned int off,
			      size_t len)
{
	struct zcnet_ddp_rd *rd = desc->arg.data;
	size_t n = min(len, desc->count);

	if (!n)
		return 0;
	if (skb_copy_bits(skb, off, rd->buf + rd->got, n)) {
		desc->error = -EFAULT;
		return 0;
	}
	rd->got += n;
	desc->count -= n;
	return n;
}

/* Why sk cannot give more bytes now: 0 when it may later, or -errno. */
static int zcnet_ddp_rx_end(struct sock *sk, long timeo)
{
	if (sk->sk_err)
		return sock_error(sk) ?: -ECONNRESET;
	if ((sk->sk_shutdown & RCV_SHUTDOWN) || sock_flag(sk, SOCK_DONE))
		return -ECONNRESET;
	if (sk->sk_state == TCP_CLOSE)
		return -ENOTCONN;
	if (timeo <= 0)
		return -ETIMEDOUT;
	if (signal_pending(current))
		return -EINTR;
	return 0;
}

int zcnet_helper_ddp_recv_avail(struct sock *sk, void *buf, size_t len)
{
	struct zcnet_ddp_rd rd = { .buf = buf };
	read_descriptor_t desc = { .arg.data = &rd, .count = len };
	int n;

	if (!len)
		return 0;
	n = tcp_read_sock(sk, &desc, zcnet_ddp_rd_actor);
	if (n < 0)
		return n;
	return desc.error ? desc.error : (int)rd.got;
}

int zcnet_helper_ddp_wait(struct sock *sk, long *timeo, unsigned int need)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	bool data = need > 0;
	int r;

	/* tcp_inq() reads rcv_nxt and copied_seq locklessly, as tcp_poll(). */
	if (data && (tcp_inq(sk) >= need || zcnet_helper_tcp_ulp_readable(sk)))
		return 0;
	r = zcnet_ddp_rx_end(sk, *timeo);
	if (r)
		return r;
	/* sk_wait_data(), and also woken by what the socket's work item
	 * completed meanwhile (it takes the bytes, so the queue may be empty
	 * again when this thread looks). Without data: any wake-up. */
	add_wait_queue(sk_sleep(sk), &wait);
	sk_set_bit(SOCKWQ_ASYNC_WAITDATA, sk);
	sk_wait_event(sk, timeo,
		      data && (tcp_inq(sk) >= need ||
			       zcnet_helper_tcp_ulp_readable(sk) || READ_ONCE(sk->sk_err) ||
			       (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN)), &wait);
	sk_clear_bit(SOCKWQ_ASYNC_WAITDATA, sk);
	remove_wait_queue(sk_sleep(sk), &wait);
	return 0;
}

int zcnet_helper_ddp_recv_exact(struct sock *sk, void *buf, size_t len, long *timeo)
{
	struct zcnet_ddp_rd rd = { .buf = buf };
	read_descriptor_t desc;
	int n;

	while (rd.got < len) {
		desc.arg.data = &rd;
		desc.count = len - rd.got;
		desc.error = 0;
		desc.written = 0;
		n = tcp_read_sock(sk, &desc, zcnet_ddp_rd_actor);
		if (n < 0)
			return n;
		if (desc.error)
			return desc.error;
		if (rd.got >= len)
			break;
		if (n > 0)
			continue;
		n = zcnet_ddp_rx_end(sk, *timeo);
		if (n)
			return n;
		sk_wait_data(sk, timeo, NULL);
	}
	return 0;
}

int zcnet_helper_ddp_send_exact(struct sock *sk, const void *buf, size_t len, long *timeo)
{
	struct kvec kv = { .iov_base = (void *)buf, .iov_len = len };
	long saved = sk->sk_sndtimeo;
	size_t done = 0;
	int r = 0;

	/* The start-up's own bound instead of the socket's send timeout. */
	sk->sk_sndtimeo = max(*timeo, 1L);
	while (done < len) {
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };

		kv.iov_base = (u8 *)buf + done;
		kv.iov_len = len - done;
		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, kv.iov_len);
		r = tcp_sendmsg_locked(sk, &msg, kv.iov_len);
		if (r <= 0) {
			if (r == 0 || r == -EAGAIN)
				r = -ETIMEDOUT;
			break;
		}
		done += r;
		r = 0;
	}
	sk->sk_sndtimeo = saved;
	return r;
}

int zcnet_helper_ddp_send_some(struct sock *sk, const void *buf, size_t len, bool eor, bool more)
{
	struct kvec kv = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT | (eor ? MSG_EOR : 0) |
				(more ? MSG_MORE : 0) };

	if (!len)
		return 0;
	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, len);
	/* With MSG_DONTWAIT a full send buffer sets SOCK_NOSPACE and returns
	 * what was copied, or -EAGAIN: never a wait. */
	return tcp_sendmsg_locked(sk, &msg, len);
}

unsigned int zcnet_helper_ddp_mss(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	unsigned int mss = READ_ONCE(tp->mss_cache);
	unsigned int sack = 0;

	/* What tcp_current_mss() (not exported) takes off for the SACK
	 * blocks this side is sending. */
	if (tp->rx_opt.num_sacks)
		sack = TCPOLEN_SACK_BASE_ALIGNED + tp->rx_opt.num_sacks * TCPOLEN_SACK_PERBLOCK;
	return mss > sack ? mss - sack : 0;
}

unsigned int zcnet_helper_ddp_inq(struct sock *sk)
{
	return tcp_inq(sk);
}

bool zcnet_helper_ddp_established(const struct sock *sk)
{
	return sk->sk_protocol == IPPROTO_TCP && sk->sk_state == TCP_ESTABLISHED;
}

/* sk's peer address, for %pISpc. */
static void zcnet_ddp_peer(const struct sock *sk, struct sockaddr_storage *peer)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)peer;

		a->sin6_family = AF_INET6;
		a->sin6_addr = sk->sk_v6_daddr;
		a->sin6_port = inet_sk(sk)->inet_dport;
	} else
#endif
	{
		struct sockaddr_in *a = (struct sockaddr_in *)peer;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = inet_sk(sk)->inet_daddr;
		a->sin_port = inet_sk(sk)->inet_dport;
	}
}

void zcnet_helper_ddp_log_term(const struct sock *sk, u8 layer, u8 etype, u8 ecode, u32 pos,
			       const u8 *hdr, size_t hdr_len)
{
	struct sockaddr_storage peer = {};

	zcnet_ddp_peer(sk, &peer);
	if (hdr_len)
		pr_info_ratelimited("zcddp: terminating the connection with %pISpc: layer %u type %u code %u (received stream at byte %u), the faulting segment's header %*ph\n",
				    &peer, layer, etype, ecode, pos, (int)min_t(size_t, hdr_len, 32),
				    hdr);
	else
		pr_info_ratelimited("zcddp: terminating the connection with %pISpc: layer %u type %u code %u (received stream at byte %u)\n",
				    &peer, layer, etype, ecode, pos);
}

void zcnet_helper_ddp_log_crc(const struct sock *sk, u32 pos, u32 len, u32 got, u32 want,
			      const u8 *head, size_t head_len, int recurs)
{
	struct sockaddr_storage peer = {};

	zcnet_ddp_peer(sk, &peer);
	if (recurs < 0)
		pr_info_ratelimited("zcddp: CRC of the FPDU from %pISpc at stream byte %u (%u bytes) is %08x, it carries %08x; it begins %*ph\n",
				    &peer, pos, len, got, want, (int)min_t(size_t, head_len, 32), head);
	else
		pr_info_ratelimited("zcddp: CRC of the FPDU from %pISpc at stream byte %u (%u bytes) is %08x, it carries %08x; it begins %*ph, and its first 16 bytes recur at its byte %d (sent in part, then again?)\n",
				    &peer, pos, len, got, want, (int)min_t(size_t, head_len, 32), head,
				    recurs);
}

void zcnet_helper_ddp_nodelay(struct sock *sk)
{
	/* What tcp_sock_set_nodelay() does, with the lock already held; the
	 * frames queued so far were pushed by tcp_sendmsg_locked(). */
	tcp_sk(sk)->nonagle |= TCP_NAGLE_OFF | TCP_NAGLE_PUSH;
}

void zcnet_helper_ddp_shutdown_send(struct sock *sk)
{
	/* What shutdown(SHUT_WR) does (inet_shutdown()), the lock held: a FIN
	 * after what is queued, in the states that may send one. The ULP's
	 * proto keeps TCP's shutdown (tcp_shutdown(), not exported). */
	WRITE_ONCE(sk->sk_shutdown, sk->sk_shutdown | SEND_SHUTDOWN);
	READ_ONCE(sk->sk_prot)->shutdown(sk, SEND_SHUTDOWN);
	sk->sk_state_change(sk);
}

long zcnet_helper_ddp_ms_to_jiffies(unsigned int ms)
{
	return msecs_to_jiffies(ms);
}

void zcnet_helper_ddp_rcv_seqs(struct sock *sk, u32 *copied, u32 *rcv_nxt)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	*copied = tp->copied_seq;
	*rcv_nxt = tp->rcv_nxt;
}

/* The first skb of sk's out-of-order queue whose data ends after from. */
static struct sk_buff *zcnet_ddp_ofo_after(struct sock *sk, u32 from)
{
	struct rb_node *n = tcp_sk(sk)->out_of_order_queue.rb_node;
	struct sk_buff *skb, *best = NULL;

	/* The queue is ordered by sequence number and no skb lies wholly
	 * inside another (tcp_data_queue_ofo() drops or replaces those), so
	 * the data ends are ordered too: a lower bound. Out-of-order skbs hold
	 * the TCP payload from skb->data on. */
	while (n) {
		skb = rb_to_skb(n);
		if (after(TCP_SKB_CB(skb)->seq + skb->len, from)) {
			best = skb;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

int zcnet_helper_ddp_ofo_next(struct sock *sk, u32 from, u32 *seq, u32 *end)
{
	struct sk_buff *skb = zcnet_ddp_ofo_after(sk, from);
	u32 s;

	if (!skb)
		return 0;
	s = TCP_SKB_CB(skb)->seq;
	*seq = before(s, from) ? from : s;
	*end = s + skb->len;
	return 1;
}

struct sk_buff *zcnet_ddp_ofo_span(struct sock *sk, u32 seq, size_t len, int *off)
{
	struct sk_buff *skb = zcnet_ddp_ofo_after(sk, seq);
	u32 o;

	if (!skb || after(TCP_SKB_CB(skb)->seq, seq))
		return NULL;
	o = seq - TCP_SKB_CB(skb)->seq;
	if (len > skb->len - o)
		return NULL;
	*off = o;
	return skb;
}

int zcnet_helper_ddp_ofo_read(struct sock *sk, u32 seq, void *buf, size_t len)
{
	int off;
	struct sk_buff *skb = zcnet_ddp_ofo_span(sk, seq, len, &off);

	if (!skb)
		return -ENODATA;
	return skb_copy_bits(skb, off, buf, len) ? -ENODATA : 0;
}

int zcnet_helper_ddp_ofo_crc32c(struct sock *sk, u32 seq, size_t len, u32 *crc)
{
	int off;
	struct sk_buff *skb = zcnet_ddp_ofo_span(sk, seq, len, &off);

	if (!skb)
		return -ENODATA;
	*crc = ~skb_crc32c(skb, off, len, ~0U);
	return 0;
}

int zcnet_helper_ddp_zc_reap(struct sock *sk, u32 *lo, u32 *hi, bool *copied)
{
	struct sk_buff *skb;

	while ((skb = sock_dequeue_err_skb(sk))) {
		const struct sock_exterr_skb *serr = SKB_EXT_ERR(skb);
		bool zc = serr->ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY && !serr->ee.ee_errno;

		if (zc) {
			*lo = serr->ee.ee_info;
			*hi = serr->ee.ee_data;
			*copied = serr->ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED;
		}
		consume_skb(skb);
		if (zc)
			return 1;
	}
	return 0;
}

int zcnet_ddp_queue_walk(struct sock *sk, u32 off, size_t len,
			 int (*fn)(const struct sk_buff *skb, int o, int n, void *arg), void *arg)
{
	u32 seq = tcp_sk(sk)->copied_seq + off;
	struct sk_buff *skb;

	skb_queue_walk(&sk->sk_receive_queue, skb) {
		u32 o;
		int n, r;

		if (!len)
			break;
		/* The queue is in sequence order without holes from
		 * copied_seq on; skb data is TCP payload (tcp_recv_skb()). */
		if (before(seq, TCP_SKB_CB(skb)->seq))
			return -EINVAL;
		o = seq - TCP_SKB_CB(skb)->seq;
		if (o >= skb->len) {
			if (TCP_SKB_CB(skb)->tcp_flags & TCPHDR_FIN)
				break;
			continue;
		}
		n = min_t(size_t, skb->len - o, len);
		r = fn(skb, o, n, arg);
		if (r)
			return r;
		seq += n;
		len -= n;
	}
	return len ? -ENODATA : 0;
}

static int zcnet_ddp_peek_piece(const struct sk_buff *skb, int o, int n, void *arg)
{
	u8 **to = arg;
	int r = skb_copy_bits(skb, o, *to, n);

	*to += n;
	return r;
}

int zcnet_helper_ddp_peek(struct sock *sk, u32 off, void *buf, size_t len)
{
	u8 *to = buf;

	return zcnet_ddp_queue_walk(sk, off, len, zcnet_ddp_peek_piece, &to);
}

static int zcnet_ddp_crc_piece(const struct sk_buff *skb, int o, int n, void *arg)
{
	u32 *crc = arg;

	*crc = skb_crc32c(skb, o, n, *crc);
	return 0;
}

int zcnet_helper_ddp_queue_crc32c(struct sock *sk, u32 off, size_t len, u32 *crc)
{
	u32 c = ~0U;
	int r = zcnet_ddp_queue_walk(sk, off, len, zcnet_ddp_crc_piece, &c);

	*crc = ~c;
	return r;
}

static int zcnet_ddp_skip_actor(read_descriptor_t *desc, struct sk_buff *skb, unsigned int off,
				size_t len)
{
	size_t n = min(len, desc->count);

	desc->count -= n;
	return n;
}

int zcnet_helper_ddp_consume(struct sock *sk, size_t len)
{
	read_descriptor_t desc = { .count = len };

	if (!len)
		return 0;
	return tcp_read_sock(sk, &desc, zcnet_ddp_skip_actor);
}

unsigned int zcnet_helper_ddp_rcvbuf(const struct sock *sk)
{
	return max(READ_ONCE(sk->sk_rcvbuf), 0);
}

bool zcnet_helper_ddp_ofo_queued(const struct sock *sk)
{
	return !RB_EMPTY_ROOT(&tcp_sk(sk)->out_of_order_queue);
}

bool zcnet_helper_ddp_can_wait(const struct sock *sk, unsigned int missing)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return !zcnet_helper_ddp_ofo_queued(sk) &&
	       atomic_read(&sk->sk_rmem_alloc) < READ_ONCE(sk->sk_rcvbuf) / 2 &&
	       missing <= tcp_receive_window(tp);
}
