// SPDX-License-Identifier: GPL-2.0

//! Devices stacked on one lower Ethernet device: `ip link add NAME link LOWER
//! type KIND`.
//!
//! The stacked device takes the lower device over, the way macvlan's passthru
//! mode or a bonding port does: it shares the lower device's MAC address, an
//! rx_handler hands it every frame the lower device receives, and what it
//! transmits leaves through the lower device. Deleting the stacked device,
//! removing the lower device and unloading the module all tear it down.
//!
//! The driver supplies the data path through [`Stacked`]; this file owns every
//! C callback and the device's lifetime.
//!
//! C models: `drivers/net/macvlan.c`, `drivers/net/ipvlan/`.

use super::ext;
use super::netdev::{DevStats, NetDevice};
use super::rtnl::{self, ExtAck};
use super::skbuff::{SkBuff, SkbChain};
use super::text::TextBuf;
use core::marker::PhantomData;
use kernel::{
    bindings,
    error::{from_result, VTABLE_DEFAULT_ERROR},
    ffi,
    prelude::*,
    sync::atomic::{Acquire, Atomic, Release},
    types::{ForeignOwnable, Opaque},
    uaccess::UserPtr,
};

/// What the rx path does with a frame.
pub enum Rx {
    /// Deliver it on the stacked device.
    Pass(SkBuff),
    /// The driver took it (queued, delivered or dropped it itself).
    Consumed,
}

/// What the rx path and the timer may ask of the device.
pub struct Ctx<'a> {
    timer: *mut ext::zcnet_timer,
    dying: &'a Atomic<bool>,
    lower: *mut bindings::net_device,
    dev: *mut bindings::net_device,
    stats: *const DevStats,
    _p: PhantomData<&'a ()>,
}

impl Ctx<'_> {
    /// Hands a packet up the stack of the stacked device now, counted in its
    /// statistics (`ip -s link`): before what the caller delivers next, and
    /// before what the rx path returns as [`Rx::Pass`]. Call it without
    /// holding a lock the stack may need (it may transmit on this device).
    pub fn receive(&self, skb: SkBuff) {
        // SAFETY: `dev` and `stats` belong to the registered stacked device
        // the context was made for, valid for the callback's duration.
        let (dev, stats) = unsafe { (NetDevice::from_raw(self.dev), &*self.stats) };
        stats.rx(u64::from(skb.len()));
        skb.receive(dev);
    }

    /// [`Ctx::receive`] for each packet of `chain`, in order.
    pub fn receive_all(&self, chain: &mut SkbChain) {
        while let Some(skb) = chain.pop() {
            self.receive(skb);
        }
    }

    /// The lower device (valid while the stacked device is registered).
    pub fn lower(&self) -> &NetDevice {
        // SAFETY: `lower` is the registered lower device for the duration of
        // the callback the context was made for (see `Priv`).
        unsafe { NetDevice::from_raw(self.lower) }
    }

    /// The stacked device itself.
    pub fn dev(&self) -> &NetDevice {
        // SAFETY: `dev` is the device the context was made for, registered
        // (or being deleted) for the duration of the callback.
        unsafe { NetDevice::from_raw(self.dev) }
    }

    /// Arms the device's timer to fire in `us` microseconds (softirq context,
    /// calling [`Stacked::on_timer`]) unless it is already armed. Once the
    /// device is being deleted this does nothing.
    pub fn arm_timer(&self, us: u64) {
        if !self.timer.is_null() {
            // SAFETY: `timer` is set before the device is registered and
            // freed only by the destructor, after unregistration, when no
            // callback that made a `Ctx` can still run. After dellink shut
            // it down, arming it is a no-op.
            unsafe { ext::zcnet_helper_timer_arm(self.timer, us as ffi::c_ulong) };
        }
    }

    /// True once the device is being deleted ([`Stacked::teardown`] has run
    /// or is running): transmit may still be called until it is
    /// unregistered, but it must not start anything new (requests, timers).
    pub fn dying(&self) -> bool {
        self.dying.load(Acquire)
    }
}

