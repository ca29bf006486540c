/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for zcnet: wrappers for static inline kernel functions and macros
 * that bindgen cannot turn into callable Rust functions. Each module links its
 * own copy (see the module directories' *_helpers.c), so KBUILD_MODNAME and
 * THIS_MODULE are right in every .ko.
 */
#ifndef ZCNET_HELPERS_H
#define ZCNET_HELPERS_H

#include <linux/types.h>

struct module;

/* THIS_MODULE of the .ko the helper is linked into. */
struct module *zcnet_helper_this_module(void);
/* The kernel's release string (utsname()->release), for log lines. */
const char *zcnet_helper_kernel_release(void);


struct net_device;
struct sk_buff;
struct rtnl_newlink_params;
struct net;

/* netdev_priv(dev) */
void *zcnet_helper_netdev_priv(const struct net_device *dev);
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
struct nla_policy;
struct nlattr;
const struct nla_policy *zcnet_helper_link_policy(void);
/* params->data: the kind's parsed attributes, or NULL when none were given. */
struct nlattr **zcnet_helper_newlink_data(struct rtnl_newlink_params *params);
/* data[type] as a u32 into *val; false when data is NULL or it is absent. */
bool zcnet_helper_link_attr(struct nlattr **data, unsigned int type, u32 *val);
/* nla_put_u32(skb, type, val): 0 or -EMSGSIZE. */
int zcnet_helper_put_link_attr(struct sk_buff *skb, unsigned int type, u32 val);
/* Room n u32 attributes take in a message (nla_total_size). */
size_t zcnet_helper_link_attrs_size(unsigned int n);
/* netdev_is_rx_handler_busy(dev), under RTNL. */
bool zcnet_helper_rx_handler_busy(struct net_device *dev);
/* The rx_handler_data of dev when its rx_handler is `handler`, else NULL (RTNL). */
void *zcnet_helper_rx_handler_data_if(struct net_device *dev, void *handler);
/* rcu_dereference(dev->rx_handler_data), in the rx handler. */
void *zcnet_helper_rx_handler_data(const struct net_device *dev);
/* eth_hw_addr_set(dev, from->dev_addr) */
void zcnet_helper_copy_hw_addr(struct net_device *dev, const struct net_device *from);
/* netdev_notifier_info_to_dev(ptr) */
struct net_device *zcnet_helper_notifier_dev(void *ptr);
/* skb_share_check(skb, GFP_ATOMIC): NULL when the clone failed (skb freed). */
struct sk_buff *zcnet_helper_skb_share_check(struct sk_buff *skb);
/* consume_skb(skb): freed after use, not dropped. */
void zcnet_helper_consume_skb(struct sk_buff *skb);
/* kfree_skb(skb): a drop. */
void zcnet_helper_kfree_skb(struct sk_buff *skb);
/* skb->pkt_type == PACKET_LOOPBACK */
bool zcnet_helper_skb_is_loopback(const struct sk_buff *skb);
/*
 * Sets a stacked software device up: Ethernet, no queue, lockless TX, freed by
 * the core after priv_destructor, the given ops, MTU range 68..65521.
 */
struct net_device_ops;
struct ethtool_ops;
void zcnet_helper_stacked_setup(struct net_device *dev, const struct net_device_ops *ops,
				const struct ethtool_ops *eops,
				void (*destructor)(struct net_device *dev));

/* Field accessors (struct layouts depend on the kernel configuration). */
unsigned int zcnet_helper_dev_mtu(const struct net_device *dev);
void zcnet_helper_dev_set_mtu(struct net_device *dev, unsigned int mtu);
int zcnet_helper_dev_ifindex(const struct net_device *dev);
bool zcnet_helper_dev_is_ether(const struct net_device *dev);
bool zcnet_helper_dev_is_up(const struct net_device *dev);
unsigned int zcnet_helper_skb_len(const struct sk_buff *skb);
unsigned char *zcnet_helper_skb_data(const struct sk_buff *skb);
u16 zcnet_helper_skb_protocol(const struct sk_buff *skb);
struct net_device *zcnet_helper_skb_dev(const struct sk_buff *skb);
void zcnet_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev);
/* skb_headlen(skb) */
unsigned int zcnet_helper_skb_headlen(const struct sk_buff *skb);
/* pskb_may_pull(skb, len) */
bool zcnet_helper_skb_may_pull(struct sk_buff *skb, unsigned int len);
/* skb_checksum_help(skb) when skb->ip_summed == CHECKSUM_PARTIAL, else 0. */
int zcnet_helper_skb_resolve_csum(struct sk_buff *skb);
/* LL_RESERVED_SPACE(dev) */
unsigned int zcnet_helper_ll_reserved_space(const struct net_device *dev);
/* Copies priority, mark and queue mapping of `from` to `to` (fragments of one packet). */
void zcnet_helper_skb_copy_meta(struct sk_buff *to, const struct sk_buff *from);

/* Pages that receive payload: alloc_page(GFP_ATOMIC), page_address, put_page. */
struct page;
struct page *zcnet_helper_alloc_page(void);
void *zcnet_helper_page_address(struct page *page);
void zcnet_helper_put_page(struct page *page);
/*
 * Whether the caller's reference is the only one left on `page` (nobody else
 * can read or write it), and the page is an ordinary local one (not from the
 * emergency reserves): then it may receive new data.
 */
