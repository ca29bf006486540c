// SPDX-License-Identifier: GPL-2.0
/* Registered memory for zcddp (see ddp_mem.h). */
#include <linux/bvec.h>
#include <linux/crc32.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "ddp_mem.h"
#include "ddp_sock.h"
#include "memlock.h"
#include "netstat.h"

struct zcnet_ddp_mr {
	struct work_struct release;
	struct mm_struct *mm;		/* its pinned_vm counts the pages */
	struct user_struct *user;	/* charged the pages (NULL: exempt) */
	struct net *net;		/* counter pinned_idx counts the pages */
	unsigned int pinned_idx;
	bool write;			/* pinned writable, mapped writable */
	void *vaddr;			/* the vmap of all pages, or NULL */
	unsigned long first;		/* byte offset of the region in pages[0] */
	size_t len;
	unsigned long npages;
	struct page *pages[];
};

static struct workqueue_struct *zcnet_ddp_wq;

int zcnet_helper_ddp_mem_init(void)
{
	zcnet_ddp_wq = alloc_workqueue("zcddp_mr", WQ_UNBOUND, 0);
	return zcnet_ddp_wq ? 0 : -ENOMEM;
}

void zcnet_helper_ddp_mem_fini(void)
{
	if (zcnet_ddp_wq)
		destroy_workqueue(zcnet_ddp_wq);
	zcnet_ddp_wq = NULL;
}

static void zcnet_ddp_mr_free(struct work_struct *w)
{
	struct zcnet_ddp_mr *mr = container_of(w, struct zcnet_ddp_mr, release);

	if (mr->vaddr)
		vunmap(mr->vaddr);
	/*
	 * Only what was pinned writable may have been written (placement
	 * refuses the others, and their mapping is read-only): dirtying a
	 * read-only pin would dirty page-cache folios of files the owner may
	 * only read (and call a NULL ->dirty_folio on some file systems).
	 */
	unpin_user_pages_dirty_lock(mr->pages, mr->npages, mr->write);
	zcnet_helper_memlock_uncharge(mr->user, mr->npages);
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
	/* Last: a counter at 0 means every page unpinned and uncharged. */
	zcnet_helper_netstat_add(mr->net, mr->pinned_idx, -(long)mr->npages);
	put_net(mr->net);
	mmdrop(mr->mm);
	kvfree(mr);
}

unsigned long zcnet_helper_ddp_mr_span(unsigned long uaddr, size_t len)
{
	unsigned long end;

	if (!len || check_add_overflow(uaddr, (unsigned long)len, &end) ||
	    !access_ok((void __user *)uaddr, len) || PAGE_ALIGN(end) < end)
		return 0;
	return (PAGE_ALIGN(end) - (uaddr & PAGE_MASK)) >> PAGE_SHIFT;
}

struct zcnet_ddp_mr *zcnet_helper_ddp_mr_pin(unsigned long uaddr, size_t len, bool write,
					      struct user_struct *user, struct net *net,
					      unsigned int pinned_idx, int *err)
{
	unsigned long start = uaddr & PAGE_MASK, npages, done = 0;
	struct mm_struct *mm = current->mm;
	struct zcnet_ddp_mr *mr;
	int r;

	*err = -EINVAL;
	npages = zcnet_helper_ddp_mr_span(uaddr, len);
	if (!npages || !mm)
		return NULL;
	/* The caller charged npages (bounded by the machine's pages) first. */
	*err = -ENOMEM;
	mr = kvzalloc(struct_size(mr, pages, npages), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr)
		return NULL;
	while (done < npages) {
		r = pin_user_pages_fast(start + done * PAGE_SIZE,
					min_t(unsigned long, npages - done, 512),
					FOLL_LONGTERM | (write ? FOLL_WRITE : 0), mr->pages + done);
		if (r <= 0) {
			*err = r ? r : -EFAULT;
			unpin_user_pages(mr->pages, done);
			kvfree(mr);
			return NULL;
		}
		done += r;
	}
	mmgrab(mm);
	atomic64_add(npages, &mm->pinned_vm);
	mr->mm = mm;
	mr->user = user;
	mr->net = get_net(net);
	mr->pinned_idx = pinned_idx;
	zcnet_helper_netstat_add(net, pinned_idx, npages);
	mr->write = write;
	mr->first = uaddr - start;
	mr->len = len;
	mr->npages = npages;
	/* Read-only pins are mapped read-only: a stray store faults. */
	mr->vaddr = vmap(mr->pages, npages, VM_MAP, write ? PAGE_KERNEL : PAGE_KERNEL_RO);
	INIT_WORK(&mr->release, zcnet_ddp_mr_free);
	*err = 0;
	return mr;
}

