// SPDX-License-Identifier: GPL-2.0
/*
 * A virtio-net device driven by a zcnet front end (see vnet.h): the virtio
 * driver, the net_device, its queue pairs (a receive and a transmit
 * virtqueue and one NAPI context for both, each), the control virtqueue
 * that tells the device how many pairs to use and how to steer frames
 * among them (RSS). The datapath (which buffers to post, what to do
 * with what comes back) is the front end's; this file holds what Rust cannot
 * reach: the virtio and NAPI inline functions and the operation tables.
 * The model is drivers/net/virtio_net.c, without its offloads.
 */
#include <linux/cpumask.h>
#include <linux/ctype.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ethtool.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/netdevice.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/unaligned.h>
#include <linux/virtio_net.h>

#include "netdev.h"
#include "skbuff.h"
#include "timer.h"
#include "vnet.h"

/* The test knob test_rx_reorder (below): chains held back at once, and how
 * many chains pass them. */
#define ZCNET_VNET_HELD 3
#define ZCNET_VNET_HELD_AFTER 4

struct zcnet_vnet_queue {
	struct zcnet_vnet *vn;
	struct virtqueue *rvq, *svq;
	struct napi_struct napi;
	unsigned int idx;
	char rname[16], sname[16];	/* the virtqueues' (interrupt names) */
	/* Frames received and sent (ethtool -S), each written by one context
	 * at a time: the pair's poll, the holder of its transmit ring. */
	u64 rx_packets, tx_packets;
	/* The test knob test_rx_reorder (under the receive ring's lock):
	 * receive chains held back from the device (their scatterlists,
	 * lengths and tokens), chains added since (`passed`), chains posted
	 * so far. */
	struct scatterlist held_sg[ZCNET_VNET_HELD][3 + ZCNET_VNET_RX_PAGES];
	unsigned int held_n[ZCNET_VNET_HELD], nheld, passed, rx_posts;
	void *held_token[ZCNET_VNET_HELD];
};

struct zcnet_vnet {
	struct virtio_device *vdev;
	struct net_device *dev;
	struct virtqueue *cvq;		/* with VIRTIO_NET_F_CTRL_VQ */
	/* A control command the device did not answer in time: still posted
	 * (the device may yet write its ack), freed once it comes back or
	 * the device is reset. */
	void *cmd_lost;
	unsigned int nq, max_nq;	/* queue pairs in use, offered (capped) */
	bool rss;			/* steering set (VIRTIO_NET_F_RSS) */
	struct zcnet_vnet_queue qs[ZCNET_VNET_MAX_QUEUES];
	struct zcnet_timer *timer;	/* the front end's (ops->timer) */
	bool dying;			/* being unbound */
	/* ethtool -G/-L (zcnet_vnet_pause): the timer does nothing and
	 * nothing wakes a transmit queue (upstream's send_queue reset). */
	bool resizing;
	/* Bytes of a packet per transmit descriptor it takes, at most (see
	 * ZCNET_VNET_TX_BYTES_PER_DESC): the front end's, for its wire MTU. */
	unsigned int tx_bytes_per_desc;
	void *state;			/* the front end's, from probe() */
};

static const struct zcnet_vnet_ops *zcnet_vnet_ops;

/* Queue pair q (the front end's rings name only pairs in use). */
static struct zcnet_vnet_queue *zq(struct zcnet_vnet *vn, unsigned int q)
{
	return &vn->qs[q < vn->max_nq ? q : 0];
}

static char zcnet_vnet_devices[256];
module_param_string(devices, zcnet_vnet_devices, sizeof(zcnet_vnet_devices), 0644);
MODULE_PARM_DESC(devices,
		 "virtio-net devices the native front end binds: virtioN names or MAC addresses, comma-separated (unbind them from virtio_net, then bind them to this driver)");

static_assert(sizeof(struct virtio_net_hdr_v1) == ZCNET_VNET_HDR_LEN);
static_assert(sizeof(struct virtio_net_hdr_v1) <= sizeof_field(struct sk_buff, cb));

/* A test knob: while set, the native front end's receive rings get no new
 * page (as when an atomic page allocation fails), so that the retry of an
 * emptied ring can be tested (tools/testing/zcnet/zcfrag-native.sh). */
static bool test_rx_no_pages;
module_param(test_rx_no_pages, bool, 0644);
MODULE_PARM_DESC(test_rx_no_pages,
		 "while set, receive rings get no new page, as if allocation failed (a test knob)");

/* A test knob: while N (not 0), every Nth receive chain the front end posts
 * and the two after it reach the device only after the four chains posted
 * after those, so the device uses (fills and completes) chains out of the
 * order they were posted in, as a device without VIRTIO_F_IN_ORDER may.
 * QEMU uses a ring's chains in the order they reach it: only this shows the
 * front end such a device (tools/testing/zcnet/zcfrag-native.sh). */
static unsigned int test_rx_reorder;
module_param(test_rx_reorder, uint, 0644);
MODULE_PARM_DESC(test_rx_reorder,
		 "N: every Nth receive chain and the 2 after it reach the device after the next 4 (a test knob)");

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

/* Queue pair i's virtqueues are 2i (receive) and 2i + 1 (transmit); the
 * control virtqueue comes last and has no callback. */
static void zcnet_vnet_vq_done(struct virtqueue *vq)
{
	struct zcnet_vnet *vn = vq->vdev->priv;
	unsigned int i = vq->index / 2;

	if (i >= vn->nq)
		return;
	virtqueue_disable_cb(vq);
	napi_schedule(&vn->qs[i].napi);
}

static int zcnet_vnet_poll(struct napi_struct *napi, int budget)
{
	struct zcnet_vnet_queue *q = container_of(napi, struct zcnet_vnet_queue, napi);
	int done = zcnet_vnet_ops->poll(q->vn->state, q->idx, budget);

	if (done < budget && napi_complete_done(napi, done)) {
		unsigned int r = virtqueue_enable_cb_prepare(q->rvq);
		unsigned int t = virtqueue_enable_cb_prepare(q->svq);

		/* Buffers used meanwhile: poll again rather than wait. */
		if (virtqueue_poll(q->rvq, r) || virtqueue_poll(q->svq, t)) {
			virtqueue_disable_cb(q->rvq);
			virtqueue_disable_cb(q->svq);
			napi_schedule(napi);
		}
	}
	return done;
}

