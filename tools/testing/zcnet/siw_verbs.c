// SPDX-License-Identifier: GPL-2.0
/*
 * siw_verbs: a small rdma-core program (libibverbs + librdmacm) that runs on
 * a soft-iWARP device and exchanges Send, RDMA Write and RDMA Read with a
 * zcddp peer (zcddp-verbs in the tools workspace), both directions, every
 * byte seeded and checked by hash on both sides (zcddp.sh).
 *
 *   siw_verbs -a ADDR [-p PORT] [-S SIZE] [-r SEED] [-s] [-C COUNT]
 *
 * -s: listen (rdma_cm passive side, siw the MPA responder); without it
 * connect (siw the MPA initiator). Whatever the connection's direction,
 * the exchange is the same (messages of 32 bytes, big-endian: type, rkey,
 * addr, len, hash; "this side" is siw, "the peer" zcddp), except that the
 * MPA initiator sends the first FPDU (RFC 5044 and 6581: a responder waits
 * for it), so the two data Sends go initiator's first:
 *
 *   this side: Send of min(SIZE, 64 KiB) bytes of pattern 'S'
 *   peer:      Send of as many bytes of pattern 'T'
 *   peer:      Send ADV {its region: pattern 'Z'}
 *   this side: RDMA Read of the peer's region (checked: 'Z'),
 *              RDMA Write of pattern 'W' into it,
 *              Send DONE {this side's region: pattern 'C'; hash of 'W'}
 *   peer:      checks its region ('W'), RDMA Read of this side's region
 *              (checks 'C'), RDMA Write of pattern 'V' into it,
 *              Send DONE {hash of 'V'}
 *   this side: checks its region ('V'), Send FIN {0: all checked, 1: not}
 *
 * The patterns: xorshift64 (13, 7, 17) from SEED ^ tag * 0x9e3779b97f4a7c15,
 * a byte the bits 32..39 of each step; hashes 64-bit FNV-1a. Exit status 0
 * only when every check here passed; prints one "siw_verbs: ..." line per
 * step. The connection's parameters are rping's (IRD/ORD 1, no private
 * data). -C COUNT runs the exchange COUNT times on the connection (rping's
 * -C), round i with the patterns of SEED + i; each side posts the next
 * round's receives before its last message of a round (siw: the FIN;
 * zcddp: its DONE), as the peer's next Send may follow at once. Only the
 * first round prints its steps (and any mismatch); a failed round ends
 * the run.
 *
 * Timing modes (bench-ddp.sh's zcddp-siw column), instead of the exchange:
 *
 *   siw_verbs -a ADDR [-p PORT] [-S SIZE] [-r SEED] [-s] [-L ITERS] [-B SECONDS]
 *
 * zcddp-verbs takes the same flags. The rdma_cm active side (the MPA
 * initiator) leads and prints "siw_verbs: result OP BYTES VALUE UNIT"
 * lines; the other side answers. Each side keeps 4 receives of SIZE bytes
 * posted and a region of SIZE bytes for the peer's Writes:
 *
 *   both:  Send ADV {region; len SIZE; hash ITERS | 1 << 63 with -B}
 *          (the initiator's first); the modes must agree
 *   -L:    send_lat: ITERS times a Send of SIZE bytes (siw pattern 'S',
 *          zcddp 'T') answered by one; half the round trip, median;
 *          write_lat: ITERS times an RDMA Write of SIZE bytes (siw pattern
 *          'W', zcddp 'V', the last byte replaced by the iteration's tag
 *          i % 255 + 1) into the peer's region, answered by one when the
 *          region's last byte shows the tag; half the round trip, median.
 *          Then each side checks the last Send it received and its region
 *          (the peer's pattern with the last tag).
 *   -B:    the answering side zeroes its region and Sends READY; the
 *          leader posts RDMA Writes of SIZE bytes (its pattern, 16
 *          outstanding at most) for SECONDS, then Sends DONE {count;
 *          hash}; the other side answers ACK on its arrival (RDMAP
 *          ordering: every Write before it is placed), then checks its
 *          region. MB/s (10^6 bytes) over the time from the first post to
 *          ACK.
 *   both:  Send FIN {0: all checked, 1: not} (the initiator's first).
 *
 * siw busy-polls its completion queues and memory in the latency modes,
 * as perftest does; waiting for a message (ADV, READY, DONE, ACK, FIN)
 * sleeps on the completion channel.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

enum { MSG_LEN = 32, SEND_MAX = 64 * 1024 };
enum { T_ADV = 1, T_DONE_C = 2, T_DONE_Z = 3, T_FIN = 4 };
enum { T_READY = 5, T_DONE_BW = 6, T_ACK = 7 };
enum { RING = 4, WINDOW = 16 };
#define BW_FLAG (1ULL << 63)
#define WAIT_US 20e6

struct msg {
	uint32_t type, rkey;
	uint64_t addr, len, hash;
};

static void gen(uint8_t *b, size_t n, uint64_t seed, char tag)
{
	uint64_t x = seed ^ ((uint64_t)(uint8_t)tag * 0x9e3779b97f4a7c15ULL);

	if (!x)
		x = 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)(x >> 32);
	}
}

static uint64_t fnv(const uint8_t *b, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t pattern_hash(size_t n, uint64_t seed, char tag)
{
	uint8_t *b = malloc(n ? n : 1);
	uint64_t h;

	if (!b)
		exit(1);
	gen(b, n, seed, tag);
	h = fnv(b, n);
	free(b);
	return h;
}

static void put_msg(uint8_t *b, const struct msg *m)
{
	uint32_t w32[2] = { htobe32(m->type), htobe32(m->rkey) };
	uint64_t w64[3] = { htobe64(m->addr), htobe64(m->len), htobe64(m->hash) };

	memcpy(b, w32, 8);
	memcpy(b + 8, w64, 24);
}

static struct msg get_msg(const uint8_t *b)
{
	uint32_t w32[2];
	uint64_t w64[3];
	struct msg m;

	memcpy(w32, b, 8);
	memcpy(w64, b + 8, 24);
	m.type = be32toh(w32[0]);
	m.rkey = be32toh(w32[1]);
	m.addr = be64toh(w64[0]);
	m.len = be64toh(w64[1]);
	m.hash = be64toh(w64[2]);
	return m;
}

static void *zalloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, n ? n : 1))
		return NULL;
	memset(p, 0, n ? n : 1);
	return p;
}

static struct rdma_cm_id *id;

static int die(const char *what)
{
	fprintf(stderr, "siw_verbs: %s: %s\n", what, strerror(errno));
	return 1;
}

/* One completion of the send queue (every send is signaled): 0 if it
 * succeeded. */
