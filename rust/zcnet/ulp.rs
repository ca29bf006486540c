// SPDX-License-Identifier: GPL-2.0

//! TCP upper-layer protocols (ULPs).
//!
//! A ULP is what `setsockopt(fd, SOL_TCP, TCP_ULP, "name")` attaches to a TCP
//! socket, the way kTLS (`net/tls/tls_main.c`) does. zcsock and zcddp are turned
//! on per socket this way. A ULP that implements [`Ulp::sendmsg`] takes over
//! the socket's data calls: the socket's `struct proto` becomes a copy of
//! TCP's with sendmsg, recvmsg and the options of level [`Ulp::SOL`] sent to
//! the ULP (`rust/helpers/tcp_ulp.c`).
//!
//! Each socket has a context ([`Ulp::Ctx`]) from [`Ulp::init`] or, for a
//! socket a listener accepted, [`Ulp::clone`]; it is freed after an RCU grace
//! period once TCP lets the ULP go, so a clone running beside the listener's
//! teardown still reads it safely.
//!
//! C header: [`include/net/tcp.h`](srctree/include/net/tcp.h)

use super::errno::to_result;
use super::ext;
use super::netstat::Net;
use super::pageref::PageRef;
use core::marker::PhantomData;
use kernel::{bindings, error::from_result, ffi, page::PAGE_SIZE, prelude::*, types::Opaque};

/// `TCP_ULP_NAME_MAX` of `include/net/tcp.h`, NUL included.
const NAME_MAX: usize = 16;

/// A TCP socket handed to a ULP callback.
///
/// # Invariants
///
/// The wrapped `struct sock` is a live TCP socket for the duration of the
/// callback.
#[repr(transparent)]
pub struct TcpSock(Opaque<bindings::sock>);

impl TcpSock {
    /// # Safety
    ///
    /// `sk` is a live TCP socket for `'a`.
    unsafe fn from_raw<'a>(sk: *mut bindings::sock) -> &'a Self {
        // SAFETY: The caller guarantees validity; `TcpSock` is transparent.
        unsafe { &*sk.cast::<Self>() }
    }

    /// The raw socket pointer, for the other abstractions of this layer.
    pub(crate) fn as_raw(&self) -> *mut bindings::sock {
        self.0.get()
    }

    /// The socket's network namespace.
    pub fn net(&self) -> Net<'_> {
        // SAFETY: A live socket holds its namespace.
        unsafe { Net::from_raw(ext::zcnet_helper_sock_net(self.as_raw())) }
    }

    /// Whether the socket listens; stable in a callback that holds the
    /// socket's lock (`listen()` takes it), as [`Ulp::init`] does.
    pub fn is_listening(&self) -> bool {
        // SAFETY: By the type invariant the socket is live.
        unsafe { ext::zcnet_helper_sock_listening(self.as_raw()) }
    }

    /// Clears the cork bit and pushes what it held (`tcp_sock_set_cork`);
    /// locks the socket, so the caller must not hold it. May sleep.
    pub fn uncork(&self) {
        // SAFETY: The socket is live; `tcp_sock_set_cork` takes its lock.
        unsafe { ext::zcnet_helper_tcp_uncork(self.as_raw()) };
    }

    /// Locks the socket (`lock_sock`) until the guard drops. May sleep.
    pub fn lock(&self) -> SockGuard<'_> {
        // SAFETY: The socket is live; the guard releases it.
        unsafe { ext::zcnet_helper_lock_sock(self.as_raw()) };
        SockGuard(self)
    }

    /// TCP's own `sendmsg` (copies from the caller).
    pub fn base_sendmsg(&self, msg: &mut Msg, size: usize) -> i32 {
        // SAFETY: The socket is live; `msg` is the caller's message.
        unsafe { ext::zcnet_helper_tcp_base_sendmsg(self.as_raw(), msg.0, size) }
    }

    /// TCP's own `recvmsg`.
    pub fn base_recvmsg(&self, msg: &mut Msg, len: usize, flags: i32) -> i32 {
        // SAFETY: The socket is live; `msg` is the caller's, passed through.
        unsafe { ext::zcnet_helper_tcp_base_recvmsg(self.as_raw(), msg.0, len, flags) }
    }
}

/// What [`TcpSock::recv_with`] did.
pub enum Received {
    /// Bytes taken, or a negative errno (as `recvmsg` returns).
    Done(i32),
    /// Nothing taken: the socket needs TCP's own `recvmsg` (urgent data,
    /// receive timestamps, `TCP_INQ`).
    Fallback,
}

impl TcpSock {
    /// `recvmsg` of up to `len` bytes through `tcp_read_sock`: `take(skb,
    /// off, n, defer_ok)` takes up to `n` bytes of `skb` at `off` and says
    /// how many ([`Took`]): more than `n` only for a page [`RxSkb::page_at`]
    /// found whole, whose rest heads the following skbs and is consumed with
    /// them; with `defer_ok`, none, to leave a page's first pieces
    /// ([`PageAt::Head`]) queued until the rest arrives. Waits as
    /// `tcp_recvmsg` does (timeout, `MSG_DONTWAIT`, `MSG_WAITALL`,
    /// `SO_RCVLOWAT`, signals, shutdown, errors). Locks the socket.
    pub fn recv_with<F>(&self, len: usize, flags: i32, take: &mut F) -> Received
    where
        F: FnMut(&RxSkb<'_>, u32, usize, bool) -> Result<Took>,
    {
        let mut fallback = false;
        let mut cx = RecvCx { take, sk: self };
        // SAFETY: The socket is live; `cx` outlives the call, which is the
        // only user of the argument pointer given to `act::<F>`.
        let r = unsafe {
            ext::zcnet_helper_tcp_recv_actor(
                self.as_raw(),
                len,
                flags,
                Some(act::<F>),
                core::ptr::from_mut(&mut cx).cast(),
                &mut fallback,
            )
        };
        if fallback {
            Received::Fallback
        } else {
            Received::Done(r)
        }
    }
}

/// What a [`TcpSock::recv_with`] callback did with the bytes it was offered.
pub enum Took {
    /// Took this many bytes.
    Bytes(usize),
    /// Took none: they are a page's first pieces, left queued for the rest.
    Defer,
}

/// What `act` is called with: the caller's callback and its socket.
struct RecvCx<'a, F> {
    take: &'a mut F,
    sk: &'a TcpSock,
}

