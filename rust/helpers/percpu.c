// SPDX-License-Identifier: GPL-2.0
/* Per-CPU 64-bit counters (see percpu.h). */
#include <linux/percpu.h>
#include <linux/slab.h>

#include "percpu.h"

struct zcnet_percpu {
	u64 __percpu *v;	/* n per CPU */
	unsigned int n;
};

struct zcnet_percpu *zcnet_helper_percpu_new(unsigned int n)
{
	struct zcnet_percpu *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	c->v = __alloc_percpu(sizeof(u64) * max(n, 1U), sizeof(u64));
	if (!c->v) {
		kfree(c);
		return NULL;
	}
	c->n = n;
	return c;
}

void zcnet_helper_percpu_free(struct zcnet_percpu *c)
{
	if (!c)
		return;
	free_percpu(c->v);
	kfree(c);
}

void zcnet_helper_percpu_add(struct zcnet_percpu *c, unsigned int i, u64 v)
{
	if (i < c->n)
		this_cpu_add(c->v[i], v);
}

u64 zcnet_helper_percpu_sum(struct zcnet_percpu *c, unsigned int i)
{
	u64 sum = 0;
	int cpu;

	if (i >= c->n)
		return 0;
	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(c->v, cpu)[i]);
	return sum;
}