static int zcnet_vnet_open(struct net_device *dev)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	unsigned int i;
	int err;

	for (i = 0; i < vn->nq; i++) {
		err = zcnet_vnet_ops->open(vn->state, i);
		if (err)
			return err;
	}
	/* No byte queue limits reset here: frames counted before a stop may
	 * still be posted, and their completions come after (see
	 * zcnet_vnet_tx_recycled for where a ring is emptied). */
	for (i = 0; i < vn->nq; i++)
		napi_enable(&vn->qs[i].napi);
	/*
	 * Woken, not only started (as virtnet_tx_resume): after ethtool -G or
	 * -L (zcnet_vnet_resume) the qdisc may hold packets queued while
	 * transmit was stopped, and a queue that is only started is not run
	 * again until something new is queued, which TCP does not do while
	 * its packets wait in the host (TSQ: a stream stopped for good, seen
	 * under ethtool -G cycles). At a first open nothing is stopped and
	 * this starts the queues.
	 */
	netif_tx_wake_all_queues(dev);
	/* Whatever the device used before NAPI ran. */
	local_bh_disable();
	for (i = 0; i < vn->nq; i++)
		napi_schedule(&vn->qs[i].napi);
	local_bh_enable();
	return 0;
}

/*
 * NAPI off first, then transmit (as virtnet_close): a poll reaps sent
 * frames and wakes a stopped queue, so one that ran between the two would
 * start transmit again behind netif_tx_disable's back.
 */
static int zcnet_vnet_stop(struct net_device *dev)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	unsigned int i;

	for (i = 0; i < vn->nq; i++)
		napi_disable(&vn->qs[i].napi);
	netif_tx_disable(dev);
	return 0;
}

/*
 * Before the rings change under a device (ethtool -G, -L; RTNL held), as
 * upstream's virtnet_tx_pause: the flag first (the timer and every wake of
 * a transmit queue then do nothing), the timer stopped, then NAPI off and
 * transmit stopped (zcnet_vnet_stop). Once this returns nothing posts to
 * any ring and no ndo_start_xmit runs until zcnet_vnet_resume.
 */
static void zcnet_vnet_release_held(struct zcnet_vnet_queue *z);

static void zcnet_vnet_pause(struct zcnet_vnet *vn, bool running)
{
	unsigned int i;

	WRITE_ONCE(vn->resizing, true);
	zcnet_helper_timer_cancel(vn->timer);
	if (running)
		zcnet_vnet_stop(vn->dev);
	/* A chain test_rx_reorder held back goes to the device, so that the
	 * ring's reset gives it back with the others. */
	for (i = 0; i < vn->max_nq; i++)
		zcnet_vnet_release_held(&vn->qs[i]);
}

/* The other half (virtnet_tx_resume): the device runs again, if it ran. */
static int zcnet_vnet_resume(struct zcnet_vnet *vn, bool running)
{
	WRITE_ONCE(vn->resizing, false);
	zcnet_helper_timer_arm(vn->timer, 1000);
	return running ? zcnet_vnet_open(vn->dev) : 0;
}

static netdev_tx_t zcnet_vnet_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	unsigned int q = skb_get_queue_mapping(skb);

	/* The core picks among the queues in use (real_num_tx_queues). */
	if (WARN_ON_ONCE(q >= vn->nq))
		q = 0;
	return zcnet_vnet_ops->xmit(vn->state, q, skb, netdev_xmit_more());
}

/*
 * A TSO packet the transmit ring could never take whole (see
 * ZCNET_VNET_TX_STOP_FREE; rings resized small with ethtool -G) is
 * segmented by the core first, so the front end never waits for more room
 * than its ring has.
 */
static netdev_features_t zcnet_vnet_features_check(struct sk_buff *skb, struct net_device *dev,
						   netdev_features_t features)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	if (skb_is_gso(skb) &&
	    ZCNET_VNET_TX_STOP_FREE + skb->len / READ_ONCE(vn->tx_bytes_per_desc) >
		    virtqueue_get_vring_size(vn->qs[0].svq))
		features &= ~NETIF_F_GSO_MASK;
	return vlan_features_check(skb, features);
}

static void zcnet_vnet_stats64(struct net_device *dev, struct rtnl_link_stats64 *s)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	zcnet_vnet_ops->stats(vn->state, s);
}

static int zcnet_vnet_siocdevprivate(struct net_device *dev, struct ifreq *ifr,
				     void __user *data, int cmd)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	if (!zcnet_vnet_ops->ioctl)
		return -EOPNOTSUPP;
	return zcnet_vnet_ops->ioctl(vn->state, cmd - SIOCDEVPRIVATE, data);
}

static int zcnet_vnet_change_mtu(struct net_device *dev, int mtu);

static const struct net_device_ops zcnet_vnet_netdev_ops = {
	.ndo_open = zcnet_vnet_open,
	.ndo_change_mtu = zcnet_vnet_change_mtu,
	.ndo_stop = zcnet_vnet_stop,
	.ndo_start_xmit = zcnet_vnet_xmit,
	.ndo_features_check = zcnet_vnet_features_check,
	.ndo_get_stats64 = zcnet_vnet_stats64,
	.ndo_validate_addr = eth_validate_addr,
	.ndo_set_mac_address = eth_mac_addr,
	.ndo_siocdevprivate = zcnet_vnet_siocdevprivate,
};

/* The module's sysfs group on a bound device (netdev.c dispatches here by
 * netdev_ops): the group goes with unregister_netdev, before the state. */
static ssize_t zcnet_vnet_sysfs_show(struct net_device *dev, unsigned int idx, char *buf)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	return zcnet_vnet_ops->sysfs_show(vn->state, idx, buf);
}

static ssize_t zcnet_vnet_sysfs_store(struct net_device *dev, unsigned int idx,
				      const char *buf, size_t len)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	return zcnet_vnet_ops->sysfs_store(vn->state, idx, buf, len);
}

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

	ring->rx_max_pending = vn->qs[0].rvq->num_max;
	ring->tx_max_pending = vn->qs[0].svq->num_max;
	ring->rx_pending = virtqueue_get_vring_size(vn->qs[0].rvq);
	ring->tx_pending = virtqueue_get_vring_size(vn->qs[0].svq);
}

/* Fewest descriptors a ring may have: a train's speculative chains and a
 * packet's fragments need room. */
#define ZCNET_VNET_RING_MIN 64

static void zcnet_vnet_recycle_rx(struct virtqueue *vq, void *buf)
{
	struct zcnet_vnet *vn = vq->vdev->priv;

	zcnet_vnet_ops->recycle_rx(vn->state, vq->index / 2, (unsigned long)buf);
}

