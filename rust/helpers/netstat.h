/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-network-namespace counters shown as /proc/net/NAME, one `Name value`
 * line each (as /proc/net/tls_stat): per-CPU, so counting is a this_cpu_add.
 */
#ifndef ZCNET_NETSTAT_H
#define ZCNET_NETSTAT_H

#include <linux/types.h>

struct net;

#define ZCNET_NETSTAT_MAX 48

/* Names counter idx (a static string), before the registration. */
void zcnet_helper_netstat_name(unsigned int idx, const char *name);
/* Registers the pernet file NAME with counters 0..n. */
int zcnet_helper_netstat_register(const char *name, unsigned int n);
void zcnet_helper_netstat_unregister(void);
/* Adds delta to counter idx of net. */
void zcnet_helper_netstat_add(struct net *net, unsigned int idx, long delta);
/* Adds v[i] to counter i of net for each bit i set in mask, and zeroes v[i]. */
void zcnet_helper_netstat_add_all(struct net *net, long *v, u64 mask);
/* The sum of counter idx of net over all CPUs. */
long zcnet_helper_netstat_get(struct net *net, unsigned int idx);
/* get_net / put_net */
struct net *zcnet_helper_get_net(struct net *net);
void zcnet_helper_put_net(struct net *net);
#endif
