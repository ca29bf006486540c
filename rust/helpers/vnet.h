/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A virtio-net device driven by a zcnet front end (rust/zcnet/vnet.rs): the
 * virtio driver registration, the net_device, its queue pairs (two
 * virtqueues and a NAPI context each) and the control virtqueue, with the front end's callbacks for what the
 * datapath does. The front end binds only the devices named in the module
 * parameter `devices` (virtioN names or MAC addresses), so that loading the
 * module takes no NIC away from virtio_net by surprise.
 */
#ifndef ZCNET_HELPERS_VNET_H
#define ZCNET_HELPERS_VNET_H

#include <linux/types.h>

struct net_device;
struct page;
struct rtnl_link_stats64;
struct sk_buff;
struct virtqueue;
struct zcnet_vnet;

/* Bytes of the virtio-net header in front of every frame (virtio 1.0). */
#define ZCNET_VNET_HDR_LEN 12
/* Queue pairs used at most (a device offering more binds and uses these). */
#define ZCNET_VNET_MAX_QUEUES 8
/* Whole pages a receive chain may end with: a frame of the largest MTU the
 * front end allows fits a chain of its header buffer and these (checked in
 * rust/zcnet/vnet.rs). */
#define ZCNET_VNET_RX_PAGES 4
/*
 * Transmit descriptors a packet of len bytes needs free before the front
 * end takes it: ZCNET_VNET_TX_STOP_FREE (a frame's virtio-net header, head
 * and every fragment), plus one per ZCNET_VNET_TX_BYTES_PER_DESC bytes (the
 * frames a packet cut into wire fragments becomes; the front end sets a
 * smaller figure for a smaller wire MTU). A TSO packet whose need
 * exceeds the ring is segmented by the core before it reaches the front end
 * (ndo_features_check).
 */
#define ZCNET_VNET_TX_STOP_FREE (2 + 17)
#define ZCNET_VNET_TX_BYTES_PER_DESC 512

/* The front end's callbacks; `state` is what probe() returned. */
struct zcnet_vnet_ops {
	/* A device was bound: the front end's state, or an ERR_PTR. The
	 * device is not registered yet. May sleep. */
	void *(*probe)(struct zcnet_vnet *vn);
	/* The device is reset and unregistered: nothing calls the front end
	 * for it again and the device owns none of its buffers any more. */
	void (*remove)(void *state);
	/* ndo_open (RTNL held), for each queue pair q in use: post receive
	 * buffers; or -errno. */
	int (*open)(void *state, unsigned int q);
	/* ndo_start_xmit on queue pair q: the skb is the front end's; `more`:
	 * another one follows at once (kick later). NETDEV_TX_OK or
	 * NETDEV_TX_BUSY (the skb then stays the caller's and the queue is
	 * stopped). */
	int (*xmit)(void *state, unsigned int q, struct sk_buff *skb, bool more);
	/* Queue pair q's NAPI poll: transmit completions, then up to
	 * `budget` received frames; how many of those. */
	int (*poll)(void *state, unsigned int q, int budget);
	/* ndo_get_stats64 */
	void (*stats)(void *state, struct rtnl_link_stats64 *s);
	/* The device's timer fired (softirq). */
	void (*timer)(void *state);
	/* The device is going: unregistered (no transmit, no poll), its timer
	 * stopped, its rings still live. Returns once the device has sent
	 * what it posted (bounded wait), so that the reset drops nothing a
	 * peer waits for. Process context, may sleep. */
	void (*teardown)(void *state);
	/* ethtool -S: how many statistics, their names (ETH_GSTRING_LEN
	 * bytes each), their values. */
	unsigned int nstats;
	void (*stat_names)(u8 *data);
	void (*stat_values)(void *state, u64 *data);
	/* Optional (NULL: not offered). The module's sysfs group
	 * (zcnet_helper_sysfs_add): attribute idx read into a PAGE_SIZE buffer
	 * or written; bytes or -errno. */
	ssize_t (*sysfs_show)(void *state, unsigned int idx, char *buf);
	ssize_t (*sysfs_store)(void *state, unsigned int idx, const char *buf, size_t len);
	/* ethtool -c/-C rx-usecs (RTNL held). */
	u32 (*rx_usecs)(void *state);
	int (*set_rx_usecs)(void *state, u32 usecs);
	/* SIOCDEVPRIVATE + cmd (RTNL held), with the request's user pointer. */
	int (*ioctl)(void *state, unsigned int cmd, void __user *arg);
	/* ethtool -G: a buffer posted on queue pair q's receive or transmit
	 * ring (its token) is taken back unused while the ring is resized;
	 * ethtool -L: a transmit ring's, while the ring of a pair no longer
	 * in use is reset. RTNL held, the device paused (no NAPI, no
	 * transmit, no timer). */
	void (*recycle_rx)(void *state, unsigned int q, unsigned long token);
	void (*recycle_tx)(void *state, unsigned int q, unsigned long token);
};