/// # Safety
///
/// `arg` is the `RecvCx` given by `recv_with`, whose socket is locked; `skb`
/// is a live skb of that socket's receive queue with at least `off + n`
/// bytes; `defer` is writable.
unsafe extern "C" fn act<F>(
    arg: *mut ffi::c_void,
    skb: *mut bindings::sk_buff,
    off: ffi::c_uint,
    n: usize,
    defer_ok: bool,
    defer: *mut bool,
) -> ffi::c_long
where
    F: FnMut(&RxSkb<'_>, u32, usize, bool) -> Result<Took>,
{
    // SAFETY: As the caller guarantees.
    let (cx, skb) = unsafe { (&mut *arg.cast::<RecvCx<'_, F>>(), &*skb.cast()) };
    // INVARIANT: As the caller guarantees.
    let rx = RxSkb { skb, sk: cx.sk };
    match (cx.take)(&rx, off, n, defer_ok) {
        // More than `n` only for a page `page_at` found (a page at most).
        Ok(Took::Bytes(k)) => k.min(n.max(PAGE_SIZE)) as ffi::c_long,
        Ok(Took::Defer) => {
            // SAFETY: As the caller guarantees.
            unsafe { *defer = defer_ok };
            0
        }
        Err(e) => e.to_errno() as ffi::c_long,
    }
}

/// Whether the next page of a stream is a page of the receive queue.
pub enum PageAt {
    /// All of it is queued: a reference to it.
    Whole(PageRef),
    /// Its first pieces end the queue (the rest is still to come).
    Head,
    /// All of it is queued, but others may write it (a shared fragment, the
    /// zero page, a page mapped elsewhere, ...): to be copied.
    Refused,
    /// The bytes there are not one page's.
    No,
}

/// An skb of a socket's receive queue, lent to a [`TcpSock::recv_with`]
/// callback.
///
/// # Invariants
///
/// `skb` is live and queued on `sk`'s receive queue, and `sk` is locked,
/// while borrowed.
pub struct RxSkb<'a> {
    skb: &'a Opaque<bindings::sk_buff>,
    sk: &'a TcpSock,
}

impl RxSkb<'_> {
    /// Whether the next page of the stream from byte `off` of this skb is
    /// bytes 0 to `PAGE_SIZE` of one page: an order-0 kernel page (never page
    /// cache, anonymous memory or a page pool's), all of it in one fragment,
    /// or in consecutive pieces of one where a segment was cut inside the
    /// page (the rest then heads the following fragments or skbs), and one
    /// nobody else may write ([`PageAt::Refused`] otherwise); never a page
    /// holding the urgent mark.
    pub fn page_at(&self, off: u32) -> PageAt {
        let mut p = core::ptr::null_mut();
        // SAFETY: By the type invariant the skb is live and queued on the
        // socket's receive queue, and the socket is locked, so the queue
        // holds still; `p` is writable.
        let r = unsafe { ext::zcnet_helper_rx_page(self.sk.as_raw(), self.skb.get(), off, &mut p) };
        match (r as u32, core::ptr::NonNull::new(p)) {
            (ext::zcnet_rx_page_ZCNET_RX_PAGE, Some(p)) => {
                // SAFETY: The skbs hold the page; `get_page` takes our own
                // reference, which the `PageRef` owns; the helper only
                // returns lowmem pages.
                unsafe {
                    ext::zcnet_helper_get_page(p.as_ptr());
                    PageAt::Whole(PageRef::from_raw(p))
                }
            }
            (ext::zcnet_rx_page_ZCNET_RX_PAGE_HEAD, _) => PageAt::Head,
            (ext::zcnet_rx_page_ZCNET_RX_PAGE_REFUSED, _) => PageAt::Refused,
            _ => PageAt::No,
        }
    }

    /// Copies `n` bytes from `off` to the caller's memory at `uaddr`.
    pub fn copy_to_user(&self, off: u32, uaddr: usize, n: usize) -> Result {
        // SAFETY: By the type invariant the skb is live; the helper checks
        // the user range as any copy to user memory does.
        to_result(unsafe { ext::zcnet_helper_skb_copy_to_user(self.skb.get(), off, uaddr, n) })
    }
}

/// A locked socket (`lock_sock` held), the context of TCP's `*_locked` calls.
pub struct SockGuard<'a>(&'a TcpSock);

