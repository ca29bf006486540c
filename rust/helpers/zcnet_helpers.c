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
#include <net/tcp.h>
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

/*
 * The driver's sysfs group (/sys/class/net/DEV/GROUP/ATTR), one per module:
 * filled by zcnet_helper_sysfs_add() at module init, before any device exists.
 */
#define ZCNET_SYSFS_MAX 16
static struct device_attribute zcnet_sysfs_attrs[ZCNET_SYSFS_MAX];
static struct attribute *zcnet_sysfs_ptrs[ZCNET_SYSFS_MAX + 1];
static struct attribute_group zcnet_sysfs_group = { .attrs = zcnet_sysfs_ptrs };
static ssize_t (*zcnet_sysfs_show)(struct net_device *dev, unsigned int idx, char *buf);
static ssize_t (*zcnet_sysfs_store)(struct net_device *dev, unsigned int idx,
				    const char *buf, size_t len);

static ssize_t zcnet_attr_show(struct device *d, struct device_attribute *attr, char *buf)
{
	return zcnet_sysfs_show(to_net_dev(d), attr - zcnet_sysfs_attrs, buf);
}

static ssize_t zcnet_attr_store(struct device *d, struct device_attribute *attr,
				const char *buf, size_t len)
{
	return zcnet_sysfs_store(to_net_dev(d), attr - zcnet_sysfs_attrs, buf, len);
}

int zcnet_helper_sysfs_add(unsigned int idx, const char *name, bool writable)
{
	struct device_attribute *a;

	if (idx >= ZCNET_SYSFS_MAX)
		return -E2BIG;
	a = &zcnet_sysfs_attrs[idx];
	sysfs_attr_init(&a->attr);
	a->attr.name = name;
	a->attr.mode = writable ? 0644 : 0444;
	a->show = zcnet_attr_show;
	a->store = writable ? zcnet_attr_store : NULL;
	zcnet_sysfs_ptrs[idx] = &a->attr;
	return 0;
}

void zcnet_helper_sysfs_set(const char *group,
			    ssize_t (*show)(struct net_device *dev, unsigned int idx, char *buf),
			    ssize_t (*store)(struct net_device *dev, unsigned int idx,
					     const char *buf, size_t len))
{
	zcnet_sysfs_show = show;
	zcnet_sysfs_store = store;
	zcnet_sysfs_group.name = group;
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
	/*
	 * Scatter-gather and checksum offload: the stack hands over packets whose
	 * payload is in page fragments (the driver references them rather than
	 * copying) with the transport checksum still to be computed.
	 */
	dev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM;
	dev->features = dev->hw_features;
	if (zcnet_sysfs_group.name)
		dev->sysfs_groups[0] = &zcnet_sysfs_group;
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

u16 zcnet_helper_skb_protocol(const struct sk_buff *skb)
{
	return (__force u16)skb->protocol;
}

struct net_device *zcnet_helper_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

void zcnet_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev)
{
	skb->dev = dev;
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

bool zcnet_helper_page_reusable(struct page *page)
{
	return page_ref_count(page) == 1 && !page_is_pfmemalloc(page) &&
	       page_to_nid(page) == numa_mem_id();
}

void zcnet_helper_get_page(struct page *page)
{
	get_page(page);
}

struct sk_buff *zcnet_helper_build_page_skb(const void *hdr, unsigned int hdr_len,
					    unsigned int eth_len, struct page *page,
					    unsigned int data_len, struct net_device *dev,
					    const struct sk_buff *meta)
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
	/* What ip_frag_reasm() keeps of the fragments. */
	skb->mark = meta->mark;
	skb->priority = meta->priority;
	skb->tstamp = meta->tstamp;
	skb->tstamp_type = meta->tstamp_type;
	skb_copy_hash(skb, meta);
	skb_set_queue_mapping(skb, skb_get_queue_mapping(meta));
	return skb;
}