/* Registers the virtio driver NAME (one per module). */
int zcnet_helper_vnet_register(const char *name, const struct zcnet_vnet_ops *ops);
void zcnet_helper_vnet_unregister(void);

/* The device's net_device, its queue pairs in use (each queue pair q below
 * is one of them), the most it may use (ethtool -L; at most
 * ZCNET_VNET_MAX_QUEUES, whatever the device offers) and the size of its
 * rings. */
struct net_device *zcnet_helper_vnet_netdev(struct zcnet_vnet *vn);
unsigned int zcnet_helper_vnet_queues(struct zcnet_vnet *vn);
unsigned int zcnet_helper_vnet_max_queues(struct zcnet_vnet *vn);
/* True when the device steers IPv4 fragments (and whatever else it does not
 * classify) to queue pair 0 and the rest to the others (RSS). */
bool zcnet_helper_vnet_steered(struct zcnet_vnet *vn);
unsigned int zcnet_helper_vnet_rx_size(struct zcnet_vnet *vn);
unsigned int zcnet_helper_vnet_tx_size(struct zcnet_vnet *vn);
/* The most descriptors a ring may have (ethtool -G resizes up to it). */
unsigned int zcnet_helper_vnet_rx_max(struct zcnet_vnet *vn);
unsigned int zcnet_helper_vnet_tx_max(struct zcnet_vnet *vn);
/* The largest MTU a user may set, and the MTU (before registration). */
void zcnet_helper_vnet_set_mtu(struct zcnet_vnet *vn, unsigned int mtu, unsigned int max);
/* How many bytes of a packet one transmit descriptor stands for in the
 * room a packet needs (ZCNET_VNET_TX_BYTES_PER_DESC until set): fewer on a
 * wire of a smaller MTU, whose fragments are more. */
void zcnet_helper_vnet_set_tx_bytes_per_desc(struct zcnet_vnet *vn, unsigned int bytes);
/* Arms the device's timer delay_us from now unless it is pending; nothing
 * once the device is going. */
void zcnet_helper_vnet_arm_timer(struct zcnet_vnet *vn, unsigned long delay_us);
/* True once the device is being unbound. */
bool zcnet_helper_vnet_dying(struct zcnet_vnet *vn);
bool zcnet_helper_vnet_test_rx_no_pages(void);

/*
 * The datapath, on queue pair q. Posts one receive chain: hdr_len bytes at
 * hdr (the virtio-net header and the frame's first bytes); for a
 * speculative chain, len bytes of slice from off (where the payload of the
 * frame expected belongs) and ovf_len bytes at ovf (where the rest of any
 * other frame spills; slice and ovf NULL for an ordinary chain); then the
 * npages pages of pages, whole (at most ZCNET_VNET_RX_PAGES), so that a
 * frame of the device's MTU fits any chain. `token` (non-zero) comes back
 * from get_rx. 0 or -errno (-ENOSPC: the ring is full). The memory must
 * stay valid until the chain comes back or the device is reset.
 */