void *zcnet_helper_ddp_mr_base(const struct zcnet_ddp_mr *mr, u64 *len)
{
	*len = mr->len;
	return mr->vaddr ? mr->vaddr + mr->first : NULL;
}

unsigned long zcnet_helper_ddp_mr_pages(const struct zcnet_ddp_mr *mr)
{
	return mr->npages;
}

int zcnet_helper_ddp_mr_copy(struct zcnet_ddp_mr *mr, u64 off, void *buf, size_t len,
			     bool to_mr)
{
	u64 pos;
	u8 *b = buf;

	if (off > mr->len || len > mr->len - off)
		return -EINVAL;
	if (to_mr && !mr->write)
		return -EPERM;
	pos = mr->first + off;
	if (mr->vaddr) {
		if (to_mr)
			memcpy(mr->vaddr + pos, buf, len);
		else
			memcpy(buf, mr->vaddr + pos, len);
		return 0;
	}
	while (len) {
		unsigned int in = offset_in_page(pos);
		size_t n = min_t(size_t, len, PAGE_SIZE - in);
		void *p = kmap_local_page(mr->pages[pos >> PAGE_SHIFT]);

		if (to_mr)
			memcpy(p + in, b, n);
		else
			memcpy(b, p + in, n);
		kunmap_local(p);
		b += n;
		pos += n;
		len -= n;
	}
	return 0;
}

/* The word at byte off, or NULL; *page set when it had to be mapped. */
static u32 *zcnet_ddp_mr_word(struct zcnet_ddp_mr *mr, u64 off, void **page)
{
	u64 pos;

	*page = NULL;
	if (off > mr->len || mr->len - off < sizeof(u32))
		return NULL;
	pos = mr->first + off;
	/* Aligned: it does not cross a page, and loads and stores are whole. */
	if (pos & (sizeof(u32) - 1))
		return NULL;
	if (mr->vaddr)
		return mr->vaddr + pos;
	*page = kmap_local_page(mr->pages[pos >> PAGE_SHIFT]);
	return *page + offset_in_page(pos);
}

int zcnet_helper_ddp_mr_load_u32(struct zcnet_ddp_mr *mr, u64 off, u32 *val)
{
	void *page;
	u32 *w = zcnet_ddp_mr_word(mr, off, &page);

	if (!w)
		return -EINVAL;
	*val = smp_load_acquire(w);
	if (page)
		kunmap_local(page);
	return 0;
}

int zcnet_helper_ddp_mr_store_u32(struct zcnet_ddp_mr *mr, u64 off, u32 val)
{
	void *page;
	u32 *w;

	if (!mr->write)
		return -EPERM;
	w = zcnet_ddp_mr_word(mr, off, &page);
	if (!w)
		return -EINVAL;
	smp_store_release(w, val);
	if (page)
		kunmap_local(page);
	return 0;
}

int zcnet_helper_ddp_mr_crc32c(struct zcnet_ddp_mr *mr, u64 off, size_t len, u32 *crc)
{
	u64 pos;

	if (off > mr->len || len > mr->len - off)
		return -EINVAL;
	pos = mr->first + off;
	if (mr->vaddr) {
		*crc = crc32c(*crc, mr->vaddr + pos, len);
		return 0;
	}
	while (len) {
		unsigned int in = offset_in_page(pos);
		size_t n = min_t(size_t, len, PAGE_SIZE - in);
		void *p = kmap_local_page(mr->pages[pos >> PAGE_SHIFT]);

		*crc = crc32c(*crc, p + in, n);
		kunmap_local(p);
		pos += n;
		len -= n;
	}
	return 0;
}

/* Pages (bio_vecs) one zero-copy send hands TCP at most: 64 KiB and a page. */
#define ZCNET_DDP_ZC_SEGS 17

