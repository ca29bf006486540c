// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the zcnet Rust layer (`rust/zcnet/`) and of the wire code
//! as the kernel compiles it (`rust/wire/`): loading the module runs the
//! suite `zcnet_layer`; modules.sh checks its KTAP result in the kernel log.
//! Test-only: never loaded outside the test suites.

use kernel::prelude::*;

/// The files of zcnet's kernel layer (`rust/zcnet/`) the tests use;
/// `zcnet_layer_test_helpers.c` links the C helpers they call.
#[path = "../../../../rust/zcnet"]
#[allow(dead_code, unreachable_pub)]
mod zcnet {
    pub mod counters;
    pub mod ext;
    pub mod page;
    pub mod percpu;
    pub mod text;
}

#[path = "../../../../rust/wire/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;

module! {
    type: LayerTest,
    name: "zcnet_layer_test",
    authors: ["zcnet developers"],
    description: "zcnet test: KUnit tests of the Rust layer",
    license: "GPL",
}

struct LayerTest;

impl kernel::Module for LayerTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(LayerTest)
    }
}

#[kunit_tests(zcnet_layer)]
mod tests {
    use super::wire::{ipv4, spec};
    use super::zcnet::counters::Counters;
    use super::zcnet::page::{
        stash_give, stash_take, PageFrom, PageRing, RxPage, StashDrain, PAGE_SIZE,
    };
    use super::zcnet::percpu::PerCpuCounters;
    use super::zcnet::text::TextBuf;
    use core::fmt::Write;

    static NAMES: [&str; 3] = ["a", "b", "c"];

    #[test]
    fn counters_count_and_snapshot_in_order() {
        let c = Counters::new(&NAMES);
        c.inc(0);
        c.add(1, 5);
        c.inc(1);
        c.set(2, 9);
        c.inc(7); // out of range: ignored, no panic
        let mut out = [0u64; 3];
        assert_eq!(c.snapshot(&mut out), 3);
        assert_eq!(out, [1, 6, 9]);
        assert_eq!(c.get(99), 0);
    }

    #[test]
    fn percpu_counters_sum_the_cpus_and_keep_gauges() {
        let c = PerCpuCounters::new(&NAMES);
        assert!(c.is_ok());
        let Ok(c) = c else {
            return;
        };
        c.inc(0);
        c.add(1, 5);
        c.inc(1);
        c.set(2, 9);
        c.set(2, 4); // a gauge: the last value set
        c.inc(7); // out of range: ignored, no panic
        let mut out = [0u64; 3];
        assert_eq!(c.snapshot(&mut out), 3);
        assert_eq!(out, [1, 6, 4]);
        assert_eq!(c.get(99), 0);
    }

    #[test]
    fn page_ring_reuses_a_page_only_when_nobody_else_holds_it() {
        let mut r = PageRing::<2>::new();
        let (a, from) = r.get().expect("a page");
        assert_eq!(from, PageFrom::New);
        drop(a); // the stack let go of it: only the ring's reference is left
        let (b, from) = r.get().expect("a page");
        assert_eq!(from, PageFrom::New);
        // Back at the first slot: reused.
        let (a2, from) = r.get().expect("a page");
        assert_eq!(from, PageFrom::Reused);
        // `b` is still held: its slot gives a fresh page instead.
        let (_b2, from) = r.get().expect("a page");
        assert_eq!(from, PageFrom::New);
        drop(a2);
        drop(b);
    }

    #[test]
    fn the_stash_keeps_only_pages_nobody_else_holds() {
        let _drain = StashDrain;
        // A page only the giver holds: kept, and the ring takes it before
        // allocating.
        let p = RxPage::alloc().expect("a page");
        let raw = p.as_raw();
        stash_give(p);
        let mut r = PageRing::<1>::new();
        let (q, from) = r.get().expect("a page");
        assert_eq!(from, PageFrom::Stash);
        assert!(core::ptr::eq(q.as_raw(), raw));
        assert!(stash_take().is_none());
        // A page someone else still holds (the ring, here): not kept.
        stash_give(q);
        assert!(stash_take().is_none());
    }

    #[test]
    fn a_ring_page_is_a_whole_writable_page() {
        let mut r = PageRing::<1>::new();
        let (p, _) = r.get().expect("a page");
        p.fill(0, PAGE_SIZE, 0xa5);
        let mut last = [0u8; 2];
        p.read(PAGE_SIZE - 2, &mut last);
        assert_eq!(last, [0xa5, 0xa5]);
        // A range past the end is refused whole.
        p.fill(PAGE_SIZE - 1, 2, 0);
        p.read(PAGE_SIZE - 2, &mut last);
        assert_eq!(last, [0xa5, 0xa5]);
    }

    #[test]
    fn text_buffers_cut_what_does_not_fit() {
        let mut buf = [0u8; 8];
        let mut t = TextBuf::new(&mut buf);
        let _ = write!(t, "0123456789");
        assert_eq!(t.len(), 8);
        assert_eq!(&buf, b"01234567");
    }

    #[test]
    fn the_engine_completes_a_train_in_the_kernel_build() {
        let mut e = spec::Engine::<2>::new(spec::Params::DEFAULT);
        let plan = ipv4::FragPlan::new(20, 8 + 4096, 1500).expect("a plan");
        let mut done = None;
        for f in plan.iter() {
            let h = ipv4::Header {
                header_len: 20,
                tos: if f.offset == 0 { 2 } else { 3 },
                total_len: 20 + f.len,
                id: 7,
                df: false,
                mf: f.mf,
                frag_offset: f.offset,
                ttl: 64,
                protocol: 17,
                src: [198, 18, 0, 2],
                dst: [198, 18, 0, 1],
            };
            if let spec::This::Place(p) = e.on_fragment(&h, &[0; 8], 0).this {
                done = p.complete.or(done);
            }
        }
        let done = done.expect("completed");
        assert_eq!((done.data_len, done.fragments, done.ecn), (4096, 3, 3));
        assert_eq!(e.busy(), 0);
    }
}
