// SPDX-License-Identifier: GPL-2.0
/*
 * Test module: replaces a TCP socket's proto as a BPF sockmap does
 * (sk_psock_update_proto(): a per-family copy of the socket's proto with its
 * own callbacks), for a test kernel without BPF. setsockopt(SOL_TCP,
 * TCP_ULP, "zcnet_protoswap") swaps the socket's sk_prot for the copy and
 * fails with EALREADY, so that no ULP is attached and another ULP (zcsock)
 * can be tried on the socket next. The copy's sendmsg counts its calls
 * (hits) and calls the proto it replaced. zcsock.sh checks that zcsock
 * refuses such a socket (EBUSY) and still serves ordinary ones. Close every
 * swapped socket before unloading this module.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <net/sock.h>
#include <net/tcp.h>

static unsigned int hits;
module_param(hits, uint, 0444);
MODULE_PARM_DESC(hits, "sendmsg calls through the swapped protos");
static unsigned int swapped;
module_param(swapped, uint, 0444);
MODULE_PARM_DESC(swapped, "sockets whose proto was swapped");

enum { SWAP_V4, SWAP_V6, SWAP_FAMILIES };
static struct proto *swap_orig[SWAP_FAMILIES];
static struct proto swap_prot[SWAP_FAMILIES];
static DEFINE_MUTEX(swap_mutex);

static int swap_fam(const struct sock *sk)
{
	return sk->sk_family == AF_INET6 ? SWAP_V6 : SWAP_V4;
}

static int swap_sendmsg(struct sock *sk, struct msghdr *msg, size_t size)
{
	WRITE_ONCE(hits, READ_ONCE(hits) + 1);
	return swap_orig[swap_fam(sk)]->sendmsg(sk, msg, size);
}

static int swap_init(struct sock *sk)
{
	int fam = swap_fam(sk);
	struct proto *prot = READ_ONCE(sk->sk_prot);

	mutex_lock(&swap_mutex);
	if (!swap_orig[fam]) {
		swap_prot[fam] = *prot;
		swap_prot[fam].sendmsg = swap_sendmsg;
		swap_orig[fam] = prot;
	}
	mutex_unlock(&swap_mutex);
	if (prot != swap_orig[fam])
		return -EBUSY;
	WRITE_ONCE(sk->sk_prot, &swap_prot[fam]);
	swapped++;
	return -EALREADY;
}

static struct tcp_ulp_ops swap_ulp = {
	.name = "zcnet_protoswap",
	.owner = THIS_MODULE,
	.init = swap_init,
};

static int __init swap_mod_init(void)
{
	return tcp_register_ulp(&swap_ulp);
}

static void __exit swap_mod_exit(void)
{
	tcp_unregister_ulp(&swap_ulp);
}

module_init(swap_mod_init);
module_exit(swap_mod_exit);
MODULE_DESCRIPTION("zcnet test: swaps a socket's proto as a BPF sockmap does");
MODULE_LICENSE("GPL");
