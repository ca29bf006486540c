// SPDX-License-Identifier: GPL-2.0
/*
 * A virtio-net device driven by a zcnet front end (see vnet.h): the virtio
 * driver, the net_device, one receive and one transmit virtqueue, and one
 * NAPI context for both. The datapath (which buffers to post, what to do
 * with what comes back) is the front end's; this file holds what Rust cannot
 * reach: the virtio and NAPI inline functions and the operation tables.
 * The model is drivers/net/virtio_net.c, without its offloads.
 */
#include <linux/ctype.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>

#include "timer.h"
#include "vnet.h"

struct zcnet_vnet {
	struct virtio_device *vdev;
	struct net_device *dev;
	struct virtqueue *rvq, *svq;
	struct napi_struct napi;
	struct zcnet_timer *timer;	/* the front end's (ops->timer) */
	bool dying;			/* being unbound */
	void *state;			/* the front end's, from probe() */
};

static const struct zcnet_vnet_ops *zcnet_vnet_ops;

static char zcnet_vnet_devices[256];
module_param_string(devices, zcnet_vnet_devices, sizeof(zcnet_vnet_devices), 0644);
MODULE_PARM_DESC(devices,
		 "virtio-net devices the native front end binds: virtioN names or MAC addresses, comma-separated (unbind them from virtio_net, then bind them to this driver)");

static_assert(sizeof(struct virtio_net_hdr_v1) == ZCNET_VNET_HDR_LEN);
static_assert(sizeof(struct virtio_net_hdr_v1) <= sizeof_field(struct sk_buff, cb));

/* Whether `devices` names vdev (its virtioN name or its MAC address). */
static bool zcnet_vnet_wanted(struct virtio_device *vdev)
{
	char mac[18] = "";
	const char *p = zcnet_vnet_devices;

	if (virtio_has_feature(vdev, VIRTIO_NET_F_MAC)) {
		u8 a[ETH_ALEN];

		virtio_cread_bytes(vdev, offsetof(struct virtio_net_config, mac), a, ETH_ALEN);
		snprintf(mac, sizeof(mac), "%pM", a);
	}
	while (*p) {
		size_t n = strcspn(p, ",\n");

		if (n && ((n == strlen(dev_name(&vdev->dev)) && !strncmp(p, dev_name(&vdev->dev), n)) ||
			  (n == strlen(mac) && !strncasecmp(p, mac, n))))
			return true;
		p += n;
		p += strspn(p, ",\n \t");
	}
	return false;
}

static void zcnet_vnet_vq_done(struct virtqueue *vq)
{
	struct zcnet_vnet *vn = vq->vdev->priv;

	virtqueue_disable_cb(vq);
	napi_schedule(&vn->napi);
}

static int zcnet_vnet_poll(struct napi_struct *napi, int budget)
{
	struct zcnet_vnet *vn = container_of(napi, struct zcnet_vnet, napi);
	int done = zcnet_vnet_ops->poll(vn->state, budget);

	if (done < budget && napi_complete_done(napi, done)) {
		unsigned int r = virtqueue_enable_cb_prepare(vn->rvq);
		unsigned int t = virtqueue_enable_cb_prepare(vn->svq);

		/* Buffers used meanwhile: poll again rather than wait. */
		if (virtqueue_poll(vn->rvq, r) || virtqueue_poll(vn->svq, t)) {
			virtqueue_disable_cb(vn->rvq);
			virtqueue_disable_cb(vn->svq);
			napi_schedule(napi);
		}
	}
	return done;
}

static int zcnet_vnet_open(struct net_device *dev)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	int err = zcnet_vnet_ops->open(vn->state);

	if (err)
		return err;
	netdev_tx_reset_queue(netdev_get_tx_queue(dev, 0));
	napi_enable(&vn->napi);
	netif_tx_start_all_queues(dev);
	/* Whatever the device used before NAPI ran. */
	local_bh_disable();
	napi_schedule(&vn->napi);
	local_bh_enable();
	return 0;
}