impl SockGuard<'_> {
    /// Sends `len` bytes of the caller's memory at `uaddr`, copied
    /// (`tcp_sendmsg_locked`): bytes sent, or the error when none was.
    pub fn send_user(&self, uaddr: usize, len: usize, flags: u32) -> Result<usize> {
        // SAFETY: The socket is locked by this guard; the helper imports
        // `uaddr` as a user buffer (checked by the copy).
        let r = unsafe { ext::zcnet_helper_tcp_send_user(self.0.as_raw(), uaddr, len, flags) };
        to_len(r)
    }

    /// Sends whole pages by reference (`MSG_SPLICE_PAGES`), the present
    /// entries of `pages` in order: TCP takes its own references; bytes sent,
    /// or the error when none was.
    pub fn send_pages(&self, pages: &[Option<PageRef>], flags: u32) -> Result<usize> {
        let mut raw = [core::ptr::null_mut::<bindings::page>(); SEND_PAGES_MAX];
        let mut n = 0;
        for (r, p) in raw.iter_mut().zip(pages.iter().flatten()) {
            *r = p.as_raw();
            n += 1;
        }
        // SAFETY: The socket is locked by this guard; `raw[..n]` are pages we
        // hold references to for the call.
        let r = unsafe {
            ext::zcnet_helper_tcp_send_pages(self.0.as_raw(), raw.as_mut_ptr(), n as u32, flags)
        };
        to_len(r)
    }
}

impl SockGuard<'_> {
    /// The socket as a locked one, for the calls that need the lock held.
    pub fn locked(&self) -> Locked<'_> {
        // INVARIANT: This guard holds the socket's lock (`lock_sock`, process
        // context) for as long as the borrow lasts.
        Locked(RxLocked(self.0))
    }

    /// Keeps window-limited sends cut at page boundaries while every unsent
    /// byte is in whole-page segments (the cork bit: see `tcp_ulp.h`).
    /// `ours`: the bit is the caller's, from an earlier call; updated. True
    /// when the caller must [`TcpSock::uncork`] once unlocked.
    pub fn page_cork(&self, ours: &mut bool) -> bool {
        // SAFETY: The socket is locked by this guard.
        unsafe { ext::zcnet_helper_tcp_page_cork(self.0.as_raw(), ours) }
    }
}

impl Drop for SockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: `lock` took the lock this guard releases.
        unsafe { ext::zcnet_helper_release_sock(self.0.as_raw()) };
    }
}

impl TcpSock {
    /// Schedules the socket's work item ([`Ulp::work`]), unless it is
    /// pending or the socket is closing; no effect for a ULP without one.
    /// Any context.
    pub fn kick(&self) {
        // SAFETY: The socket is live, and so its ULP data (released only
        // after close, which stops the work item first).
        unsafe { ext::zcnet_helper_tcp_ulp_kick(self.as_raw()) }
    }

    /// Schedules a run of the receive path ([`Ulp::rx_bh`]) from process
    /// context, under the socket's spinlock with bottom halves off, as
    /// TCP's softirq holds it: segments arriving meanwhile are queued by
    /// TCP as usual, not sent to an owner's backlog. With the socket owned,
    /// or when `rx_bh` leaves work, the work item runs instead, as it does
    /// for a ULP without `rx_bh`. Any context.
    pub fn kick_rx(&self) {
        // SAFETY: The socket is live, and so its ULP data (released only
        // after close, which stops this run first).
        unsafe { ext::zcnet_helper_tcp_ulp_kick_rx(self.as_raw()) }
    }
}

impl RxLocked<'_> {
    /// Whether poll/epoll report the socket readable beyond TCP's own bytes,
    /// and whether the ULP can take more work from the application (its
    /// send queue has room): with [`Locked::own_readiness`], poll/epoll
    /// report the socket writable only while `writable` says so and TCP's
    /// stream is writeable (a ULP with [`Ulp::work`] only). Becoming
    /// readable wakes the socket's waiters (poll, epoll, a thread waiting
    /// for data); becoming writable wakes its writers. One call for both:
    /// a ULP says it when it changes. Whether the socket took it: `false`
    /// without a work item (then nothing is recorded).
    pub fn set_ready(&self, readable: bool, writable: bool) -> bool {
        // SAFETY: By the type invariant the socket is locked; its ULP data
        // is live in the ULP's callbacks.
        unsafe { ext::zcnet_helper_tcp_ulp_set_ready(self.as_raw(), readable, writable) }
    }

    /// Wakes the socket's waiters (a ULP with [`Ulp::work`] only).
    pub fn wake(&self) {
        // SAFETY: By the type invariant the socket is locked; its ULP data
        // is live in the ULP's callbacks.
        unsafe { ext::zcnet_helper_tcp_ulp_wake(self.as_raw()) }
    }
}

impl Locked<'_> {
    /// From now on the socket is readable for poll/epoll only as
    /// [`RxLocked::set_ready`] says (or on an error, shutdown or hang-up),
    /// no longer for TCP's own queued bytes, which the ULP consumes itself
    /// (a ULP with [`Ulp::work`] only).
    pub fn own_readiness(&self) {
        // SAFETY: By the type invariant the socket is locked; its ULP data
        // is live in the ULP's callbacks.
        unsafe { ext::zcnet_helper_tcp_ulp_own_readiness(self.as_raw()) }
    }
}

/// A socket whose receive side its caller holds for the borrow: locked by
/// the current thread (a [`Locked`], which derefs to this), or, in softirq
/// as TCP queues data, under the socket's spinlock with no owner
/// ([`Ulp::rx_bh`]). Either way TCP's receive and out-of-order queues hold
/// still. What it offers runs in atomic context: reading and consuming the
/// receive queue, the error queue, readiness and wake-ups; nothing that
/// sleeps, sends or touches user memory (those are [`Locked`]'s).
///
/// # Invariants
///
/// While borrowed, either the socket is locked by the current thread (as
/// [`Locked`]), or the current context runs with bottom halves off, holds
/// the socket's spinlock and the socket has no owner.
pub struct RxLocked<'a>(&'a TcpSock);

impl core::ops::Deref for RxLocked<'_> {
    type Target = TcpSock;

    fn deref(&self) -> &TcpSock {
        self.0
    }
}