int zcnet_helper_ddp_send_zc(struct sock *sk, struct zcnet_ddp_mr *mr, u64 off, size_t len,
			     bool more, u32 *id, bool *used)
{
	struct bio_vec bv[ZCNET_DDP_ZC_SEGS];
	struct msghdr msg = {
		.msg_flags = MSG_ZEROCOPY | MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};
	unsigned int n = 0;
	size_t left;
	u32 before;
	u64 pos;
	int r;

	*used = false;
	if (!len || off > mr->len || len > mr->len - off)
		return -EINVAL;
	pos = mr->first + off;
	left = len;
	while (left && n < ZCNET_DDP_ZC_SEGS) {
		unsigned int in = offset_in_page(pos);
		size_t k = min_t(size_t, left, PAGE_SIZE - in);

		bvec_set_page(&bv[n++], mr->pages[pos >> PAGE_SHIFT], k, in);
		pos += k;
		left -= k;
	}
	len -= left;
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, n, len);
	/*
	 * With SOCK_ZEROCOPY, a call that takes bytes consumes one notification
	 * id, sk_zckey's value before it (msg_zerocopy_realloc()); one that
	 * takes none gives it back (msg_zerocopy_put_abort()). The socket is
	 * locked: nobody else moves sk_zckey meanwhile. TCP takes a reference
	 * on each page it keeps (iov_iter_get_pages2() on the bvec iterator),
	 * dropped when the skb holding it is freed.
	 */
	before = (u32)atomic_read(&sk->sk_zckey);
	r = tcp_sendmsg_locked(sk, &msg, len);
	*id = before;
	*used = (u32)atomic_read(&sk->sk_zckey) != before;
	return r;
}

long zcnet_helper_ddp_lent_timeo(struct sock *sk)
{
	return READ_ONCE(sk->sk_sndtimeo);
}

long zcnet_helper_ddp_linger_timeo(struct sock *sk)
{
	return sock_flag(sk, SOCK_LINGER) ? READ_ONCE(sk->sk_lingertime) : 0;
}

void zcnet_helper_ddp_abort_on_close(struct sock *sk)
{
	/* tcp_close(): "Check zero linger _after_ checking for unread data":
	 * a reset either way, and tcp_disconnect() purges the write queue. */
	sock_set_flag(sk, SOCK_LINGER);
	WRITE_ONCE(sk->sk_lingertime, 0);
}

int zcnet_helper_ddp_lent_wait(struct sock *sk, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);

	if (*timeo <= 0)
		return -ETIMEDOUT;
	if (signal_pending(current))
		return sock_intr_errno(*timeo);
	add_wait_queue(sk_sleep(sk), &wait);
	/* A notification queued meanwhile (the kernel queues it, then calls
	 * sk_error_report, which wakes this wait) ends it at once. */
	sk_wait_event(sk, timeo, !skb_queue_empty_lockless(&sk->sk_error_queue), &wait);
	remove_wait_queue(sk_sleep(sk), &wait);
	return 0;
}

void zcnet_helper_ddp_mr_release(struct zcnet_ddp_mr *mr)
{
	queue_work(zcnet_ddp_wq, &mr->release);
}

struct zcnet_ddp_fill {
	struct zcnet_ddp_mr *mr;
	u64 pos;
};

static int zcnet_ddp_fill_piece(const struct sk_buff *skb, int o, int n, void *arg)
{
	struct zcnet_ddp_fill *f = arg;
	int r = 0;

	if (f->mr->vaddr) {
		r = skb_copy_bits(skb, o, f->mr->vaddr + f->pos, n);
		f->pos += n;
		return r;
	}
	while (n && !r) {
		unsigned int in = offset_in_page(f->pos);
		int c = min_t(int, n, PAGE_SIZE - in);
		void *p = kmap_local_page(f->mr->pages[f->pos >> PAGE_SHIFT]);

		r = skb_copy_bits(skb, o, p + in, c);
		kunmap_local(p);
		o += c;
		n -= c;
		f->pos += c;
	}
	return r;
}

int zcnet_helper_ddp_mr_from_queue(struct zcnet_ddp_mr *mr, u64 off, struct sock *sk, u32 qoff,
				   size_t len)
{
	struct zcnet_ddp_fill f = { .mr = mr, .pos = mr->first + off };

	if (off > mr->len || len > mr->len - off)
		return -EINVAL;
	if (!mr->write)
		return -EPERM;
	return zcnet_ddp_queue_walk(sk, qoff, len, zcnet_ddp_fill_piece, &f);
}

int zcnet_helper_ddp_mr_from_ofo(struct zcnet_ddp_mr *mr, u64 off, struct sock *sk, u32 seq,
				 size_t len)
{
	struct zcnet_ddp_fill f = { .mr = mr, .pos = mr->first + off };
	struct sk_buff *skb;
	int o;

	if (off > mr->len || len > mr->len - off || len > INT_MAX)
		return -EINVAL;
	if (!mr->write)
		return -EPERM;
	skb = zcnet_ddp_ofo_span(sk, seq, len, &o);
	if (!skb)
		return -ENODATA;
	return zcnet_ddp_fill_piece(skb, o, len, &f) ? -ENODATA : 0;
}
