// SPDX-License-Identifier: GPL-2.0
/*
 * siw_verbs: a small rdma-core program (libibverbs + librdmacm) that runs on
 * a soft-iWARP device and exchanges Send, RDMA Write and RDMA Read with a
 * zcddp peer (zcddp-verbs in the tools workspace), both directions, every
 * byte seeded and checked by hash on both sides (zcddp.sh).
 *
 *   siw_verbs -a ADDR [-p PORT] [-S SIZE] [-r SEED] [-s]
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
 * data).
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
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

enum { MSG_LEN = 32, SEND_MAX = 64 * 1024 };
enum { T_ADV = 1, T_DONE_C = 2, T_DONE_Z = 3, T_FIN = 4 };

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

static bool check(const char *what, uint64_t got, uint64_t want)
{
	printf("siw_verbs: %s %s (hash %016" PRIx64 ", want %016" PRIx64 ")\n", what,
	       got == want ? "ok" : "MISMATCH", got, want);
	return got == want;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7174";
	uint64_t seed = 1, size = 65536;
	bool server = false, ok = true;
	struct rdma_addrinfo hints = {}, *res;
	struct ibv_qp_init_attr attr = {};
	struct rdma_conn_param cp = {};
	struct ibv_mr *smsg_mr, *rmsg_mr, *sdata_mr, *rdata_mr, *cr_mr, *cw_mr, *rd_mr;
	uint8_t *smsg, *rmsg, *sdata, *rdata, *cr, *cw, *rd;
	struct msg adv, done, m;
	size_t sendsz;
	long n;
	int c;

	while ((c = getopt(argc, argv, "a:p:S:r:s")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'S': size = strtoull(optarg, NULL, 0); break;
		case 'r': seed = strtoull(optarg, NULL, 0); break;
		case 's': server = true; break;
		default:
			fprintf(stderr, "usage: siw_verbs -a ADDR [-p PORT] [-S SIZE] [-r SEED] [-s]\n");
			return 2;
		}
	}
	if (!addr || size < 1 || size > (1u << 30)) {
		fprintf(stderr, "usage: siw_verbs -a ADDR [-p PORT] [-S SIZE (1 B to 1 GiB)] [-r SEED] [-s]\n");
		return 2;
	}
	sendsz = size < SEND_MAX ? size : SEND_MAX;

	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return die("rdma_getaddrinfo");
	attr.cap.max_send_wr = 8;
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

	smsg = zalloc(MSG_LEN);
	rmsg = zalloc(2 * MSG_LEN);
	sdata = zalloc(sendsz);
	rdata = zalloc(sendsz);
	cr = zalloc(size);
	cw = zalloc(size);
	rd = zalloc(size);
	if (!smsg || !rmsg || !sdata || !rdata || !cr || !cw || !rd)
		return die("allocation");
	gen(sdata, sendsz, seed, 'S');
	gen(cr, size, seed, 'C');
	gen(cw, size, seed, 'W');
	smsg_mr = rdma_reg_msgs(id, smsg, MSG_LEN);
	rmsg_mr = rdma_reg_msgs(id, rmsg, 2 * MSG_LEN);
	sdata_mr = rdma_reg_msgs(id, sdata, sendsz);
	rdata_mr = rdma_reg_msgs(id, rdata, sendsz);
	cw_mr = rdma_reg_msgs(id, cw, size);
	rd_mr = rdma_reg_msgs(id, rd, size);
	cr_mr = ibv_reg_mr(id->pd, cr, size,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!smsg_mr || !rmsg_mr || !sdata_mr || !rdata_mr || !cw_mr || !rd_mr || !cr_mr)
		return die("register");
	/* The peer's data Send, ADV and DONE, posted before the connection
	 * is up. */
	if (rdma_post_recv(id, NULL, rdata, sendsz, rdata_mr) ||
	    rdma_post_recv(id, NULL, rmsg, MSG_LEN, rmsg_mr) ||
	    rdma_post_recv(id, NULL, rmsg + MSG_LEN, MSG_LEN, rmsg_mr))
		return die("rdma_post_recv");

	/* rping's parameters: one RDMA Read each way, no private data. */
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	if (server ? rdma_accept(id, &cp) : rdma_connect(id, &cp))
		return die(server ? "rdma_accept" : "rdma_connect");
	printf("siw_verbs: connected on %s, %" PRIu64 " bytes, seed %" PRIu64 "\n",
	       ibv_get_device_name(id->verbs->device), size, seed);

	/* The data Sends, the MPA initiator's first: each side checks the
	 * bytes of its receive. */
	for (int i = 0; i < 2; i++) {
		if (server == (i == 0)) {
			n = recv_comp("receive data");
			if (n != (long)sendsz)
				return fprintf(stderr, "siw_verbs: data Send of %ld bytes\n", n), 1;
			ok &= check("Send from zcddp received", fnv(rdata, sendsz),
				    pattern_hash(sendsz, seed, 'T'));
			continue;
		}
		if (rdma_post_send(id, NULL, sdata, sendsz, sdata_mr, IBV_SEND_SIGNALED) ||
		    send_comp("send data"))
			return 1;
		printf("siw_verbs: sent %zu bytes, hash %016" PRIx64 "\n", sendsz,
		       fnv(sdata, sendsz));
	}

	n = recv_comp("receive ADV");
	if (n != MSG_LEN)
		return fprintf(stderr, "siw_verbs: ADV of %ld bytes\n", n), 1;
	adv = get_msg(rmsg);
	if (adv.type != T_ADV || adv.len != size)
		return fprintf(stderr, "siw_verbs: bad ADV type %u len %" PRIu64 "\n", adv.type,
			       adv.len), 1;

	/* RDMA Read of the peer's region, then RDMA Write into it. */
	if (rdma_post_read(id, NULL, rd, size, rd_mr, IBV_SEND_SIGNALED, adv.addr, adv.rkey) ||
	    send_comp("RDMA Read"))
		return 1;
	ok &= check("RDMA Read of zcddp's region", fnv(rd, size), pattern_hash(size, seed, 'Z'));
	ok &= check("  its hash as zcddp advertised", fnv(rd, size), adv.hash);
	if (rdma_post_write(id, NULL, cw, size, cw_mr, IBV_SEND_SIGNALED, adv.addr, adv.rkey) ||
	    send_comp("RDMA Write"))
		return 1;
	printf("siw_verbs: RDMA Write of %" PRIu64 " bytes into zcddp's region done\n", size);

	m = (struct msg){ .type = T_DONE_C, .rkey = cr_mr->rkey, .addr = (uintptr_t)cr,
			  .len = size, .hash = fnv(cw, size) };
	put_msg(smsg, &m);
	if (rdma_post_send(id, NULL, smsg, MSG_LEN, smsg_mr, IBV_SEND_SIGNALED) ||
	    send_comp("send DONE"))
		return 1;

	/* The peer Reads this side's region and Writes pattern 'V' into it. */
	n = recv_comp("receive DONE");
	if (n != MSG_LEN)
		return fprintf(stderr, "siw_verbs: DONE of %ld bytes\n", n), 1;
	done = get_msg(rmsg + MSG_LEN);
	if (done.type != T_DONE_Z)
		return fprintf(stderr, "siw_verbs: bad DONE type %u\n", done.type), 1;
	ok &= check("zcddp's RDMA Write into siw's region", fnv(cr, size),
		    pattern_hash(size, seed, 'V'));
	ok &= check("  its hash as zcddp sent it", fnv(cr, size), done.hash);

	m = (struct msg){ .type = T_FIN, .hash = ok ? 0 : 1 };
	put_msg(smsg, &m);
	if (rdma_post_send(id, NULL, smsg, MSG_LEN, smsg_mr, IBV_SEND_SIGNALED) ||
	    send_comp("send FIN"))
		return 1;
	printf("siw_verbs: %s\n", ok ? "all checked" : "FAILED");
	rdma_disconnect(id);
	rdma_dereg_mr(smsg_mr);
	rdma_dereg_mr(rmsg_mr);
	rdma_dereg_mr(sdata_mr);
	rdma_dereg_mr(rdata_mr);
	rdma_dereg_mr(cw_mr);
	rdma_dereg_mr(rd_mr);
	ibv_dereg_mr(cr_mr);
	rdma_destroy_ep(id);
	return ok ? 0 : 1;
}
