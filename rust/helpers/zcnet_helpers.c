// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers shared by every zcnet module (see zcnet_helpers.h). Included by one
 * small file in each module directory instead of being linked as a shared
 * object, so that each .ko gets its own copy with its own KBUILD_MODNAME.
 */
#include <linux/module.h>
#include <linux/utsname.h>

#include "zcnet_helpers.h"

struct module *zcnet_helper_this_module(void)
{
	return THIS_MODULE;
}

const char *zcnet_helper_kernel_release(void)
{
	return init_utsname()->release;
}

#include <linux/etherdevice.h>
#include <linux/if_packet.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/ip.h>
#include <net/rtnetlink.h>

void *zcnet_helper_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}

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

bool zcnet_helper_rx_handler_busy(struct net_device *dev)
{
	return netdev_is_rx_handler_busy(dev);
}

void *zcnet_helper_rx_handler_data_if(struct net_device *dev, void *handler)
{
	if (rtnl_dereference(dev->rx_handler) != handler)
		return NULL;
	return rtnl_dereference(dev->rx_handler_data);
}

void *zcnet_helper_rx_handler_data(const struct net_device *dev)
{
	return rcu_dereference(dev->rx_handler_data);
}

void zcnet_helper_copy_hw_addr(struct net_device *dev, const struct net_device *from)
{
	eth_hw_addr_set(dev, from->dev_addr);
}

struct net_device *zcnet_helper_notifier_dev(void *ptr)
{
	return netdev_notifier_info_to_dev(ptr);
}

struct sk_buff *zcnet_helper_skb_share_check(struct sk_buff *skb)
{
	return skb_share_check(skb, GFP_ATOMIC);
}

void zcnet_helper_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

void zcnet_helper_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

bool zcnet_helper_skb_is_loopback(const struct sk_buff *skb)
{
	return skb->pkt_type == PACKET_LOOPBACK;
}

void zcnet_helper_stacked_setup(struct net_device *dev, const struct net_device_ops *ops,
				const struct ethtool_ops *eops,
				void (*destructor)(struct net_device *dev))
{
	ether_setup(dev);
	dev->priv_flags |= IFF_NO_QUEUE;
	dev->priv_flags &= ~IFF_TX_SKB_SHARING;
	dev->lltx = true;
	dev->needs_free_netdev = true;
	dev->netdev_ops = ops;
	dev->ethtool_ops = eops;
	dev->priv_destructor = destructor;
	dev->min_mtu = ETH_MIN_MTU;
	dev->max_mtu = IP_MAX_MTU - ETH_HLEN;
}

unsigned int zcnet_helper_dev_mtu(const struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

void zcnet_helper_dev_set_mtu(struct net_device *dev, unsigned int mtu)
{
	WRITE_ONCE(dev->mtu, mtu);
}

int zcnet_helper_dev_ifindex(const struct net_device *dev)
{
	return dev->ifindex;
}

bool zcnet_helper_dev_is_ether(const struct net_device *dev)
{
	return dev->type == ARPHRD_ETHER && !(dev->flags & IFF_LOOPBACK);
}

bool zcnet_helper_dev_is_up(const struct net_device *dev)
{
	return dev->flags & IFF_UP;
}

unsigned int zcnet_helper_skb_len(const struct sk_buff *skb)
{
	return skb->len;
}

unsigned char *zcnet_helper_skb_data(const struct sk_buff *skb)
{
	return skb->data;
}

unsigned int zcnet_helper_skb_tailroom(const struct sk_buff *skb)
{
	return skb_tailroom(skb);
}

u16 zcnet_helper_skb_protocol(const struct sk_buff *skb)
{
	return (__force u16)skb->protocol;
}

void zcnet_helper_skb_set_protocol(struct sk_buff *skb, u16 proto_be)
{
	skb->protocol = (__force __be16)proto_be;
}

struct net_device *zcnet_helper_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

void zcnet_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev)
{
	skb->dev = dev;
}

struct sk_buff *zcnet_helper_alloc_skb(unsigned int headroom, unsigned int len)
{
	struct sk_buff *skb = alloc_skb(headroom + len, GFP_ATOMIC);

	if (skb)
		skb_reserve(skb, headroom);
	return skb;
}

unsigned int zcnet_helper_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

bool zcnet_helper_skb_may_pull(struct sk_buff *skb, unsigned int len)
{
	return pskb_may_pull(skb, len);
}

int zcnet_helper_skb_resolve_csum(struct sk_buff *skb)
{
	return skb->ip_summed == CHECKSUM_PARTIAL ? skb_checksum_help(skb) : 0;
}

unsigned int zcnet_helper_ll_reserved_space(const struct net_device *dev)
{
	return LL_RESERVED_SPACE(dev);
}

void zcnet_helper_skb_copy_meta(struct sk_buff *to, const struct sk_buff *from)
{
	to->priority = from->priority;
	to->mark = from->mark;
	skb_set_queue_mapping(to, skb_get_queue_mapping(from));
}
