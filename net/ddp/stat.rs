// SPDX-License-Identifier: GPL-2.0

//! `/proc/net/zcddp_stat`: each counter declared once below, its index
//! (`s::NAME`) and its name on one line, as `tls_proc.c`'s `SNMP_MIB_ITEM`
//! table does. Per network namespace, counted per CPU.

use crate::zcnet::netstat::{Net, NetStat};

/// Adds `delta` to counter `idx` of `net` (the module registered the table
/// before any socket could count).
pub(crate) fn add(net: Net<'_>, idx: usize, delta: i64) {
    NetStat::<NSTATS>::add(net, idx, delta);
}

/// The data path's counts, added when it is let go (`QpGuard`).
pub(crate) type Batch = crate::zcnet::netstat::Batch<NSTATS>;

/// Adds the counts of `b` to `net` and empties it.
pub(crate) fn add_batch(net: Net<'_>, b: &mut Batch) {
    NetStat::<NSTATS>::add_batch(net, b);
}

crate::zcnet::counters::counter_table! {
    mod s; count NSTATS; names NAMES: &kernel::str::CStr;
    CURR_SOCKETS = c"ZcddpCurrSockets",
    STARTUP_OK = c"ZcddpStartupOk",
    STARTUP_REFUSED = c"ZcddpStartupRefused",
    STARTUP_REJECTED = c"ZcddpStartupRejected",
    STARTUP_BAD_FRAME = c"ZcddpStartupBadFrame",
    STARTUP_TIMEOUT = c"ZcddpStartupTimeout",
    STARTUP_FAILED = c"ZcddpStartupFailed",
    RTR_SENT = c"ZcddpRtrSent",
    RTR_RECEIVED = c"ZcddpRtrReceived",
    FPDUS_SENT = c"ZcddpFpdusSent",
    FPDUS_RECEIVED = c"ZcddpFpdusReceived",
    RX_FPDUS_SOFTIRQ = c"ZcddpRxFpdusSoftirq",
    CRC_ERRORS = c"ZcddpCrcErrors",
    MARKER_ERRORS = c"ZcddpMarkerErrors",
    BYTES_PLACED = c"ZcddpBytesPlaced",
    BYTES_PLACED_IN_ORDER = c"ZcddpBytesPlacedInOrder",
    BYTES_PLACED_OUT_OF_ORDER = c"ZcddpBytesPlacedOutOfOrder",
    RX_DIRECT_BYTES = c"ZcddpRxBytesDirect",
    RX_STAGED_SMALL = c"ZcddpRxBytesStagedSmall",
    RX_STAGED_FRAMING = c"ZcddpRxBytesStagedFraming",
    RX_REASSEMBLED = c"ZcddpRxBytesReassembled",
    OOO_SKIPPED_COPY = c"ZcddpOooSkippedCopy",
    OOO_SKIPPED_CRC = c"ZcddpOooSkippedCrc",
    OOO_RETRANS_DIFFER = c"ZcddpOooRetransDiffer",
    OOO_REFUSED_NO_START = c"ZcddpOooRefusedNoStart",
    OOO_REFUSED_FRAMING = c"ZcddpOooRefusedFraming",
    OOO_REFUSED_IN_ORDER_ONLY = c"ZcddpOooRefusedInOrderOnly",
    OOO_REFUSED_ACCESS = c"ZcddpOooRefusedAccess",
    OOO_BYTES_SOFTIRQ = c"ZcddpOooBytesSoftirq",
    TERMINATES_SENT = c"ZcddpTerminatesSent",
    TERMINATES_RECEIVED = c"ZcddpTerminatesReceived",
    RX_DISCARDED = c"ZcddpRxBytesDiscarded",
    WORK_RUNS = c"ZcddpWorkRuns",
    TX_BYTES_BY_REF = c"ZcddpTxBytesByRef",
    TX_BYTES_COPIED = c"ZcddpTxBytesCopied",
    TX_ZC_FALLBACK = c"ZcddpTxZcFallback",
    TX_ZC_THROTTLED = c"ZcddpTxZcThrottled",
    TX_ZC_NOTIFICATIONS = c"ZcddpTxZcNotifications",
    TX_ZC_COPIED_BY_KERNEL = c"ZcddpTxZcCopiedByKernel",
    TX_ZC_STOPPED = c"ZcddpTxZcStopped",
    REGISTRATIONS = c"ZcddpRegistrations",
    PINNED_PAGES = c"ZcddpPinnedPages",
}
