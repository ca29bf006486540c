// SPDX-License-Identifier: GPL-2.0

//! TCP upper-layer protocols (ULPs).
//!
//! A ULP is what `setsockopt(fd, SOL_TCP, TCP_ULP, "name")` attaches to a TCP
//! socket, the way kTLS (`net/tls/tls_main.c`) does. zcsock and zcddp are turned
//! on per socket this way.
//!
//! C header: [`include/net/tcp.h`](srctree/include/net/tcp.h)

use super::ext;
use core::marker::PhantomData;
use kernel::{bindings, error::from_result, error::to_result, ffi, prelude::*, types::Opaque};

/// `TCP_ULP_NAME_MAX` of `include/net/tcp.h`, NUL included.
const NAME_MAX: usize = 16;

/// A TCP socket handed to a ULP callback.
///
/// # Invariants
///
/// The wrapped `struct sock` is a live TCP socket, locked by the caller of the
/// callback for the callback's duration.
#[repr(transparent)]
pub struct TcpSock(Opaque<bindings::sock>);

impl TcpSock {
    /// The raw socket pointer, for the other abstractions of this layer.
    #[allow(dead_code)]
    pub(crate) fn as_raw(&self) -> *mut bindings::sock {
        self.0.get()
    }
}

/// An upper-layer protocol over TCP.
pub trait Ulp: Sync + 'static {
    /// The name `setsockopt(TCP_ULP)` selects it by (at most 15 bytes).
    const NAME: &'static CStr;

    /// Attaches the protocol to `sk`. An error is returned to the caller of
    /// `setsockopt` and leaves the socket as it was.
    fn init(sk: &TcpSock) -> Result;
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
    /// Registers `T` as the ULP `T::NAME`, owned by `module`.
    pub fn register(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        const {
            assert!(
                T::NAME.to_bytes_with_nul().len() <= NAME_MAX,
                "ULP name too long"
            )
        };
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(move |slot: *mut ext::tcp_ulp_ops| {
                let mut ops = ext::tcp_ulp_ops::default();
                for (d, s) in ops.name.iter_mut().zip(T::NAME.to_bytes_with_nul()) {
                    *d = *s as ffi::c_char;
                }
                ops.owner = module.as_ptr();
                ops.init = Some(init_callback::<T>);
                // SAFETY: The initializer may write to `slot`.
                unsafe { slot.write(ops) };
                // SAFETY: `slot` holds a fully initialised ops table in pinned memory
                // that is unregistered in `drop` before it is freed.
                // INVARIANT: on `Ok`, `slot` is registered.
                to_result(unsafe { ext::tcp_register_ulp(slot) })
            }),
            _t: PhantomData,
        })
    }
}

#[pinned_drop]
impl<T: Ulp> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `ops` is registered. `tcp_unregister_ulp`
        // waits for an RCU grace period, after which no lookup sees it; sockets
        // that use it hold a reference on the module, so it cannot unload under them.
        unsafe { ext::tcp_unregister_ulp(self.ops.get()) };
    }
}

/// # Safety
///
/// Called by the TCP stack with a valid, locked TCP socket.
unsafe extern "C" fn init_callback<T: Ulp>(sk: *mut bindings::sock) -> ffi::c_int {
    from_result(|| {
        // SAFETY: `sk` is valid and locked for the duration of this call, and
        // `TcpSock` is a transparent wrapper over `struct sock`.
        let sk = unsafe { &*sk.cast::<TcpSock>() };
        T::init(sk)?;
        Ok(0)
    })
}