static void zcnet_vnet_recycle_tx(struct virtqueue *vq, void *buf)
{
	struct zcnet_vnet *vn = vq->vdev->priv;

	zcnet_vnet_ops->recycle_tx(vn->state, vq->index / 2, (unsigned long)buf);
}

/* A transmit ring was emptied of what it held unsent (its frames freed
 * unsent, above): none of the bytes byte queue limits counted for them
 * will complete, so its counts start again (virtnet_sq_free_unused_buf_done).
 * Only here: a frame still posted completes later and must find its bytes
 * counted. */
static void zcnet_vnet_tx_recycled(struct virtqueue *vq)
{
	struct zcnet_vnet *vn = vq->vdev->priv;

	netdev_tx_reset_queue(netdev_get_tx_queue(vn->dev, vq->index / 2));
}

/*
 * The device's interrupts held off while its rings are resized. 7.2's
 * virtqueue_resize() frees a ring (virtqueue_resize_split(): vring_free())
 * before it attaches the new one, and vring_interrupt() reads the used
 * ring's index before anything else: an interrupt of the queue that reached
 * a CPU after the queue's reset (vp_modern_disable_vq_and_reset() waits
 * only for a handler already running) reads the freed ring (KASAN:
 * use-after-free in vring_interrupt, seen under ethtool -G cycles on the
 * debug kernel). disable_irq() on every MSI-X vector of the device waits
 * for running handlers and keeps new ones from running; one raised
 * meanwhile is marked pending and delivered by enable_irq(), to the new
 * ring. The vectors are not affinity-managed (virtio_find_vqs() without an
 * irq_affinity). A device on INTx (or not on PCI) shares one handler that
 * walks the queues under the transport's lock, from which a reset queue is
 * taken out: nothing to do there. Returns how many vectors are off.
 */
static unsigned int zcnet_vnet_irqs_off(struct zcnet_vnet *vn)
{
	struct device *p = vn->vdev->dev.parent;
	struct pci_dev *pdev;
	unsigned int n = 0;
	int irq;

	if (!p || !dev_is_pci(p))
		return 0;
	pdev = to_pci_dev(p);
	if (!pdev->msix_enabled)
		return 0;
	while ((irq = pci_irq_vector(pdev, n)) > 0) {
		disable_irq(irq);
		n++;
	}
	return n;
}

/* The other half: the n vectors zcnet_vnet_irqs_off() turned off, on. */
static void zcnet_vnet_irqs_on(struct zcnet_vnet *vn, unsigned int n)
{
	struct pci_dev *pdev;
	int irq;

	if (!n)
		return;
	pdev = to_pci_dev(vn->vdev->dev.parent);
	while (n--) {
		irq = pci_irq_vector(pdev, n);
		if (irq > 0)
			enable_irq(irq);
	}
}

/*
 * ethtool -G DEV rx N tx M (RTNL held): every queue pair's rings resized
 * (virtqueue_resize: the device resets each ring alone, VIRTIO_F_RING_RESET),
 * up to the size the device offers. A running device stops first; the
 * buffers the rings held come back to the front end unused (its speculative
 * chains among them), and open posts new ones.
 */
static int zcnet_vnet_set_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
				    struct kernel_ethtool_ringparam *kring,
				    struct netlink_ext_ack *extack)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	bool running = netif_running(dev);
	unsigned int i, irqs;
	int err = 0, err2;

	if (ring->rx_mini_pending || ring->rx_jumbo_pending)
		return -EINVAL;
	if (ring->rx_pending == virtqueue_get_vring_size(vn->qs[0].rvq) &&
	    ring->tx_pending == virtqueue_get_vring_size(vn->qs[0].svq))
		return 0;
	if (!virtio_has_feature(vn->vdev, VIRTIO_F_RING_RESET) ||
	    !zcnet_vnet_ops->recycle_rx || !zcnet_vnet_ops->recycle_tx) {
		NL_SET_ERR_MSG(extack, "the device cannot reset a ring alone (no VIRTIO_F_RING_RESET)");
		return -EOPNOTSUPP;
	}
	if (ring->rx_pending < ZCNET_VNET_RING_MIN || ring->tx_pending < ZCNET_VNET_RING_MIN) {
		NL_SET_ERR_MSG(extack, "rings need at least 64 descriptors");
		return -EINVAL;
	}
	if (ring->rx_pending > vn->qs[0].rvq->num_max || ring->tx_pending > vn->qs[0].svq->num_max)
		return -EINVAL;
	/* Nothing else posts meanwhile: no transmit, no NAPI, RTNL held (the
	 * ioctl), and the timer (admission frames) does nothing. */
	zcnet_vnet_pause(vn, running);
	irqs = zcnet_vnet_irqs_off(vn);
	for (i = 0; i < vn->max_nq && !err; i++) {
		err = virtqueue_resize(vn->qs[i].rvq, ring->rx_pending, zcnet_vnet_recycle_rx, NULL);
		if (!err)
			err = virtqueue_resize(vn->qs[i].svq, ring->tx_pending,
					       zcnet_vnet_recycle_tx, zcnet_vnet_tx_recycled);
	}
	zcnet_vnet_irqs_on(vn, irqs);
	if (err)
		netdev_warn(dev, "%s: cannot resize the rings to %u/%u: %d\n",
			    KBUILD_MODNAME, ring->rx_pending, ring->tx_pending, err);
	err2 = zcnet_vnet_resume(vn, running);
	if (err2)
		netdev_warn(dev, "%s: cannot restart after resizing the rings: %d\n",
			    KBUILD_MODNAME, err2);
	return err ?: err2;
}

/*
 * ip link set DEV mtu N (RTNL held). Every receive chain holds a frame of
 * the device's MTU (the front end sizes each chain it posts for it; chains
 * stay posted while the device is down): when the MTU grows, the device
 * pauses, its receive rings are reset (virtqueue_reset, needs
 * VIRTIO_F_RING_RESET; -EOPNOTSUPP without) and the chains come back unused
 * as for ethtool -G, and a running device posts chains for the new MTU.
 */
