/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rtnetlink link kinds: the parameters of `ip link add` and the kind's own
 * attributes (rust/zcnet/stacked.rs).
 */
#ifndef ZCNET_HELPERS_RTNL_H
#define ZCNET_HELPERS_RTNL_H

#include <linux/types.h>

struct net;
struct nla_policy;
struct nlattr;
struct rtnl_newlink_params;
struct sk_buff;

/* The lower device index of `ip link add ... link DEV` (0 when absent). */
u32 zcnet_helper_newlink_link(const struct rtnl_newlink_params *params);
/* rtnl_newlink_link_net(params) */
struct net *zcnet_helper_newlink_link_net(struct rtnl_newlink_params *params);
/* tb[IFLA_MTU] when given, else 0. */
u32 zcnet_helper_newlink_mtu(const struct rtnl_newlink_params *params);
/*
 * Link attributes of a kind (IFLA_INFO_DATA): types 1..ZCNET_LINK_ATTRS_MAX,
 * each an NLA_U32. The policy covers them all; a kind sets maxtype to its own
 * count.
 */
#define ZCNET_LINK_ATTRS_MAX 16
const struct nla_policy *zcnet_helper_link_policy(void);
/* params->data: the kind's parsed attributes, or NULL when none were given. */
struct nlattr **zcnet_helper_newlink_data(struct rtnl_newlink_params *params);
/* data[type] as a u32 into *val; false when data is NULL or it is absent. */
bool zcnet_helper_link_attr(struct nlattr **data, unsigned int type, u32 *val);
/* nla_put_u32(skb, type, val): 0 or -EMSGSIZE. */
int zcnet_helper_put_link_attr(struct sk_buff *skb, unsigned int type, u32 val);
/* Room n u32 attributes take in a message (nla_total_size). */
size_t zcnet_helper_link_attrs_size(unsigned int n);

#endif /* ZCNET_HELPERS_RTNL_H */
