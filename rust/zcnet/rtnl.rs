// SPDX-License-Identifier: GPL-2.0

//! rtnetlink link kinds: what `ip link add NAME type KIND` creates.
//!
//! This is the low level: a kind fills an `rtnl_link_ops` table with its
//! callbacks ([`LinkOps`]). Drivers use a higher-level abstraction built on
//! it, such as [`super::stacked`].
//!
//! C header: [`include/net/rtnetlink.h`](srctree/include/net/rtnetlink.h)

use super::errno::to_result;
use super::ext;
use core::marker::PhantomData;
use kernel::{bindings, prelude::*, types::Opaque};

/// Where a callback explains a refusal to the user (`ip` prints it as
/// `Error: ...`).
///
/// # Invariants
///
/// Wraps a valid `struct netlink_ext_ack` (or null) for the callback's duration.
pub struct ExtAck(*mut bindings::netlink_ext_ack);

impl ExtAck {
    /// # Safety
    ///
    /// `ptr` must be null or valid for the lifetime of the returned value.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::netlink_ext_ack) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self(ptr)
    }

    /// The raw pointer, to pass on to the kernel.
    pub(crate) fn as_raw(&self) -> *mut bindings::netlink_ext_ack {
        self.0
    }

    /// Sets the message returned to the user with the error.
    pub fn set_msg(&mut self, msg: &'static CStr) {
        if !self.0.is_null() {
            // SAFETY: By the type invariant `self.0` is valid; `msg` is 'static,
            // as NL_SET_ERR_MSG requires of the string it stores.
            unsafe { (*self.0)._msg = msg.as_char_ptr().cast() };
        }
    }
}

/// A link kind's callbacks.
///
/// # Safety
///
/// The callbacks `fill` installs must follow the `rtnl_link_ops` contracts
/// (`include/net/rtnetlink.h`) for devices of this kind.
pub unsafe trait LinkOps: Sync + 'static {
    /// The name `ip link add ... type KIND` selects it by.
    const KIND: &'static CStr;

    /// Installs the callbacks and sizes into a zeroed table (`kind` is set by
    /// the registration).
    fn fill(ops: &mut ext::rtnl_link_ops);
}

/// A registered link kind; unregistered on drop, which also deletes every
/// device of the kind that still exists.
///
/// # Invariants
///
/// `ops` holds a `struct rtnl_link_ops` registered with `rtnl_link_register`
/// until `drop` unregisters it.
#[pin_data(PinnedDrop)]
pub struct Registration<T: LinkOps> {
    #[pin]
    ops: Opaque<ext::rtnl_link_ops>,
    _t: PhantomData<T>,
}

// SAFETY: `rtnl_link_unregister` may be called from any thread that may sleep.
unsafe impl<T: LinkOps> Send for Registration<T> {}
// SAFETY: `&Registration` offers no method that touches the ops.
unsafe impl<T: LinkOps> Sync for Registration<T> {}

impl<T: LinkOps> Registration<T> {
    /// Registers the link kind `T::KIND`.
    pub fn register() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(move |slot: *mut ext::rtnl_link_ops| {
                // SAFETY: The initializer may write to `slot`; an all-zero
                // `rtnl_link_ops` is valid (every callback is optional).
                unsafe { core::ptr::write_bytes(slot, 0, 1) };
                // SAFETY: `slot` is valid and initialised (zeroed) above.
                let ops = unsafe { &mut *slot };
                T::fill(ops);
                ops.kind = T::KIND.as_char_ptr().cast();
                // SAFETY: `slot` holds an initialised ops table in pinned memory that is
                // unregistered in `drop` before it is freed; `kind` is 'static, and
                // the callbacks are sound by `LinkOps`' contract.
                // INVARIANT: on `Ok`, `slot` is registered.
                to_result(unsafe { ext::rtnl_link_register(slot) })
            }),
            _t: PhantomData,
        })
    }
}

#[pinned_drop]
impl<T: LinkOps> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `ops` is registered; unregistering takes
        // the RTNL lock and deletes the devices of this kind.
        unsafe { ext::rtnl_link_unregister(self.ops.get()) };
    }
}