static int zcnet_vnet_change_mtu(struct net_device *dev, int mtu)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	bool running = netif_running(dev);
	unsigned int i, irqs;
	int err = 0, err2;

	if (mtu <= dev->mtu) {
		WRITE_ONCE(dev->mtu, mtu);
		return 0;
	}
	if (!virtio_has_feature(vn->vdev, VIRTIO_F_RING_RESET) || !zcnet_vnet_ops->recycle_rx) {
		netdev_warn(dev, "%s: the device cannot reset a ring alone (no VIRTIO_F_RING_RESET): the MTU cannot grow\n",
			    KBUILD_MODNAME);
		return -EOPNOTSUPP;
	}
	zcnet_vnet_pause(vn, running);
	irqs = zcnet_vnet_irqs_off(vn);
	for (i = 0; i < vn->max_nq && !err; i++)
		err = virtqueue_reset(vn->qs[i].rvq, zcnet_vnet_recycle_rx, NULL);
	zcnet_vnet_irqs_on(vn, irqs);
	if (err)
		netdev_warn(dev, "%s: cannot reset the receive rings: %d\n", KBUILD_MODNAME, err);
	else
		WRITE_ONCE(dev->mtu, mtu);
	err2 = zcnet_vnet_resume(vn, running);
	if (err2)
		netdev_warn(dev, "%s: cannot restart after resetting the receive rings: %d\n",
			    KBUILD_MODNAME, err2);
	return err ?: err2;
}

/* ethtool -S: the front end's statistics, then each queue pair's. */
static int zcnet_vnet_sset_count(struct net_device *dev, int sset)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	return sset == ETH_SS_STATS ? zcnet_vnet_ops->nstats + 2 * vn->nq : -EOPNOTSUPP;
}

static void zcnet_vnet_strings(struct net_device *dev, u32 sset, u8 *data)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	unsigned int i;

	if (sset != ETH_SS_STATS)
		return;
	zcnet_vnet_ops->stat_names(data);
	data += zcnet_vnet_ops->nstats * ETH_GSTRING_LEN;
	for (i = 0; i < vn->nq; i++) {
		ethtool_sprintf(&data, "rx_queue_%u_packets", i);
		ethtool_sprintf(&data, "tx_queue_%u_packets", i);
	}
}

static void zcnet_vnet_ethtool_stats(struct net_device *dev, struct ethtool_stats *st, u64 *data)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	unsigned int i;

	zcnet_vnet_ops->stat_values(vn->state, data);
	data += zcnet_vnet_ops->nstats;
	for (i = 0; i < vn->nq; i++) {
		*data++ = READ_ONCE(vn->qs[i].rx_packets);
		*data++ = READ_ONCE(vn->qs[i].tx_packets);
	}
}

static void zcnet_vnet_channels(struct net_device *dev, struct ethtool_channels *ch)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	ch->max_combined = vn->max_nq;
	ch->combined_count = vn->nq;
}

static void zcnet_vnet_steer(struct zcnet_vnet *vn);

/*
 * ethtool -L DEV combined N (RTNL held): N queue pairs in use, from 1 to what
 * the device offers. A running device pauses (zcnet_vnet_pause), is told the
 * new number (RSS or VQ_PAIRS_SET) and starts again. The receive rings of
 * pairs no longer in use keep their buffers (the device no longer picks
 * them) until they are used again or the device is unbound; their transmit
 * rings are reset (VIRTIO_F_RING_RESET) so that the frames they held unsent
 * are freed, and with them what their sockets are charged, rather than
 * stranded until the pair is used again.
 */
static int zcnet_vnet_set_channels(struct net_device *dev, struct ethtool_channels *ch)
{
	struct zcnet_vnet *vn = netdev_priv(dev);
	bool running = netif_running(dev);
	unsigned int old = vn->nq, i;
	int err = 0;

	if (ch->rx_count || ch->tx_count || ch->other_count)
		return -EINVAL;
	if (!ch->combined_count || ch->combined_count > vn->max_nq)
		return -EINVAL;
	if (ch->combined_count == vn->nq)
		return 0;
	zcnet_vnet_pause(vn, running);
	vn->nq = ch->combined_count;
	zcnet_vnet_steer(vn);
	netif_set_real_num_tx_queues(dev, vn->nq);
	netif_set_real_num_rx_queues(dev, vn->nq);
	if (virtio_has_feature(vn->vdev, VIRTIO_F_RING_RESET) && zcnet_vnet_ops->recycle_tx)
		for (i = vn->nq; i < old; i++)
			if (virtqueue_reset(vn->qs[i].svq, zcnet_vnet_recycle_tx,
					    zcnet_vnet_tx_recycled))
				netdev_warn(dev, "%s: cannot reset transmit ring %u\n",
					    KBUILD_MODNAME, i);
	err = zcnet_vnet_resume(vn, running);
	if (err)
		netdev_warn(dev, "%s: cannot restart with %u queue pairs: %d\n",
			    KBUILD_MODNAME, vn->nq, err);
	return err;
}

static int zcnet_vnet_get_coalesce(struct net_device *dev, struct ethtool_coalesce *ec,
				   struct kernel_ethtool_coalesce *kec,
				   struct netlink_ext_ack *extack)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	if (!zcnet_vnet_ops->rx_usecs)
		return -EOPNOTSUPP;
	ec->rx_coalesce_usecs = zcnet_vnet_ops->rx_usecs(vn->state);
	return 0;
}

static int zcnet_vnet_set_coalesce(struct net_device *dev, struct ethtool_coalesce *ec,
				   struct kernel_ethtool_coalesce *kec,
				   struct netlink_ext_ack *extack)
{
	struct zcnet_vnet *vn = netdev_priv(dev);

	if (!zcnet_vnet_ops->set_rx_usecs)
		return -EOPNOTSUPP;
	return zcnet_vnet_ops->set_rx_usecs(vn->state, ec->rx_coalesce_usecs);
}

static const struct ethtool_ops zcnet_vnet_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_RX_USECS,
	.get_coalesce = zcnet_vnet_get_coalesce,
	.set_coalesce = zcnet_vnet_set_coalesce,
	.get_drvinfo = zcnet_vnet_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_ringparam = zcnet_vnet_ringparam,
	.set_ringparam = zcnet_vnet_set_ringparam,
	.get_channels = zcnet_vnet_channels,
	.set_channels = zcnet_vnet_set_channels,
	.get_sset_count = zcnet_vnet_sset_count,
	.get_strings = zcnet_vnet_strings,
	.get_ethtool_stats = zcnet_vnet_ethtool_stats,
};

static void zcnet_vnet_timer_fn(void *data)
{
	struct zcnet_vnet *vn = data;

	if (READ_ONCE(vn->resizing))
		return;
	zcnet_vnet_ops->timer(vn->state);
}

/* Takes every buffer still posted out of both rings (the device is reset):
 * the ring frees what it allocated for them (indirect descriptor tables);
 * the buffers themselves are the front end's, freed with its rings. */
