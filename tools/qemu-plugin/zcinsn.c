// SPDX-License-Identifier: GPL-2.0
/*
 * zcinsn: a QEMU TCG plugin that counts the guest instructions executed,
 * per translation block, between markers the guest places itself.
 *
 * Under TCG a sampling profiler in the guest prices work poorly (the
 * sampling slows paths unevenly) and times scatter by tens of percent from
 * run to run. Instructions executed are exact and repeatable: this plugin
 * counts them per block start address, and a guest program marks the window
 * with an instruction no compiler emits, `nopl 0x5a43000N(%rax)`
 * (tools/qemu-plugin/zcmark.c): N = 1 clears the counts, N = 2 writes them
 * to DIR/insn-SEQ.txt ("address instructions blocks" per block start:
 * instructions and block executions, then "total" and "user", the
 * instructions below the kernel's half). Blocks are counted because under
 * TCG a block ended by an indirect jump or a return costs a lookup of the
 * next one: many short functions cost more than their instructions say. The
 * report, with the guest's /proc/kallsyms, is scripts/insn-report.py.
 *
 *   qemu-system-x86_64 ... -plugin file=zcinsn.so,dir=DIR
 *
 * Built against QEMU 7.2's plugin interface (version 1). The few
 * declarations it needs are written out below, so that no QEMU header is
 * needed to build it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One record per translation: the inline counter adds 1 per execution. */
struct block {
	uint64_t vaddr;
	uint64_t execs;
	uint32_t insns;
};

#define CHUNK 65536
static struct block **chunks;
static size_t nchunks, nblocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char dir[4096] = ".";
static unsigned int seq;

#define MARK_MAGIC 0x5a430000u
enum { MARK_RESET = 1, MARK_DUMP = 2 };

static struct block *block_new(void)
{
	struct block *b;

	pthread_mutex_lock(&lock);
	if (nblocks == nchunks * CHUNK) {
		struct block **c = realloc(chunks, (nchunks + 1) * sizeof(*c));
		struct block *n = calloc(CHUNK, sizeof(*n));

		if (!c || !n) {
			free(n);
			if (c)
				chunks = c;
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		chunks = c;
		chunks[nchunks++] = n;
	}
	b = &chunks[nblocks / CHUNK][nblocks % CHUNK];
	nblocks++;
	pthread_mutex_unlock(&lock);
	return b;
}

static int cmp_vaddr(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* Writes the counts since the last reset, summed per block start. */
static void dump(void)
{
	struct block *all;
	size_t n = 0, i;
	uint64_t total = 0, user = 0;
	char path[4200];
	FILE *f;

	pthread_mutex_lock(&lock);
	all = malloc((nblocks ? nblocks : 1) * sizeof(*all));
	if (all)
		for (i = 0; i < nblocks; i++) {
			struct block *b = &chunks[i / CHUNK][i % CHUNK];

			if (b->execs)
				all[n++] = *b;
		}
	snprintf(path, sizeof(path), "%s/insn-%u.txt", dir, seq++);
	pthread_mutex_unlock(&lock);
	if (!all)
		return;
	qsort(all, n, sizeof(*all), cmp_vaddr);
	f = fopen(path, "w");
	if (f) {
		for (i = 0; i < n;) {
			uint64_t v = all[i].vaddr, sum = 0, execs = 0;

			for (; i < n && all[i].vaddr == v; i++) {
				sum += all[i].execs * all[i].insns;
				execs += all[i].execs;
			}
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", v, sum, execs);
			total += sum;
			if (!(v >> 63))
				user += sum;
		}
		fprintf(f, "total %" PRIu64 "\nuser %" PRIu64 "\n", total, user);
		fclose(f);
	}
	free(all);
}

static void reset(void)
{
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nblocks; i++)
		chunks[i / CHUNK][i % CHUNK].execs = 0;
	pthread_mutex_unlock(&lock);
}

static void on_mark(unsigned int vcpu, void *cmd)
{
	(void)vcpu;
	switch ((uintptr_t)cmd) {
	case MARK_RESET:
		reset();
		break;
	case MARK_DUMP:
		dump();
		break;
	}
}

/* nopl 0x5a43000N(%rax): 0f 1f 80 followed by the 32-bit displacement. */
static unsigned int mark_of(const struct qemu_plugin_insn *insn)
{
	const uint8_t *d = qemu_plugin_insn_data(insn);
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != 7 || d[0] != 0x0f || d[1] != 0x1f || d[2] != 0x80)
		return 0;
	memcpy(&disp, d + 3, sizeof(disp));
	return (disp & 0xffff0000u) == MARK_MAGIC ? disp & 0xffff : 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct block *b = block_new();

	(void)id;
	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = n;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned int m = mark_of(insn);

		if (m)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)m);
	}
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info, int argc,
							       char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "dir=", 4)) {
			snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
		} else {
			fprintf(stderr, "zcinsn: unknown argument %s (dir=DIR)\n", argv[i]);
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
