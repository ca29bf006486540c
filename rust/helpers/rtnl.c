// SPDX-License-Identifier: GPL-2.0
/* rtnetlink link kinds: newlink parameters and link attributes (see rtnl.h). */
#include <net/netlink.h>
#include <net/rtnetlink.h>

#include "rtnl.h"

u32 zcnet_helper_newlink_link(const struct rtnl_newlink_params *params)
{
	return params->tb[IFLA_LINK] ? nla_get_u32(params->tb[IFLA_LINK]) : 0;
}

struct net *zcnet_helper_newlink_link_net(struct rtnl_newlink_params *params)
{
	return rtnl_newlink_link_net(params);
}

u32 zcnet_helper_newlink_mtu(const struct rtnl_newlink_params *params)
{
	return params->tb[IFLA_MTU] ? nla_get_u32(params->tb[IFLA_MTU]) : 0;
}

/* Every link attribute of a zcnet kind is a u32 (types 1..ZCNET_LINK_ATTRS_MAX). */
static const struct nla_policy zcnet_link_policy[ZCNET_LINK_ATTRS_MAX + 1] = {
	[1 ... ZCNET_LINK_ATTRS_MAX] = { .type = NLA_U32 },
};

const struct nla_policy *zcnet_helper_link_policy(void)
{
	return zcnet_link_policy;
}

struct nlattr **zcnet_helper_newlink_data(struct rtnl_newlink_params *params)
{
	return params->data;
}

bool zcnet_helper_link_attr(struct nlattr **data, unsigned int type, u32 *val)
{
	if (!data || type == 0 || type > ZCNET_LINK_ATTRS_MAX || !data[type])
		return false;
	*val = nla_get_u32(data[type]);
	return true;
}

int zcnet_helper_put_link_attr(struct sk_buff *skb, unsigned int type, u32 val)
{
	return nla_put_u32(skb, type, val);
}

size_t zcnet_helper_link_attrs_size(unsigned int n)
{
	return n * nla_total_size(sizeof(u32));
}
