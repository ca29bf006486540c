// SPDX-License-Identifier: GPL-2.0

//! A queue allocated once, at start-up: the send queue, the inbound Read
//! queue, the receive queue, the outbound Reads, the completions held back
//! and the completion queue. Pushing allocates nothing and taking the
//! oldest moves nothing (a `KVec` whose head is removed moves every later
//! element, up to the CQ's 8 KiB on each completion polled).

use kernel::{alloc::flags::GFP_KERNEL, prelude::*};

/// A ring of `T` with room for the depth given to [`Fifo::alloc`]; none
/// before.
pub(crate) struct Fifo<T> {
    buf: KVec<T>,
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Fifo<T> {
    pub(crate) const fn new() -> Self {
        Self {
            buf: KVec::new(),
            head: 0,
            len: 0,
        }
    }

    /// Room for `depth` elements, empty (sleeps: start-up only).
    pub(crate) fn alloc(&mut self, depth: usize) -> Result {
        self.buf = KVec::from_elem(T::default(), depth, GFP_KERNEL)?;
        self.head = 0;
        self.len = 0;
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn depth(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.buf.len()
    }

    /// The slot of the `i`-th oldest element (`i < len`).
    fn slot(&self, i: usize) -> usize {
        // `head < depth` and `i < len <= depth`: no overflow.
        let at = self.head + i;
        if at >= self.buf.len() {
            at - self.buf.len()
        } else {
            at
        }
    }

    /// Appends `x`; `false` when full (nothing changes).
    pub(crate) fn push(&mut self, x: T) -> bool {
        if self.is_full() {
            return false;
        }
        let at = self.slot(self.len);
        match self.buf.get_mut(at) {
            Some(s) => {
                *s = x;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// The `i`-th oldest element.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        self.buf.get(self.slot(i))
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        let at = self.slot(i);
        self.buf.get_mut(at)
    }

    pub(crate) fn front(&self) -> Option<&T> {
        self.get(0)
    }

    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.get_mut(0)
    }

    /// Takes the oldest element.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let x = *self.front()?;
        self.skip();
        Some(x)
    }

    /// Drops the oldest, if any, without copying it out (a receive is
    /// 136 bytes).
    pub(crate) fn skip(&mut self) {
        if self.len == 0 {
            return;
        }
        self.head = self.slot(1);
        self.len -= 1;
        if self.len == 0 {
            self.head = 0;
        }
    }

    /// Empties it, keeping the room.
    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// The elements, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).filter_map(move |i| self.get(i))
    }

    /// Calls `f` on each element, oldest first.
    pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(&mut T)) {
        for i in 0..self.len {
            if let Some(x) = self.get_mut(i) {
                f(x);
            }
        }
    }
}
