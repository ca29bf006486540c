# zcnet: zero-copy networking for Linux clusters, as out-of-tree Rust kernel modules.
#
#   make demo        set up a fresh machine, build, boot a guest, show zcnet  (the main job)
#   make check       set up a fresh machine, build and run every test suite  (the test command)
#
#   make setup       install the packages, kernel source and bindgen (idempotent)
#   make kernel      build or reuse the cached test kernel (ZCNET_FLAVOUR=debug for KASAN etc.)
#   make modules     build the modules against the cached kernel, or KDIR=/path/to/build
#   make tools       build the user-space tools (zcctl, zcbench, zcddp-*, their
#                    man pages in tools/target/man, the ip plugin, the C test
#                    programs of tools/testing/zcnet)
#   make install     install what `make modules tools` built: the modules (kbuild's
#                    modules_install into /lib/modules/<release>/updates, depmod),
#                    the tools and their man pages, the ip plugin and the UAPI
#                    headers
#                    [DESTDIR= PREFIX=/usr/local INSTALL_MOD_DIR=updates]
#   make uninstall   remove exactly what make install put there (its manifest)
#   make install-ip  install the ip plugin (ip link ... type zcfrag OPTIONS)
#   make run SCRIPT=file [TOPO=veth|virtio2|twoguests]   run a script in the guest
#   make bench       zcbench in the guest: plain TCP at MTU 1500 and 9000 vs zcfrag
#                    [TOPO=virtio2 [WIRE=tcp]: two virtio NICs, a lossless wire]
#   make bench-zcsock  zcsock against plain TCP and the kernel's tcp_mmap and
#                    msg_zerocopy, over veth at MTU 4148 and over zcfrag
#   make bench-native  the native front end against virtio_net (MTU 1500, 4148,
#                    9000) and stacked zcfrag, with and without zcsock, plus a
#                    per-packet cost model (virtio2 on the tap wire: 2 queue pairs)
#   make bench-zctx  zcddp's zero-copy transmit on and off (virtio2, tap wire)
#   make bench-ddp   zcddp (Send/Write/Read latency, Write bandwidth) against
#                    siw (perftest), zcddp <-> siw (zcddp-verbs/siw_verbs timing,
#                    rping) and plain TCP (veth)
#   make baselines   build tcp_mmap and msg_zerocopy, unmodified, from the
#                    kernel source (into out/baselines)
#   make fuzz        cargo fuzz the wire codecs (rust/wire) for a bounded time
#                    [FUZZ_SECONDS=20 per target]
#   make fmt         rustfmt every .rs
#   make clean       remove build output of the modules and tools

SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
KDIR ?=
TOPO ?= veth
WIRE ?= udp
SCRIPT ?=
export ZCNET_FLAVOUR ?= default

.PHONY: all setup kernel modules tools baselines install uninstall install-ip demo check test run stress-zcsock bench bench-zcsock bench-native bench-ddp bench-zctx fuzz fmt clean

all: modules tools

setup:
	@$(ROOT)/scripts/setup-deps.sh

kernel: setup
	@$(ROOT)/scripts/build-kernel.sh >/dev/null

# With KDIR given, nothing is installed or built but the modules.
ifeq ($(KDIR),)
modules: kernel
endif
modules:
	@$(ROOT)/scripts/build-modules.sh $(KDIR)

tools:
	@cd $(ROOT)/tools && cargo build --release --quiet && target/release/zcman --out target/man >/dev/null
	@$(ROOT)/scripts/build-ip-plugin.sh
	@$(ROOT)/scripts/build-test-progs.sh

# Where this machine's ip looks for link plugins (Debian: /usr/lib/<triplet>/ip).
IP_LIB_DIR ?= $(shell grep -aoE -m1 '/usr/lib[a-z0-9_/-]*/ip' "$$(command -v ip)" 2>/dev/null | head -n1)
IP_PLUGIN_DIR := $(or $(IP_LIB_DIR),/usr/lib/ip)
install-ip: tools
	@install -D -m 0644 $(ROOT)/tools/target/ip/link_zcfrag.so $(DESTDIR)$(IP_PLUGIN_DIR)/link_zcfrag.so
	@echo "installed $(DESTDIR)$(IP_PLUGIN_DIR)/link_zcfrag.so"

# Nothing is built here (`make` first, then `make install`, perhaps as root);
# the modules go to the kernel they were built for (KDIR of `make modules`).
PREFIX ?= /usr/local
INSTALL_MOD_DIR ?= updates
install uninstall:
	@DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" KDIR="$(KDIR)" INSTALL_MOD_DIR="$(INSTALL_MOD_DIR)" \
		IP_PLUGIN_DIR="$(IP_PLUGIN_DIR)" $(ROOT)/scripts/install.sh $@

