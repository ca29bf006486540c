// SPDX-License-Identifier: GPL-2.0
/* Network devices (see netdev.h). */
#include <linux/capability.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <net/ip.h>
#include <net/route.h>

#include "netdev.h"

void *zcnet_helper_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
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

static const struct net_device_ops *zcnet_sysfs_alt_ops;
static ssize_t (*zcnet_sysfs_alt_show)(struct net_device *dev, unsigned int idx, char *buf);
static ssize_t (*zcnet_sysfs_alt_store)(struct net_device *dev, unsigned int idx,
					const char *buf, size_t len);

static ssize_t zcnet_attr_show(struct device *d, struct device_attribute *attr, char *buf)
{
	struct net_device *dev = to_net_dev(d);

	if (zcnet_sysfs_alt_ops && dev->netdev_ops == zcnet_sysfs_alt_ops)
		return zcnet_sysfs_alt_show(dev, attr - zcnet_sysfs_attrs, buf);
	return zcnet_sysfs_show(dev, attr - zcnet_sysfs_attrs, buf);
}

static ssize_t zcnet_attr_store(struct device *d, struct device_attribute *attr,
				const char *buf, size_t len)
{
	struct net_device *dev = to_net_dev(d);

	if (zcnet_sysfs_alt_ops && dev->netdev_ops == zcnet_sysfs_alt_ops)
		return zcnet_sysfs_alt_store(dev, attr - zcnet_sysfs_attrs, buf, len);
	return zcnet_sysfs_store(dev, attr - zcnet_sysfs_attrs, buf, len);
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

void zcnet_helper_sysfs_set_alt(const struct net_device_ops *ops,
				ssize_t (*show)(struct net_device *dev, unsigned int idx, char *buf),
				ssize_t (*store)(struct net_device *dev, unsigned int idx,
						 const char *buf, size_t len))
{
	zcnet_sysfs_alt_show = show;
	zcnet_sysfs_alt_store = store;
	zcnet_sysfs_alt_ops = ops;
}

const struct attribute_group *zcnet_helper_sysfs_group(void)
{
	return zcnet_sysfs_group.name ? &zcnet_sysfs_group : NULL;
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
	 * copying) with the transport checksum still to be computed. TSO: TCP/IPv4
	 * GSO packets reach the driver whole, and it cuts them into segments
	 * itself (zcnet_helper_gso_segment_paged(), on page boundaries).
	 */
	dev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_TSO;
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

bool zcnet_helper_dev_is_ether(const struct net_device *dev)
{
	return READ_ONCE(dev->type) == ARPHRD_ETHER && !(READ_ONCE(dev->flags) & IFF_LOOPBACK);
}

bool zcnet_helper_dev_is_up(const struct net_device *dev)
{
	return READ_ONCE(dev->flags) & IFF_UP;
}

int zcnet_helper_dev_ifindex(const struct net_device *dev)
{
	return dev->ifindex;
}

bool zcnet_helper_dev_has_sg(const struct net_device *dev)
{
	return dev->features & NETIF_F_SG;
}

void zcnet_helper_dev_addr(const struct net_device *dev, u8 *out)
{
	memcpy(out, dev->dev_addr, ETH_ALEN);
}

unsigned int zcnet_helper_ll_reserved_space(const struct net_device *dev)
{
	return LL_RESERVED_SPACE(dev);
}

bool zcnet_helper_net_admin_capable(const struct net_device *dev)
{
	return ns_capable(dev_net(dev)->user_ns, CAP_NET_ADMIN);
}

/*
 * The IP ID the stack itself would give a packet with this header: hashed per
 * (destination, source, protocol) with a per-namespace secret, each bucket
 * starting at a random value (__ip_select_ident, net/ipv4/route.c).
 */
void zcnet_helper_netdev_warn(const struct net_device *dev, const char *why)
{
	net_warn_ratelimited("%s: %s: %s\n", KBUILD_MODNAME, netdev_name(dev), why);
}

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
