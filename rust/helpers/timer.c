// SPDX-License-Identifier: GPL-2.0
/* A timer whose callback gets a data pointer (see timer.h). */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/timer.h>

#include "timer.h"

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

void zcnet_helper_timer_cancel(struct zcnet_timer *t)
{
	if (t)
		timer_delete_sync(&t->timer);
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