int zcnet_helper_vnet_post_rx(struct zcnet_vnet *vn, unsigned int q, void *hdr, unsigned int hdr_len,
			      struct page *slice, unsigned int off, unsigned int len,
			      void *ovf, unsigned int ovf_len, struct page **pages,
			      unsigned int npages, unsigned long token);
/* A used receive chain's token and the bytes the device wrote; 0: none. */
unsigned long zcnet_helper_vnet_get_rx(struct zcnet_vnet *vn, unsigned int q, unsigned int *len);
/*
 * Posts skb for transmit behind a zeroed virtio-net header pushed into its
 * headroom (made when there is none): its head and fragments as they are,
 * no copy. `token` (non-zero) comes back from get_tx. 0 or -errno (-ENOSPC:
 * the ring is full; -ENOMEM: no headroom); the skb stays the caller's.
 */
int zcnet_helper_vnet_post_tx(struct zcnet_vnet *vn, unsigned int q, struct sk_buff *skb, unsigned long token);
/* A completed transmit's token; 0: none. */
unsigned long zcnet_helper_vnet_get_tx(struct zcnet_vnet *vn, unsigned int q);
/* Descriptors free in the transmit ring. */
unsigned int zcnet_helper_vnet_tx_free(struct zcnet_vnet *vn, unsigned int q);
/* Notifies the device of new buffers in the ring when it wants to be:
 * whether it was notified. */
bool zcnet_helper_vnet_kick_rx(struct zcnet_vnet *vn, unsigned int q);
bool zcnet_helper_vnet_kick_tx(struct zcnet_vnet *vn, unsigned int q);
/*
 * A received frame: head_len bytes at head (the Ethernet header first,
 * copied into the skb's head), then len bytes of the npages pages, each
 * from offset 0, as its fragments (the page references pass to the skb; a
 * page holding none of the bytes is put, all of them on failure). NULL when
 * memory is short or the head is shorter than an Ethernet header.
 */
struct sk_buff *zcnet_helper_vnet_rx_skb(struct zcnet_vnet *vn, unsigned int q, const void *head,
					 unsigned int head_len, struct page **pages,
					 unsigned int npages, unsigned int len);
/* A received frame: head_len bytes at head (from the Ethernet header on)
 * copied into the skb's head, then len bytes of page from off as its
 * fragment (the caller's page reference passes to the skb; put on
 * failure). NULL when memory is short. */
struct sk_buff *zcnet_helper_vnet_rx_skb_frag(struct zcnet_vnet *vn, unsigned int q, const void *head,
					      unsigned int head_len, struct page *page,
					      unsigned int off, unsigned int len);
/* A received frame: alen bytes at a, plen bytes of page from off (no
 * reference taken), blen bytes at b copied into the skb's head, then len
 * bytes of the npages pages as its fragments (as zcnet_helper_vnet_rx_skb).
 * NULL when memory is short. */
struct sk_buff *zcnet_helper_vnet_rx_skb_copy(struct zcnet_vnet *vn, unsigned int q, const void *a,
					      unsigned int alen, struct page *page,
					      unsigned int off, unsigned int plen,
					      const void *b, unsigned int blen,
					      struct page **pages, unsigned int npages,
					      unsigned int len);
/* The received frame skb to the stack through NAPI (GRO). */
void zcnet_helper_vnet_receive(struct zcnet_vnet *vn, unsigned int q, struct sk_buff *skb);
/* Transmit queue flow control and byte queue limits. */
void zcnet_helper_vnet_tx_stop(struct zcnet_vnet *vn, unsigned int q);
void zcnet_helper_vnet_tx_wake(struct zcnet_vnet *vn, unsigned int q);
/* Counts bytes queued to the device (BQL): whether to kick it now (no more
 * frames follow at once, or the queue must stop). */
bool zcnet_helper_vnet_tx_sent(struct zcnet_vnet *vn, unsigned int q, unsigned int bytes, bool more);
void zcnet_helper_vnet_tx_completed(struct zcnet_vnet *vn, unsigned int q, unsigned int pkts, unsigned int bytes);

#endif /* ZCNET_HELPERS_VNET_H */