/// A socket its caller holds locked (`lock_sock`) for the borrow, in
/// process context: what a ULP's option callbacks and its work item get,
/// for calls that need the lock held and may sleep
/// (`rust/zcnet/ddp_sock.rs`). It derefs to [`RxLocked`], for the calls
/// that also run in softirq.
///
/// # Invariants
///
/// The socket is locked by the current thread while borrowed (the lock may
/// be released and retaken inside a call that waits, as `sk_wait_data`
/// does), in process context.
pub struct Locked<'a>(RxLocked<'a>);

impl<'a> core::ops::Deref for Locked<'a> {
    type Target = RxLocked<'a>;

    fn deref(&self) -> &RxLocked<'a> {
        &self.0
    }
}

/// Whether all of `len` bytes of the caller's memory at `uaddr` lie in
/// readable mappings (nothing is faulted in).
pub fn user_readable(uaddr: usize, len: usize) -> bool {
    // SAFETY: The helper only looks up the caller's mappings, under the
    // mapping lock; it reads no user memory.
    unsafe { ext::zcnet_helper_user_readable(uaddr, len) }
}

/// Pages [`SockGuard::send_pages`] sends at once.
pub const SEND_PAGES_MAX: usize = 16;

fn to_len(r: i32) -> Result<usize> {
    if r < 0 {
        Err(Error::from_errno(r))
    } else {
        Ok(r as usize)
    }
}

/// A message handed to `sendmsg`/`recvmsg`.
///
/// # Invariants
///
/// `self.0` is the caller's live `struct msghdr` for the callback.
pub struct Msg(*mut bindings::msghdr);

impl Msg {
    /// A plain transfer with one user buffer (no address, no control data,
    /// no special flag): its address, length and flags.
    pub fn plain_user(&self) -> Option<(usize, usize, u32)> {
        let (mut a, mut l, mut f) = (0, 0, 0);
        // SAFETY: By the type invariant the message is live.
        unsafe { ext::zcnet_helper_msg_plain_user(self.0, &mut a, &mut l, &mut f) }
            .then_some((a, l, f))
    }

    /// Marks `n` bytes of the message's buffer as done (what `recvmsg` took
    /// without the message's iterator).
    pub fn advance(&mut self, n: usize) {
        // SAFETY: By the type invariant the message is live.
        unsafe { ext::zcnet_helper_msg_advance(self.0, n) };
    }
}

/// An upper-layer protocol over TCP.
#[vtable]
pub trait Ulp: Sync + 'static {
    /// The name `setsockopt(TCP_ULP)` selects it by (at most 15 bytes).
    const NAME: &'static CStr;
    /// The socket level of the ULP's own options.
    const SOL: i32 = 0;
    /// Per-socket state.
    type Ctx: Send + Sync;

    /// Attaches the protocol to `sk` (locked): its state. An error goes to
    /// the caller of `setsockopt` and leaves the socket as it was.
    fn init(sk: &TcpSock) -> Result<Self::Ctx>;

    /// State for `newsk`, accepted by a listener whose state is `parent`
    /// (softirq: no sleeping). `None` leaves it plain TCP.
    ///
    /// A ULP that does not implement it is bound to one connection, as
    /// kTLS is: TCP refuses `listen()` on its sockets (`EINVAL`), and
    /// `connect(AF_UNSPEC)`, which would turn one into a fresh socket that
    /// may listen or connect again under the same state, is refused
    /// (`EOPNOTSUPP`).
    fn clone(_parent: &Self::Ctx, _newsk: &TcpSock) -> Option<Self::Ctx> {
        None
    }

    /// The socket lets the ULP go (its last act: the socket is being destroyed).
    fn release(_sk: &TcpSock, _ctx: &Self::Ctx) {}

    /// `sendmsg`: bytes sent or a negative errno. Implementing it takes
    /// over the socket's data calls.
    fn sendmsg(sk: &TcpSock, _ctx: &Self::Ctx, msg: &mut Msg, size: usize) -> i32 {
        sk.base_sendmsg(msg, size)
    }

    /// `recvmsg`: bytes received or a negative errno.
    fn recvmsg(sk: &TcpSock, _ctx: &Self::Ctx, msg: &mut Msg, len: usize, flags: i32) -> i32 {
        sk.base_recvmsg(msg, len, flags)
    }

    /// `setsockopt(SOL, name)` with the value's bytes (at most 64), socket locked.
    fn setopt(_sk: &TcpSock, _ctx: &Self::Ctx, _name: i32, _val: &[u8]) -> Result {
        Err(super::errno::enoprotoopt())
    }

    /// [`Ulp::setopt`] with the lock visible ([`Locked`]), for options that
    /// do I/O on the socket; calls `setopt` unless implemented.
    fn setopt_locked(sk: &Locked<'_>, ctx: &Self::Ctx, name: i32, val: &[u8]) -> Result {
        Self::setopt(sk, ctx, name, val)
    }

    /// `setsockopt(SOL, name)` before the socket is locked, for work that
    /// must not hold its lock (pinning pages): `None` leaves the option
    /// to [`Ulp::setopt_locked`]. The ULP locks the socket itself
    /// ([`TcpSock::lock`], [`SockGuard::locked`]) to publish what it made.
    fn setopt_unlocked(_sk: &TcpSock, _ctx: &Self::Ctx, _name: i32, _val: &[u8]) -> Option<Result> {
        None
    }

    /// `getsockopt(SOL, name)` into `out` (64 bytes), socket locked: the
    /// length written.
    fn getopt(_sk: &TcpSock, _ctx: &Self::Ctx, _name: i32, _out: &mut [u8]) -> Result<usize> {
        Err(super::errno::enoprotoopt())
    }

    /// TCP's own option `name` (`SOL_TCP`) was set on the socket (locked):
    /// the ULP notes what it depends on.
    fn tcp_option_set(_sk: &TcpSock, _ctx: &Self::Ctx, _name: i32) {}

    /// The socket's own progress, in a work item (process context, socket
    /// locked) that data arriving schedules, and [`TcpSock::kick`].
    /// Implementing it (with [`Ulp::sendmsg`]) also makes the socket
    /// readable for poll/epoll while [`RxLocked::set_ready`] says so.
    /// Close stops it before the state goes.
    fn work(_sk: &Locked<'_>, _ctx: &Self::Ctx) {}

    /// With [`Ulp::work`]: data arrived and TCP queued it, in softirq
    /// (under the socket's spinlock, no owner) or in the process context of
    /// the socket's owner, which queues what came meanwhile as it lets the
    /// socket go ([`RxLocked`] either way; no sleeping). The ULP may take
    /// the bytes now, as siw and the strparser do, instead of a work item's
    /// run later: true when nothing is left for [`Ulp::work`], false to
    /// schedule it. Also called for [`TcpSock::kick_rx`] and the
    /// out-of-order hook, in process context under the socket's spinlock
    /// with bottom halves off and no owner.
    fn rx_bh(_sk: &RxLocked<'_>, _ctx: &Self::Ctx) -> bool {
        false
    }

    /// The socket is being closed (locked; with [`Ulp::work`] only, after
    /// the work item stopped): the ULP lets go of what it holds for the
    /// application (queued work, pinned memory) now rather than when TCP
    /// destroys the socket, which may be much later for an orphan with
    /// bytes still unsent.
    fn close(_sk: &Locked<'_>, _ctx: &Self::Ctx) {}

    /// `/proc/net/NAME` in every namespace and its header line (with
    /// [`Ulp::work`] and [`Ulp::describe`]): one line per socket of the
    /// reader's namespace, its addresses and then what `describe` writes.
    const LISTING: Option<(&'static CStr, &'static CStr)> = None;

    /// The socket's text in the listing, after its addresses, into `out`:
    /// the bytes written. Called without the socket lock, with a spinlock
    /// held (no sleeping): the ULP reads what it published for it
    /// (atomics). A socket being closed is not listed.
    fn describe(_sk: &TcpSock, _ctx: &Self::Ctx, _out: &mut [u8]) -> usize {
        0
    }
}

/// A socket's state as the ULP data pointer holds it: freed after an RCU
/// grace period.
///
/// Its first fields are `struct zcnet_ulp_holder` of `tcp_ulp.h`.
#[repr(C)]
struct Holder<C> {
    rcu: Opaque<bindings::callback_head>,
    /// The socket's work item (C), or null.
    work: *mut ext::zcnet_ulp_work,
    ctx: C,
}

/// A registered ULP; unregistered on drop.
///
/// # Invariants
///
/// `ops` holds a `struct tcp_ulp_ops` registered with `tcp_register_ulp`, which
/// stays registered (and pinned) until `drop` unregisters it.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Ulp> {
    #[pin]
    ops: Opaque<ext::tcp_ulp_ops>,
    _t: PhantomData<T>,
}

