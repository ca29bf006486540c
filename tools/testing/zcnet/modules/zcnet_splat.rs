// SPDX-License-Identifier: GPL-2.0

//! Test module for the QEMU runner's splat detector: loading it prints a
//! kernel WARNING (and nothing worse), so a run that loads it must fail.

use kernel::prelude::*;

module! {
    type: Splat,
    name: "zcnet_splat",
    authors: ["zcnet developers"],
    description: "zcnet test: emits a WARNING on load",
    license: "GPL",
}

struct Splat;

impl kernel::Module for Splat {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("emitting a test WARNING for the splat detector\n");
        kernel::warn_on!(true);
        Ok(Splat)
    }
}