static int zcnet_vnet_stop(struct net_device *dev)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	netif_tx_disable(dev);
	napi_disable(&vn->napi);
	return 0;
}

static netdev_tx_t zcnet_vnet_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	return zcnet_vnet_ops->xmit(vn->state, skb, netdev_xmit_more());
}

static void zcnet_vnet_stats64(struct net_device *dev, struct rtnl_link_stats64 *s)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	zcnet_vnet_ops->stats(vn->state, s);
}

static const struct net_device_ops zcnet_vnet_netdev_ops = {
	.ndo_open = zcnet_vnet_open,
	.ndo_stop = zcnet_vnet_stop,
	.ndo_start_xmit = zcnet_vnet_xmit,
	.ndo_get_stats64 = zcnet_vnet_stats64,
	.ndo_validate_addr = eth_validate_addr,
	.ndo_set_mac_address = eth_mac_addr,
};

static void zcnet_vnet_drvinfo(struct net_device *dev, struct ethtool_drvinfo *info)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	strscpy(info->driver, KBUILD_MODNAME, sizeof(info->driver));
	strscpy(info->bus_info, dev_name(&vn->vdev->dev), sizeof(info->bus_info));
}

static void zcnet_vnet_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
				 struct kernel_ethtool_ringparam *kring,
				 struct netlink_ext_ack *extack)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	ring->rx_max_pending = ring->rx_pending = virtqueue_get_vring_size(vn->rvq);
	ring->tx_max_pending = ring->tx_pending = virtqueue_get_vring_size(vn->svq);
}

static int zcnet_vnet_sset_count(struct net_device *dev, int sset)
{
	return sset == ETH_SS_STATS ? zcnet_vnet_ops->nstats : -EOPNOTSUPP;
}

static void zcnet_vnet_strings(struct net_device *dev, u32 sset, u8 *data)
{
	if (sset == ETH_SS_STATS)
		zcnet_vnet_ops->stat_names(data);
}

static void zcnet_vnet_ethtool_stats(struct net_device *dev, struct ethtool_stats *st, u64 *data)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	zcnet_vnet_ops->stat_values(vn->state, data);
}

static void zcnet_vnet_channels(struct net_device *dev, struct ethtool_channels *ch)
{
	ch->max_combined = ch->combined_count = 1;
}

static const struct ethtool_ops zcnet_vnet_ethtool_ops = {
	.get_drvinfo = zcnet_vnet_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_ringparam = zcnet_vnet_ringparam,
	.get_channels = zcnet_vnet_channels,
	.get_sset_count = zcnet_vnet_sset_count,
	.get_strings = zcnet_vnet_strings,
	.get_ethtool_stats = zcnet_vnet_ethtool_stats,
};

static void zcnet_vnet_timer_fn(void *data)
{
	struct zcnet_vnet *vn = data;

	zcnet_vnet_ops->timer(vn->state);
}

/* Takes every buffer still posted out of both rings (the device is reset):
 * the ring frees what it allocated for them (indirect descriptor tables);
 * the buffers themselves are the front end's, freed with its rings. */
static void zcnet_vnet_detach_all(struct zcnet_vnet *vn)
{
	while (virtqueue_detach_unused_buf(vn->rvq))
		;
	while (virtqueue_detach_unused_buf(vn->svq))
		;
}

