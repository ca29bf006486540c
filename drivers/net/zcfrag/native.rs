// SPDX-License-Identifier: GPL-2.0

//! The native front end: zcfrag drives a virtio-net device itself
//! (`rust/zcnet/vnet.rs`) instead of stacking on `virtio_net`.
//!
//! Bind a device with the module parameter `devices` (its virtioN name or
//! MAC address), then move it from `virtio_net` to this driver:
//!
//! ```text
//! echo virtio1 > /sys/module/zcfrag/parameters/devices
//! echo virtio1 > /sys/bus/virtio/drivers/virtio_net/unbind
//! echo virtio1 > /sys/bus/virtio/drivers/zcfrag/bind
//! ```
//!
//! This increment carries ordinary frames: each receive chain is a header
//! buffer ([`vnet::RX_HDR`] bytes, the virtio-net header and the frame's
//! first bytes, copied into the skb's head) and a page (the rest of the
//! frame, handed to the stack as the skb's fragment, no copy); each frame
//! sent is a scatter-gather chain of its head and fragments, batched under
//! one kick while the stack has more (`xmit_more`) and bounded by byte queue
//! limits. Speculative receive chains come next (issue 10).

use crate::zcnet::netdev::DevStats;
use crate::zcnet::page::{PageRing, RxPage};
use crate::zcnet::skbuff::SkBuff;
use crate::zcnet::vnet::{self, RxRing, TxFull, TxRing, Vnet};
use kernel::{new_spinlock, prelude::*, sync::SpinLock};

/// Receive pages kept for reuse.
const PAGE_RING: usize = 256;
/// Descriptors a frame may take (its head and every fragment, and the
/// virtio-net header): the queue stops while fewer are free.
const TX_STOP_FREE: usize = 2 + 17;

/// One bound device.
#[pin_data]
pub(crate) struct Native {
    /// Pages for receive chains, reused once the stack lets go of them.
    #[pin]
    pages: SpinLock<PageRing<PAGE_RING>>,
    stats: DevStats,
}

impl Native {
    /// Posts a page-backed chain in every free slot of the receive ring.
    fn refill(&self, vn: &Vnet, rx: &mut RxRing) -> usize {
        let mut pages = self.pages.lock();
        let n = rx.fill(&mut || pages.get().map(|(p, _)| p));
        drop(pages);
        if n > 0 {
            vn.kick_rx();
        }
        n
    }

    /// Frees what the device has sent and counts it.
    fn reap(&self, vn: &Vnet, tx: &mut TxRing) {
        let (mut frames, mut bytes) = (0u32, 0u32);
        while let Some((skb, len)) = tx.reap() {
            frames += 1;
            bytes = bytes.wrapping_add(len);
            skb.consume();
        }
        if frames > 0 {
            vn.tx_completed(frames, bytes);
            self.stats.tx(u64::from(frames), u64::from(bytes));
            if vn.tx_free() >= TX_STOP_FREE {
                vn.tx_wake();
            }
        }
    }
}

impl vnet::Driver for Native {
    const NAME: &'static CStr = c"zcfrag";

    fn new(_vn: &Vnet) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            pages <- new_spinlock!(PageRing::new()),
            stats: DevStats::new(),
        })
    }

    fn open(&self, vn: &Vnet, rx: &mut RxRing) -> Result {
        self.refill(vn, rx);
        Ok(())
    }

    fn xmit(
        &self,
        vn: &Vnet,
        tx: &mut TxRing,
        skb: SkBuff,
        more: bool,
    ) -> core::result::Result<(), SkBuff> {
        self.reap(vn, tx);
        let len = skb.len();
        match tx.post(skb) {
            Ok(()) => {}
            Err(TxFull::Busy(skb)) => {
                vn.tx_stop();
                vn.kick_tx();
                return Err(skb);
            }
            Err(TxFull::Failed(skb)) => {
                self.stats.tx_drop();
                drop(skb);
                return Ok(());
            }
        }
        let mut kick = vn.tx_sent(len, more);
        if vn.tx_free() < TX_STOP_FREE {
            vn.tx_stop();
            kick = true;
        }
        if kick {
            vn.kick_tx();
        }
        Ok(())
    }

    fn tx_done(&self, vn: &Vnet, tx: &mut TxRing) {
        self.reap(vn, tx);
    }

    fn poll(&self, vn: &Vnet, rx: &mut RxRing, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            let Some(mut f) = rx.next() else {
                break;
            };
            done += 1;
            let len = f.len();
            let rest = len.saturating_sub(vnet::RX_HDR);
            let page: Option<RxPage> = if rest > 0 { f.take_page() } else { None };
            let skb = match f.head().get(vnet::HDR_LEN..) {
                Some(head) => vn.rx_skb(head, page, rest),
                None => None,
            };
            match skb {
                Some(skb) => {
                    self.stats.rx((len - vnet::HDR_LEN) as u64);
                    vn.receive(skb);
                }
                None => self.stats.rx_drop(),
            }
        }
        self.refill(vn, rx);
        done
    }

    fn stats(&self) -> &DevStats {
        &self.stats
    }
}