// SAFETY: `tcp_unregister_ulp` may be called from any thread.
unsafe impl<T: Ulp> Send for Registration<T> {}
// SAFETY: `&Registration` offers no method that touches the ops.
unsafe impl<T: Ulp> Sync for Registration<T> {}

impl<T: Ulp> Registration<T> {
    const CBS: ext::zcnet_tcp_ulp_cbs = ext::zcnet_tcp_ulp_cbs {
        sol: T::SOL,
        sendmsg: Some(Adapter::<T>::sendmsg_cb),
        recvmsg: Some(Adapter::<T>::recvmsg_cb),
        setopt: Some(Adapter::<T>::setopt_cb),
        setopt_unlocked: if T::HAS_SETOPT_UNLOCKED {
            Some(Adapter::<T>::setopt_unlocked_cb)
        } else {
            None
        },
        getopt: Some(Adapter::<T>::getopt_cb),
        tcp_opt_set: if T::HAS_TCP_OPTION_SET {
            Some(Adapter::<T>::tcp_opt_set_cb)
        } else {
            None
        },
        work: if T::HAS_WORK {
            Some(Adapter::<T>::work_cb)
        } else {
            None
        },
        rx_bh: if T::HAS_WORK && T::HAS_RX_BH {
            Some(Adapter::<T>::rx_bh_cb)
        } else {
            None
        },
        close: if T::HAS_WORK && T::HAS_CLOSE {
            Some(Adapter::<T>::close_cb)
        } else {
            None
        },
        describe: if T::HAS_WORK && T::HAS_DESCRIBE {
            Some(Adapter::<T>::describe_cb)
        } else {
            None
        },
        no_disconnect: !T::HAS_CLONE,
    };

