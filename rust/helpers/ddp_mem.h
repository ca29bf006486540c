/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Registered memory for zcddp (Balaji §4.4.1): user pages pinned with
 * pin_user_pages_fast(FOLL_LONGTERM) (writable only for a registration
 * with write access), charged to the owner's user against RLIMIT_MEMLOCK
 * (memlock.h, before anything is allocated) and to its mm's pinned_vm, and
 * mapped into the kernel once, at registration (vmap; read-only for a
 * read-only pin), so that placing or sending stores only an offset; where
 * vmap fails each access maps its page (kmap_local_page). Stores into a
 * read-only registration are refused (-EPERM). Released from a workqueue
 * (unpinning and uncharging sleep; a socket may be destroyed in softirq),
 * which zcnet_helper_ddp_mem_fini() drains: only writable pins are
 * released dirty, and the namespace's pinned-pages counter falls when the
 * pages are unpinned, not before.
 */
#ifndef ZCNET_DDP_MEM_H
#define ZCNET_DDP_MEM_H

#include <linux/types.h>

struct net;
struct sock;
struct user_struct;
struct zcnet_ddp_mr;

/* Module init / exit: the release workqueue. */
int zcnet_helper_ddp_mem_init(void);
void zcnet_helper_ddp_mem_fini(void);
/* The pages [uaddr, uaddr + len) spans, or 0 when it is no user range. */
unsigned long zcnet_helper_ddp_mr_span(unsigned long uaddr, size_t len);
/*
 * Pins the pages of [uaddr, uaddr + len) of the calling process (writable
 * when write), their number (zcnet_helper_ddp_mr_span()) charged to user
 * by the caller (zcnet_helper_memlock_charge()): the registration, which
 * then owns the charge and adds the pages to counter pinned_idx of net
 * until they are unpinned; or NULL with *err (-ENOMEM, -EFAULT, -EINVAL),
 * the charge still the caller's.
 */
struct zcnet_ddp_mr *zcnet_helper_ddp_mr_pin(unsigned long uaddr, size_t len, bool write,
					      struct user_struct *user, struct net *net,
					      unsigned int pinned_idx, int *err);
/* The kernel address of the registration's first byte in its vmap, or
 * NULL without one (mapped until the release); *len its length. */
void *zcnet_helper_ddp_mr_base(const struct zcnet_ddp_mr *mr, u64 *len);
/* Pages pinned. */
unsigned long zcnet_helper_ddp_mr_pages(const struct zcnet_ddp_mr *mr);
/* Copies len bytes at byte off of the registration (off + len within its
 * length, checked by the caller and again here: -EINVAL) to or from buf. */
int zcnet_helper_ddp_mr_copy(struct zcnet_ddp_mr *mr, u64 off, void *buf, size_t len,
			     bool to_mr);
/*
 * A 32-bit word at byte off of the registration, shared with the
 * application (a ring's index): off + 4 within the length and the word
 * 4-byte aligned in memory (checked: -EINVAL). load reads it with acquire
 * ordering (what the application wrote before it is visible after);
 * store writes it with release ordering (what the kernel wrote into the
 * registration before is visible first).
 */
int zcnet_helper_ddp_mr_load_u32(struct zcnet_ddp_mr *mr, u64 off, u32 *val);
int zcnet_helper_ddp_mr_store_u32(struct zcnet_ddp_mr *mr, u64 off, u32 val);
/* Feeds len bytes at byte off of the registration (checked: -EINVAL) to
 * the CRC32c register *crc (crc32c(), read through the mapping: no copy). */
int zcnet_helper_ddp_mr_crc32c(struct zcnet_ddp_mr *mr, u64 off, size_t len, u32 *crc);
/*
 * Sends len bytes at byte off of the registration (checked: -EINVAL) on sk
 * (locked, SOCK_ZEROCOPY set) by reference: tcp_sendmsg_locked() with
 * MSG_ZEROCOPY | MSG_DONTWAIT | MSG_NOSIGNAL (| MSG_MORE when more) over a
 * bvec iterator of the registration's pages (at most 64 KiB of them per
 * call). The bytes taken (maybe fewer), or -errno (-EAGAIN: no space;
 * -ENOBUFS: no notification could be allocated or charged). *used: the call
 * consumed notification id *id (whenever it took bytes).
 */
int zcnet_helper_ddp_send_zc(struct sock *sk, struct zcnet_ddp_mr *mr, u64 off, size_t len,
			     bool more, u32 *id, bool *used);
/* How long ZCDDP_DEREG_MR waits for TCP to give back lent pages: sk's
 * send timeout (SO_SNDTIMEO), in jiffies. */
long zcnet_helper_ddp_lent_timeo(struct sock *sk);
/* Sleeps (sk locked; released meanwhile) until a wake-up of sk, such as
 * the one of a MSG_ZEROCOPY notification, or until *timeo (jiffies,
 * decremented) runs out: 0, -ETIMEDOUT (out of time before it slept),
 * -EINTR / -ERESTARTSYS (a signal). */
int zcnet_helper_ddp_lent_wait(struct sock *sk, long *timeo);
/* How long close waits for TCP to give back lent pages: sk's SO_LINGER
 * time when set, else 0, in jiffies. */
long zcnet_helper_ddp_linger_timeo(struct sock *sk);
/* In the ULP's close (sk locked), before TCP's: TCP's close resets the
 * connection and drops what it queued (a zero SO_LINGER), so that it
 * holds no more page lent from a registration. */
void zcnet_helper_ddp_abort_on_close(struct sock *sk);
/* Queues the release: unmapped, unpinned (dirtied when pinned writable),
 * uncounted, uncharged, freed. */
void zcnet_helper_ddp_mr_release(struct zcnet_ddp_mr *mr);
/* Copies len bytes of sk's stream (locked), from qoff bytes past copied_seq,
 * out of TCP's receive queue into the registration at byte off: the one copy
 * of in-order direct placement. 0, -EINVAL (outside the registration),
 * -ENODATA (fewer bytes queued). */
struct sock;
int zcnet_helper_ddp_mr_from_queue(struct zcnet_ddp_mr *mr, u64 off, struct sock *sk, u32 qoff,
				   size_t len);
/* Copies the len bytes at sequence number seq of sk's out-of-order queue
 * (sk locked; one skb holds them: zcnet_ddp_ofo_span()) into mr at off:
 * out-of-order placement's one copy. -EINVAL outside mr, -ENODATA. */
int zcnet_helper_ddp_mr_from_ofo(struct zcnet_ddp_mr *mr, u64 off, struct sock *sk, u32 seq,
				 size_t len);
#endif
