// SPDX-License-Identifier: GPL-2.0

//! The device's counters: each declared once below, its index (`c::NAME`)
//! and its `ethtool -S` name on one line, as `tls_proc.c`'s `SNMP_MIB_ITEM`
//! table does.

use crate::wire::spec;

/// Declares the counter table: an index constant per counter in `c`, the
/// number of counters and their names, in one order.
macro_rules! counters {
    ($($idx:ident = $name:literal,)*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(usize)]
        enum Idx { $($idx,)* Count }

        /// Counter indices, in `ethtool -S` order.
        #[allow(dead_code)]
        pub(crate) mod c {
            $(pub(crate) const $idx: usize = super::Idx::$idx as usize;)*
        }

        /// How many counters the device has.
        pub(crate) const NCOUNTERS: usize = Idx::Count as usize;

        /// The counters' names (`ethtool -S zf0`), in index order.
        pub(crate) static NAMES: [&str; NCOUNTERS] = [$($name,)*];
    };
}

counters! {
    RX_FRAMES = "rx_frames",
    RX_IPV4_FRAGMENTS = "rx_ipv4_fragments",
    TX_PASSTHROUGH = "tx_passthrough",
    TX_FRAGMENTED_PACKETS = "tx_fragmented_packets",
    TX_FRAGMENTS = "tx_fragments",
    TX_COPIED_BYTES = "tx_copied_bytes",
    TX_DROP_NOT_IPV4 = "tx_drop_not_ipv4",
    TX_DROP_IP_OPTIONS = "tx_drop_ip_options",
    TX_DROP_MALFORMED = "tx_drop_malformed",
    TX_DROP_NOMEM = "tx_drop_nomem",
    TX_DROP_LOWER = "tx_drop_lower",
    RX_FRAMES_LARGE = "rx_frames_large",
    RX_FRAMES_SMALL = "rx_frames_small",
    ZC_POTENTIAL = "zc_potential",
    ZC_SUCCESS = "zc_successful",
    ZC_FULL_PAGES = "zc_full_pages",
    ZC_FAILED = "zc_failed",
    ZC_MISS_OTHER_PACKET = "zc_miss_other_packet",
    ZC_MISS_GAP = "zc_miss_gap",
    ZC_MISS_DUPLICATE = "zc_miss_duplicate",
    ZC_MISS_HEADER_LENGTH = "zc_miss_header_length",
    ZC_MISS_IP_OPTIONS = "zc_miss_ip_options",
    ZC_MISS_TOO_BIG = "zc_miss_too_big",
    ZC_MISS_TIMEOUT = "zc_miss_timeout",
    ZC_MISS_BAD_LENGTH = "zc_miss_bad_length",
    ZC_MISS_BAD_CHECKSUM = "zc_miss_bad_checksum",
    ZC_MISS_TOO_MANY_FRAGMENTS = "zc_miss_too_many_fragments",
    ZC_MISS_ECN = "zc_miss_ecn",
    ZC_MISS_NOMEM = "zc_miss_nomem",
    RX_NO_SLOT = "rx_no_slot",
    RX_NOMEM = "rx_drop_nomem",
    RX_FALLBACK_FRAGMENTS = "rx_fallback_fragments",
    RX_FALLBACK_BYTES = "rx_fallback_bytes",
    RX_COPIED_BYTES = "rx_copied_bytes",
    RX_BAD_HEADER = "rx_bad_header",
    SLOTS_IN_USE = "slots_in_use",
    TX_REFERENCED_BYTES = "tx_referenced_bytes",
    RX_NOT_FOR_HOST = "rx_not_for_host",
    ADM_REQUESTS_SENT = "adm_requests_sent",
    ADM_REQUEST_RETRIES = "adm_request_retries",
    ADM_ANSWERS_ACK = "adm_answers_ack",
    ADM_ANSWERS_NACK = "adm_answers_nack",
    ADM_NO_ANSWER = "adm_no_answer",
    ADM_RELEASES_SENT = "adm_releases_sent",
    ADM_REQUESTS_RECEIVED = "adm_requests_received",
    ADM_GRANTED = "adm_granted",
    ADM_REFUSED = "adm_refused",
    ADM_RELEASES_RECEIVED = "adm_releases_received",
    ADM_GRANTS_EXPIRED = "adm_grants_expired",
    ADM_BAD_FRAMES = "adm_bad_frames",
    RX_NOT_ADMITTED = "rx_not_admitted",
    GRANTS_ACTIVE = "grants_active",
    REQUESTS_ACTIVE = "requests_active",
    ADM_TABLE_FULL = "adm_table_full",
    ADM_RENEWALS = "adm_renewals",
    ADM_ACKS_SENT = "adm_acks_sent",
    RX_BAD_TRUNCATED = "rx_bad_truncated",
    RX_BAD_CHECKSUM = "rx_bad_checksum",
    RX_BAD_OVERSIZE = "rx_bad_oversize",
    RX_BAD_VERSION = "rx_bad_version",
    RX_EMPTY_FRAGMENTS = "rx_empty_fragments",
    RX_PAGES_NEW = "rx_pages_new",
    RX_PAGES_REUSED = "rx_pages_reused",
    RX_VLAN_TAGGED = "rx_vlan_tagged",
    RX_NOT_LOCAL = "rx_not_local",
    ZC_REFUSED = "zc_refused",
    ADM_BAD_SOURCE = "adm_bad_source",
    ADM_RATE_LIMITED = "adm_rate_limited",
    ADM_REFUSED_CAP = "adm_refused_cap",
    ADM_REFUSED_HELD = "adm_refused_held",
    ADM_REL_NOT_HOLDER = "adm_rel_not_holder",
}

/// The first of the per-reason miss counters: `MISS_BASE + Miss as usize`.
pub(crate) const MISS_BASE: usize = c::ZC_MISS_OTHER_PACKET;
const _: () = assert!(MISS_BASE + spec::MISS_REASONS == c::RX_NO_SLOT);