    /// Registers `T` as the ULP `T::NAME`, owned by `module`.
    pub fn register(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        const {
            assert!(
                T::NAME.to_bytes_with_nul().len() <= NAME_MAX,
                "ULP name too long"
            )
        };
        if T::HAS_SENDMSG {
            // SAFETY: `CBS` is static; set once before the ULP can be attached.
            unsafe { ext::zcnet_helper_tcp_ulp_set_cbs(&Self::CBS) };
        }
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(move |slot: *mut ext::tcp_ulp_ops| {
                let mut ops = ext::tcp_ulp_ops::default();
                for (d, s) in ops.name.iter_mut().zip(T::NAME.to_bytes_with_nul()) {
                    *d = *s as ffi::c_char;
                }
                ops.owner = module.as_ptr();
                ops.init = Some(Adapter::<T>::init_cb);
                ops.release = Some(Adapter::<T>::release_cb);
                // Without `clone`, TCP refuses listen() (inet_ulp_can_listen()).
                if T::HAS_CLONE {
                    ops.clone = Some(Adapter::<T>::clone_cb);
                }
                // SAFETY: The initializer may write to `slot`.
                unsafe { slot.write(ops) };
                // SAFETY: `slot` holds a fully initialised ops table in pinned memory
                // that is unregistered in `drop` before it is freed.
                // INVARIANT: on `Ok`, `slot` is registered.
                to_result(unsafe { ext::tcp_register_ulp(slot) })?;
                if let Some((name, header)) = T::LISTING {
                    // SAFETY: Both strings are static; the callbacks were set
                    // above; unregistered in `drop`.
                    let r = to_result(unsafe {
                        ext::zcnet_helper_tcp_ulp_proc_register(
                            name.as_char_ptr(),
                            header.as_char_ptr(),
                        )
                    });
                    if r.is_err() {
                        // SAFETY: Registered just above, not yet in use.
                        unsafe { ext::tcp_unregister_ulp(slot) };
                    }
                    r?;
                }
                Ok::<(), Error>(())
            }),
            _t: PhantomData,
        })
    }
}

#[pinned_drop]
impl<T: Ulp> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        if T::LISTING.is_some() {
            // SAFETY: Registered with the ULP; removing the files waits for
            // their readers.
            unsafe { ext::zcnet_helper_tcp_ulp_proc_unregister() };
        }
        // SAFETY: By the type invariant `ops` is registered. `tcp_unregister_ulp`
        // waits for an RCU grace period, after which no lookup sees it; sockets
        // that use it hold a reference on the module, so it cannot unload under them.
        unsafe { ext::tcp_unregister_ulp(self.ops.get()) };
        // SAFETY: No argument; waits for the state frees queued by `release_cb`,
        // whose callback is this module's code.
        unsafe { bindings::rcu_barrier() };
    }
}

struct Adapter<T: Ulp>(PhantomData<T>);

impl<T: Ulp> Adapter<T> {
    /// The state of `sk`, if it has one.
    ///
    /// # Safety
    ///
    /// `sk` is a live socket of this ULP, in a callback of it.
    unsafe fn ctx<'a>(sk: *mut bindings::sock) -> Option<&'a T::Ctx> {
        // SAFETY: The caller guarantees `sk`; its ULP data is null or a
        // `Holder<T::Ctx>` of ours, freed only after `release_cb` and a grace
        // period, which the socket's callbacks do not overlap.
        let h = unsafe { ext::zcnet_helper_tcp_ulp_ctx(sk) }.cast::<Holder<T::Ctx>>();
        // SAFETY: As above.
        unsafe { h.as_ref() }.map(|h| &h.ctx)
    }

    /// Stores `ctx` as the socket's state.
    ///
    /// # Safety
    ///
    /// `sk` is a live socket of this ULP whose previous state, if any, is not ours to free.
    unsafe fn set(sk: *mut bindings::sock, ctx: T::Ctx, flags: kernel::alloc::Flags) -> Result {
        let h = KBox::new(
            Holder {
                rcu: Opaque::uninit(),
                work: core::ptr::null_mut(),
                ctx,
            },
            flags,
        )?;
        // SAFETY: The caller guarantees `sk`; the holder passes to the socket.
        unsafe { ext::zcnet_helper_tcp_ulp_set_ctx(sk, KBox::into_raw(h).cast()) };
        Ok(())
    }

