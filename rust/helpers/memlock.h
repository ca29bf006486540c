/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory pinned on behalf of user space, charged to the user
 * (user_struct::locked_vm) against RLIMIT_MEMLOCK, as io_uring's
 * __io_account_mem() and AF_XDP's xdp_umem_account_pages() do: the charge
 * follows the user, not the process's mm, so pages pinned by a process
 * that exited (a registration on a socket shared with another process)
 * still count against the user's limit. CAP_IPC_LOCK is exempt (nothing
 * charged). Shared by every zcnet part that pins user pages for longer
 * than a system call (rust/zcnet/memlock.rs).
 */
#ifndef ZCNET_MEMLOCK_H
#define ZCNET_MEMLOCK_H

#include <linux/types.h>

struct user_struct;

/*
 * Charges npages to the calling user: 0 and *user (a reference to the
 * user, or NULL when exempt), or, nothing charged and a rate-limited line
 * in the kernel log saying why, as mlock(2) fails: -EPERM (RLIMIT_MEMLOCK
 * is 0) or -ENOMEM (over RLIMIT_MEMLOCK, or more pages than the machine
 * has).
 */
int zcnet_helper_memlock_charge(unsigned long npages, struct user_struct **user);
/* Gives back npages charged to user and the reference (NULL: exempt). */
void zcnet_helper_memlock_uncharge(struct user_struct *user, unsigned long npages);
#endif
