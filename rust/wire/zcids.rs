// SPDX-License-Identifier: GPL-2.0

//! Zero-copy transmit notifications: which `MSG_ZEROCOPY` calls the kernel
//! is done with.
//!
//! Each `MSG_ZEROCOPY` send on a socket that takes bytes consumes the next
//! notification id of the socket (a `u32` that wraps: `sk_zckey`). When
//! every skb holding pages of a range of ids has been freed (TCP had them
//! acknowledged, or dropped them), the kernel queues a notification for the
//! range on the socket's error queue (`ee_info ..= ee_data`); ranges may
//! come out of order, and the kernel merges adjacent ones.
//!
//! [`ZcIds`] follows the ids in flight in a fixed window of [`WINDOW`] ids
//! from the oldest not yet done ([`ZcIds::base`]): a bitmap of the ids done
//! ahead of it and each id's byte count. A sender asks [`ZcIds::room`]
//! before a call (no more than [`WINDOW`] ids in flight) and a completion
//! that needed every id before `mark` may be delivered once
//! [`ZcIds::done_before`] says so. Ids outside the window (not ours) are
//! ignored. No allocation, no panic.

/// Ids in flight at most.
pub const WINDOW: usize = 512;

/// The ids in flight and those done (see the module documentation).
#[derive(Clone)]
pub struct ZcIds {
    /// Every id before it is done (or was never ours).
    base: u32,
    /// The next id the socket gives (ids `base..next` are in flight or done
    /// out of order).
    next: u32,
    /// Set once the first id is seen: `base` and `next` start there.
    started: bool,
    /// Done ids, bit `id % WINDOW`.
    done: [u64; WINDOW / 64],
    /// Bytes each id carried, at `id % WINDOW`.
    bytes: [u32; WINDOW],
}

impl Default for ZcIds {
    fn default() -> Self {
        Self::new()
    }
}

impl ZcIds {
    /// Nothing in flight.
    pub const fn new() -> Self {
        Self {
            base: 0,
            next: 0,
            started: false,
            done: [0; WINDOW / 64],
            bytes: [0; WINDOW],
        }
    }

    /// Ids in flight (consumed, not all done).
    pub const fn in_flight(&self) -> u32 {
        self.next.wrapping_sub(self.base)
    }

    /// Whether another id fits the window.
    pub const fn room(&self) -> bool {
        (self.in_flight() as usize) < WINDOW
    }

    /// The oldest id not done.
    pub const fn base(&self) -> u32 {
        self.base
    }

    /// The mark of everything consumed so far: a completion that needs
    /// every id consumed until now records this.
    pub const fn mark(&self) -> u32 {
        self.next
    }

    /// Whether every id before `mark` (an earlier [`ZcIds::mark`]) is done.
    pub const fn done_before(&self, mark: u32) -> bool {
        (mark.wrapping_sub(self.base) as i32) <= 0
    }

