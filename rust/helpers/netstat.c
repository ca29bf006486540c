// SPDX-License-Identifier: GPL-2.0
/* Per-namespace counters in /proc/net (see netstat.h). */
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "netstat.h"

struct zcnet_netstat {
	long __percpu *v;	/* ZCNET_NETSTAT_MAX per CPU */
};

static unsigned int zcnet_netstat_id;
static const char *zcnet_netstat_name;
static const char *zcnet_netstat_names[ZCNET_NETSTAT_MAX];
static unsigned int zcnet_netstat_n;

static long zcnet_netstat_sum(struct zcnet_netstat *st, unsigned int idx)
{
	long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(st->v, cpu)[idx];
	return sum;
}

static int zcnet_netstat_show(struct seq_file *seq, void *v)
{
	struct zcnet_netstat *st = net_generic(seq_file_single_net(seq), zcnet_netstat_id);
	unsigned int i;

	for (i = 0; i < zcnet_netstat_n; i++)
		seq_printf(seq, "%-32s\t%ld\n", zcnet_netstat_names[i], zcnet_netstat_sum(st, i));
	return 0;
}

static int __net_init zcnet_netstat_init_net(struct net *net)
{
	struct zcnet_netstat *st = net_generic(net, zcnet_netstat_id);

	st->v = __alloc_percpu(sizeof(long) * ZCNET_NETSTAT_MAX, sizeof(long));
	if (!st->v)
		return -ENOMEM;
	if (!proc_create_net_single(zcnet_netstat_name, 0444, net->proc_net,
				    zcnet_netstat_show, NULL)) {
		free_percpu(st->v);
		return -ENOMEM;
	}
	return 0;
}

static void __net_exit zcnet_netstat_exit_net(struct net *net)
{
	struct zcnet_netstat *st = net_generic(net, zcnet_netstat_id);

	remove_proc_entry(zcnet_netstat_name, net->proc_net);
	free_percpu(st->v);
}

static struct pernet_operations zcnet_netstat_ops = {
	.init = zcnet_netstat_init_net,
	.exit = zcnet_netstat_exit_net,
	.id = &zcnet_netstat_id,
	.size = sizeof(struct zcnet_netstat),
};

void zcnet_helper_netstat_name(unsigned int idx, const char *name)
{
	if (idx < ZCNET_NETSTAT_MAX)
		zcnet_netstat_names[idx] = name;
}

int zcnet_helper_netstat_register(const char *name, unsigned int n)
{
	if (n > ZCNET_NETSTAT_MAX)
		return -E2BIG;
	zcnet_netstat_name = name;
	zcnet_netstat_n = n;
	return register_pernet_subsys(&zcnet_netstat_ops);
}

void zcnet_helper_netstat_unregister(void)
{
	unregister_pernet_subsys(&zcnet_netstat_ops);
}

void zcnet_helper_netstat_add(struct net *net, unsigned int idx, long delta)
{
	struct zcnet_netstat *st = net_generic(net, zcnet_netstat_id);

	if (idx < ZCNET_NETSTAT_MAX)
		this_cpu_add(st->v[idx], delta);
}

/* Adds v[i] for each bit i of @mask (the counters a batch touched) and
 * zeroes it: the batch is empty again. */
void zcnet_helper_netstat_add_all(struct net *net, long *v, u64 mask)
{
	struct zcnet_netstat *st = net_generic(net, zcnet_netstat_id);

	while (mask) {
		unsigned int i = __ffs64(mask);

		mask &= mask - 1;
		if (i < ZCNET_NETSTAT_MAX) {
			this_cpu_add(st->v[i], v[i]);
			v[i] = 0;
		}
	}
}

long zcnet_helper_netstat_get(struct net *net, unsigned int idx)
{
	if (idx >= ZCNET_NETSTAT_MAX)
		return 0;
	return zcnet_netstat_sum(net_generic(net, zcnet_netstat_id), idx);
}

struct net *zcnet_helper_get_net(struct net *net)
{
	return get_net(net);
}

void zcnet_helper_put_net(struct net *net)
{
	put_net(net);
}
