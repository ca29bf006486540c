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

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/bottom_half.h>
#include <linux/ktime.h>

struct page *zcnet_helper_alloc_page(void)
{
	return alloc_page(GFP_ATOMIC | __GFP_NOWARN);
}

void *zcnet_helper_page_address(struct page *page)
{
	return page_address(page);
}

void zcnet_helper_put_page(struct page *page)
{
	put_page(page);
}

struct sk_buff *zcnet_helper_build_page_skb(const void *hdr, unsigned int hdr_len,
					    unsigned int eth_len, struct page *page,
					    unsigned int data_len, struct net_device *dev)
{
	struct sk_buff *skb = alloc_skb(NET_SKB_PAD + NET_IP_ALIGN + hdr_len, GFP_ATOMIC);

	if (!skb) {
		put_page(page);
		return NULL;
	}
	skb_reserve(skb, NET_SKB_PAD + NET_IP_ALIGN);
	skb_put_data(skb, hdr, hdr_len);
	skb_reset_mac_header(skb);
	skb_pull(skb, eth_len);
	skb_reset_network_header(skb);
	skb->mac_len = eth_len;
	skb_add_rx_frag(skb, 0, page, 0, data_len, PAGE_SIZE);
	skb->dev = dev;
	skb->protocol = htons(ETH_P_IP);
	skb->pkt_type = PACKET_HOST;
	skb->ip_summed = CHECKSUM_NONE;
	return skb;
}

int zcnet_helper_netif_rx(struct sk_buff *skb)
{
	return netif_rx(skb);
}

unsigned int zcnet_helper_skb_mac_len(const struct sk_buff *skb)
{
	return skb_mac_header_was_set(skb) ? skb->data - skb_mac_header(skb) : 0;
}

const unsigned char *zcnet_helper_skb_mac_header(const struct sk_buff *skb)
{
	return skb_mac_header(skb);
}

struct zcnet_timer {
	struct timer_list timer;
	void (*fn)(void *data);
	void *data;
};

static void zcnet_timer_cb(struct timer_list *tl)
{
	struct zcnet_timer *t = timer_container_of(t, tl, timer);

	t->fn(t->data);
}

struct zcnet_timer *zcnet_helper_timer_new(void (*fn)(void *data), void *data)
{
	struct zcnet_timer *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	t->fn = fn;
	t->data = data;
	timer_setup(&t->timer, zcnet_timer_cb, 0);
	return t;
}

void zcnet_helper_timer_arm(struct zcnet_timer *t, unsigned long delay_us)
{
	if (!timer_pending(&t->timer))
		mod_timer(&t->timer, jiffies + usecs_to_jiffies(delay_us) + 1);
}

void zcnet_helper_timer_free(struct zcnet_timer *t)
{
	if (!t)
		return;
	timer_shutdown_sync(&t->timer);
	kfree(t);
}

void zcnet_helper_bh_disable(void)
{
	local_bh_disable();
}

void zcnet_helper_bh_enable(void)
{
	local_bh_enable();
}

u64 zcnet_helper_now_ns(void)
{
	return ktime_get_ns();
}