demo: setup modules tools
	@$(ROOT)/scripts/run-guest.sh --topo virtio2 --timeout 600 --log $(ROOT)/out/demo.log -v $(ROOT)/tools/testing/zcnet/demo.sh

check test:
	@$(ROOT)/scripts/check.sh

run: modules tools
	@test -n "$(SCRIPT)" || { echo "usage: make run SCRIPT=file [TOPO=veth|virtio2|twoguests]"; exit 2; }
	@$(ROOT)/scripts/run-guest.sh --topo $(TOPO) -v $(SCRIPT)

# zcsock's randomized stress for STRESS_SECONDS (600); ZCNET_FLAVOUR=debug
# runs it on the KASAN/lockdep/kmemleak kernel.
STRESS_SECONDS ?= 600
stress-zcsock: setup modules tools
	@$(ROOT)/scripts/run-guest.sh --topo veth --timeout $$(( $(STRESS_SECONDS) + 900 )) --log $(ROOT)/out/stress-zcsock.log -v \
		$(ROOT)/tools/testing/zcnet/zcsock-stress.sh $(STRESS_SECONDS)

bench: setup modules tools
	@$(ROOT)/scripts/run-guest.sh --topo $(TOPO) --wire $(WIRE) --timeout 1800 --log $(ROOT)/out/bench-$(TOPO)-$(WIRE).log -v $(ROOT)/tools/testing/zcnet/bench.sh

baselines: kernel
	@$(ROOT)/scripts/build-baselines.sh >/dev/null

# ZCBENCH_SECONDS (3), ZCBENCH_REPEAT (3), ZCBENCH_WRITE (512K),
# ZCBENCH_CHECK_EVERY (64) go to the guest.
bench-zcsock: setup modules tools baselines
	@$(ROOT)/scripts/run-guest.sh --topo $(TOPO) --wire $(WIRE) --timeout 3600 --log $(ROOT)/out/bench-zcsock-$(TOPO)-$(WIRE).log -v \
		$(ROOT)/tools/testing/zcnet/bench-zcsock.sh $(foreach v,ZCBENCH_SECONDS ZCBENCH_REPEAT ZCBENCH_WRITE ZCBENCH_CHECK_EVERY,$(if $($(v)),$(v)=$($(v))))

# ZCBENCH_SECONDS (3), ZCBENCH_REPEAT (3), ZCBENCH_WRITE (512K) go to the guest.
bench-native: setup modules tools
	@$(ROOT)/scripts/run-guest.sh --topo virtio2 --wire tap --timeout 3600 --log $(ROOT)/out/bench-native.log -v \
		$(ROOT)/tools/testing/zcnet/bench-native.sh $(foreach v,ZCBENCH_SECONDS ZCBENCH_REPEAT ZCBENCH_WRITE,$(if $($(v)),$(v)=$($(v))))

bench-ddp: setup modules tools
	@$(ROOT)/scripts/run-guest.sh --topo veth --timeout 7200 --log $(ROOT)/out/bench-ddp.log -v \
		$(ROOT)/tools/testing/zcnet/bench-ddp.sh $(foreach v,ZCBENCH_SECONDS ZCBENCH_ITERS BENCH_DDP_PARTS BENCH_DDP_FAULTS BENCH_DDP_FAULT_ROUNDS BENCH_DDP_BASE_KO,$(if $($(v)),'$(v)=$($(v))'))

# ZCBENCH_SECONDS (3), ZCBENCH_REPEAT (3) go to the guest.
bench-zctx: setup modules tools
	@$(ROOT)/scripts/run-guest.sh --topo virtio2 --wire tap --timeout 1800 --log $(ROOT)/out/bench-zctx.log -v \
		$(ROOT)/tools/testing/zcnet/bench-zctx.sh $(foreach v,ZCBENCH_SECONDS ZCBENCH_REPEAT,$(if $($(v)),$(v)=$($(v))))

FUZZ_SECONDS ?= 20
fuzz:
	@$(ROOT)/scripts/fuzz.sh $(FUZZ_SECONDS)

fmt:
	@find $(ROOT) -name '*.rs' -not -path '*/target/*' -not -name generated.rs | xargs rustfmt --edition 2021

clean:
	@if [ -f $(ROOT)/.zcnet-kdir ] && [ -d "$$(cat $(ROOT)/.zcnet-kdir)" ]; then \
		for m in $(ROOT) $(ROOT)/tools/testing/zcnet/modules; do \
		$(MAKE) -s -C "$$(cat $(ROOT)/.zcnet-kdir)" M=$$m LLVM=1 clean >/dev/null 2>&1 || true; done; fi
	@rm -f $(ROOT)/.zcnet-kdir $(ROOT)/rust/bindings/generated.rs
	@cd $(ROOT)/tools && cargo clean --quiet