static void zcnet_vnet_detach_all(struct zcnet_vnet *vn)
{
	unsigned int i;
	void *buf;

	for (i = 0; i < vn->max_nq; i++) {
		while (virtqueue_detach_unused_buf(vn->qs[i].rvq))
			;
		while (virtqueue_detach_unused_buf(vn->qs[i].svq))
			;
	}
	/* A control command's buffer is ours (zcnet_vnet_command). */
	while (vn->cvq && (buf = virtqueue_detach_unused_buf(vn->cvq)))
		kfree(buf);
	vn->cmd_lost = NULL;
}

/* How long the device may take to answer a control command: it answers
 * in microseconds, but one that never does must not hold the bind (or
 * RTNL, under ethtool -L) for ever. */
#define ZCNET_VNET_CMD_TIMEOUT (5 * HZ)

/* Sends a control command and waits for the device's answer, at most
 * ZCNET_VNET_CMD_TIMEOUT (process context; RTNL held or the device not
 * registered yet, so one at a time): whether it said OK. */
static bool zcnet_vnet_command(struct zcnet_vnet *vn, u8 class, u8 cmd,
			       const void *data, unsigned int len)
{
	struct scatterlist hdr, out, in, *sgs[3];
	struct virtio_net_ctrl_hdr *h;
	unsigned long end;
	unsigned int tmp;
	void *buf, *done;
	u8 *ack;
	bool ok = false;

	if (!vn->cvq)
		return false;
	if (vn->cmd_lost) {
		/* Only once the device gave the late one back. */
		done = virtqueue_get_buf(vn->cvq, &tmp);
		if (!done)
			return false;
		kfree(done);
		vn->cmd_lost = NULL;
	}
	/* The device reads and writes these: no stack memory. */
	buf = kmalloc(sizeof(*h) + len + 1, GFP_KERNEL);
	if (!buf)
		return false;
	h = buf;
	h->class = class;
	h->cmd = cmd;
	memcpy(buf + sizeof(*h), data, len);
	ack = buf + sizeof(*h) + len;
	*ack = VIRTIO_NET_ERR;
	sg_init_one(&hdr, h, sizeof(*h));
	sg_init_one(&out, buf + sizeof(*h), len);
	sg_init_one(&in, ack, 1);
	sgs[0] = &hdr;
	sgs[1] = &out;
	sgs[2] = &in;
	if (virtqueue_add_sgs(vn->cvq, sgs, 2, 1, buf, GFP_KERNEL)) {
		kfree(buf);
		return false;
	}
	end = jiffies + ZCNET_VNET_CMD_TIMEOUT;
	virtqueue_kick(vn->cvq);
	while (!(done = virtqueue_get_buf(vn->cvq, &tmp))) {
		if (virtqueue_is_broken(vn->cvq) || time_after(jiffies, end)) {
			dev_warn(&vn->vdev->dev, "%s: no answer from the device to control command %u.%u\n",
				 KBUILD_MODNAME, class, cmd);
			vn->cmd_lost = buf;
			return false;
		}
		cond_resched();
		cpu_relax();
	}
	ok = done == buf && *ack == VIRTIO_NET_OK;
	kfree(done);
	if (done != buf)
		vn->cmd_lost = buf;
	return ok;
}

/*
 * Tells the device how many queue pairs to use and, with RSS, how to steer:
 * TCP and UDP that is not fragmented spreads over queue pairs 1 and up by
 * its hash, and everything the device does not classify (IPv4 fragments,
 * whose ports it cannot see, but also ARP and ICMP) goes to queue pair 0,
 * whose receive list the front end may speculate on (paper 6.2's second
 * receive list). Without RSS the device steers as it likes.
 */
static void zcnet_vnet_steer(struct zcnet_vnet *vn)
{
	struct virtio_device *vdev = vn->vdev;
	u32 types = VIRTIO_NET_RSS_HASH_TYPE_TCPv4 | VIRTIO_NET_RSS_HASH_TYPE_UDPv4 |
		    VIRTIO_NET_RSS_HASH_TYPE_TCPv6 | VIRTIO_NET_RSS_HASH_TYPE_UDPv6;
	unsigned int key_len, table, n, i;
	__le16 nq = cpu_to_le16(vn->nq);
	u8 *c, *p;

	vn->rss = false;
	if (vn->nq >= 2 && virtio_has_feature(vdev, VIRTIO_NET_F_RSS)) {
		key_len = min_t(unsigned int, virtio_cread8(vdev, offsetof(struct virtio_net_config, rss_max_key_size)), 40);
		n = virtio_cread16(vdev, offsetof(struct virtio_net_config, rss_max_indirection_table_length));
		types &= virtio_cread32(vdev, offsetof(struct virtio_net_config, supported_hash_types));
		table = roundup_pow_of_two(vn->nq - 1);
		if (key_len && types && table <= n) {
			/* hash_types, mask, unclassified queue, the table,
			 * max_tx_vq, key length, key. */
			c = kzalloc(4 + 2 + 2 + 2 * table + 2 + 1 + key_len, GFP_KERNEL);
			if (c) {
				p = c;
				put_unaligned_le32(types, p);
				put_unaligned_le16(table - 1, p + 4);
				put_unaligned_le16(0, p + 6);
				p += 8;
				for (i = 0; i < table; i++, p += 2)
					put_unaligned_le16(1 + i % (vn->nq - 1), p);
				put_unaligned_le16(vn->nq, p);
				p[2] = key_len;
				get_random_bytes(p + 3, key_len);
				vn->rss = zcnet_vnet_command(vn, VIRTIO_NET_CTRL_MQ,
							     VIRTIO_NET_CTRL_MQ_RSS_CONFIG, c,
							     p + 3 + key_len - c);
				kfree(c);
			}
			if (vn->rss)
				return;
			dev_warn(&vdev->dev, "%s: the device refused the RSS setting: frames are steered as it likes\n",
				 KBUILD_MODNAME);
		}
	}
	/* One pair after several (ethtool -L): VQ_PAIRS_SET also ends RSS. */
	if ((vn->nq >= 2 || (vn->cvq && vn->max_nq >= 2)) &&
	    !zcnet_vnet_command(vn, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &nq, sizeof(nq)) &&
	    vn->nq >= 2) {
		dev_warn(&vdev->dev, "%s: the device refused %u queue pairs: using one\n",
			 KBUILD_MODNAME, vn->nq);
		vn->nq = 1;
	}
}

/*
 * The device's virtqueues: 2i and 2i + 1 for each of its queue pairs i, then
 * the control virtqueue at 2 * (the pairs it offers). virtio_find_vqs()
 * numbers them in order, so every pair's queues are found (as virtio_net
 * does), those of pairs past ZCNET_VNET_MAX_QUEUES with no callback and
 * never used, so that the control queue is the device's own and not
 * another pair's receive queue.
 */