static int send_comp(const char *what)
{
	struct ibv_wc wc;

	if (rdma_get_send_comp(id, &wc) <= 0)
		return die(what);
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "siw_verbs: %s: completion status %s\n", what,
			ibv_wc_status_str(wc.status));
		return 1;
	}
	return 0;
}

/* One receive: its byte count, or -1. */
static long recv_comp(const char *what)
{
	struct ibv_wc wc;

	if (rdma_get_recv_comp(id, &wc) <= 0)
		return die(what), -1;
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "siw_verbs: %s: completion status %s\n", what,
			ibv_wc_status_str(wc.status));
		return -1;
	}
	return wc.byte_len;
}

/* -C: only the first round prints its steps (and any mismatch). */
static bool verbose = true;

static bool check(const char *what, uint64_t got, uint64_t want)
{
	if (verbose || got != want)
		printf("siw_verbs: %s %s (hash %016" PRIx64 ", want %016" PRIx64 ")\n", what,
		       got == want ? "ok" : "MISMATCH", got, want);
	return got == want;
}

/* The timing modes (-L, -B): see the top of the file. */
struct timer {
	uint64_t size, seed, slot;
	uint8_t *rx, *smsg, *sdata, *src, *region;
	struct ibv_mr *rx_mr, *smsg_mr, *sdata_mr, *src_mr, *region_mr;
	int next_msg, outstanding;
	uint64_t peer_addr;
	uint32_t peer_rkey;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint8_t tag(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print_lat(const char *op, uint64_t size, double *us, uint64_t n)
{
	double mean = 0, med;

	for (uint64_t i = 0; i < n; i++)
		mean += us[i];
	mean /= n;
	qsort(us, n, sizeof(*us), cmp_double);
	med = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
	printf("siw_verbs: %s %" PRIu64 " B: median %.2f us, mean %.2f us, %" PRIu64
	       " iterations\n", op, size, med, mean, n);
	printf("siw_verbs: result %s %" PRIu64 " %.3f us\n", op, size, med);
}

/* Reaps the send completions there are, without waiting. */
static int t_reap(struct timer *t)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(id->send_cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "siw_verbs: send completion status %s\n",
					ibv_wc_status_str(wc[i].status));
				return -1;
			}
		}
		t->outstanding -= n;
	}
	if (n < 0)
		return die("ibv_poll_cq"), -1;
	return 0;
}

