// SPDX-License-Identifier: GPL-2.0

//! `/proc/net/zcsock_stat`: each counter declared once below, its index
//! (`s::NAME`) and its name on one line, as `tls_proc.c`'s `SNMP_MIB_ITEM`
//! table does. Per network namespace, counted per CPU.

use crate::zcnet::netstat::{Net, NetStat};

/// Adds `delta` to counter `idx` of `net` (the module registered the table
/// before any socket or region could count).
pub(crate) fn add(net: Net<'_>, idx: usize, delta: i64) {
    NetStat::<NSTATS>::add(net, idx, delta);
}

crate::zcnet::counters::counter_table! {
    mod s; count NSTATS; names NAMES: &kernel::str::CStr;
    TX_PAGES_BY_REF = c"ZcsockTxPagesByRef",
    TX_BYTES_BY_REF = c"ZcsockTxBytesByRef",
    TX_COW_FAULTS = c"ZcsockTxCowFaults",
    TX_BYTES_COPIED = c"ZcsockTxBytesCopied",
    RX_PAGES_REMAPPED = c"ZcsockRxPagesRemapped",
    RX_BYTES_COPIED = c"ZcsockRxBytesCopied",
    RX_PAGES_REFUSED = c"ZcsockRxPagesRefused",
    REGIONS = c"ZcsockRegions",
    REGION_PAGES = c"ZcsockRegionPages",
    CURR_SOCKETS = c"ZcsockCurrSockets",
}