/// A device kind stacked on a lower Ethernet device.
///
/// Optional callbacks (`rx_usecs`/`set_rx_usecs`, `private_ioctl`) are gated
/// at compile time as `phy::Driver`'s are: the device gets the matching
/// `ethtool`/ioctl operation only when the driver implements them
/// (`HAS_*`), and calling a default is a build error.
#[vtable]
pub trait Stacked: Send + Sync + Sized + 'static {
    /// The link kind (`ip link add ... type KIND`).
    const KIND: &'static CStr;
    /// Driver name and version for `ethtool -i`.
    const DRIVER: &'static CStr;
    /// Driver version for `ethtool -i`.
    const VERSION: &'static CStr;
    /// Names of the driver's statistics, in `ethtool -S` order.
    const STATS: &'static [&'static str];

    /// MTU of a new device on `lower` when the user gives none.
    fn default_mtu(lower: &NetDevice) -> u32;

    /// Creates the per-device state (RTNL held, may sleep).
    fn new(lower: &NetDevice) -> impl PinInit<Self, Error>;

    /// Names of the device's sysfs attributes (`/sys/class/net/DEV/KIND/`)
    /// and whether each is writable; at most 16.
    const SYSFS: &'static [(&'static CStr, bool)] = &[];

    /// How many link attributes the kind has: `IFLA_INFO_DATA` types
    /// `1..=LINK_ATTRS`, each a u32 (at most 16). `ip link add/set ... type
    /// KIND` sets them and `ip -d link show` shows them (both through the
    /// kind's iproute2 plugin).
    const LINK_ATTRS: u16 = 0;

    /// Transmits `skb` (starting at its Ethernet header) through `lower`.
    /// The device offers scatter-gather and checksum offload, so `skb` may
    /// carry page fragments and a pending (`CHECKSUM_PARTIAL`) checksum.
    fn xmit(&self, skb: SkBuff, lower: &NetDevice, ctx: &Ctx<'_>) -> TxResult;

    /// Handles a frame the lower device received (softirq, RCU held).
    fn rx(&self, skb: SkBuff, dev: &NetDevice, ctx: &Ctx<'_>) -> Rx;

    /// The device's timer fired (softirq).
    fn on_timer(&self, _dev: &NetDevice, _ctx: &Ctx<'_>) {}

    /// The device is being deleted: no frame and no timer will reach it any
    /// more. Called with bottom halves disabled, so it may take the locks the
    /// rx path takes. Drop what is held; last frames (goodbyes to peers) may
    /// still leave through `lower` (dropped if it is going away too).
    fn teardown(&self, _ctx: &Ctx<'_>) {}

    /// Fills `out` (`STATS.len()` long) with the statistics.
    fn stats(&self, out: &mut [u64]);

    /// Writes the text of sysfs attribute `idx` (an index into `SYSFS`).
    fn sysfs_show(&self, _idx: usize, _out: &mut TextBuf<'_>, _ctx: &Ctx<'_>) -> Result {
        Err(EINVAL)
    }

    /// Stores a value written to sysfs attribute `idx` (process context).
    fn sysfs_store(&self, _idx: usize, _input: &[u8], _ctx: &Ctx<'_>) -> Result {
        Err(EINVAL)
    }

    /// `ethtool -c`: the receive coalescing time in microseconds (with
    /// [`Stacked::set_rx_usecs`], the device offers `ethtool -c/-C`).
    fn rx_usecs(&self) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -C DEV rx-usecs N` (process context, RTNL held).
    fn set_rx_usecs(&self, _usecs: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The value of link attribute `ty` (`1..=LINK_ATTRS`), for `ip -d link`.
    fn link_attr(&self, _ty: u16) -> u32 {
        0
    }

    /// Applies the link attributes of `ip link add` (before the device is
    /// registered) or `ip link set` (process context, RTNL held). Either
    /// every given value is valid and applied, or none is and the error
    /// (with a message in `extack`) goes back to the user.
    fn set_link_attrs(&self, _attrs: &LinkAttrs, _extack: &mut ExtAck) -> Result {
        Ok(())
    }

    /// A private ioctl (`SIOCDEVPRIVATE + cmd`) with its user-space argument
    /// (process context, RTNL held: do not wait for the network).
    fn private_ioctl(&self, _dev: &NetDevice, _ctx: &Ctx<'_>, _cmd: u32, _arg: UserPtr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The link attributes a request carried: `get(ty)` is `Some` for each one
/// given.
pub struct LinkAttrs {
    vals: [Option<u32>; ext::ZCNET_LINK_ATTRS_MAX as usize + 1],
}

impl LinkAttrs {
    /// # Safety
    ///
    /// `data` must be null or the attribute table rtnetlink parsed with the
    /// kind's policy (`n` at most its `maxtype`), valid for the call.
    unsafe fn from_raw(data: *mut *mut bindings::nlattr, n: u16) -> Self {
        let mut vals = [None; ext::ZCNET_LINK_ATTRS_MAX as usize + 1];
        for (ty, v) in vals.iter_mut().enumerate().skip(1).take(usize::from(n)) {
            let mut val = 0u32;
            // SAFETY: `data` is null or valid (the caller); the helper checks
            // the type against the table's size, and the policy made every
            // present attribute a u32.
            if unsafe { ext::zcnet_helper_link_attr(data, ty as u32, &mut val) } {
                *v = Some(val);
            }
        }
        Self { vals }
    }

    /// The value given for attribute `ty`, if any.
    pub fn get(&self, ty: u16) -> Option<u32> {
        self.vals.get(usize::from(ty)).copied().flatten()
    }

    /// Whether no attribute was given.
    pub fn is_empty(&self) -> bool {
        self.vals.iter().all(Option::is_none)
    }
}

/// The outcome of [`Stacked::xmit`], for the device's standard statistics.
pub struct TxResult {
    /// Frames handed to the lower device.
    pub frames: u64,
    /// Bytes handed to the lower device.
    pub bytes: u64,
    /// Whether the packet was dropped.
    pub dropped: bool,
}

/// The `netdev_priv` area of a stacked device.
///
/// # Invariants
///
/// `lower` is the lower device for as long as the stacked device is registered
/// (the notifier deletes the stacked device before the lower one goes);
/// `state` is null or a pinned `KBox<T>` handed over with
/// `ForeignOwnable::into_foreign`, taken back only by `priv_destructor`; `timer` is null or a timer whose callback is given the
/// device: set before registration, shut down (never freed) by dellink, and
/// freed only by `priv_destructor`, so every callback of a registered device
/// sees the same valid timer; `dying` is set by dellink before `teardown`.
#[repr(C)]
struct Priv<T> {
    lower: *mut bindings::net_device,
    state: *mut ffi::c_void,
    timer: *mut ext::zcnet_timer,
    dying: Atomic<bool>,
    stats: DevStats,
    /// The kind whose state `state` holds.
    _t: PhantomData<T>,
}

impl<T: Stacked> Priv<T> {
    /// The driver's state.
    ///
    /// # Safety
    ///
    /// `state` is set (newlink did) and not yet taken back (the destructor).
    unsafe fn state(&self) -> &T {
        // SAFETY: The caller guarantees `state` holds a pinned box from
        // `into_foreign` that lives while `self` is borrowed.
        unsafe { <Pin<KBox<T>> as ForeignOwnable>::borrow(self.state) }.get_ref()
    }
}

impl<T> Priv<T> {
    /// The context of a callback for `dev`, the device this area belongs to.
    fn ctx(&self, dev: *mut bindings::net_device) -> Ctx<'_> {
        Ctx {
            timer: self.timer,
            dying: &self.dying,
            lower: self.lower,
            dev,
            stats: &self.stats,
            _p: PhantomData,
        }
    }
}

/// # Safety
///
/// `dev` must be a device of kind `T` (its private area is a `Priv<T>`).
unsafe fn priv_of<'a, T>(dev: *mut bindings::net_device) -> &'a Priv<T> {
    // SAFETY: The caller guarantees the private area holds a `Priv<T>`,
    // zero-initialised by `alloc_netdev` and filled by `newlink`.
    unsafe { &*ext::zcnet_helper_netdev_priv(dev).cast::<Priv<T>>() }
}

struct Tables<T>(PhantomData<T>);

impl<T: Stacked> Tables<T> {
    const NETDEV_OPS: ext::net_device_ops = {
        // SAFETY: All fields are nullable function pointers or integers: zero
        // is a valid value for every one of them.
        let mut o: ext::net_device_ops = unsafe { core::mem::zeroed() };
        o.ndo_start_xmit = Some(Adapter::<T>::xmit_cb);
        o.ndo_get_stats64 = Some(Adapter::<T>::stats64_cb);
        o.ndo_get_iflink = Some(Adapter::<T>::iflink_cb);
        if T::HAS_PRIVATE_IOCTL {
            o.ndo_siocdevprivate = Some(Adapter::<T>::siocdevprivate_cb);
        }
        o
    };

    const ETHTOOL_OPS: bindings::ethtool_ops = {
        // SAFETY: As above, every field may be zero.
        let mut o: bindings::ethtool_ops = unsafe { core::mem::zeroed() };
        o.get_drvinfo = Some(Adapter::<T>::drvinfo_cb);
        o.get_link = Some(bindings::ethtool_op_get_link);
        o.get_sset_count = Some(Adapter::<T>::sset_count_cb);
        o.get_strings = Some(Adapter::<T>::strings_cb);
        o.get_ethtool_stats = Some(Adapter::<T>::ethtool_stats_cb);
        if T::HAS_RX_USECS && T::HAS_SET_RX_USECS {
            // ETHTOOL_COALESCE_RX_USECS (BIT(0) in include/linux/ethtool.h; a
            // macro bindgen does not see).
            o.supported_coalesce_params = 1 << 0;
            o.get_coalesce = Some(Adapter::<T>::get_coalesce_cb);
            o.set_coalesce = Some(Adapter::<T>::set_coalesce_cb);
        }
        o
    };
}

/// A registered stacked device kind, with its netdevice notifier. Dropping it
/// deletes every device of the kind, then unregisters the notifier (fields
/// drop in declaration order), so no device of the kind is ever left without
/// the notifier that removes it with its lower device.
#[pin_data]
pub struct Registration<T: Stacked> {
    #[pin]
    link: rtnl::Registration<Kind<T>>,
    #[pin]
    nb: Notifier<T>,
}

impl<T: Stacked> Registration<T> {
    /// Registers the link kind `T::KIND` and its notifier.
    pub fn register() -> impl PinInit<Self, Error> {
        // The sysfs group is static per module: set up before any device
        // of the kind can exist (the link kind is registered below).
        for (i, (name, writable)) in T::SYSFS.iter().enumerate() {
            // SAFETY: `name` is 'static; no device exists yet, so nothing
            // reads the group while it is filled.
            unsafe { ext::zcnet_helper_sysfs_add(i as u32, name.as_char_ptr(), *writable) };
        }
        if !T::SYSFS.is_empty() {
            // SAFETY: As above; the callbacks are valid for the module's life.
            unsafe {
                ext::zcnet_helper_sysfs_set(
                    T::KIND.as_char_ptr(),
                    Some(Adapter::<T>::sysfs_show_cb),
                    Some(Adapter::<T>::sysfs_store_cb),
                )
            };
        }
        try_pin_init!(Self {
            link <- rtnl::Registration::register(),
            nb <- Notifier::register(),
        })
    }
}

/// The netdevice notifier of a stacked kind: follows each lower device's
/// state and deletes the stacked device when its lower device goes.
///
/// # Invariants
///
/// `nb` is registered with `register_netdevice_notifier` while `self` lives.
#[pin_data(PinnedDrop)]
struct Notifier<T: Stacked> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _t: PhantomData<T>,
}

// SAFETY: Unregistration may happen on any thread.
unsafe impl<T: Stacked> Send for Notifier<T> {}
// SAFETY: `&Notifier` exposes nothing.
unsafe impl<T: Stacked> Sync for Notifier<T> {}

impl<T: Stacked> Notifier<T> {
    fn register() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            nb <- Opaque::try_ffi_init(|slot: *mut bindings::notifier_block| {
                // SAFETY: `slot` may be written; a zeroed notifier_block with
                // its callback set is what register_netdevice_notifier wants.
                unsafe {
                    core::ptr::write_bytes(slot, 0, 1);
                    (*slot).notifier_call = Some(Adapter::<T>::notifier_cb);
                }
                // SAFETY: `slot` is pinned and unregistered in `drop`.
                // INVARIANT: registered on success.
                super::errno::to_result(unsafe { ext::register_netdevice_notifier(slot) })
            }),
            _t: PhantomData,
        })
    }
}

#[pinned_drop]
impl<T: Stacked> PinnedDrop for Notifier<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `nb` is registered.
        unsafe { ext::unregister_netdevice_notifier(self.nb.get()) };
    }
}

/// The rtnl side of a stacked kind.
pub struct Kind<T>(PhantomData<T>);

// SAFETY: The callbacks below follow the rtnl_link_ops contracts.
unsafe impl<T: Stacked> rtnl::LinkOps for Kind<T> {
    const KIND: &'static CStr = T::KIND;

    fn fill(ops: &mut ext::rtnl_link_ops) {
        ops.priv_size = core::mem::size_of::<Priv<T>>();
        ops.setup = Some(Adapter::<T>::setup_cb);
        ops.newlink = Some(Adapter::<T>::newlink_cb);
        ops.dellink = Some(Adapter::<T>::dellink_cb);
        const { assert!(T::LINK_ATTRS as u32 <= ext::ZCNET_LINK_ATTRS_MAX) };
        if T::LINK_ATTRS > 0 {
            ops.maxtype = u32::from(T::LINK_ATTRS);
            // SAFETY: The policy is a static table of the helpers.
            ops.policy = unsafe { ext::zcnet_helper_link_policy() };
            ops.changelink = Some(Adapter::<T>::changelink_cb);
            ops.get_size = Some(Adapter::<T>::get_size_cb);
            ops.fill_info = Some(Adapter::<T>::fill_info_cb);
        }
    }
}

fn copy_cstr(dst: &mut [ffi::c_char], src: &CStr) {
    let n = dst.len().saturating_sub(1).min(src.to_bytes().len());
    for (d, s) in dst.iter_mut().zip(src.to_bytes().iter()).take(n) {
        *d = *s as ffi::c_char;
    }
    if let Some(d) = dst.get_mut(n) {
        *d = 0;
    }
}

/// The state of a registered device of kind `T`, for the callbacks below.
///
/// # Safety
///
/// `dev` must be a registered device of kind `T` (its `state` is then set
/// and stays valid until after it is unregistered).
unsafe fn state_of<'a, T: Stacked>(dev: *mut bindings::net_device) -> &'a T {
    // SAFETY: The caller guarantees a registered device, whose `state` is set
    // and taken back only by the destructor, after the last callback.
    unsafe { priv_of::<T>(dev).state() }
}

/// The C callbacks of a stacked kind `T`, each a thin `unsafe extern "C"`
/// shim around [`Stacked`] (the model is `phy::Adapter`).
struct Adapter<T>(PhantomData<T>);

impl<T: Stacked> Adapter<T> {
    /// `rtnl_link_ops.setup`: Ethernet defaults, the operation tables and the destructor.
    ///
    /// # Safety
    ///
    /// rtnetlink calls it on a freshly allocated device of kind `T`.
    unsafe extern "C" fn setup_cb(dev: *mut bindings::net_device) {
        // SAFETY: rtnetlink calls setup on a freshly allocated device; the tables
        // are 'static.
        unsafe {
            ext::zcnet_helper_stacked_setup(
                dev,
                &Tables::<T>::NETDEV_OPS,
                &Tables::<T>::ETHTOOL_OPS,
                Some(Self::destructor_cb),
            )
        }
    }

    /// `priv_destructor`: frees the timer and drops the driver's state.
    ///
    /// # Safety
    ///
    /// The core calls it once per device of kind `T`, after unregistration (or a failed
    /// registration), when nothing else uses the private area.
    unsafe extern "C" fn destructor_cb(dev: *mut bindings::net_device) {
        // SAFETY: The device is of kind `T`; nothing uses its state any more
        // (called after unregistration, or when registration failed).
        let p = unsafe { ext::zcnet_helper_netdev_priv(dev).cast::<Priv<T>>() };
        // SAFETY: By the `Priv` invariant the timer (if still there) is ours, and
        // `state` came from `into_foreign` of a pinned box, taken back once here.
        // Nothing else refers to the private area any more.
        unsafe {
            ext::zcnet_helper_timer_free((*p).timer);
            (*p).timer = core::ptr::null_mut();
            if !(*p).state.is_null() {
                drop(<Pin<KBox<T>> as ForeignOwnable>::from_foreign((*p).state));
                (*p).state = core::ptr::null_mut();
            }
        }
    }

    /// `rtnl_link_ops.newlink`: `ip link add NAME link LOWER type KIND`.
    ///
    /// # Safety
    ///
    /// rtnetlink calls it with RTNL held, for a device of kind `T` not yet registered, with
    /// valid `params` and a valid (or null) `extack`.
    unsafe extern "C" fn newlink_cb(
        dev: *mut bindings::net_device,
        params: *mut ext::rtnl_newlink_params,
        extack: *mut bindings::netlink_ext_ack,
    ) -> ffi::c_int {
        // SAFETY: rtnetlink passes a valid ext_ack (or null).
        let mut extack = unsafe { ExtAck::from_raw(extack) };
        from_result(|| {
            // SAFETY: `params` is valid for the call (RTNL held).
            let (ifindex, net, mtu, attrs) = unsafe {
                (
                    ext::zcnet_helper_newlink_link(params),
                    ext::zcnet_helper_newlink_link_net(params),
                    ext::zcnet_helper_newlink_mtu(params),
                    LinkAttrs::from_raw(ext::zcnet_helper_newlink_data(params), T::LINK_ATTRS),
                )
            };
            if ifindex == 0 {
                extack.set_msg(c"a lower device is needed: ip link add NAME link DEV type KIND");
                return Err(EINVAL);
            }
            // SAFETY: RTNL is held, so the lookup's result stays valid.
            let lower = unsafe { ext::__dev_get_by_index(net, ifindex as i32) };
            if lower.is_null() {
                return Err(ENODEV);
            }
            // SAFETY: `lower` is a valid device (RTNL held).
            let lower_dev = unsafe { NetDevice::from_raw(lower) };
            if !lower_dev.is_ethernet() {
                extack.set_msg(c"the lower device must be an Ethernet device");
                return Err(EINVAL);
            }
            // SAFETY: RTNL is held.
            if unsafe { ext::zcnet_helper_rx_handler_busy(lower) } {
                extack.set_msg(
                    c"the lower device is already in use (another stacked device or a bridge)",
                );
                return Err(EBUSY);
            }
            let state = KBox::pin_init(T::new(lower_dev), GFP_KERNEL)?;
            if !attrs.is_empty() {
                state.set_link_attrs(&attrs, &mut extack)?;
            }
            // SAFETY: The callback gets `dev`, which outlives the timer (dellink
            // or priv_destructor shut it down first).
            let timer = unsafe { ext::zcnet_helper_timer_new(Some(Self::timer_cb), dev.cast()) };
            if timer.is_null() {
                return Err(ENOMEM);
            }
            // SAFETY: `dev` is of kind `T`, not yet registered, so nothing else
            // reads its private area. INVARIANT: `state` comes from `into_foreign`
            // of a pinned box; `timer` is ours.
            unsafe {
                let p = ext::zcnet_helper_netdev_priv(dev).cast::<Priv<T>>();
                (*p).lower = lower;
                (*p).state = state.into_foreign();
                (*p).timer = timer;
                ext::zcnet_helper_copy_hw_addr(dev, lower);
                ext::zcnet_helper_dev_set_mtu(
                    dev,
                    if mtu != 0 {
                        mtu
                    } else {
                        T::default_mtu(lower_dev)
                    },
                );
            }
            // SAFETY: The device is set up; on failure register_netdevice calls
            // priv_destructor, which frees `state`.
            super::errno::to_result(unsafe { ext::register_netdevice(dev) })?;
            // SAFETY: Both devices are registered and RTNL is held; `dev` outlives
            // the handler registration (dellink unregisters it first).
            let r = unsafe {
                ext::netdev_rx_handler_register(lower, Some(Self::rx_handler_cb), dev.cast())
            };
            if r != 0 {
                // SAFETY: `dev` was registered above and nothing else refers to it.
                unsafe { ext::unregister_netdevice_queue(dev, core::ptr::null_mut()) };
                return Err(Error::from_errno(r));
            }
            // SAFETY: As above.
            let r = unsafe { ext::netdev_upper_dev_link(lower, dev, extack.as_raw()) };
            if r != 0 {
                // SAFETY: Undo the two steps above, in reverse.
                unsafe {
                    ext::netdev_rx_handler_unregister(lower);
                    ext::unregister_netdevice_queue(dev, core::ptr::null_mut());
                }
                return Err(Error::from_errno(r));
            }
            // SAFETY: Both devices are valid; RTNL held.
            unsafe { ext::netif_stacked_transfer_operstate(lower, dev) };
            Ok(0)
        })
    }

    /// `rtnl_link_ops.changelink`: `ip link set ... type KIND`.
    ///
    /// # Safety
    ///
    /// rtnetlink calls it with RTNL held for a registered device of kind `T`, `data` parsed
    /// with the kind's policy, `extack` valid.
    unsafe extern "C" fn changelink_cb(
        dev: *mut bindings::net_device,
        _tb: *mut *mut bindings::nlattr,
        data: *mut *mut bindings::nlattr,
        extack: *mut bindings::netlink_ext_ack,
    ) -> ffi::c_int {
        // SAFETY: rtnetlink calls this for a registered device of kind `T` (RTNL
        // held) with `data` parsed by the kind's policy and a valid ext_ack.
        let (state, attrs, mut extack) = unsafe {
            (
                state_of::<T>(dev),
                LinkAttrs::from_raw(data, T::LINK_ATTRS),
                ExtAck::from_raw(extack),
            )
        };
        from_result(|| {
            state.set_link_attrs(&attrs, &mut extack)?;
            Ok(0)
        })
    }

    /// `rtnl_link_ops.get_size`: room for the link attributes.
    ///
    /// # Safety
    ///
    /// None beyond the C contract: it reads nothing.
    unsafe extern "C" fn get_size_cb(_dev: *const bindings::net_device) -> usize {
        // SAFETY: A pure size computation.
        unsafe { ext::zcnet_helper_link_attrs_size(u32::from(T::LINK_ATTRS)) }
    }

    /// `rtnl_link_ops.fill_info`: the link attributes for `ip -d link`.
    ///
    /// # Safety
    ///
    /// rtnetlink calls it for a registered device of kind `T` with the message being built.
    unsafe extern "C" fn fill_info_cb(
        skb: *mut bindings::sk_buff,
        dev: *const bindings::net_device,
    ) -> ffi::c_int {
        // SAFETY: rtnetlink calls this for a registered device of kind `T` (RTNL
        // or RCU held), whose state lives until after unregistration.
        let state = unsafe { state_of::<T>(dev.cast_mut()) };
        for ty in 1..=T::LINK_ATTRS {
            // SAFETY: `skb` is the message being built; get_size reserved room.
            let r =
                unsafe { ext::zcnet_helper_put_link_attr(skb, u32::from(ty), state.link_attr(ty)) };
            if r != 0 {
                return r;
            }
        }
        0
    }

    /// `rtnl_link_ops.dellink`, and the lower device's unregistration: tears the device
    /// down and queues it for unregistration (see "Lifetime" in Documentation/rust-
    /// layer.rst).
    ///
    /// # Safety
    ///
    /// `dev` is a registered device of kind `T`; RTNL is held; `head` is rtnetlink's kill
    /// list or null.
    unsafe extern "C" fn dellink_cb(
        dev: *mut bindings::net_device,
        head: *mut bindings::list_head,
    ) {
        // SAFETY: `dev` is a registered device of kind `T`; RTNL is held.
        let p = unsafe { ext::zcnet_helper_netdev_priv(dev).cast::<Priv<T>>() };
        // SAFETY: `lower` is valid while `dev` is registered (see `Priv`). The
        // device is marked dying first, so transmit (which may run until
        // unregistration completes) starts nothing new. The rx handler goes
        // next (unregistering waits for running handlers), then the timer is
        // shut down (waiting for a running callback; arming it later is a no-op,
        // and it is freed only by the destructor, once transmit cannot run).
        // `teardown` may then drop what rx and the timer held, with bottom
        // halves off as its locks require.
        unsafe {
            let lower = (*p).lower;
            (*p).dying.store(true, Release);
            ext::netdev_rx_handler_unregister(lower);
            ext::zcnet_helper_timer_shutdown((*p).timer);
            ext::zcnet_helper_bh_disable();
            (*p).state().teardown(&(*p).ctx(dev));
            ext::zcnet_helper_bh_enable();
            ext::netdev_upper_dev_unlink(lower, dev);
            ext::unregister_netdevice_queue(dev, head);
        }
    }

    /// The netdevice notifier: the stacked device follows its lower device.
    ///
    /// # Safety
    ///
    /// The notifier chain calls it with RTNL held and a `netdev_notifier_info` in `ptr`.
    unsafe extern "C" fn notifier_cb(
        _nb: *mut bindings::notifier_block,
        event: ffi::c_ulong,
        ptr: *mut ffi::c_void,
    ) -> ffi::c_int {
        // SAFETY: Netdevice notifiers get a `netdev_notifier_info`; RTNL is held.
        let lower = unsafe { ext::zcnet_helper_notifier_dev(ptr) };
        // SAFETY: RTNL is held; the handler address identifies devices of kind `T`.
        let upper = unsafe {
            ext::zcnet_helper_rx_handler_data_if(lower, Self::rx_handler_cb as *mut ffi::c_void)
        }
        .cast::<bindings::net_device>();
        if upper.is_null() {
            return ext::NOTIFY_DONE as ffi::c_int;
        }
        let event = event as u32;
        // SAFETY: `upper` is a registered device of kind `T` stacked on `lower`.
        unsafe {
            if event == ext::netdev_cmd_NETDEV_UNREGISTER {
                // The lower device is going: the stacked one goes first.
                Self::dellink_cb(upper, core::ptr::null_mut());
            } else if event == ext::netdev_cmd_NETDEV_UP
                || event == ext::netdev_cmd_NETDEV_DOWN
                || event == ext::netdev_cmd_NETDEV_CHANGE
            {
                ext::netif_stacked_transfer_operstate(lower, upper);
            } else if event == ext::netdev_cmd_NETDEV_CHANGEADDR {
                ext::zcnet_helper_copy_hw_addr(upper, lower);
            }
        }
        ext::NOTIFY_DONE as ffi::c_int
    }

    /// The lower device's rx_handler: hands every frame to [`Stacked::rx`].
    ///
    /// # Safety
    ///
    /// The core calls it in softirq under RCU with a valid `*pskb` of the lower device,
    /// whose handler data is a registered device of kind `T`.
    unsafe extern "C" fn rx_handler_cb(
        pskb: *mut *mut bindings::sk_buff,
    ) -> ext::rx_handler_result {
        // SAFETY: The core hands the handler a valid skb pointer to update.
        let raw = unsafe { *pskb };
        // SAFETY: `raw` is valid.
        if unsafe { ext::zcnet_helper_skb_is_loopback(raw) } {
            return ext::rx_handler_result_RX_HANDLER_PASS;
        }
        // SAFETY: `raw` is valid here (it may not be after `skb_share_check`,
        // which can free it). `(*raw).dev` is the lower device, whose rx_handler_data is the
        // stacked device (set in newlink; RCU is held in the rx handler, and
        // dellink unregisters the handler before the device goes).
        let (upper, p) = unsafe {
            let lower = ext::zcnet_helper_skb_dev(raw);
            let upper = ext::zcnet_helper_rx_handler_data(lower).cast::<bindings::net_device>();
            (upper, priv_of::<T>(upper))
        };
        // SAFETY: `raw` is valid; the helper returns an skb we own, or null when
        // it freed the shared one.
        let Some(skb) = (unsafe { SkBuff::from_raw(ext::zcnet_helper_skb_share_check(raw)) })
        else {
            // SAFETY: The core reads `*pskb` only on PASS/ANOTHER/EXACT.
            unsafe { *pskb = core::ptr::null_mut() };
            return ext::rx_handler_result_RX_HANDLER_CONSUMED;
        };
        // SAFETY: See above: `upper` is valid for the duration of the handler.
        let dev = unsafe { NetDevice::from_raw(upper) };
        if !dev.is_up() {
            p.stats.rx_drop();
            drop(skb);
            return ext::rx_handler_result_RX_HANDLER_CONSUMED;
        }
        // SAFETY: `state` is set before the handler is registered and freed only
        // after the device is unregistered.
        let state = unsafe { p.state() };
        let ctx = p.ctx(upper);
        match state.rx(skb, dev, &ctx) {
            Rx::Pass(mut skb) => {
                p.stats.rx(u64::from(skb.len()));
                skb.set_dev(dev);
                // SAFETY: The core continues with `*pskb` on ANOTHER.
                unsafe { *pskb = skb.into_raw() };
                ext::rx_handler_result_RX_HANDLER_ANOTHER
            }
            Rx::Consumed => ext::rx_handler_result_RX_HANDLER_CONSUMED,
        }
    }

    /// The device timer: [`Stacked::on_timer`].
    ///
    /// # Safety
    ///
    /// The timer calls it in softirq with its device, which outlives the timer.
    unsafe extern "C" fn timer_cb(data: *mut ffi::c_void) {
        let dev = data.cast::<bindings::net_device>();
        // SAFETY: The timer's data is its device, which outlives the timer; the
        // state is set before the timer can be armed (by the rx path).
        unsafe {
            let p = priv_of::<T>(dev);
            let ctx = p.ctx(dev);
            p.state().on_timer(NetDevice::from_raw(dev), &ctx);
        }
    }

    /// `ndo_start_xmit`: [`Stacked::xmit`].
    ///
    /// # Safety
    ///
    /// The core calls it with a valid skb it hands over, for a registered device of kind `T`.
    unsafe extern "C" fn xmit_cb(
        skb: *mut bindings::sk_buff,
        dev: *mut bindings::net_device,
    ) -> ext::netdev_tx_t {
        // SAFETY: The core hands over a valid skb for a registered device of kind
        // `T`, whose `lower` and `state` are valid while it is registered.
        let (p, lower, skb) = unsafe {
            let p = priv_of::<T>(dev);
            (p, NetDevice::from_raw(p.lower), SkBuff::from_raw(skb))
        };
        let Some(skb) = skb else {
            return ext::netdev_tx_NETDEV_TX_OK;
        };
        // SAFETY: See above.
        let state = unsafe { p.state() };
        let ctx = p.ctx(dev);
        let r = state.xmit(skb, lower, &ctx);
        if r.dropped {
            p.stats.tx_drop();
        } else {
            p.stats.tx(r.frames, r.bytes);
        }
        ext::netdev_tx_NETDEV_TX_OK
    }

    /// `ndo_get_iflink`: the lower device's index.
    ///
    /// # Safety
    ///
    /// `dev` is a registered device of kind `T`.
    unsafe extern "C" fn iflink_cb(dev: *const bindings::net_device) -> ffi::c_int {
        // SAFETY: `dev` is a registered device of kind `T`, so `lower` is valid.
        unsafe { NetDevice::from_raw(priv_of::<T>(dev.cast_mut()).lower).ifindex() }
    }

    /// `ndo_get_stats64`: the standard statistics.
    ///
    /// # Safety
    ///
    /// `dev` is a device of kind `T`; `s` is valid for writes.
    unsafe extern "C" fn stats64_cb(
        dev: *mut bindings::net_device,
        s: *mut ext::rtnl_link_stats64,
    ) {
        // SAFETY: `dev` is of kind `T`; `s` is valid for writes.
        unsafe { priv_of::<T>(dev).stats.fill(&mut *s) };
    }

    /// `ethtool -i`.
    ///
    /// # Safety
    ///
    /// `info` is valid for writes.
    unsafe extern "C" fn drvinfo_cb(
        _dev: *mut bindings::net_device,
        info: *mut bindings::ethtool_drvinfo,
    ) {
        // SAFETY: `info` is valid for writes for the call.
        let info = unsafe { &mut *info };
        copy_cstr(&mut info.driver, T::DRIVER);
        copy_cstr(&mut info.version, T::VERSION);
    }

    /// `ethtool -S`: how many statistics.
    ///
    /// # Safety
    ///
    /// None beyond the C contract.
    unsafe extern "C" fn sset_count_cb(
        _dev: *mut bindings::net_device,
        sset: ffi::c_int,
    ) -> ffi::c_int {
        if sset as u32 == bindings::ethtool_stringset_ETH_SS_STATS {
            T::STATS.len() as ffi::c_int
        } else {
            -(bindings::EOPNOTSUPP as ffi::c_int)
        }
    }

    /// `ethtool -S`: the statistics' names.
    ///
    /// # Safety
    ///
    /// `data` holds `get_sset_count * ETH_GSTRING_LEN` bytes.
    unsafe extern "C" fn strings_cb(_dev: *mut bindings::net_device, sset: u32, data: *mut u8) {
        if sset != bindings::ethtool_stringset_ETH_SS_STATS {
            return;
        }
        // SAFETY: ethtool gives a buffer of `get_sset_count * ETH_GSTRING_LEN` bytes.
        unsafe { super::netdev::ethtool_strings(data, T::STATS) };
    }

    /// `ethtool -S`: the statistics' values.
    ///
    /// # Safety
    ///
    /// `data` holds `get_sset_count` u64s; `dev` is a registered device of kind `T`.
    unsafe extern "C" fn ethtool_stats_cb(
        dev: *mut bindings::net_device,
        _stats: *mut bindings::ethtool_stats,
        data: *mut u64,
    ) {
        // SAFETY: ethtool gives `get_sset_count` u64s; `dev` is of kind `T`.
        let (out, p) = unsafe {
            (
                core::slice::from_raw_parts_mut(data, T::STATS.len()),
                priv_of::<T>(dev),
            )
        };
        // SAFETY: `state` is valid while the device is registered.
        unsafe { p.state().stats(out) };
    }

    /// `ethtool -c`.
    ///
    /// # Safety
    ///
    /// ethtool calls it for a registered device of kind `T` with a valid `ec`.
    unsafe extern "C" fn get_coalesce_cb(
        dev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> ffi::c_int {
        // SAFETY: ethtool calls this for a registered device with a valid `ec`.
        let (state, ec) = unsafe { (state_of::<T>(dev), &mut *ec) };
        ec.rx_coalesce_usecs = state.rx_usecs();
        0
    }

    /// `ethtool -C`.
    ///
    /// # Safety
    ///
    /// ethtool calls it for a registered device of kind `T` with a valid `ec`, RTNL held.
    unsafe extern "C" fn set_coalesce_cb(
        dev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> ffi::c_int {
        // SAFETY: As in `get_coalesce_cb`.
        let (state, ec) = unsafe { (state_of::<T>(dev), &*ec) };
        match state.set_rx_usecs(ec.rx_coalesce_usecs) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// `ndo_siocdevprivate`: [`Stacked::private_ioctl`].
    ///
    /// # Safety
    ///
    /// The ioctl core calls it for a registered device of kind `T`, RTNL held, with the
    /// user pointer of the request.
    unsafe extern "C" fn siocdevprivate_cb(
        dev: *mut bindings::net_device,
        _ifr: *mut bindings::ifreq,
        data: *mut ffi::c_void,
        cmd: ffi::c_int,
    ) -> ffi::c_int {
        // SAFETY: The ioctl core calls this for a registered device, RTNL held,
        // so `lower` stays valid for the call.
        let (state, p, d) = unsafe {
            (
                state_of::<T>(dev),
                priv_of::<T>(dev),
                NetDevice::from_raw(dev),
            )
        };
        let ctx = p.ctx(dev);
        // SIOCDEVPRIVATE (include/uapi/linux/sockios.h).
        let sub = (cmd as u32).wrapping_sub(0x89f0);
        match state.private_ioctl(d, &ctx, sub, UserPtr::from_ptr(data)) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// Reading a file of the kind's sysfs group.
    ///
    /// # Safety
    ///
    /// sysfs calls it for a registered device of kind `T` with a `PAGE_SIZE` buffer.
    unsafe extern "C" fn sysfs_show_cb(
        dev: *mut bindings::net_device,
        idx: ffi::c_uint,
        buf: *mut ffi::c_char,
    ) -> isize {
        // SAFETY: sysfs calls this for a registered device of kind `T` (the group
        // goes before the device is freed, its lower device after it) with a
        // PAGE_SIZE buffer.
        let (p, state, out) = unsafe {
            (
                priv_of::<T>(dev),
                state_of::<T>(dev),
                core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE),
            )
        };
        let mut tb = TextBuf::new(out);
        match state.sysfs_show(idx as usize, &mut tb, &p.ctx(dev)) {
            Ok(()) => tb.len() as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// Writing a file of the kind's sysfs group.
    ///
    /// # Safety
    ///
    /// sysfs calls it for a registered device of kind `T` with `len` bytes at `buf`.
    unsafe extern "C" fn sysfs_store_cb(
        dev: *mut bindings::net_device,
        idx: ffi::c_uint,
        buf: *const ffi::c_char,
        len: usize,
    ) -> isize {
        // SAFETY: As in `sysfs_show_cb`; `buf` holds `len` bytes.
        let (p, state, input) = unsafe {
            (
                priv_of::<T>(dev),
                state_of::<T>(dev),
                core::slice::from_raw_parts(buf.cast::<u8>(), len),
            )
        };
        match state.sysfs_store(idx as usize, input, &p.ctx(dev)) {
            Ok(()) => len as isize,
            Err(e) => e.to_errno() as isize,
        }
    }
}