/* Posts a signaled work request, at most WINDOW outstanding. */
static int t_post(struct timer *t, enum ibv_wr_opcode op, uint8_t *buf, struct ibv_mr *mr,
		  uint64_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	double t0 = now_us();

	if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = t->peer_addr;
		wr.wr.rdma.rkey = t->peer_rkey;
	}
	while (t->outstanding >= WINDOW) {
		if (t_reap(t))
			return -1;
		if (now_us() - t0 > WAIT_US)
			return fprintf(stderr, "siw_verbs: no send completion\n"), -1;
	}
	if (ibv_post_send(id->qp, &wr, &bad))
		return die("ibv_post_send"), -1;
	t->outstanding++;
	return 0;
}

static int t_repost(struct timer *t, uint64_t i)
{
	if (rdma_post_recv(id, (void *)(uintptr_t)i, t->rx + i * t->slot, t->slot, t->rx_mr))
		return die("rdma_post_recv"), -1;
	return 0;
}

/* The next receive: spinning on the queue (latency) or sleeping on the
 * completion channel. */
static int t_recv(struct timer *t, struct ibv_wc *wc, bool spin)
{
	if (spin) {
		double t0 = now_us();
		int n;

		while ((n = ibv_poll_cq(id->recv_cq, 1, wc)) == 0) {
			if (t_reap(t))
				return -1;
			if (now_us() - t0 > WAIT_US)
				return fprintf(stderr, "siw_verbs: nothing received\n"), -1;
		}
		if (n < 0)
			return die("ibv_poll_cq"), -1;
	} else if (rdma_get_recv_comp(id, wc) <= 0) {
		return die("rdma_get_recv_comp"), -1;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "siw_verbs: receive completion status %s\n",
			ibv_wc_status_str(wc->status));
		return -1;
	}
	return 0;
}

static int t_msg(struct timer *t, const struct msg *m)
{
	uint8_t *b = t->smsg + t->next_msg * MSG_LEN;

	t->next_msg = (t->next_msg + 1) % RING;
	put_msg(b, m);
	return t_post(t, IBV_WR_SEND, b, t->smsg_mr, MSG_LEN);
}

/* Waits for a message of type TYPE into *M, reposts its receive. */
static int t_want(struct timer *t, uint32_t type, struct msg *m)
{
	struct ibv_wc wc;

	if (t_recv(t, &wc, false))
		return -1;
	if (wc.byte_len != MSG_LEN)
		return fprintf(stderr, "siw_verbs: a Send of %u bytes, message %u expected\n",
			       wc.byte_len, type), -1;
	*m = get_msg(t->rx + wc.wr_id * t->slot);
	if (t_repost(t, wc.wr_id))
		return -1;
	if (m->type != type)
		return fprintf(stderr, "siw_verbs: message type %u, %u expected\n", m->type,
			       type), -1;
	return 0;
}

