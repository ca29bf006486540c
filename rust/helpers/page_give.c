// SPDX-License-Identifier: GPL-2.0
/*
 * Giving pages back to zcfrag's receive page stash (see page_stash.h).
 *
 * zcfrag exports its stash's door (zcfrag_stash_door) and zcsock finds it
 * with symbol_get(), so that zcsock needs no zcfrag. Looking a symbol up
 * walks every module's symbol table (about 800 guest instructions, once per
 * completed batch: over zcfrag, where a receive often completes one page,
 * that is once a page), so the door is looked up once and kept: a module
 * notifier forgets it whenever a module named zcfrag changes state (it
 * comes, goes live, or goes), and each give takes a reference on zcfrag
 * with try_module_get(), which fails once zcfrag is going. zcfrag's memory
 * stays until an RCU grace period after its going notifier (free_module()),
 * and a give reads the door under rcu_read_lock().
 */
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "page_stash.h"

static const struct zcnet_stash_door __rcu *zcnet_door;
/* Whether zcnet_door is current: false until looked up, and after zcfrag
 * changed state. */
static bool zcnet_door_known;
static DEFINE_SPINLOCK(zcnet_door_lock);

static void zcnet_door_lookup(void)
{
	const struct zcnet_stash_door *d;

	spin_lock(&zcnet_door_lock);
	if (!zcnet_door_known) {
		/* The reference keeps zcfrag live until the door is kept; its
		 * going notifier then waits for the lock and forgets it. */
		d = symbol_get(zcfrag_stash_door);
		rcu_assign_pointer(zcnet_door, d);
		if (d)
			symbol_put(zcfrag_stash_door);
		WRITE_ONCE(zcnet_door_known, true);
	}
	spin_unlock(&zcnet_door_lock);
}

static int zcnet_door_notify(struct notifier_block *nb, unsigned long state, void *data)
{
	struct module *mod = data;

	if (strcmp(mod->name, "zcfrag"))
		return NOTIFY_DONE;
	spin_lock(&zcnet_door_lock);
	RCU_INIT_POINTER(zcnet_door, NULL);
	WRITE_ONCE(zcnet_door_known, false);
	spin_unlock(&zcnet_door_lock);
	return NOTIFY_OK;
}

static struct notifier_block zcnet_door_nb = {
	.notifier_call = zcnet_door_notify,
};

int zcnet_page_give_init(void)
{
	return register_module_notifier(&zcnet_door_nb);
}

void zcnet_page_give_exit(void)
{
	unregister_module_notifier(&zcnet_door_nb);
	RCU_INIT_POINTER(zcnet_door, NULL);
	zcnet_door_known = false;
}

void zcnet_page_give_back(struct page **pages, unsigned long n)
{
	const struct zcnet_stash_door *d;
	unsigned long i, k = 0;

	/*
	 * A page charged to a memory cgroup (a region's own, allocated for a
	 * user with __GFP_ACCOUNT) goes back to the allocator, which uncharges
	 * it, rather than on as a receive buffer still charged to that user.
	 */
	for (i = 0; i < n; i++) {
		if (folio_memcg_charged(page_folio(pages[i])))
			put_page(pages[i]);
		else
			pages[k++] = pages[i];
	}
	n = k;
	if (!n)
		return;
	if (unlikely(!READ_ONCE(zcnet_door_known)))
		zcnet_door_lookup();
	rcu_read_lock();
	d = rcu_dereference(zcnet_door);
	if (d && try_module_get(d->owner)) {
		rcu_read_unlock();
		d->give(pages, n);
		module_put(d->owner);
		return;
	}
	rcu_read_unlock();
	for (i = 0; i < n; i++)
		put_page(pages[i]);
}
