/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU 64-bit counters (rust/zcnet/percpu.rs): counting is a
 * this_cpu_add (no shared cache line, safe in any context), reading sums
 * every possible CPU.
 */
#ifndef ZCNET_HELPERS_PERCPU_H
#define ZCNET_HELPERS_PERCPU_H

#include <linux/types.h>

struct zcnet_percpu;

/* n counters per CPU, all zero; NULL when memory is short. May sleep. */
struct zcnet_percpu *zcnet_helper_percpu_new(unsigned int n);
void zcnet_helper_percpu_free(struct zcnet_percpu *c);
/* Adds v to counter i on this CPU (ignored past the last). */
void zcnet_helper_percpu_add(struct zcnet_percpu *c, unsigned int i, u64 v);
/* Counter i summed over the CPUs (0 past the last). */
u64 zcnet_helper_percpu_sum(struct zcnet_percpu *c, unsigned int i);

#endif /* ZCNET_HELPERS_PERCPU_H */