/* Exchanges *M for the peer's message of its type (into *PEER), the
 * MPA initiator (LEAD) first. */
static int t_swap(struct timer *t, bool lead, const struct msg *m, struct msg *peer)
{
	if (lead && t_msg(t, m))
		return -1;
	if (t_want(t, m->type, peer))
		return -1;
	if (!lead && t_msg(t, m))
		return -1;
	return 0;
}

/* The peer's data Send; on LAST its bytes are checked (pattern 'T'). */
static int t_recv_data(struct timer *t, bool last, bool *ok)
{
	struct ibv_wc wc;

	if (t_recv(t, &wc, true))
		return -1;
	if (wc.byte_len != t->size)
		return fprintf(stderr, "siw_verbs: a Send of %u bytes, %" PRIu64 " expected\n",
			       wc.byte_len, t->size), -1;
	if (last)
		*ok &= check("the last Send from zcddp", fnv(t->rx + wc.wr_id * t->slot, t->size),
			     pattern_hash(t->size, t->seed, 'T'));
	return t_repost(t, wc.wr_id);
}

static int t_write(struct timer *t, uint8_t tg)
{
	t->src[t->size - 1] = tg;
	return t_post(t, IBV_WR_RDMA_WRITE, t->src, t->src_mr, t->size);
}

/* Spins until the region's last byte is TG, reaping send completions. */
static int t_watch(struct timer *t, uint8_t tg)
{
	volatile uint8_t *last = t->region + t->size - 1;
	double t0 = now_us();
	unsigned int n = 0;

	while (*last != tg) {
		if (t_reap(t))
			return -1;
		if (++n % 1024 == 0 && now_us() - t0 > WAIT_US)
			return fprintf(stderr, "siw_verbs: no RDMA Write with last byte %u\n", tg), -1;
	}
	return 0;
}

static int t_drain(struct timer *t)
{
	double t0 = now_us();

	while (t->outstanding > 0) {
		if (t_reap(t))
			return -1;
		if (now_us() - t0 > WAIT_US)
			return fprintf(stderr, "siw_verbs: %d send completions missing\n",
				       t->outstanding), -1;
	}
	return 0;
}

static uint64_t tagged_hash(size_t n, uint64_t seed, char pat, uint8_t last)
{
	uint8_t *b = malloc(n);
	uint64_t h;

	if (!b)
		exit(1);
	gen(b, n, seed, pat);
	b[n - 1] = last;
	h = fnv(b, n);
	free(b);
	return h;
}