bool zcnet_helper_page_reusable(struct page *page);
/* get_page(page): one more reference. */
void zcnet_helper_get_page(struct page *page);
/*
 * Builds the skb of a speculated packet: `hdr` (Ethernet + IPv4 + transport
 * header, `eth_len` of it Ethernet) in the linear part, then `page` (the
 * reference passes to the skb) as fragment 0, `data_len` bytes at offset 0.
 * The skb's data starts at the IP header, its MAC header is the Ethernet one.
 * NULL on allocation failure (the page reference is then dropped).
 */
struct sk_buff *zcnet_helper_build_page_skb(const void *hdr, unsigned int hdr_len,
					    unsigned int eth_len, struct page *page,
					    unsigned int data_len, struct net_device *dev,
					    const struct sk_buff *meta);
/*
 * netif_receive_skb(skb) with bottom halves off: the packet goes up the
 * stack now, in order with what the caller delivered before (the bridge
 * does the same from its rx handler).
 */
int zcnet_helper_netif_receive_skb(struct sk_buff *skb);
/* skb->next, and setting it (for chains the caller owns; NULL when on none). */
struct sk_buff *zcnet_helper_skb_next(const struct sk_buff *skb);
void zcnet_helper_skb_set_next(struct sk_buff *skb, struct sk_buff *next);
/* skb_mac_header(skb) .. skb->data: the Ethernet header of a received frame. */
unsigned int zcnet_helper_skb_mac_len(const struct sk_buff *skb);
const unsigned char *zcnet_helper_skb_mac_header(const struct sk_buff *skb);

/* A timer_list whose callback gets `data`; softirq context. */
struct zcnet_timer;
struct zcnet_timer *zcnet_helper_timer_new(void (*fn)(void *data), void *data);
/* Arms the timer `delay_us` microseconds from now unless it is pending. */
void zcnet_helper_timer_arm(struct zcnet_timer *t, unsigned long delay_us);
/* Stops the timer for good: waits for a running callback; arming it later does nothing. */
void zcnet_helper_timer_shutdown(struct zcnet_timer *t);
/* Shuts the timer down (waiting for a running callback) and frees it. */
void zcnet_helper_timer_free(struct zcnet_timer *t);
/* local_bh_disable() / local_bh_enable() */
void zcnet_helper_bh_disable(void);
void zcnet_helper_bh_enable(void);
/* ktime_get_ns() */
u64 zcnet_helper_now_ns(void);
/* get_random_u32(): unpredictable, callable from any context. */
u32 zcnet_helper_random_u32(void);
/*
 * One IPv4 fragment of `from`: `hdr` (Ethernet + IPv4) linear, then `len`
 * payload bytes from offset `off` of `from` referenced as page fragments
 * (copied when `allow_ref` is false or referencing is impossible); *copied
 * gets the payload bytes copied. NULL when memory is short or out of range.
 */
struct sk_buff *zcnet_helper_build_tx_frag(struct sk_buff *from, const void *hdr,
					   unsigned int hdr_len, unsigned int off,
					   unsigned int len, unsigned int headroom,
					   bool allow_ref, unsigned int *copied);
/* dev->features & NETIF_F_SG */
bool zcnet_helper_dev_has_sg(const struct net_device *dev);
/* skb->pkt_type == PACKET_HOST */
bool zcnet_helper_skb_for_host(const struct sk_buff *skb);

/* Attribute `idx` (< 16) of the module's sysfs group: 0644 or 0444. */
int zcnet_helper_sysfs_add(unsigned int idx, const char *name, bool writable);
/* Names the group (devices created afterwards get it) and its callbacks. */
void zcnet_helper_sysfs_set(const char *group,
			    ssize_t (*show)(struct net_device *dev, unsigned int idx, char *buf),
			    ssize_t (*store)(struct net_device *dev, unsigned int idx,
					     const char *buf, size_t len));
/* An Ethernet frame (header included, padded to 60 bytes) for `dev`. */
struct sk_buff *zcnet_helper_build_frame(struct net_device *dev, const void *data,
					 unsigned int len);
/* The device's MAC address (6 bytes) into `out`. */
void zcnet_helper_dev_addr(const struct net_device *dev, u8 *out);
/* CAP_NET_ADMIN in the device's network namespace. */
bool zcnet_helper_net_admin_capable(const struct net_device *dev);

/* skb_vlan_tag_present(skb): the frame carried a VLAN tag (offloaded). */
bool zcnet_helper_skb_vlan_tagged(const struct sk_buff *skb);
/* The stack's IP ID for a packet with the 20-byte IPv4 header `iph`. */
u16 zcnet_helper_ip_ident(const struct net_device *dev, const void *iph);
/* inet_addr_type_dev_table(dev_net(dev), dev, daddr) == RTN_LOCAL */
bool zcnet_helper_ipv4_is_local(const struct net_device *dev, const u8 *daddr);

#endif /* ZCNET_HELPERS_H */
