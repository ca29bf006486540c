// SPDX-License-Identifier: GPL-2.0
/* Memory pinned on behalf of user space, charged to the user (see memlock.h). */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>

#include "memlock.h"

int zcnet_helper_memlock_charge(unsigned long npages, struct user_struct **user)
{
	unsigned long limit, cur, next;
	struct user_struct *u;

	*user = NULL;
	/* Not even the exempt pin more than there is. */
	if (npages > totalram_pages()) {
		pr_warn_ratelimited("%s: %s[%d] asked to pin %lu pages, more than the machine has\n",
				    KBUILD_MODNAME, current->comm, task_pid_nr(current), npages);
		return -ENOMEM;
	}
	if (capable(CAP_IPC_LOCK))
		return 0;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	/* As mlock(2): no locking at all without a limit to lock within. */
	if (!limit) {
		pr_warn_ratelimited("%s: %s[%d] may not pin memory: RLIMIT_MEMLOCK is 0 and no CAP_IPC_LOCK\n",
				    KBUILD_MODNAME, current->comm, task_pid_nr(current));
		return -EPERM;
	}
	u = get_uid(current_user());
	cur = atomic_long_read(&u->locked_vm);
	do {
		if (check_add_overflow(cur, npages, &next) || next > limit) {
			pr_warn_ratelimited("%s: %s[%d] may not pin %lu pages: uid %u has %lu of its RLIMIT_MEMLOCK of %lu pages pinned\n",
					    KBUILD_MODNAME, current->comm, task_pid_nr(current), npages,
					    from_kuid_munged(current_user_ns(), u->uid), cur, limit);
			free_uid(u);
			return -ENOMEM;
		}
	} while (!atomic_long_try_cmpxchg(&u->locked_vm, &cur, next));
	*user = u;
	return 0;
}

void zcnet_helper_memlock_uncharge(struct user_struct *user, unsigned long npages)
{
	if (!user)
		return;
	atomic_long_sub(npages, &user->locked_vm);
	free_uid(user);
}