static int timing(bool server, uint64_t size, uint64_t seed, uint64_t iters, double secs)
{
	struct timer t = { .size = size, .seed = seed, .slot = size < MSG_LEN ? MSG_LEN : size };
	struct rdma_conn_param cp = {};
	uint64_t modes = iters | (secs > 0 ? BW_FLAG : 0);
	struct msg adv, peer, m;
	bool ok = true, lead = !server;
	double *us = NULL;

	t.rx = zalloc(RING * t.slot);
	t.smsg = zalloc(RING * MSG_LEN);
	t.sdata = zalloc(size);
	t.src = zalloc(size);
	t.region = zalloc(size);
	if (iters)
		us = calloc(iters, sizeof(*us));
	if (!t.rx || !t.smsg || !t.sdata || !t.src || !t.region || (iters && !us))
		return die("allocation");
	gen(t.sdata, size, seed, 'S');
	gen(t.src, size, seed, 'W');
	t.rx_mr = rdma_reg_msgs(id, t.rx, RING * t.slot);
	t.smsg_mr = rdma_reg_msgs(id, t.smsg, RING * MSG_LEN);
	t.sdata_mr = rdma_reg_msgs(id, t.sdata, size);
	t.src_mr = rdma_reg_msgs(id, t.src, size);
	t.region_mr = ibv_reg_mr(id->pd, t.region, size,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!t.rx_mr || !t.smsg_mr || !t.sdata_mr || !t.src_mr || !t.region_mr)
		return die("register");
	for (uint64_t i = 0; i < RING; i++)
		if (t_repost(&t, i))
			return 1;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	if (server ? rdma_accept(id, &cp) : rdma_connect(id, &cp))
		return die(server ? "rdma_accept" : "rdma_connect");
	printf("siw_verbs: connected on %s, %" PRIu64 " bytes, seed %" PRIu64 ", %" PRIu64
	       " latency iterations, %g s bandwidth, %s\n",
	       ibv_get_device_name(id->verbs->device), size, seed, iters, secs,
	       lead ? "leading" : "answering");

	adv = (struct msg){ .type = T_ADV, .rkey = t.region_mr->rkey,
			    .addr = (uintptr_t)t.region, .len = size, .hash = modes };
	if (t_swap(&t, lead, &adv, &peer))
		return 1;
	if (peer.len != size || peer.hash != modes)
		return fprintf(stderr, "siw_verbs: the peer runs size %" PRIu64 " modes %" PRIx64
			       ", this side %" PRIu64 " %" PRIx64 "\n", peer.len, peer.hash,
			       size, modes), 1;
	t.peer_addr = peer.addr;
	t.peer_rkey = peer.rkey;

	if (iters) {
		for (uint64_t i = 0; i < iters; i++) {
			double t0 = now_us();
			bool last = i + 1 == iters;

			if (lead) {
				if (t_post(&t, IBV_WR_SEND, t.sdata, t.sdata_mr, size) ||
				    t_recv_data(&t, last, &ok))
					return 1;
				us[i] = (now_us() - t0) / 2;
			} else if (t_recv_data(&t, last, &ok) ||
				   t_post(&t, IBV_WR_SEND, t.sdata, t.sdata_mr, size)) {
				return 1;
			}
		}
		if (lead)
			print_lat("send_lat", size, us, iters);
		for (uint64_t i = 0; i < iters; i++) {
			double t0 = now_us();

			if (lead) {
				if (t_write(&t, tag(i)) || t_watch(&t, tag(i)))
					return 1;
				us[i] = (now_us() - t0) / 2;
			} else if (t_watch(&t, tag(i)) || t_write(&t, tag(i))) {
				return 1;
			}
		}
		ok &= check("zcddp's last latency RDMA Write into siw's region",
			    fnv(t.region, size), tagged_hash(size, seed, 'V', tag(iters - 1)));
		if (lead)
			print_lat("write_lat", size, us, iters);
		if (t_drain(&t))
			return 1;
	}

	if (secs > 0) {
		gen(t.src, size, seed, 'W');
		if (lead) {
			uint64_t n = 0, hash = fnv(t.src, size);
			double t0, el, mbs;

			if (t_want(&t, T_READY, &m))
				return 1;
			t0 = now_us();
			while (n == 0 || now_us() - t0 < secs * 1e6) {
				if (t_post(&t, IBV_WR_RDMA_WRITE, t.src, t.src_mr, size))
					return 1;
				n++;
			}
			m = (struct msg){ .type = T_DONE_BW, .len = n, .hash = hash };
			if (t_msg(&t, &m) || t_want(&t, T_ACK, &m))
				return 1;
			el = (now_us() - t0) / 1e6;
			mbs = (double)n * size / el / 1e6;
			printf("siw_verbs: write_bw %" PRIu64 " B: %" PRIu64
			       " RDMA Writes in %.3f s (to zcddp's answer), %.3f MB/s\n",
			       size, n, el, mbs);
			printf("siw_verbs: result write_bw %" PRIu64 " %.3f MB/s\n", size, mbs);
		} else {
			uint64_t want = pattern_hash(size, seed, 'V');

			memset(t.region, 0, size);
			m = (struct msg){ .type = T_READY };
			if (t_msg(&t, &m) || t_want(&t, T_DONE_BW, &peer))
				return 1;
			m = (struct msg){ .type = T_ACK };
			if (t_msg(&t, &m))
				return 1;
			printf("siw_verbs: %" PRIu64 " RDMA Writes of %" PRIu64 " B received\n",
			       peer.len, size);
			ok &= check("zcddp's bandwidth RDMA Writes into siw's region",
				    fnv(t.region, size), want);
			ok &= check("  their hash as zcddp sent it", peer.hash, want);
		}
		if (t_drain(&t))
			return 1;
	}

	m = (struct msg){ .type = T_FIN, .hash = ok ? 0 : 1 };
	if (t_swap(&t, lead, &m, &peer) || t_drain(&t))
		return 1;
	printf("siw_verbs: zcddp's checks %s\n", peer.hash == 0 ? "passed" : "FAILED");
	ok &= peer.hash == 0;
	printf("siw_verbs: %s\n", ok ? "all checked" : "FAILED");
	rdma_disconnect(id);
	rdma_dereg_mr(t.rx_mr);
	rdma_dereg_mr(t.smsg_mr);
	rdma_dereg_mr(t.sdata_mr);
	rdma_dereg_mr(t.src_mr);
	ibv_dereg_mr(t.region_mr);
	rdma_destroy_ep(id);
	free(us);
	return ok ? 0 : 1;
}

