/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Network devices: stacking one on a lower device, its sysfs group, and what
 * the Rust side cannot read as a plain field (rust/zcnet/netdev.rs,
 * rust/zcnet/stacked.rs).
 */
#ifndef ZCNET_HELPERS_NETDEV_H
#define ZCNET_HELPERS_NETDEV_H

#include <linux/types.h>

struct ethtool_ops;
struct net_device;
struct net_device_ops;

/* netdev_priv(dev) */
void *zcnet_helper_netdev_priv(const struct net_device *dev);
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
/*
 * Sets a stacked software device up: Ethernet, no queue, lockless TX, freed by
 * the core after priv_destructor, the given ops, MTU range 68..65521.
 */
void zcnet_helper_stacked_setup(struct net_device *dev, const struct net_device_ops *ops,
				const struct ethtool_ops *eops,
				void (*destructor)(struct net_device *dev));

/* Attribute `idx` (< 16) of the module's sysfs group: 0644 or 0444. */
int zcnet_helper_sysfs_add(unsigned int idx, const char *name, bool writable);
/* Names the group (devices created afterwards get it) and its callbacks. */
void zcnet_helper_sysfs_set(const char *group,
			    ssize_t (*show)(struct net_device *dev, unsigned int idx, char *buf),
			    ssize_t (*store)(struct net_device *dev, unsigned int idx,
					     const char *buf, size_t len));
/* The module's other kind of device (a second front end), told apart by its
 * net_device_ops: its devices get the same group with these callbacks. */
void zcnet_helper_sysfs_set_alt(const struct net_device_ops *ops,
				ssize_t (*show)(struct net_device *dev, unsigned int idx, char *buf),
				ssize_t (*store)(struct net_device *dev, unsigned int idx,
						 const char *buf, size_t len));
/* The group for a new device's sysfs_groups[0], or NULL if there is none. */
const struct attribute_group *zcnet_helper_sysfs_group(void);

/*
 * Fields of struct net_device. mtu, flags and type change under RTNL while
 * the data path reads them, so they are read with READ_ONCE() (and mtu
 * written with WRITE_ONCE()), as the core does. ifindex, features and
 * dev_addr are plain fields, but 7.2's kernel::bindings has struct net_device
 * only as an opaque type, and generating it here would mean allow-listing
 * the ~35 types its fields name, a set that changes with the configuration.
 */
unsigned int zcnet_helper_dev_mtu(const struct net_device *dev);
void zcnet_helper_dev_set_mtu(struct net_device *dev, unsigned int mtu);
bool zcnet_helper_dev_is_ether(const struct net_device *dev);
bool zcnet_helper_dev_is_up(const struct net_device *dev);
int zcnet_helper_dev_ifindex(const struct net_device *dev);
/* dev->features & NETIF_F_SG */
bool zcnet_helper_dev_has_sg(const struct net_device *dev);
/* The device's MAC address (6 bytes) into `out`. */
void zcnet_helper_dev_addr(const struct net_device *dev, u8 *out);
/* LL_RESERVED_SPACE(dev) */
unsigned int zcnet_helper_ll_reserved_space(const struct net_device *dev);
/* CAP_NET_ADMIN in the device's network namespace. */
bool zcnet_helper_net_admin_capable(const struct net_device *dev);
/* The stack's IP ID for a packet with the 20-byte IPv4 header `iph`. */
u16 zcnet_helper_ip_ident(const struct net_device *dev, const void *iph);
/* inet_addr_type_dev_table(dev_net(dev), dev, daddr) == RTN_LOCAL */
bool zcnet_helper_ipv4_is_local(const struct net_device *dev, const u8 *daddr);
/* Logs "MODULE: DEV: why" (rate-limited): why a request was refused. */
void zcnet_helper_netdev_warn(const struct net_device *dev, const char *why);

#endif /* ZCNET_HELPERS_NETDEV_H */