int zcnet_helper_netif_receive_skb(struct sk_buff *skb)
{
	int r;

	/* Softirq callers nest; a process-context caller gets BHs off. */
	local_bh_disable();
	r = netif_receive_skb(skb);
	local_bh_enable();
	return r;
}

struct sk_buff *zcnet_helper_skb_next(const struct sk_buff *skb)
{
	return skb->next;
}

void zcnet_helper_skb_set_next(struct sk_buff *skb, struct sk_buff *next)
{
	skb->next = next;
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
	/* Never later than already armed; cheap when an earlier expiry is set. */
	timer_reduce(&t->timer, jiffies + usecs_to_jiffies(delay_us) + 1);
}

void zcnet_helper_timer_shutdown(struct zcnet_timer *t)
{
	if (t)
		timer_shutdown_sync(&t->timer);
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

#include <linux/random.h>

u32 zcnet_helper_random_u32(void)
{
	return get_random_u32();
}

#include <linux/skbuff_ref.h>

/*
 * One IPv4 fragment of `from` for transmission: `hdr` (Ethernet + IPv4 header,
 * already rewritten for the fragment) in a fresh linear part, then the `len`
 * payload bytes at offset `off` of `from`'s data as page fragments that
 * reference `from`'s pages: no payload byte is copied. Payload in `from`'s
 * linear part is referenced through its head page when the head is a page
 * fragment, copied otherwise; *copied says how many payload bytes were
 * copied. Falls back to copying everything when `from` has a frag_list,
 * carries user-space zero-copy pages (their completion would fire when `from`
 * is freed, before the fragments left), or would need more than
 * MAX_SKB_FRAGS fragments. NULL when memory is short or the range is out of
 * bounds.
 */
struct sk_buff *zcnet_helper_build_tx_frag(struct sk_buff *from, const void *hdr,
					   unsigned int hdr_len, unsigned int off,
					   unsigned int len, unsigned int headroom,
					   bool allow_ref, unsigned int *copied)
{
	unsigned int headlen = skb_headlen(from), end = off + len, lin = 0, pos, nfr = 0;
	struct skb_shared_info *sh = skb_shinfo(from);
	struct sk_buff *skb;
	int i;

	*copied = 0;
	if (end < off || end > from->len)
		return NULL;
	if (!allow_ref || skb_has_frag_list(from) || skb_zcopy(from))
		goto copy_all;
	if (off < headlen) {
		lin = min(end, headlen) - off;
		if (from->head_frag)
			nfr++;
	}
	pos = headlen;
	for (i = 0; i < sh->nr_frags && pos < end; i++) {
		unsigned int fs = skb_frag_size(&sh->frags[i]);

		if (pos + fs > off)
			nfr++;
		pos += fs;
	}
	if (nfr > MAX_SKB_FRAGS)
		goto copy_all;

	skb = alloc_skb(headroom + hdr_len + (from->head_frag ? 0 : lin), GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	skb_put_data(skb, hdr, hdr_len);
	nfr = 0;
	if (lin) {
		if (from->head_frag) {
			struct page *page = virt_to_head_page(from->head);
			unsigned int po = from->data + off - (unsigned char *)page_address(page);

			get_page(page);
			__skb_fill_netmem_desc(skb, nfr++, page_to_netmem(page), po, lin);
			skb_len_add(skb, lin);
		} else {
			skb_put_data(skb, from->data + off, lin);
			*copied = lin;
		}
	}
	pos = headlen;
	for (i = 0; i < sh->nr_frags && pos < end; i++) {
		unsigned int fs = skb_frag_size(&sh->frags[i]);
		unsigned int a = max(pos, off), b = min(pos + fs, end);

		if (a < b) {
			skb_frag_t *f = &skb_shinfo(skb)->frags[nfr++];

			*f = sh->frags[i];
			skb_frag_off_add(f, a - pos);
			skb_frag_size_set(f, b - a);
			__skb_frag_ref(f);
			skb_len_add(skb, b - a);
		}
		pos += fs;
	}
	skb_shinfo(skb)->nr_frags = nfr;
	/* The pages may be shared (page cache, another skb): nobody writes them. */
	skb_shinfo(skb)->flags |= sh->flags & SKBFL_SHARED_FRAG;
	goto done;

copy_all:
	skb = alloc_skb(headroom + hdr_len + len, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	skb_put_data(skb, hdr, hdr_len);
	if (skb_copy_bits(from, off, skb_put(skb, len), len)) {
		kfree_skb(skb);
		return NULL;
	}
	*copied = len;
done:
	skb_reset_mac_header(skb);
	skb->protocol = htons(ETH_P_IP);
	zcnet_helper_skb_copy_meta(skb, from);
	/*
	 * The fragment stays charged to the sending socket until it leaves, as
	 * tcp_gso_segment() does for segments: TCP Small Queues and the send
	 * buffer then see what waits in the lower device's queue. Without it the
	 * packet's charge ends when the packet is freed, right after it is
	 * fragmented, and TCP floods the lower qdisc until it drops.
	 */
	if (from->sk && (from->destructor == tcp_wfree || from->destructor == sock_wfree)) {
		skb->sk = from->sk;
		skb->destructor = from->destructor;
		refcount_add(skb->truesize, &from->sk->sk_wmem_alloc);
	}
	return skb;
}

bool zcnet_helper_dev_has_sg(const struct net_device *dev)
{
	return dev->features & NETIF_F_SG;
}

bool zcnet_helper_skb_for_host(const struct sk_buff *skb)
{
	return skb->pkt_type == PACKET_HOST;
}

/*
 * An Ethernet frame of `len` bytes (destination, source, EtherType, payload;
 * padded to the Ethernet minimum) ready for dev_queue_xmit on `dev`.
 */
struct sk_buff *zcnet_helper_build_frame(struct net_device *dev, const void *data,
					 unsigned int len)
{
	unsigned int flen = max_t(unsigned int, len, ETH_ZLEN);
	struct sk_buff *skb;

	if (len < ETH_HLEN)
		return NULL;
	skb = alloc_skb(LL_RESERVED_SPACE(dev) + flen, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	skb_put_data(skb, data, len);
	if (flen > len)
		skb_put_zero(skb, flen - len);
	skb_reset_mac_header(skb);
	skb_reset_network_header(skb);
	skb->protocol = ((const struct ethhdr *)data)->h_proto;
	skb->dev = dev;
	return skb;
}

void zcnet_helper_dev_addr(const struct net_device *dev, u8 *out)
{
	memcpy(out, dev->dev_addr, ETH_ALEN);
}

bool zcnet_helper_net_admin_capable(const struct net_device *dev)
{
	return ns_capable(dev_net(dev)->user_ns, CAP_NET_ADMIN);
}

#include <linux/if_vlan.h>
#include <net/route.h>

bool zcnet_helper_skb_vlan_tagged(const struct sk_buff *skb)
{
	return skb_vlan_tag_present(skb);
}

/*
 * The IP ID the stack itself would give a packet with this header: hashed per
 * (destination, source, protocol) with a per-namespace secret, each bucket
 * starting at a random value (__ip_select_ident, net/ipv4/route.c).
 */
u16 zcnet_helper_ip_ident(const struct net_device *dev, const void *iph_bytes)
{
	struct iphdr iph;

	memcpy(&iph, iph_bytes, sizeof(iph));
	__ip_select_ident(dev_net(dev), &iph, 1);
	return ntohs(iph.id);
}

/* True when `daddr` (network order bytes) is a local address seen from `dev`. */
bool zcnet_helper_ipv4_is_local(const struct net_device *dev, const u8 *daddr)
{
	__be32 a;

	memcpy(&a, daddr, sizeof(a));
	return inet_addr_type_dev_table(dev_net(dev), dev, a) == RTN_LOCAL;
}