static int zcnet_vnet_find_vqs(struct zcnet_vnet *vn, unsigned int dev_nq, bool ctrl)
{
	unsigned int nvq = 2 * dev_nq + ctrl, i;
	struct virtqueue_info *info;
	struct virtqueue **vqs;
	int err = -ENOMEM;

	info = kcalloc(nvq, sizeof(*info), GFP_KERNEL);
	vqs = kcalloc(nvq, sizeof(*vqs), GFP_KERNEL);
	if (!info || !vqs)
		goto out;
	for (i = 0; i < 2 * dev_nq; i++) {
		if (i / 2 >= vn->max_nq)
			info[i] = (struct virtqueue_info){ i % 2 ? "output.unused" : "input.unused" };
		else
			info[i] = (struct virtqueue_info){
				i % 2 ? vn->qs[i / 2].sname : vn->qs[i / 2].rname,
				zcnet_vnet_vq_done };
	}
	if (ctrl)
		info[2 * dev_nq] = (struct virtqueue_info){ "control" };
	err = virtio_find_vqs(vn->vdev, nvq, vqs, info, NULL);
	if (err)
		goto out;
	for (i = 0; i < vn->max_nq; i++) {
		vn->qs[i].rvq = vqs[2 * i];
		vn->qs[i].svq = vqs[2 * i + 1];
	}
	vn->cvq = ctrl ? vqs[2 * dev_nq] : NULL;
out:
	kfree(vqs);
	kfree(info);
	return err;
}

static int zcnet_vnet_probe(struct virtio_device *vdev)
{
	struct net_device *dev;
	struct zcnet_vnet *vn;
	unsigned int dev_nq = 1, max_nq, i;
	bool ctrl;
	void *state;
	int err;

	if (!zcnet_vnet_wanted(vdev))
		return -ENODEV;
	if (!virtio_has_feature(vdev, VIRTIO_F_VERSION_1)) {
		dev_warn(&vdev->dev, "%s: a virtio 1.0 device is needed\n", KBUILD_MODNAME);
		return -EOPNOTSUPP;
	}
	ctrl = virtio_has_feature(vdev, VIRTIO_NET_F_CTRL_VQ);
	if (ctrl && virtio_has_feature(vdev, VIRTIO_NET_F_MQ))
		dev_nq = clamp_t(unsigned int,
				 virtio_cread16(vdev, offsetof(struct virtio_net_config, max_virtqueue_pairs)),
				 VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MIN, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MAX);
	max_nq = min_t(unsigned int, dev_nq, ZCNET_VNET_MAX_QUEUES);
	dev = alloc_etherdev_mq(sizeof(*vn), max_nq);
	if (!dev)
		return -ENOMEM;
	SET_NETDEV_DEV(dev, &vdev->dev);
	vn = netdev_priv(dev);
	vn->vdev = vdev;
	vn->dev = dev;
	vn->max_nq = max_nq;
	vn->tx_bytes_per_desc = ZCNET_VNET_TX_BYTES_PER_DESC;
	/* A queue pair per CPU for what is not speculated on, and queue
	 * pair 0 for what is (see zcnet_vnet_steer). */
	vn->nq = min(max_nq, num_online_cpus() + 1);
	vdev->priv = vn;
	if (virtio_has_feature(vdev, VIRTIO_NET_F_MAC)) {
		u8 a[ETH_ALEN];

		virtio_cread_bytes(vdev, offsetof(struct virtio_net_config, mac), a, ETH_ALEN);
		eth_hw_addr_set(dev, a);
	} else {
		eth_hw_addr_random(dev);
	}
	for (i = 0; i < max_nq; i++) {
		struct zcnet_vnet_queue *q = &vn->qs[i];

		q->vn = vn;
		q->idx = i;
		snprintf(q->rname, sizeof(q->rname), "input.%u", i);
		snprintf(q->sname, sizeof(q->sname), "output.%u", i);
	}
	err = zcnet_vnet_find_vqs(vn, dev_nq, ctrl);
	if (err)
		goto free;
	vn->timer = zcnet_helper_timer_new(zcnet_vnet_timer_fn, vn);
	if (!vn->timer) {
		err = -ENOMEM;
		vdev->config->del_vqs(vdev);
		goto free;
	}
	for (i = 0; i < max_nq; i++)
		netif_napi_add(dev, &vn->qs[i].napi, zcnet_vnet_poll);
	dev->netdev_ops = &zcnet_vnet_netdev_ops;
	dev->ethtool_ops = &zcnet_vnet_ethtool_ops;
	if (zcnet_vnet_ops->sysfs_show && zcnet_vnet_ops->sysfs_store)
		dev->sysfs_groups[0] = zcnet_helper_sysfs_group();
	/* Checksums are resolved in software before a frame is posted: the
	 * core keeps scatter-gather only with a checksum feature. TSO: TCP/IPv4
	 * GSO packets reach the front end whole, and it cuts them into segments
	 * itself (zcnet_helper_gso_segment_paged(), on page boundaries). */
	dev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_TSO;
	dev->features = dev->hw_features;
	state = zcnet_vnet_ops->probe(vn);
	if (IS_ERR(state)) {
		err = PTR_ERR(state);
		goto del;
	}
	vn->state = state;
	virtio_device_ready(vdev);
	zcnet_vnet_steer(vn);
	netif_set_real_num_tx_queues(dev, vn->nq);
	netif_set_real_num_rx_queues(dev, vn->nq);
	err = register_netdev(dev);
	if (err) {
		virtio_reset_device(vdev);
		zcnet_vnet_detach_all(vn);
		zcnet_vnet_ops->remove(state);
		goto del;
	}
	netif_carrier_on(dev);
	dev_info(&vdev->dev, "%s: %s bound (%u of %u queue pairs%s, %u receive, %u transmit descriptors each)\n",
		 KBUILD_MODNAME, netdev_name(dev), vn->nq, vn->max_nq,
		 vn->rss ? ", fragments steered to pair 0" : "",
		 virtqueue_get_vring_size(vn->qs[0].rvq), virtqueue_get_vring_size(vn->qs[0].svq));
	return 0;
del:
	for (i = 0; i < max_nq; i++)
		netif_napi_del(&vn->qs[i].napi);
	zcnet_helper_timer_free(vn->timer);
	vdev->config->del_vqs(vdev);
free:
	free_netdev(dev);
	return err;
}

