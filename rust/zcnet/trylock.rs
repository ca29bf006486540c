// SPDX-License-Identifier: GPL-2.0

//! A lock that is only ever tried, never waited for: usable in any context
//! (process context, softirq), held across sleeping calls in process
//! context, and never a deadlock.
//!
//! zcddp's data path is reached with the socket locked, from a verb or the
//! work item (process context, `lock_sock`), or from TCP's data_ready hook
//! in softirq (the socket's spinlock held, no owner). The socket lock
//! already keeps those apart; this lock only catches the one case it does
//! not cover, a holder that released the socket lock inside (a completion
//! wait), and a caller that finds it taken backs off instead of waiting. A
//! kernel mutex may not be tried in softirq (`mutex_trylock()`'s comment),
//! and a spinlock may not be held across the sleeping allocations of
//! process context: hence this.

use kernel::sync::atomic::{Acquire, Atomic, Relaxed, Release};

/// `T`, behind a flag that [`TryLock::try_lock`] takes.
///
/// # Invariants
///
/// `data` is accessed only through a [`TryGuard`], and at most one guard
/// exists at a time: the one whose `try_lock` turned `locked` from false to
/// true, until it drops.
pub struct TryLock<T> {
    locked: Atomic<bool>,
    data: core::cell::UnsafeCell<T>,
}

// SAFETY: The guard gives one holder at a time access to `T`, which may
// move between threads (`T: Send`).
unsafe impl<T: Send> Send for TryLock<T> {}
// SAFETY: As above: shared references to the lock hand `&mut T` to one
// holder at a time, so `T: Send` suffices.
unsafe impl<T: Send> Sync for TryLock<T> {}

impl<T> TryLock<T> {
    /// `data`, unlocked.
    pub fn new(data: T) -> Self {
        Self {
            locked: Atomic::new(false),
            data: core::cell::UnsafeCell::new(data),
        }
    }

    /// The data, if nobody holds it now.
    pub fn try_lock(&self) -> Option<TryGuard<'_, T>> {
        // Acquire: what the previous holder wrote is seen.
        self.locked.cmpxchg(false, true, Acquire).ok()?;
        // INVARIANT: The flag went from false to true here: this is the
        // only guard.
        Some(TryGuard { lock: self })
    }

    /// Whether somebody holds it (a hint: it may change at once).
    pub fn is_locked(&self) -> bool {
        self.locked.load(Relaxed)
    }
}

/// The holder's access to a [`TryLock`]'s data; dropping it lets go.
///
/// # Invariants
///
/// `lock.locked` is true and this is its only guard.
pub struct TryGuard<'a, T> {
    lock: &'a TryLock<T>,
}

impl<T> core::ops::Deref for TryGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: By the type invariant this guard is the only access.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> core::ops::DerefMut for TryGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: By the type invariant this guard is the only access, and
        // `&mut self` makes this borrow unique.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for TryGuard<'_, T> {
    fn drop(&mut self) {
        // Release: the next holder sees what this one wrote.
        self.lock.locked.store(false, Release);
    }
}