    fn bit(&self, id: u32) -> bool {
        let i = id as usize % WINDOW;
        self.done
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set_bit(&mut self, id: u32, on: bool) {
        let i = id as usize % WINDOW;
        if let Some(w) = self.done.get_mut(i / 64) {
            if on {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }

    fn set_bytes(&mut self, id: u32, n: u32) {
        if let Some(b) = self.bytes.get_mut(id as usize % WINDOW) {
            *b = n;
        }
    }

    fn bytes_of(&self, id: u32) -> u32 {
        self.bytes.get(id as usize % WINDOW).copied().unwrap_or(0)
    }

    /// A call consumed id `id` for `bytes` bytes. Normally `id` is the next
    /// one; ids skipped (consumed by someone else) count as done. False
    /// when it does not fit the window (the caller asked [`ZcIds::room`]):
    /// then it is not followed.
    pub fn sent(&mut self, id: u32, bytes: u32) -> bool {
        if !self.started || self.in_flight() == 0 && id != self.next {
            self.started = true;
            self.base = id;
            self.next = id;
        }
        let ahead = id.wrapping_sub(self.next) as usize;
        if ahead >= WINDOW || self.in_flight() as usize + ahead >= WINDOW {
            return false;
        }
        while self.next != id {
            let skipped = self.next;
            self.set_bytes(skipped, 0);
            self.set_bit(skipped, true);
            self.next = self.next.wrapping_add(1);
        }
        self.set_bytes(id, bytes);
        self.set_bit(id, false);
        self.next = id.wrapping_add(1);
        self.advance();
        true
    }

    /// The kernel reported ids `lo ..= hi` done: the bytes those ids carried
    /// that were not done already (ids outside the window are ignored).
    pub fn complete(&mut self, lo: u32, hi: u32) -> u64 {
        let mut got = 0u64;
        let n = u64::from(hi.wrapping_sub(lo)) + 1;
        let mut id = lo;
        // Only ids in flight count (at most WINDOW of them).
        for _ in 0..n.min(2 * WINDOW as u64) {
            // In flight: base <= id < next.
            if (id.wrapping_sub(self.base) as usize) < self.in_flight() as usize && !self.bit(id) {
                self.set_bit(id, true);
                got += u64::from(self.bytes_of(id));
            }
            id = id.wrapping_add(1);
        }
        self.advance();
        got
    }

    fn advance(&mut self) {
        while self.base != self.next && self.bit(self.base) {
            self.set_bit(self.base, false);
            self.base = self.base.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order() {
        let mut z = ZcIds::new();
        assert!(z.done_before(z.mark()));
        assert!(z.sent(0, 100));
        assert!(z.sent(1, 200));
        let m = z.mark();
        assert!(!z.done_before(m));
        assert_eq!(z.complete(0, 0), 100);
        assert!(!z.done_before(m));
        assert_eq!(z.complete(1, 1), 200);
        assert!(z.done_before(m));
        assert_eq!(z.in_flight(), 0);
    }

    #[test]
    fn out_of_order_and_merged() {
        let mut z = ZcIds::new();
        for i in 0..10 {
            assert!(z.sent(i, 10));
        }
        let m4 = 5;
        assert_eq!(z.complete(5, 9), 50);
        assert!(!z.done_before(m4));
        assert_eq!(z.base(), 0);
        assert_eq!(z.complete(0, 3), 40);
        assert!(!z.done_before(m4));
        // Reported twice: counted once.
        assert_eq!(z.complete(2, 4), 10);
        assert!(z.done_before(z.mark()));
        assert_eq!(z.in_flight(), 0);
    }

    #[test]
    fn wraps_and_starts_anywhere() {
        let mut z = ZcIds::new();
        let s = u32::MAX - 2;
        for k in 0..6u32 {
            assert!(z.sent(s.wrapping_add(k), 1));
        }
        let m = z.mark();
        assert_eq!(m, 3);
        assert_eq!(z.complete(1, 2), 2);
        assert_eq!(z.complete(s, 0), 4);
        assert!(z.done_before(m));
    }

    #[test]
    fn window_bounds() {
        let mut z = ZcIds::new();
        for i in 0..WINDOW as u32 {
            assert!(z.room());
            assert!(z.sent(i, 1));
        }
        assert!(!z.room());
        assert!(!z.sent(WINDOW as u32, 1));
        // Foreign ids are ignored.
        assert_eq!(z.complete(100_000, 100_010), 0);
        assert_eq!(z.complete(0, WINDOW as u32 - 1), WINDOW as u64);
        assert!(z.room());
        assert!(z.done_before(z.mark()));
    }

    #[test]
    fn skipped_ids_count_as_done() {
        let mut z = ZcIds::new();
        assert!(z.sent(7, 5));
        assert!(z.sent(9, 6));
        let m = z.mark();
        assert_eq!(z.complete(9, 9), 6);
        assert!(!z.done_before(m));
        assert_eq!(z.complete(7, 7), 5);
        assert!(z.done_before(m));
    }
}