static void zcnet_vnet_remove(struct virtio_device *vdev)
{
	struct zcnet_vnet *vn = vdev->priv;
	unsigned int i;

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
	for (i = 0; i < vn->max_nq; i++)
		netif_napi_del(&vn->qs[i].napi);
	zcnet_helper_timer_free(vn->timer);
	free_netdev(vn->dev);
}

static const struct virtio_device_id zcnet_vnet_ids[] = {
	{ VIRTIO_ID_NET, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static const unsigned int zcnet_vnet_features[] = {
	VIRTIO_NET_F_MAC,
	VIRTIO_NET_F_CTRL_VQ,
	VIRTIO_NET_F_MQ,
	VIRTIO_NET_F_RSS,
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
	if (ops->sysfs_show && ops->sysfs_store)
		zcnet_helper_sysfs_set_alt(&zcnet_vnet_netdev_ops, zcnet_vnet_sysfs_show,
					   zcnet_vnet_sysfs_store);
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

unsigned int zcnet_helper_vnet_queues(struct zcnet_vnet *vn)
{
	return vn->nq;
}

unsigned int zcnet_helper_vnet_max_queues(struct zcnet_vnet *vn)
{
	return vn->max_nq;
}

bool zcnet_helper_vnet_steered(struct zcnet_vnet *vn)
{
	return vn->rss;
}

unsigned int zcnet_helper_vnet_rx_size(struct zcnet_vnet *vn)
{
	return virtqueue_get_vring_size(vn->qs[0].rvq);
}

unsigned int zcnet_helper_vnet_tx_size(struct zcnet_vnet *vn)
{
	return virtqueue_get_vring_size(vn->qs[0].svq);
}

unsigned int zcnet_helper_vnet_rx_max(struct zcnet_vnet *vn)
{
	return max(vn->qs[0].rvq->num_max, virtqueue_get_vring_size(vn->qs[0].rvq));
}

unsigned int zcnet_helper_vnet_tx_max(struct zcnet_vnet *vn)
{
	return max(vn->qs[0].svq->num_max, virtqueue_get_vring_size(vn->qs[0].svq));
}

void zcnet_helper_vnet_set_mtu(struct zcnet_vnet *vn, unsigned int mtu, unsigned int max)
{
	vn->dev->max_mtu = max;
	vn->dev->mtu = min(mtu, max);
}

void zcnet_helper_vnet_set_tx_bytes_per_desc(struct zcnet_vnet *vn, unsigned int bytes)
{
	WRITE_ONCE(vn->tx_bytes_per_desc, max(bytes, 1U));
}

void zcnet_helper_vnet_arm_timer(struct zcnet_vnet *vn, unsigned long delay_us)
{
	zcnet_helper_timer_arm(vn->timer, delay_us);
}

bool zcnet_helper_vnet_dying(struct zcnet_vnet *vn)
{
	return READ_ONCE(vn->dying);
}

bool zcnet_helper_vnet_test_rx_no_pages(void)
{
	return READ_ONCE(test_rx_no_pages);
}

/* The chains test_rx_reorder held back, to the device in the order they
 * were posted (those the ring has no room for yet are kept). */
static void zcnet_vnet_release_held(struct zcnet_vnet_queue *z)
{
	unsigned int i = 0, j;

	while (i < z->nheld &&
	       !virtqueue_add_inbuf(z->rvq, z->held_sg[i], z->held_n[i], z->held_token[i], GFP_ATOMIC))
		i++;
	for (j = 0; i + j < z->nheld; j++) {
		memcpy(z->held_sg[j], z->held_sg[i + j], sizeof(z->held_sg[j]));
		z->held_n[j] = z->held_n[i + j];
		z->held_token[j] = z->held_token[i + j];
	}
	z->nheld = j;
	if (!j)
		z->passed = 0;
}

int zcnet_helper_vnet_post_rx(struct zcnet_vnet *vn, unsigned int q, void *hdr, unsigned int hdr_len,
			      struct page *slice, unsigned int off, unsigned int len,
			      void *ovf, unsigned int ovf_len, struct page **pages,
			      unsigned int npages, unsigned long token)
{
	struct zcnet_vnet_queue *z = zq(vn, q);
	struct scatterlist sg[3 + ZCNET_VNET_RX_PAGES];
	unsigned int n = 0, i, every = READ_ONCE(test_rx_reorder);
	int err;

	if (!token || npages > ZCNET_VNET_RX_PAGES || off > PAGE_SIZE || len > PAGE_SIZE - off)
		return -EINVAL;
	sg_init_table(sg, 1 + !!(slice && len) + !!(ovf && ovf_len) + npages);
	sg_set_buf(&sg[n++], hdr, hdr_len);
	if (slice && len)
		sg_set_page(&sg[n++], slice, len, off);
	if (ovf && ovf_len)
		sg_set_buf(&sg[n++], ovf, ovf_len);
	for (i = 0; i < npages; i++)
		sg_set_page(&sg[n++], pages[i], PAGE_SIZE, 0);
	/* (Held only while the ring has room to spare; one released when
	 * the ring has no room yet is added at the next chance.) */
	if (every && !z->passed && (z->nheld || ++z->rx_posts % every == 0) &&
	    z->nheld < ZCNET_VNET_HELD &&
	    z->rvq->num_free > 2 * ZCNET_VNET_HELD * (3 + ZCNET_VNET_RX_PAGES)) {
		memcpy(z->held_sg[z->nheld], sg, sizeof(sg));
		z->held_n[z->nheld] = n;
		z->held_token[z->nheld++] = (void *)token;
		return 0;
	}
	err = virtqueue_add_inbuf(z->rvq, sg, n, (void *)token, GFP_ATOMIC);
	if (!err && z->nheld && ++z->passed >= ZCNET_VNET_HELD_AFTER)
		zcnet_vnet_release_held(z);
	return err;
}

unsigned long zcnet_helper_vnet_get_rx(struct zcnet_vnet *vn, unsigned int q, unsigned int *len)
{
	struct zcnet_vnet_queue *z = zq(vn, q);
	unsigned long t = (unsigned long)virtqueue_get_buf(z->rvq, len);

	if (t)
		WRITE_ONCE(z->rx_packets, z->rx_packets + 1);
	return t;
}

int zcnet_helper_vnet_post_tx(struct zcnet_vnet *vn, unsigned int q, struct sk_buff *skb, unsigned long token)
{
	struct scatterlist sg[MAX_SKB_FRAGS + 2];
	/* The header lives in skb->cb, the driver's while it owns the skb
	 * (as virtio_net does when it cannot push it): no copy of a cloned
	 * head. */
	struct virtio_net_hdr_v1 *h = (void *)skb->cb;
	int n;

	if (!token)
		return -EINVAL;
	if (zcnet_helper_skb_resolve_csum(skb))
		return -ENOMEM;
	memset(h, 0, sizeof(*h));
	sg_init_table(sg, skb_shinfo(skb)->nr_frags + 2);
	sg_set_buf(&sg[0], h, sizeof(*h));
	n = skb_to_sgvec(skb, sg + 1, 0, skb->len);
	if (n < 0)
		return n;
	return virtqueue_add_outbuf(zq(vn, q)->svq, sg, n + 1, (void *)token, GFP_ATOMIC);
}

unsigned long zcnet_helper_vnet_get_tx(struct zcnet_vnet *vn, unsigned int q)
{
	struct zcnet_vnet_queue *z = zq(vn, q);
	unsigned int len;
	unsigned long t = (unsigned long)virtqueue_get_buf(z->svq, &len);

	if (t)
		WRITE_ONCE(z->tx_packets, z->tx_packets + 1);
	return t;
}

unsigned int zcnet_helper_vnet_tx_free(struct zcnet_vnet *vn, unsigned int q)
{
	return zq(vn, q)->svq->num_free;
}

bool zcnet_helper_vnet_kick_rx(struct zcnet_vnet *vn, unsigned int q)
{
	struct zcnet_vnet_queue *z = zq(vn, q);
	unsigned int i;

	/* A held-back chain waits for others to pass it, not for a ring the
	 * device has nothing else in. */
	if (z->nheld && z->rvq->num_free == virtqueue_get_vring_size(z->rvq))
		zcnet_vnet_release_held(z);

	if (!virtqueue_kick_prepare(zq(vn, q)->rvq))
		return false;
	virtqueue_notify(zq(vn, q)->rvq);
	/*
	 * The device asks for a notification when it ran out of buffers in
	 * this ring. QEMU, steering in software (RSS), keeps a frame it could
	 * not place here in the backend queue it came from, and retries it
	 * only when the receive ring of *that* pair is notified: notify them
	 * all, or the frame waits for unrelated traffic on the other pair.
	 */
	if (vn->rss)
		for (i = 0; i < vn->nq; i++)
			if (i != q)
				virtqueue_notify(vn->qs[i].rvq);
	return true;
}

bool zcnet_helper_vnet_kick_tx(struct zcnet_vnet *vn, unsigned int q)
{
	return virtqueue_kick_prepare(zq(vn, q)->svq) && virtqueue_notify(zq(vn, q)->svq);
}

/* The n pages' references pass to skb as its fragments, len bytes of
 * them from the first on; a page holding none of them is put. */
static void zcnet_vnet_add_pages(struct sk_buff *skb, struct page **pages, unsigned int n,
				 unsigned int len)
{
	unsigned int i, l;

	for (i = 0; i < n; i++) {
		l = min_t(unsigned int, len, PAGE_SIZE);
		if (!skb || !l || skb_shinfo(skb)->nr_frags >= MAX_SKB_FRAGS) {
			put_page(pages[i]);
			continue;
		}
		skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags, pages[i], 0, l, PAGE_SIZE);
		len -= l;
	}
}

struct sk_buff *zcnet_helper_vnet_rx_skb(struct zcnet_vnet *vn, unsigned int q, const void *head,
					 unsigned int head_len, struct page **pages,
					 unsigned int npages, unsigned int len)
{
	struct sk_buff *skb = napi_alloc_skb(&zq(vn, q)->napi, head_len);

	if (!skb || head_len < ETH_HLEN || len > npages * PAGE_SIZE) {
		zcnet_vnet_add_pages(NULL, pages, npages, 0);
		kfree_skb(skb);
		return NULL;
	}
	skb_put_data(skb, head, head_len);
	zcnet_vnet_add_pages(skb, pages, npages, len);
	skb->protocol = eth_type_trans(skb, vn->dev);
	return skb;
}

struct sk_buff *zcnet_helper_vnet_rx_skb_frag(struct zcnet_vnet *vn, unsigned int q, const void *head,
					      unsigned int head_len, struct page *page,
					      unsigned int off, unsigned int len)
{
	struct sk_buff *skb = napi_alloc_skb(&zq(vn, q)->napi, head_len);

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

struct sk_buff *zcnet_helper_vnet_rx_skb_copy(struct zcnet_vnet *vn, unsigned int q, const void *a,
					      unsigned int alen, struct page *page,
					      unsigned int off, unsigned int plen,
					      const void *b, unsigned int blen,
					      struct page **pages, unsigned int npages,
					      unsigned int len)
{
	struct sk_buff *skb = NULL;

	if (off > PAGE_SIZE || plen > PAGE_SIZE - off || alen + plen + blen < ETH_HLEN ||
	    len > npages * PAGE_SIZE)
		goto fail;
	skb = napi_alloc_skb(&zq(vn, q)->napi, alen + plen + blen);
	if (!skb)
		goto fail;
	skb_put_data(skb, a, alen);
	if (plen)
		skb_put_data(skb, page_address(page) + off, plen);
	skb_put_data(skb, b, blen);
	zcnet_vnet_add_pages(skb, pages, npages, len);
	skb->protocol = eth_type_trans(skb, vn->dev);
	return skb;
fail:
	zcnet_vnet_add_pages(NULL, pages, npages, 0);
	return NULL;
}

void zcnet_helper_vnet_receive(struct zcnet_vnet *vn, unsigned int q, struct sk_buff *skb)
{
	napi_gro_receive(&zq(vn, q)->napi, skb);
}

void zcnet_helper_vnet_tx_stop(struct zcnet_vnet *vn, unsigned int q)
{
	netif_stop_subqueue(vn->dev, q);
}

void zcnet_helper_vnet_tx_wake(struct zcnet_vnet *vn, unsigned int q)
{
	/* Not while paused: ndo_start_xmit must not run while the rings
	 * change (zcnet_vnet_pause). */
	if (!READ_ONCE(vn->resizing) && __netif_subqueue_stopped(vn->dev, q))
		netif_wake_subqueue(vn->dev, q);
}

bool zcnet_helper_vnet_tx_sent(struct zcnet_vnet *vn, unsigned int q, unsigned int bytes, bool more)
{
	return __netdev_tx_sent_queue(netdev_get_tx_queue(vn->dev, q), bytes, more);
}

void zcnet_helper_vnet_tx_completed(struct zcnet_vnet *vn, unsigned int q, unsigned int pkts, unsigned int bytes)
{
	netdev_tx_completed_queue(netdev_get_tx_queue(vn->dev, q), pkts, bytes);
}
