// SPDX-License-Identifier: GPL-2.0

//! Settings: one table of ranges behind sysfs, `ip link` and `ethtool -C`.

/// sysfs attributes (`/sys/class/net/DEV/zcfrag/`), in `SYSFS` order.
use crate::SLOTS;
use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

pub(crate) mod attr {
    pub(crate) const SLOTS: usize = 0;
    pub(crate) const TIMEOUT_US: usize = 1;
    pub(crate) const ADMISSION: usize = 2;
    pub(crate) const IMPLICIT: usize = 3;
    pub(crate) const GRANT_MS: usize = 4;
    pub(crate) const ADMISSIONS: usize = 5;
    /// The wire's MTU: the lower device's on a stacked device (read only
    /// here), a setting of the native front end's.
    pub(crate) const WIRE_MTU: usize = 6;
}
pub(crate) const SYSFS: [(&CStr, bool); 7] = [
    (c"slots", true),
    (c"timeout_us", true),
    (c"admission", true),
    (c"implicit_admission", true),
    (c"grant_timeout_ms", true),
    (c"admissions", false),
    (c"wire_mtu", true),
];

/// Parses a decimal sysfs value in `lo..=hi`.
pub(crate) fn parse_u32(input: &[u8], lo: u32, hi: u32) -> Result<u32> {
    let t = core::str::from_utf8(input).map_err(|_| EINVAL)?.trim();
    let v: u32 = t.parse().map_err(|_| EINVAL)?;
    if v < lo || v > hi {
        return Err(EINVAL);
    }
    Ok(v)
}

/// Settings, read by the data path without a lock. Each is a sysfs attribute
/// (index `attr::*`) and a link attribute (`IFLA_ZCFRAG_*` = index + 1,
/// `include/uapi/zcnet/zcfrag.h`), with the range of [`KNOBS`].
pub(crate) struct Config {
    pub(crate) slots: Atomic<u32>,
    pub(crate) timeout_us: Atomic<u32>,
    pub(crate) required: Atomic<u32>,
    pub(crate) implicit: Atomic<u32>,
    pub(crate) grant_ms: Atomic<u32>,
}

/// The settings' ranges, and what `ip link` prints when a value is outside.
pub(crate) const KNOBS: [(u32, u32, &CStr); 5] = [
    (1, SLOTS as u32, c"zcfrag: slots must be 1..32"),
    // 100 us to 1 s: a train of one page over MTU 576 takes 8 frames.
    (100, 1_000_000, c"zcfrag: timeout must be 100..1000000 us"),
    (0, 1, c"zcfrag: admission must be open (0) or required (1)"),
    (0, 1, c"zcfrag: implicit must be on (1) or off (0)"),
    (10, 600_000, c"zcfrag: grant_timeout must be 10..600000 ms"),
];
const _: () = assert!(SLOTS == 32);

impl Config {
    pub(crate) fn cell(&self, knob: usize) -> Result<&Atomic<u32>> {
        Ok(match knob {
            attr::SLOTS => &self.slots,
            attr::TIMEOUT_US => &self.timeout_us,
            attr::ADMISSION => &self.required,
            attr::IMPLICIT => &self.implicit,
            attr::GRANT_MS => &self.grant_ms,
            _ => return Err(EINVAL),
        })
    }

    pub(crate) fn get(&self, knob: usize) -> u32 {
        self.cell(knob).map_or(0, |c| c.load(Relaxed))
    }

    /// Whether `v` is in the range of `knob`.
    pub(crate) fn valid(knob: usize, v: u32) -> bool {
        KNOBS
            .get(knob)
            .is_some_and(|&(lo, hi, _)| (lo..=hi).contains(&v))
    }

    pub(crate) fn set(&self, knob: usize, v: u32) -> Result {
        if !Self::valid(knob, v) {
            return Err(EINVAL);
        }
        self.cell(knob)?.store(v, Relaxed);
        Ok(())
    }
}