static int zcnet_vnet_probe(struct virtio_device *vdev)
{
	struct virtqueue_info info[2] = {
		{ "input.0", zcnet_vnet_vq_done },
		{ "output.0", zcnet_vnet_vq_done },
	};
	struct virtqueue *vqs[2];
	struct net_device *dev;
	struct zcnet_vnet *vn;
	void *state;
	int err;

	if (!zcnet_vnet_wanted(vdev))
		return -ENODEV;
	if (!virtio_has_feature(vdev, VIRTIO_F_VERSION_1)) {
		dev_warn(&vdev->dev, "%s: a virtio 1.0 device is needed\n", KBUILD_MODNAME);
		return -EOPNOTSUPP;
	}
	dev = alloc_etherdev(sizeof(*vn));
	if (!dev)
		return -ENOMEM;
	SET_NETDEV_DEV(dev, &vdev->dev);
	vn = netdev_priv(dev);
	vn->vdev = vdev;
	vn->dev = dev;
	vdev->priv = vn;
	if (virtio_has_feature(vdev, VIRTIO_NET_F_MAC)) {
		u8 a[ETH_ALEN];

		virtio_cread_bytes(vdev, offsetof(struct virtio_net_config, mac), a, ETH_ALEN);
		eth_hw_addr_set(dev, a);
	} else {
		eth_hw_addr_random(dev);
	}
	err = virtio_find_vqs(vdev, 2, vqs, info, NULL);
	if (err)
		goto free;
	vn->rvq = vqs[0];
	vn->svq = vqs[1];
	vn->timer = zcnet_helper_timer_new(zcnet_vnet_timer_fn, vn);
	if (!vn->timer) {
		err = -ENOMEM;
		vdev->config->del_vqs(vdev);
		goto free;
	}
	netif_napi_add(dev, &vn->napi, zcnet_vnet_poll);
	dev->netdev_ops = &zcnet_vnet_netdev_ops;
	dev->ethtool_ops = &zcnet_vnet_ethtool_ops;
	/* Checksums are resolved in software before a frame is posted: the
	 * core keeps scatter-gather only with a checksum feature. */
	dev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM;
	dev->features = dev->hw_features;
	state = zcnet_vnet_ops->probe(vn);
	if (IS_ERR(state)) {
		err = PTR_ERR(state);
		goto del;
	}
	vn->state = state;
	virtio_device_ready(vdev);
	err = register_netdev(dev);
	if (err) {
		virtio_reset_device(vdev);
		zcnet_vnet_detach_all(vn);
		zcnet_vnet_ops->remove(state);
		goto del;
	}
	netif_carrier_on(dev);
	dev_info(&vdev->dev, "%s: %s bound (%u receive, %u transmit descriptors)\n",
		 KBUILD_MODNAME, netdev_name(dev), virtqueue_get_vring_size(vn->rvq),
		 virtqueue_get_vring_size(vn->svq));
	return 0;
del:
	netif_napi_del(&vn->napi);
	zcnet_helper_timer_free(vn->timer);
	vdev->config->del_vqs(vdev);
free:
	free_netdev(dev);
	return err;
}

static void zcnet_vnet_remove(struct virtio_device *vdev)
{
	struct zcnet_vnet *vn = vdev->priv;

	/* Marked first, so that transmit starts nothing new; stopped
	 * (ndo_stop: NAPI off, no transmit) and the timer with it; the front
	 * end's teardown; then the device gives every buffer back (reset)
	 * before the front end frees them. */
	WRITE_ONCE(vn->dying, true);
	unregister_netdev(vn->dev);
	zcnet_helper_timer_shutdown(vn->timer);
	zcnet_vnet_ops->teardown(vn->state);
	virtio_reset_device(vdev);
	zcnet_vnet_detach_all(vn);
	vdev->config->del_vqs(vdev);
	zcnet_vnet_ops->remove(vn->state);
	netif_napi_del(&vn->napi);
	zcnet_helper_timer_free(vn->timer);
	free_netdev(vn->dev);
}