/* The exchange's buffers and their registrations (cr: the region the peer
 * Reads and Writes; cw: the Write source; rd: the Read target). */
struct bufs {
	uint8_t *smsg, *rmsg, *sdata, *rdata, *cr, *cw, *rd;
	struct ibv_mr *smsg_mr, *rmsg_mr, *sdata_mr, *rdata_mr, *cr_mr, *cw_mr, *rd_mr;
	size_t sendsz;
};

/* The peer's data Send, ADV and DONE of a round. */
static int post_recvs(struct bufs *b)
{
	if (rdma_post_recv(id, NULL, b->rdata, b->sendsz, b->rdata_mr) ||
	    rdma_post_recv(id, NULL, b->rmsg, MSG_LEN, b->rmsg_mr) ||
	    rdma_post_recv(id, NULL, b->rmsg + MSG_LEN, MSG_LEN, b->rmsg_mr))
		return die("rdma_post_recv");
	return 0;
}

/* One round of the exchange (the top of the file) with the patterns of
 * SEED; *ok cleared by a failed check. With MORE, the next round's
 * receives are posted before the FIN, which the peer may answer with the
 * next round's data Send at once. 0, or 1 on an error (printed). */
static int exchange(struct bufs *b, bool server, uint64_t size, uint64_t seed, bool more, bool *ok)
{
	size_t sendsz = b->sendsz;
	struct msg adv, done, m;
	long n;

	gen(b->sdata, sendsz, seed, 'S');
	gen(b->cr, size, seed, 'C');
	gen(b->cw, size, seed, 'W');
	/* The data Sends, the MPA initiator's first: each side checks the
	 * bytes of its receive. */
	for (int i = 0; i < 2; i++) {
		if (server == (i == 0)) {
			n = recv_comp("receive data");
			if (n != (long)sendsz)
				return fprintf(stderr, "siw_verbs: data Send of %ld bytes\n", n), 1;
			*ok &= check("Send from zcddp received", fnv(b->rdata, sendsz),
				     pattern_hash(sendsz, seed, 'T'));
			continue;
		}
		if (rdma_post_send(id, NULL, b->sdata, sendsz, b->sdata_mr, IBV_SEND_SIGNALED) ||
		    send_comp("send data"))
			return 1;
		if (verbose)
			printf("siw_verbs: sent %zu bytes, hash %016" PRIx64 "\n", sendsz,
			       fnv(b->sdata, sendsz));
	}

	n = recv_comp("receive ADV");
	if (n != MSG_LEN)
		return fprintf(stderr, "siw_verbs: ADV of %ld bytes\n", n), 1;
	adv = get_msg(b->rmsg);
	if (adv.type != T_ADV || adv.len != size)
		return fprintf(stderr, "siw_verbs: bad ADV type %u len %" PRIu64 "\n", adv.type,
			       adv.len), 1;

	/* RDMA Read of the peer's region, then RDMA Write into it. */
	if (rdma_post_read(id, NULL, b->rd, size, b->rd_mr, IBV_SEND_SIGNALED, adv.addr,
			   adv.rkey) ||
	    send_comp("RDMA Read"))
		return 1;
	*ok &= check("RDMA Read of zcddp's region", fnv(b->rd, size),
		     pattern_hash(size, seed, 'Z'));
	*ok &= check("  its hash as zcddp advertised", fnv(b->rd, size), adv.hash);
	if (rdma_post_write(id, NULL, b->cw, size, b->cw_mr, IBV_SEND_SIGNALED, adv.addr,
			    adv.rkey) ||
	    send_comp("RDMA Write"))
		return 1;
	if (verbose)
		printf("siw_verbs: RDMA Write of %" PRIu64 " bytes into zcddp's region done\n",
		       size);

	m = (struct msg){ .type = T_DONE_C, .rkey = b->cr_mr->rkey, .addr = (uintptr_t)b->cr,
			  .len = size, .hash = fnv(b->cw, size) };
	put_msg(b->smsg, &m);
	if (rdma_post_send(id, NULL, b->smsg, MSG_LEN, b->smsg_mr, IBV_SEND_SIGNALED) ||
	    send_comp("send DONE"))
		return 1;

	/* The peer Reads this side's region and Writes pattern 'V' into it. */
	n = recv_comp("receive DONE");
	if (n != MSG_LEN)
		return fprintf(stderr, "siw_verbs: DONE of %ld bytes\n", n), 1;
	done = get_msg(b->rmsg + MSG_LEN);
	if (done.type != T_DONE_Z)
		return fprintf(stderr, "siw_verbs: bad DONE type %u\n", done.type), 1;
	*ok &= check("zcddp's RDMA Write into siw's region", fnv(b->cr, size),
		     pattern_hash(size, seed, 'V'));
	*ok &= check("  its hash as zcddp sent it", fnv(b->cr, size), done.hash);

	if (more && *ok && post_recvs(b))
		return 1;
	m = (struct msg){ .type = T_FIN, .hash = *ok ? 0 : 1 };
	put_msg(b->smsg, &m);
	if (rdma_post_send(id, NULL, b->smsg, MSG_LEN, b->smsg_mr, IBV_SEND_SIGNALED) ||
	    send_comp("send FIN"))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7174";
	uint64_t seed = 1, size = 65536, iters = 0, count = 1, r;
	double secs = 0;
	bool server = false, ok = true;
	struct rdma_addrinfo hints = {}, *res;
	struct ibv_qp_init_attr attr = {};
	struct rdma_conn_param cp = {};
	struct bufs b = {};
	size_t sendsz;
	int c;

	while ((c = getopt(argc, argv, "a:p:S:r:sL:B:C:")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'S': size = strtoull(optarg, NULL, 0); break;
		case 'r': seed = strtoull(optarg, NULL, 0); break;
		case 's': server = true; break;
		case 'L': iters = strtoull(optarg, NULL, 0); break;
		case 'B': secs = strtod(optarg, NULL); break;
		case 'C': count = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: siw_verbs -a ADDR [-p PORT] [-S SIZE] [-r SEED] [-s]"
				" [-C COUNT] [-L ITERS] [-B SECONDS]\n");
			return 2;
		}
	}
	if (!addr || size < 1 || size > (1u << 30) || iters > 1000000 || !(secs >= 0) ||
	    secs > 3600 || count < 1 || count > 1000000) {
		fprintf(stderr, "usage: siw_verbs -a ADDR [-p PORT] [-S SIZE (1 B to 1 GiB)] [-r SEED] [-s]"
			" [-C COUNT (1 to 10^6)]\n");
		return 2;
	}
	sendsz = size < SEND_MAX ? size : SEND_MAX;

	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return die("rdma_getaddrinfo");
	/* The timing modes keep up to WINDOW Writes and a message or two
	 * outstanding. */
	attr.cap.max_send_wr = iters || secs > 0 ? 64 : 8;
	attr.cap.max_recv_wr = 8;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	if (server) {
		struct rdma_cm_id *listen_id;

		if (rdma_create_ep(&listen_id, res, NULL, &attr))
			return die("rdma_create_ep (listen)");
		if (rdma_listen(listen_id, 1))
			return die("rdma_listen");
		printf("siw_verbs: listening\n");
		fflush(stdout);
		if (rdma_get_request(listen_id, &id))
			return die("rdma_get_request");
	} else if (rdma_create_ep(&id, res, NULL, &attr)) {
		return die("rdma_create_ep");
	}
	rdma_freeaddrinfo(res);
	if (iters || secs > 0)
		return timing(server, size, seed, iters, secs);

	b.sendsz = sendsz;
	b.smsg = zalloc(MSG_LEN);
	b.rmsg = zalloc(2 * MSG_LEN);
	b.sdata = zalloc(sendsz);
	b.rdata = zalloc(sendsz);
	b.cr = zalloc(size);
	b.cw = zalloc(size);
	b.rd = zalloc(size);
	if (!b.smsg || !b.rmsg || !b.sdata || !b.rdata || !b.cr || !b.cw || !b.rd)
		return die("allocation");
	b.smsg_mr = rdma_reg_msgs(id, b.smsg, MSG_LEN);
	b.rmsg_mr = rdma_reg_msgs(id, b.rmsg, 2 * MSG_LEN);
	b.sdata_mr = rdma_reg_msgs(id, b.sdata, sendsz);
	b.rdata_mr = rdma_reg_msgs(id, b.rdata, sendsz);
	b.cw_mr = rdma_reg_msgs(id, b.cw, size);
	b.rd_mr = rdma_reg_msgs(id, b.rd, size);
	b.cr_mr = ibv_reg_mr(id->pd, b.cr, size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!b.smsg_mr || !b.rmsg_mr || !b.sdata_mr || !b.rdata_mr || !b.cw_mr || !b.rd_mr ||
	    !b.cr_mr)
		return die("register");
	/* The first round's receives, posted before the connection is up. */
	if (post_recvs(&b))
		return 1;

	/* rping's parameters: one RDMA Read each way, no private data. */
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	if (server ? rdma_accept(id, &cp) : rdma_connect(id, &cp))
		return die(server ? "rdma_accept" : "rdma_connect");
	printf("siw_verbs: connected on %s, %" PRIu64 " bytes, seed %" PRIu64 "\n",
	       ibv_get_device_name(id->verbs->device), size, seed);

	for (r = 0; r < count && ok; r++) {
		verbose = r == 0;
		if (exchange(&b, server, size, seed + r, r + 1 < count, &ok))
			return 1;
	}
	printf("siw_verbs: %" PRIu64 " rounds\n", r);
	printf("siw_verbs: %s\n", ok ? "all checked" : "FAILED");
	rdma_disconnect(id);
	rdma_dereg_mr(b.smsg_mr);
	rdma_dereg_mr(b.rmsg_mr);
	rdma_dereg_mr(b.sdata_mr);
	rdma_dereg_mr(b.rdata_mr);
	rdma_dereg_mr(b.cw_mr);
	rdma_dereg_mr(b.rd_mr);
	ibv_dereg_mr(b.cr_mr);
	rdma_destroy_ep(id);
	return ok ? 0 : 1;
}
