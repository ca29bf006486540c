// SPDX-License-Identifier: GPL-2.0
/*
 * Test module: widens the window between a device's dellink and the end of
 * its unregistration. When a device whose name starts with `prefix` is about
 * to go down (NETDEV_GOING_DOWN, sent by dev_close while the device can still
 * transmit), it sleeps `ms` milliseconds, so traffic that the device's driver
 * sees after its teardown (zcfrag's dellink runs before unregistration) is
 * all but certain. zcfrag-unload.sh loads it for some delete cycles; a driver
 * that frees something in dellink that its transmit path uses shows it at
 * once (a KASAN report on the debug kernel, a crash or worse elsewhere).
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/string.h>

static char *prefix = "zf";
module_param(prefix, charp, 0444);
MODULE_PARM_DESC(prefix, "names of the devices to slow down");
static unsigned int ms = 100;
module_param(ms, uint, 0644);
MODULE_PARM_DESC(ms, "milliseconds to sleep in NETDEV_GOING_DOWN");
/* Closes slowed so far (notifiers run under RTNL, one at a time). */
static unsigned int hits;
module_param(hits, uint, 0444);
MODULE_PARM_DESC(hits, "device closes slowed so far");

static int slowclose_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	if (event == NETDEV_GOING_DOWN && !strncmp(dev->name, prefix, strlen(prefix))) {
		hits++;
		msleep(ms);
	}
	return NOTIFY_DONE;
}

static struct notifier_block slowclose_nb = { .notifier_call = slowclose_event };

static int __init slowclose_init(void)
{
	return register_netdevice_notifier(&slowclose_nb);
}

static void __exit slowclose_exit(void)
{
	unregister_netdevice_notifier(&slowclose_nb);
	pr_info("zcnet_slowclose: slowed %u device closes\n", hits);
}

module_init(slowclose_init);
module_exit(slowclose_exit);
MODULE_DESCRIPTION("zcnet test: sleeps while a device closes");
MODULE_LICENSE("GPL");
