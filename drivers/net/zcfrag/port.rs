// SPDX-License-Identifier: GPL-2.0

//! What the engine asks of a front end: the device the stack sees, the wire
//! below it, and a timer. The stacked front end is a [`Ctx`] of
//! `rust/zcnet/stacked.rs` (the wire is the lower device); the native front
//! end (`native.rs`) is its own wire, sending on its transmit ring.

use crate::zcnet::netdev::NetDevice;
use crate::zcnet::page::RxPage;
use crate::zcnet::skbuff::{SkBuff, SkbChain};
use crate::zcnet::stacked::Ctx;

/// A front end, lent to the engine for one callback.
pub(crate) trait Port {
    /// The zcfrag device: what the stack sees, what received packets come
    /// up as.
    fn dev(&self) -> &NetDevice;

    /// The device frames leave and arrive on: its namespace picks IP IDs,
    /// its MAC address is the admission frames' source, its headroom and
    /// scatter-gather decide how fragments are built.
    fn wire(&self) -> &NetDevice;

    /// The wire's MTU: what one IPv4 fragment may carry, headers included.
    fn wire_mtu(&self) -> u32;

    /// Sends a frame built for [`Port::wire`]: whether the wire took it (a
    /// frame it refused is gone; the caller counts it).
    fn send(&self, skb: SkBuff) -> bool;

    /// Hands a packet up the stack of [`Port::dev`], counted there. Call it
    /// without holding a lock the stack may need (it may transmit on this
    /// device).
    fn receive(&self, skb: SkBuff);

    /// [`Port::receive`] for each packet of `chain`, in order.
    fn receive_all(&self, chain: &mut SkbChain) {
        while let Some(skb) = chain.pop() {
            self.receive(skb);
        }
    }

    /// Arms the engine's timer to fire in `us` microseconds unless it is
    /// armed already; nothing once the device is going.
    fn arm_timer(&self, us: u64);

    /// True once the device is being deleted: start nothing new.
    fn dying(&self) -> bool;

    /// Whether the frame being handled is one the device wrote where a
    /// speculative receive chain wanted it (its payload fragment then lies
    /// in a page of the wire's, at its place). Only then may the engine
    /// take that page for the train, or leave the payload where it is:
    /// any other skb's pages are somebody else's.
    fn placed(&self) -> bool {
        false
    }

    /// Whether the wire may still write into `page` (a receive chain of the
    /// native front end points into it): the engine neither reuses it for
    /// another train nor hands it up while it does.
    fn holds(&self, _page: &RxPage) -> bool {
        false
    }

    /// The engine takes `page` for good: it copies a fragment into it
    /// itself, or hands it up whole (it may then be mapped into a process).
    /// The wire must never write into it again: no receive chain of the
    /// native front end is posted into it any more, whatever order its
    /// device uses the chains in.
    fn owned(&self, _page: &RxPage) {}
}

impl Port for Ctx<'_> {
    fn dev(&self) -> &NetDevice {
        Ctx::dev(self)
    }

    fn wire(&self) -> &NetDevice {
        self.lower()
    }

    fn wire_mtu(&self) -> u32 {
        self.lower().mtu()
    }

    fn send(&self, skb: SkBuff) -> bool {
        skb.xmit(self.lower())
    }

    fn receive(&self, skb: SkBuff) {
        Ctx::receive(self, skb)
    }

    fn arm_timer(&self, us: u64) {
        Ctx::arm_timer(self, us)
    }

    fn dying(&self) -> bool {
        Ctx::dying(self)
    }
}