static const struct virtio_device_id zcnet_vnet_ids[] = {
	{ VIRTIO_ID_NET, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static const unsigned int zcnet_vnet_features[] = {
	VIRTIO_NET_F_MAC,
};

static struct virtio_driver zcnet_vnet_driver = {
	.feature_table = zcnet_vnet_features,
	.feature_table_size = ARRAY_SIZE(zcnet_vnet_features),
	.id_table = zcnet_vnet_ids,
	.probe = zcnet_vnet_probe,
	.remove = zcnet_vnet_remove,
};

int zcnet_helper_vnet_register(const char *name, const struct zcnet_vnet_ops *ops)
{
	zcnet_vnet_ops = ops;
	zcnet_vnet_driver.driver.name = name;
	return register_virtio_driver(&zcnet_vnet_driver);
}

void zcnet_helper_vnet_unregister(void)
{
	unregister_virtio_driver(&zcnet_vnet_driver);
}

struct net_device *zcnet_helper_vnet_netdev(struct zcnet_vnet *vn)
{
	return vn->dev;
}

unsigned int zcnet_helper_vnet_rx_size(struct zcnet_vnet *vn)
{
	return virtqueue_get_vring_size(vn->rvq);
}

unsigned int zcnet_helper_vnet_tx_size(struct zcnet_vnet *vn)
{
	return virtqueue_get_vring_size(vn->svq);
}

void zcnet_helper_vnet_set_mtu(struct zcnet_vnet *vn, unsigned int mtu, unsigned int max)
{
	vn->dev->max_mtu = max;
	vn->dev->mtu = min(mtu, max);
}

void zcnet_helper_vnet_arm_timer(struct zcnet_vnet *vn, unsigned long delay_us)
{
	zcnet_helper_timer_arm(vn->timer, delay_us);
}

bool zcnet_helper_vnet_dying(struct zcnet_vnet *vn)
{
	return READ_ONCE(vn->dying);
}

int zcnet_helper_vnet_post_rx(struct zcnet_vnet *vn, void *hdr, unsigned int hdr_len,
			      struct page *page, unsigned int page_off,
			      unsigned int page_len, unsigned long token)
{
	struct scatterlist sg[2];

	if (!token)
		return -EINVAL;
	sg_init_table(sg, page_len ? 2 : 1);
	sg_set_buf(&sg[0], hdr, hdr_len);
	if (page_len)
		sg_set_page(&sg[1], page, page_len, page_off);
	return virtqueue_add_inbuf(vn->rvq, sg, page_len ? 2 : 1, (void *)token, GFP_ATOMIC);
}

int zcnet_helper_vnet_post_rx_spec(struct zcnet_vnet *vn, void *hdr, unsigned int hdr_len,
				   struct page *page, unsigned int off, unsigned int len,
				   void *ovf, unsigned int ovf_len, unsigned long token)
{
	struct scatterlist sg[3];

	if (!token || !len || off > PAGE_SIZE || len > PAGE_SIZE - off)
		return -EINVAL;
	sg_init_table(sg, 3);
	sg_set_buf(&sg[0], hdr, hdr_len);
	sg_set_page(&sg[1], page, len, off);
	sg_set_buf(&sg[2], ovf, ovf_len);
	return virtqueue_add_inbuf(vn->rvq, sg, 3, (void *)token, GFP_ATOMIC);
}

unsigned long zcnet_helper_vnet_get_rx(struct zcnet_vnet *vn, unsigned int *len)
{
	return (unsigned long)virtqueue_get_buf(vn->rvq, len);
}

int zcnet_helper_vnet_post_tx(struct zcnet_vnet *vn, struct sk_buff *skb, unsigned long token)
{
	struct scatterlist sg[MAX_SKB_FRAGS + 2];
	/* The header lives in skb->cb, the driver's while it owns the skb
	 * (as virtio_net does when it cannot push it): no copy of a cloned
	 * head. */
	struct virtio_net_hdr_v1 *h = (void *)skb->cb;
	int n;

	if (!token)
		return -EINVAL;
	if (skb->ip_summed == CHECKSUM_PARTIAL && skb_checksum_help(skb))
		return -ENOMEM;
	memset(h, 0, sizeof(*h));
	sg_init_table(sg, skb_shinfo(skb)->nr_frags + 2);
	sg_set_buf(&sg[0], h, sizeof(*h));
	n = skb_to_sgvec(skb, sg + 1, 0, skb->len);
	if (n < 0)
		return n;
	return virtqueue_add_outbuf(vn->svq, sg, n + 1, (void *)token, GFP_ATOMIC);
}

unsigned long zcnet_helper_vnet_get_tx(struct zcnet_vnet *vn)
{
	unsigned int len;

	return (unsigned long)virtqueue_get_buf(vn->svq, &len);
}

unsigned int zcnet_helper_vnet_tx_free(struct zcnet_vnet *vn)
{
	return vn->svq->num_free;
}

bool zcnet_helper_vnet_kick_rx(struct zcnet_vnet *vn)
{
	return virtqueue_kick_prepare(vn->rvq) && virtqueue_notify(vn->rvq);
}

bool zcnet_helper_vnet_kick_tx(struct zcnet_vnet *vn)
{
	return virtqueue_kick_prepare(vn->svq) && virtqueue_notify(vn->svq);
}

struct sk_buff *zcnet_helper_vnet_rx_skb(struct zcnet_vnet *vn, const void *head,
					 unsigned int head_len, struct page *page,
					 unsigned int page_len)
{
	struct sk_buff *skb = napi_alloc_skb(&vn->napi, head_len);

	if (!skb || head_len < ETH_HLEN) {
		if (page)
			put_page(page);
		kfree_skb(skb);
		return NULL;
	}
	skb_put_data(skb, head, head_len);
	if (page && page_len)
		skb_add_rx_frag(skb, 0, page, 0, page_len, PAGE_SIZE);
	else if (page)
		put_page(page);
	skb->protocol = eth_type_trans(skb, vn->dev);
	return skb;
}

struct sk_buff *zcnet_helper_vnet_rx_skb_frag(struct zcnet_vnet *vn, const void *head,
					      unsigned int head_len, struct page *page,
					      unsigned int off, unsigned int len)
{
	struct sk_buff *skb = napi_alloc_skb(&vn->napi, head_len);

	if (!skb || head_len < ETH_HLEN || off > PAGE_SIZE || len > PAGE_SIZE - off) {
		put_page(page);
		kfree_skb(skb);
		return NULL;
	}
	skb_put_data(skb, head, head_len);
	skb_add_rx_frag(skb, 0, page, off, len, len);
	skb->protocol = eth_type_trans(skb, vn->dev);
	return skb;
}

struct sk_buff *zcnet_helper_vnet_rx_skb_copy(struct zcnet_vnet *vn, const void *a,
					      unsigned int alen, struct page *page,
					      unsigned int off, unsigned int plen,
					      const void *b, unsigned int blen)
{
	struct sk_buff *skb;

	if (off > PAGE_SIZE || plen > PAGE_SIZE - off || alen + plen + blen < ETH_HLEN)
		return NULL;
	skb = napi_alloc_skb(&vn->napi, alen + plen + blen);
	if (!skb)
		return NULL;
	skb_put_data(skb, a, alen);
	if (plen)
		skb_put_data(skb, page_address(page) + off, plen);
	skb_put_data(skb, b, blen);
	skb->protocol = eth_type_trans(skb, vn->dev);
	return skb;
}

void zcnet_helper_vnet_receive(struct zcnet_vnet *vn, struct sk_buff *skb)
{
	napi_gro_receive(&vn->napi, skb);
}

void zcnet_helper_vnet_tx_stop(struct zcnet_vnet *vn)
{
	netif_stop_queue(vn->dev);
}

void zcnet_helper_vnet_tx_wake(struct zcnet_vnet *vn)
{
	if (netif_queue_stopped(vn->dev))
		netif_wake_queue(vn->dev);
}

bool zcnet_helper_vnet_tx_sent(struct zcnet_vnet *vn, unsigned int bytes, bool more)
{
	return __netdev_tx_sent_queue(netdev_get_tx_queue(vn->dev, 0), bytes, more);
}

void zcnet_helper_vnet_tx_completed(struct zcnet_vnet *vn, unsigned int pkts, unsigned int bytes)
{
	netdev_tx_completed_queue(netdev_get_tx_queue(vn->dev, 0), pkts, bytes);
}