    /// # Safety
    ///
    /// Called by the TCP stack with a valid, locked TCP socket.
    unsafe extern "C" fn init_cb(sk: *mut bindings::sock) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `sk` is valid and locked for the duration of this call.
            let s = unsafe { TcpSock::from_raw(sk) };
            let ctx = T::init(s)?;
            // SAFETY: A socket gets a ULP once: no state of ours was there.
            unsafe { Self::set(sk, ctx, GFP_KERNEL) }?;
            if T::HAS_SENDMSG {
                // SAFETY: `sk` is valid and locked.
                let r = unsafe { ext::zcnet_helper_tcp_ulp_install(sk) };
                if r != 0 {
                    // SAFETY: The state set above is ours; nothing else saw it
                    // (the socket is locked and still on TCP's proto).
                    unsafe { Self::free_now(sk) };
                    return Err(Error::from_errno(r));
                }
                // SAFETY: `sk` is valid and locked, its holder set above.
                let r = unsafe { ext::zcnet_helper_tcp_ulp_work_start(sk) };
                if r != 0 {
                    // SAFETY: As above: the helper put TCP's proto back.
                    unsafe { Self::free_now(sk) };
                    return Err(Error::from_errno(r));
                }
            }
            Ok(0)
        })
    }

    /// Frees the socket's state at once (it was never published).
    ///
    /// # Safety
    ///
    /// `sk`'s state is ours and no other context can see it.
    unsafe fn free_now(sk: *mut bindings::sock) {
        // SAFETY: The caller guarantees `sk`.
        let h = unsafe { ext::zcnet_helper_tcp_ulp_ctx(sk) }.cast::<Holder<T::Ctx>>();
        // SAFETY: As above.
        unsafe { ext::zcnet_helper_tcp_ulp_set_ctx(sk, core::ptr::null_mut()) };
        if !h.is_null() {
            // SAFETY: `h` came from `KBox::into_raw` in `set`, nobody else holds it.
            let h = unsafe { KBox::from_raw(h) };
            // SAFETY: Its work item, if any, never ran (the socket stayed locked).
            unsafe { ext::zcnet_helper_tcp_ulp_work_free(h.work) };
        }
    }

    /// # Safety
    ///
    /// Called by TCP when the socket is destroyed (`tcp_cleanup_ulp`).
    unsafe extern "C" fn release_cb(sk: *mut bindings::sock) {
        // SAFETY: The caller passes a socket of this ULP, being destroyed.
        let h = unsafe { ext::zcnet_helper_tcp_ulp_ctx(sk) }.cast::<Holder<T::Ctx>>();
        if h.is_null() {
            return;
        }
        // SAFETY: `sk` is valid for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        // SAFETY: `h` is our live holder.
        T::release(s, unsafe { &(*h).ctx });
        // SAFETY: As above; the socket no longer points to it.
        unsafe { ext::zcnet_helper_tcp_ulp_set_ctx(sk, core::ptr::null_mut()) };
        // SAFETY: `h` is ours; `free_rcu` frees it after readers (a clone on
        // another CPU) are done. `rcu` is the first field of the `repr(C)` holder.
        unsafe { bindings::call_rcu((*h).rcu.get(), Some(Self::free_rcu)) };
    }

    /// # Safety
    ///
    /// RCU calls it with the `rcu` field of a holder `release_cb` queued.
    unsafe extern "C" fn free_rcu(head: *mut bindings::callback_head) {
        // SAFETY: `rcu` is the first field of the `repr(C)` holder, which came
        // from `KBox::into_raw`.
        let h = unsafe { KBox::from_raw(head.cast::<Holder<T::Ctx>>()) };
        // SAFETY: The socket closed (its work item stopped) or never had one
        // running; nothing refers to it any more.
        unsafe { ext::zcnet_helper_tcp_ulp_work_free(h.work) };
    }

    /// # Safety
    ///
    /// Called by TCP for a socket a listener of this ULP accepted; its ULP data
    /// still points to the listener's state.
    unsafe extern "C" fn clone_cb(
        _req: *const bindings::request_sock,
        newsk: *mut bindings::sock,
        _prio: bindings::gfp_t,
    ) {
        // SAFETY: `newsk` is the new socket, not yet visible to any other
        // context: it keeps the ULP, and TCP puts a module reference when it
        // lets it go, so it needs one of its own; its creator proto, which
        // outlives the ULP, goes back to TCP's.
        unsafe { ext::zcnet_helper_tcp_ulp_clone_init(newsk) };
        // SAFETY: `newsk` is the new socket; its data is the listener's
        // holder, alive for the RCU read side this softirq runs in.
        let parent = unsafe { Self::ctx(newsk) };
        // SAFETY: Not ours to free: the listener's.
        unsafe { ext::zcnet_helper_tcp_ulp_set_ctx(newsk, core::ptr::null_mut()) };
        // SAFETY: `newsk` is valid for the call.
        let s = unsafe { TcpSock::from_raw(newsk) };
        if let Some(ctx) = parent.and_then(|p| T::clone(p, s)) {
            // SAFETY: `newsk` has no state now. Without memory it stays without.
            let _ = unsafe { Self::set(newsk, ctx, GFP_ATOMIC) };
        }
    }

    /// # Safety
    ///
    /// The ULP proto's sendmsg: a live socket and message.
    unsafe extern "C" fn sendmsg_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        msg: *mut bindings::msghdr,
        size: usize,
    ) -> ffi::c_int {
        // SAFETY: The socket is live for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        let mut m = Msg(msg);
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        match unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            Some(h) => T::sendmsg(s, &h.ctx, &mut m, size),
            None => s.base_sendmsg(&mut m, size),
        }
    }

    /// # Safety
    ///
    /// The ULP proto's recvmsg: a live socket and message.
    unsafe extern "C" fn recvmsg_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        msg: *mut bindings::msghdr,
        len: usize,
        flags: ffi::c_int,
    ) -> ffi::c_int {
        // SAFETY: The socket is live for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        let mut m = Msg(msg);
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        match unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            Some(h) => T::recvmsg(s, &h.ctx, &mut m, len, flags),
            None => s.base_recvmsg(&mut m, len, flags),
        }
    }

    /// The socket, its state (if any) and the value of a setsockopt call.
    ///
    /// # Safety
    ///
    /// `sk` is a live socket of this ULP for `'a`, `ctx` its holder or null,
    /// and `val` holds `len` readable bytes for `'a`.
    unsafe fn opt_args<'a>(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        val: *const ffi::c_void,
        len: ffi::c_uint,
    ) -> (&'a TcpSock, Option<&'a T::Ctx>, &'a [u8]) {
        // SAFETY: The caller guarantees the socket and the bytes; `ctx` is
        // the socket's holder or null (see `ctx`).
        unsafe {
            (
                TcpSock::from_raw(sk),
                ctx.cast::<Holder<T::Ctx>>().as_ref().map(|h| &h.ctx),
                core::slice::from_raw_parts(val.cast::<u8>(), len as usize),
            )
        }
    }

    /// # Safety
    ///
    /// The ULP proto's setsockopt at level `SOL`: a live, locked socket and
    /// `len` readable bytes at `val`.
    unsafe extern "C" fn setopt_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        name: ffi::c_int,
        val: *const ffi::c_void,
        len: ffi::c_uint,
    ) -> ffi::c_int {
        // SAFETY: The caller's guarantees are `opt_args`'s.
        let (s, c, v) = unsafe { Self::opt_args(sk, ctx, val, len) };
        match c {
            // INVARIANT: TCP's setsockopt path locked the socket for the call.
            Some(c) => match T::setopt_locked(&Locked(RxLocked(s)), c, name, v) {
                Ok(()) => 0,
                Err(e) => e.to_errno(),
            },
            None => super::errno::enoprotoopt().to_errno(),
        }
    }

    /// # Safety
    ///
    /// The ULP proto's setsockopt at level `SOL` before it locks the
    /// socket: a live socket and `len` readable bytes at `val`.
    unsafe extern "C" fn setopt_unlocked_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        name: ffi::c_int,
        val: *const ffi::c_void,
        len: ffi::c_uint,
    ) -> ffi::c_int {
        // SAFETY: The caller's guarantees are `opt_args`'s.
        let (s, c, v) = unsafe { Self::opt_args(sk, ctx, val, len) };
        match c.and_then(|c| T::setopt_unlocked(s, c, name, v)) {
            None => -(bindings::ENOIOCTLCMD as ffi::c_int),
            Some(Ok(())) => 0,
            Some(Err(e)) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// The ULP proto's getsockopt at level `SOL`: a live, locked socket and
    /// `len` writable bytes at `val`.
    unsafe extern "C" fn getopt_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        name: ffi::c_int,
        val: *mut ffi::c_void,
        len: ffi::c_uint,
    ) -> ffi::c_int {
        // SAFETY: The socket is live for the call; `val` has room for `len` bytes.
        let (s, out) = unsafe {
            (
                TcpSock::from_raw(sk),
                core::slice::from_raw_parts_mut(val.cast::<u8>(), len as usize),
            )
        };
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        match unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            Some(h) => match T::getopt(s, &h.ctx, name, out) {
                Ok(n) => n.min(len as usize) as ffi::c_int,
                Err(e) => e.to_errno(),
            },
            None => super::errno::enoprotoopt().to_errno(),
        }
    }

    /// # Safety
    ///
    /// The socket's work item: a live socket, locked, and its holder.
    unsafe extern "C" fn work_cb(sk: *mut bindings::sock, ctx: *mut ffi::c_void) {
        // SAFETY: The socket is live for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        if let Some(h) = unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            // INVARIANT: The work item locked the socket for the call.
            T::work(&Locked(RxLocked(s)), &h.ctx);
        }
    }

    /// # Safety
    ///
    /// The socket's data_ready hook, or its receive run
    /// (`zcnet_ulp_ofo_walk_fn()`): a live socket whose spinlock the
    /// caller holds with bottom halves off and no owner, or which the
    /// current thread owns (its backlog), and its holder (live while the
    /// hook is installed, and until close has cancelled the run).
    unsafe extern "C" fn rx_bh_cb(sk: *mut bindings::sock, ctx: *mut ffi::c_void) -> bool {
        // SAFETY: The socket is live for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        match unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            // INVARIANT: The hook or the run holds the socket's spinlock
            // with bottom halves off and no owner (`RxLocked`'s second
            // case), or the current thread owns the socket (its first).
            Some(h) => T::rx_bh(&RxLocked(s), &h.ctx),
            None => false,
        }
    }

    /// # Safety
    ///
    /// The socket's close, its work item stopped: a live socket, locked,
    /// and its holder.
    unsafe extern "C" fn close_cb(sk: *mut bindings::sock, ctx: *mut ffi::c_void) {
        // SAFETY: The socket is live for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        if let Some(h) = unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            // INVARIANT: The close path locked the socket for the call.
            T::close(&Locked(RxLocked(s)), &h.ctx);
        }
    }

    /// # Safety
    ///
    /// The listing's read: a live socket (on the ULP's list, whose lock
    /// the caller holds: close and destroy take it off before the holder
    /// goes), its holder, and `len` writable bytes at `buf`.
    unsafe extern "C" fn describe_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        buf: *mut ffi::c_char,
        len: ffi::c_uint,
    ) -> ffi::c_int {
        // SAFETY: The socket is live for the call; `buf` has room for `len`
        // bytes.
        let (s, out) = unsafe {
            (
                TcpSock::from_raw(sk),
                core::slice::from_raw_parts_mut(buf.cast::<u8>(), len as usize),
            )
        };
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        match unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            Some(h) => T::describe(s, &h.ctx, out).min(len as usize) as ffi::c_int,
            None => 0,
        }
    }

    /// # Safety
    ///
    /// After TCP's setsockopt set option `name`: a live, locked socket.
    unsafe extern "C" fn tcp_opt_set_cb(
        sk: *mut bindings::sock,
        ctx: *mut ffi::c_void,
        name: ffi::c_int,
    ) {
        // SAFETY: The socket is live for the call.
        let s = unsafe { TcpSock::from_raw(sk) };
        // SAFETY: `ctx` is the socket's holder or null (see `ctx`).
        if let Some(h) = unsafe { ctx.cast::<Holder<T::Ctx>>().as_ref() } {
            T::tcp_option_set(s, &h.ctx, name);
        }
    }
}

/// The out-of-order kicks' netfilter hook, in every network namespace
/// (`zcnet_helper_tcp_ulp_ofo_register()` in `tcp_ulp.h`): sockets that
/// asked ([`Locked::set_ofo_kick`]) get their receive path run
/// ([`TcpSock::kick_rx`]) when a TCP segment with payload arrives ahead of
/// `rcv_nxt`: at once and a jiffy later. Unregistered on drop.
///
/// # Invariants
///
/// The hook is registered while the value lives.
pub struct OfoHook(());

impl OfoHook {
    /// Registers the hook (in every namespace, present and future).
    pub fn register() -> Result<Self> {
        // SAFETY: No argument; unregistered in `drop`.
        to_result(unsafe { ext::zcnet_helper_tcp_ulp_ofo_register() })?;
        // INVARIANT: registered just above.
        Ok(Self(()))
    }
}

impl Drop for OfoHook {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the hook is registered; this waits
        // for the hook calls running on other CPUs.
        unsafe { ext::zcnet_helper_tcp_ulp_ofo_unregister() };
    }
}
