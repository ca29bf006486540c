// SPDX-License-Identifier: GPL-2.0

//! Named event counters.
//!
//! A [`Counters`] holds one 64-bit counter for each name of a static table. The
//! same table gives `ethtool -S` its strings and values, sysfs and debugfs their
//! text, so one list of names is the single source of truth for a module's
//! statistics. Counters are updated with relaxed atomics: they may be bumped
//! from any context, including hard and soft interrupts.

use core::fmt;

/// Declares a module's counter table once, as `tls_proc.c`'s
/// `SNMP_MIB_ITEM` list does: an index constant per counter in module `$m`,
/// their number `$count` and their names `$names` (of type `$t`), one line
/// per counter, in one order.
#[allow(unused_macros)]
macro_rules! counter_table {
    (mod $m:ident; count $count:ident; names $names:ident: $t:ty; $($idx:ident = $name:expr,)*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(usize)]
        enum Idx { $($idx,)* Count }

        /// Counter indices, in table order.
        #[allow(dead_code)]
        pub(crate) mod $m {
            $(pub(crate) const $idx: usize = super::Idx::$idx as usize;)*
        }

        /// How many counters the table has.
        pub(crate) const $count: usize = Idx::Count as usize;

        /// The counters' names, in index order.
        pub(crate) static $names: [$t; $count] = [$($name,)*];
    };
}
#[allow(unused_imports)]
pub(crate) use counter_table;
use kernel::sync::atomic::{Atomic, Relaxed};

/// Longest counter name: `ETH_GSTRING_LEN` (32) less the terminating NUL.
pub const MAX_NAME_LEN: usize = 31;

/// A set of named counters; `N` is the length of the name table.
pub struct Counters<const N: usize> {
    names: &'static [&'static str; N],
    values: [Atomic<u64>; N],
}

impl<const N: usize> Counters<N> {
    /// Creates counters for `names`, all zero.
    ///
    /// Names longer than [`MAX_NAME_LEN`] fail the build when `names` is a
    /// constant.
    pub const fn new(names: &'static [&'static str; N]) -> Self {
        let mut i = 0;
        while i < N {
            assert!(names[i].len() <= MAX_NAME_LEN, "counter name too long");
            i += 1;
        }
        Self {
            names,
            values: [const { Atomic::new(0u64) }; N],
        }
    }

    /// Adds `v` to counter `i`. An index out of range is ignored (and would be a
    /// bug in the caller, caught by the tests through the named wrappers).
    #[inline]
    pub fn add(&self, i: usize, v: u64) {
        if let Some(c) = self.values.get(i) {
            c.add(v, Relaxed);
        }
    }

    /// Sets counter `i` to `v` (for gauges, such as slots in use).
    #[inline]
    pub fn set(&self, i: usize, v: u64) {
        if let Some(c) = self.values.get(i) {
            c.store(v, Relaxed);
        }
    }

    /// Adds one to counter `i`.
    #[inline]
    pub fn inc(&self, i: usize) {
        self.add(i, 1);
    }

    /// Reads counter `i` (zero when `i` is out of range).
    pub fn get(&self, i: usize) -> u64 {
        self.values.get(i).map_or(0, |c| c.load(Relaxed))
    }

    /// The number of counters.
    pub const fn len(&self) -> usize {
        N
    }

    /// The counter names, in order.
    pub fn names(&self) -> &'static [&'static str; N] {
        self.names
    }

    /// Copies the values into `out` (as `ethtool_ops.get_ethtool_stats` wants);
    /// returns how many were copied.
    pub fn snapshot(&self, out: &mut [u64]) -> usize {
        let n = out.len().min(N);
        for (o, c) in out.iter_mut().zip(self.values.iter()).take(n) {
            *o = c.load(Relaxed);
        }
        n
    }
}

/// One `name value` line per counter, the format of the debugfs and sysfs
/// files: `value(i)` is counter `i`'s value.
pub fn write_lines(
    f: &mut fmt::Formatter<'_>,
    names: &[&str],
    value: impl Fn(usize) -> u64,
) -> fmt::Result {
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            f.write_str("\n")?;
        }
        write!(f, "{} {}", name, value(i))?;
    }
    Ok(())
}

/// One `name value` line per counter ([`write_lines`]).
impl<const N: usize> fmt::Debug for Counters<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_lines(f, self.names, |i| self.get(i))
    }
}
