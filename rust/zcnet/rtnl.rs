// SPDX-License-Identifier: GPL-2.0

//! rtnetlink link kinds: what `ip link add NAME type KIND` creates.
//!
//! C header: [`include/net/rtnetlink.h`](srctree/include/net/rtnetlink.h)

use super::ext;
use core::marker::PhantomData;
use kernel::{bindings, error::from_result, error::to_result, ffi, prelude::*, types::Opaque};

/// A network device being created by rtnetlink.
///
/// # Invariants
///
/// The wrapped `struct net_device` is allocated and not yet registered; the
/// RTNL lock is held.
#[repr(transparent)]
pub struct NewDevice(Opaque<bindings::net_device>);

impl NewDevice {
    /// The raw device pointer, for the other abstractions of this layer.
    #[allow(dead_code)]
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }
}

/// Where a `newlink` explains a refusal to the user (`ip` prints it as
/// `Error: ...`).
///
/// # Invariants
///
/// Wraps a valid `struct netlink_ext_ack` (or null) for the callback's duration.
pub struct ExtAck(*mut bindings::netlink_ext_ack);

impl ExtAck {
    /// Sets the message returned to the user with the error.
    pub fn set_msg(&mut self, msg: &'static CStr) {
        if !self.0.is_null() {
            // SAFETY: By the type invariant `self.0` is valid; `msg` is 'static,
            // as NL_SET_ERR_MSG requires of the string it stores.
            unsafe { (*self.0)._msg = msg.as_ptr().cast() };
        }
    }
}

/// A link kind.
pub trait LinkKind: Sync + 'static {
    /// The name `ip link add ... type KIND` selects it by.
    const KIND: &'static CStr;

    /// Finishes and registers a new device of this kind; on error the device
    /// is freed by the caller. `extack` carries a message for the user.
    fn newlink(dev: &NewDevice, extack: &mut ExtAck) -> Result;
}

/// A registered link kind; unregistered on drop, which also deletes every
/// device of the kind that still exists.
///
/// # Invariants
///
/// `ops` holds a `struct rtnl_link_ops` registered with `rtnl_link_register`
/// until `drop` unregisters it.
#[pin_data(PinnedDrop)]
pub struct Registration<T: LinkKind> {
    #[pin]
    ops: Opaque<ext::rtnl_link_ops>,
    _t: PhantomData<T>,
}

// SAFETY: `rtnl_link_unregister` may be called from any thread that may sleep.
unsafe impl<T: LinkKind> Send for Registration<T> {}
// SAFETY: `&Registration` offers no method that touches the ops.
unsafe impl<T: LinkKind> Sync for Registration<T> {}

impl<T: LinkKind> Registration<T> {
    /// Registers the link kind `T::KIND`.
    pub fn register() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(move |slot: *mut ext::rtnl_link_ops| {
                // SAFETY: The initializer may write to `slot`; an all-zero
                // `rtnl_link_ops` is valid (every callback is optional or set below).
                unsafe { core::ptr::write_bytes(slot, 0, 1) };
                // SAFETY: `slot` is valid for writes and initialised (zeroed) above.
                unsafe {
                    (*slot).kind = T::KIND.as_ptr().cast();
                    (*slot).priv_size = 0;
                    (*slot).setup = Some(ext::ether_setup);
                    (*slot).newlink = Some(newlink_callback::<T>);
                }
                // SAFETY: `slot` holds an initialised ops table in pinned memory that is
                // unregistered in `drop` before it is freed; `kind` is 'static.
                // INVARIANT: on `Ok`, `slot` is registered.
                to_result(unsafe { ext::rtnl_link_register(slot) })
            }),
            _t: PhantomData,
        })
    }
}

#[pinned_drop]
impl<T: LinkKind> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `ops` is registered; unregistering takes
        // the RTNL lock and deletes the devices of this kind.
        unsafe { ext::rtnl_link_unregister(self.ops.get()) };
    }
}

/// # Safety
///
/// Called by rtnetlink with the RTNL lock held and a freshly allocated device.
unsafe extern "C" fn newlink_callback<T: LinkKind>(
    dev: *mut bindings::net_device,
    _params: *mut ext::rtnl_newlink_params,
    extack: *mut bindings::netlink_ext_ack,
) -> ffi::c_int {
    from_result(|| {
        // SAFETY: `dev` is valid for the call and `NewDevice` is transparent.
        let dev = unsafe { &*dev.cast::<NewDevice>() };
        // INVARIANT: rtnetlink passes a valid ext_ack (or null) for the call.
        let mut extack = ExtAck(extack);
        T::newlink(dev, &mut extack)?;
        Ok(0)
    })
}
