#!/usr/bin/env bash
# Boots the zcnet test kernel in QEMU and runs a script in the guest.
#
#   run-guest.sh [options] SCRIPT [ARGS...]
#     --topo T      veth (default) | virtio2 | twoguests | none
#     --kvm         use KVM instead of TCG (fails if /dev/kvm cannot run it)
#     --cpus N      vCPUs per guest (default 2)
#     --mem M       memory per guest in MiB (default 2048)
#     --timeout S   wall-clock bound of the whole run (default 600)
#     --log FILE    guest console log (default out/guest-<script>.log; with
#                   twoguests FILE.a and FILE.b)
#     --kdir DIR    kernel build tree (default: the cached build of ZCNET_FLAVOUR)
#     --wire W      virtio2's wire between the NICs: udp (default; the host drops
#                   frames when its socket buffer overflows, about 0.5% under a
#                   stream), tcp (lossless: the receiver pushes back) or tap
#                   (multiqueue NICs with RSS: two queue pairs each, on
#                   multi-queue taps bridged in a network namespace of the
#                   host's own; needs root and /dev/net/tun on the host)
#     --queues N    queue pairs of each NIC on the tap wire (default 2)
#     -v            also stream the console to the terminal
#
# The guest sees the host's root file system read-only (so every host tool is
# there), this checkout at its own path and the kernel's modules (both shared
# read-only, wherever they are on the host), and writable tmpfs on /tmp, /run,
# /root, /var/tmp. The script runs from the top of the checkout as root, after the
# topology is up (scripts/topology.sh). In twoguests the script runs in both
# guests with ZCNET_ROLE=a or b.
#
# ZCNET_TCG_THREAD=single puts all of a guest's vCPUs on one host thread
# (TCG's round robin; default multi, a thread per vCPU): make check runs
# guests side by side that way (see below).
# ZCNET_KERNEL_ARGS adds kernel arguments (a KASAN kernel with ACPI always
# gets acpi=noirq: see below). ZCNET_INSN_DIR=DIR loads the zcinsn plugin
# (tools/qemu-plugin/zcinsn.c: guest instructions counted between the
# guest's zcmark markers, written to DIR/ROLE/insn-N.txt).
# Files the script writes to $ZCNET_ARTIFACTS are copied to LOG.artifacts/.
# Exit status: the script's, or 1 when the guest log shows a kernel report
# (Oops, BUG, WARNING, KASAN, lockdep, hung task, soft lockup, ...: see
# SPLAT_RE in scripts/lib.sh), 124 on timeout, 125 when the guest died
# without reporting a status. An oops ends the guest at once (oops=panic,
# then QEMU exits): a run that has met one has failed, and waiting out its
# time bound only delays the report (a kernel BUG in a worker had left a
# guest hung for the whole 1500 s of zcddp's bound).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

topo=veth accel=tcg cpus=2 mem=2048 timeout=600 log= kdir= verbose=0 wire=udp queues=2
while [ $# -gt 0 ]; do
  case "$1" in
    --topo) topo=$2; shift 2 ;;
    --kvm) accel=kvm; shift ;;
    --cpus) cpus=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --kdir) kdir=$2; shift 2 ;;
    --wire) wire=$2; shift 2 ;;
    --queues) queues=$2; shift 2 ;;
    -v) verbose=1; shift ;;
    -h|--help) sed -n '2,43p' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) die "run-guest: unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "usage: run-guest.sh [options] SCRIPT [ARGS...]"
script=$(realpath "$1"); shift
[ -f "$script" ] || die "run-guest: no script $script"
case "$topo" in veth|virtio2|twoguests|none) ;; *) die "run-guest: unknown topology $topo" ;; esac
case "$wire" in udp|tcp|tap) ;; *) die "run-guest: unknown wire $wire (udp, tcp or tap)" ;; esac
case "$queues" in [1-9]|[1-5][0-9]|6[0-4]) ;; *) die "run-guest: --queues must be 1 to 64" ;; esac
if [ -z "$kdir" ]; then
  kdir=$(kernel_build_dir)
  [ -f "$kdir/.zcnet-complete" ] || die "run-guest: no cached kernel for flavour $ZCNET_FLAVOUR; run 'make kernel'"
fi
bz="$kdir/arch/x86/boot/bzImage"
[ -f "$bz" ] || die "run-guest: no $bz"
# tsc_khz: the host's TSC rate in kHz (scripts/zctsc.c, compiled once into
# the cache).
tsc_khz() {
  local bin=$ZCNET_CACHE/bin/zctsc src=$ZCNET_ROOT/scripts/zctsc.c
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    mkdir -p "$(dirname "$bin")"
    "$(host_cc run-guest)" -std=gnu11 -O2 -o "$bin.$$" "$src" && mv "$bin.$$" "$bin" ||
      die "run-guest: cannot build $src"
  fi
  "$bin" || die "run-guest: no TSC rate for the guest (scripts/zctsc.c)"
}
# Extra kernel arguments.
kargs=${ZCNET_KERNEL_ARGS-}
# TCG derives the guest's TSC from the host's clock, but its timing jitter
# makes the clocksource watchdog call the TSC unstable now and then, tens
# of seconds into a run; the guest then switches to the HPET, and every
# clock_gettime() (vDSO no more) becomes a system call and an emulated
# device read, and timed loops measure that too (perftest reads the TSC
# itself and does not). Keep the TSC.
kargs="tsc=reliable $kargs"
# A kernel without ACPI (the test kernels: kernel/zcnet.config) finds no
# HPET or PM timer to calibrate the TSC against, and QEMU's PIT fails the
# calibration under TCG: the kernel would drop the TSC for jiffies. TCG's
# guest TSC is the host's, so the guest is told the host's rate.
# SeaBIOS's MP table (all a kernel without ACPI reads) lists the boot CPU
# only; qboot's lists every CPU.
acpi=0
grep -q '^CONFIG_ACPI=y' "$kdir/.config" 2>/dev/null && acpi=1
bios_opt=
if [ "$accel" = tcg ] && [ $acpi = 0 ]; then
  kargs="tsc_early_khz=$(tsc_khz) $kargs"
  bios_opt="-bios qboot.rom"
fi
# A KASAN kernel with ACPI (--kdir; the test kernels have none) interprets
# ACPI's PCI interrupt routing (_PRT) so slowly under TCG that ACPICA's 30 s
# loop timeout fires and the 9p devices get no interrupt: route PCI
# interrupts without ACPI.
if [ $acpi = 1 ] && grep -q '^CONFIG_KASAN=y' "$kdir/.config"; then
  kargs="acpi=noirq $kargs"
fi
krel=$(cat "$kdir/include/config/kernel.release")
# The 9p root with cache=loose: the guest keeps what it reads in its page
# cache (the root is read-only and nothing on the host changes under a run),
# so a program started a second time is not read through 9p again. Under
# TCG, a guest on this 2-core host (2026-11-27): awk 152 -> 59 ms a start,
# python3 2.7 -> 0.57 s, ip netns exec 346 -> 144 ms
# (out of tree: 200, 20 and 100 starts in a loop, with and without).
rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose
[ -n "$log" ] || { mkdir -p "$ZCNET_ROOT/out"; log="$ZCNET_ROOT/out/guest-$(basename "$script" .sh).log"; }
mkdir -p "$(dirname "$log")"
log=$(realpath "$log")

# ZCNET_QEMU_CPU: the guest's CPU model under TCG (QEMU's qemu64 by
# default). qemu64 with SSE4.2 and PCLMULQDQ, for the kernel's crc32c on the
# crc32 instruction, made the zcddp suite slower, not faster (2026-11-28:
# its siw section 147 s against 115; rping without CRC 18.5 s against 15.9).
# ZCNET_TCG_THREAD: "multi" (default: one host thread per vCPU) or "single"
# (all of a guest's vCPUs take turns on one host thread). make check runs
# guests side by side in single mode: a guest then never holds more than one
# host CPU, and none of its vCPUs spins on a lock whose holder the host has
# descheduled for another guest's thread (Documentation/testing.rst).
case "${ZCNET_TCG_THREAD:-multi}" in multi|single) ;; *) die "run-guest: ZCNET_TCG_THREAD is multi or single, not '$ZCNET_TCG_THREAD'" ;; esac
accel_opt="-accel tcg,thread=${ZCNET_TCG_THREAD:-multi} -cpu ${ZCNET_QEMU_CPU:-qemu64}"
if [ "$accel" = kvm ]; then
  [ -w /dev/kvm ] || die "run-guest: --kvm asked for but /dev/kvm is not usable"
  accel_opt="-accel kvm -cpu host"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zcnet-run.XXXXXX")
pids=()
netns=
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  [ -n "$netns" ] && ip netns del "$netns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# UDP ports for the socket netdevs, on 127.0.0.1 only.
base=$(( 20000 + ($$ % 10000) * 4 ))

# start_guest ROLE LOG NETOPTS...: boots one guest in the background.
start_guest() {
  local role=$1 glog=$2; shift 2
  local out="$work/$role" gscript=$script
  mkdir -p "$out"
  # The checkout is mounted at its own path in the guest; a script elsewhere
  # under a directory the guest mounts tmpfs over travels in the run directory.
  case "$script" in
    "$ZCNET_ROOT"/*) ;;
    /tmp/*|/run/*|/root/*|/var/tmp/*|/dev/*|/proc/*|/sys/*)
      cp "$script" "$out/script"; gscript=/run/zcnet/out/script ;;
  esac
  {
    printf 'ZCNET_ROOT=%q\nZCNET_TOPO=%q\nZCNET_ROLE=%q\nZCNET_MODROOT=%q\nZCNET_KREL=%q\nZCNET_SCRIPT=%q\nZCNET_ACCEL=%q\nZCNET_FLAVOUR=%q\nZCNET_WIRE=%q\n' \
      "$ZCNET_ROOT" "$topo" "$role" /run/zcnet/modules "$krel" "$gscript" "$accel" "$ZCNET_FLAVOUR" "$wire"
    # (printf with no argument would still print its format once: '' )
    printf 'ZCNET_ARGS=('; [ ${#ARGS[@]} -eq 0 ] || printf '%q ' "${ARGS[@]}"; printf ')\n'
  } > "$out/env"
  : > "$glog"
  local plugin=()
  if [ -n "${ZCNET_INSN_DIR:-}" ]; then
    local so=$ZCNET_ROOT/tools/target/release/zcinsn.so
    [ -f "$so" ] || die "run-guest: no $so (scripts/build-test-progs.sh)"
    mkdir -p "$ZCNET_INSN_DIR/$role"
    plugin=(-plugin "file=$so,dir=$(realpath "$ZCNET_INSN_DIR/$role")")
  fi
  ${netns:+ip netns exec "$netns"} qemu-system-x86_64 $accel_opt $bios_opt -smp "$cpus" -m "$mem" \
    -display none -monitor none -no-reboot -serial "file:$glog" \
    -kernel "$bz" \
    -append "console=ttyS0 root=/dev/root rootfstype=9p rootflags=$rootflags ro init=$ZCNET_ROOT/scripts/guest-init.sh oops=panic panic=-1 loglevel=6 hung_task_panic=0 zcnet.role=$role $kargs" \
    -fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap" \
    -device virtio-9p-pci,fsdev=root,mount_tag=/dev/root \
    -fsdev "local,id=out,path=$out,security_model=none" \
    -device virtio-9p-pci,fsdev=out,mount_tag=zcout \
    -fsdev "local,id=zcroot,path=$ZCNET_ROOT,security_model=none,readonly=on" \
    -device virtio-9p-pci,fsdev=zcroot,mount_tag=zcroot \
    -fsdev "local,id=zcmods,path=$kdir/mod-root,security_model=none,readonly=on" \
    -device virtio-9p-pci,fsdev=zcmods,mount_tag=zcmods \
    "${plugin[@]}" "$@" </dev/null >"$out/qemu.out" 2>&1 &
  pids+=($!)
}

# tap_wire: a network namespace of the host's own with a bridge and two
# multi-queue taps, zcta and zctb (no IPv6 there: nothing but the guests'
# frames crosses the bridge). QEMU runs in it.
tap_wire() {
  netns=zcnet-run-$$
  ip netns add "$netns" || die "run-guest: --wire tap: cannot make a network namespace (root needed)"
  ip netns exec "$netns" sh -c 'sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1' || true
  ip -n "$netns" link add zcbr type bridge || die "run-guest: --wire tap: no bridge on the host"
  for t in zcta zctb; do
    ip -n "$netns" tuntap add dev $t mode tap multi_queue || die "run-guest: --wire tap: no multi-queue tap (/dev/net/tun)"
    ip -n "$netns" link set $t mtu 9000 master zcbr up
  done
  ip -n "$netns" link set zcbr up
}
tap_nic() { # NAME TAP MAC (--queues pairs: a vector per virtqueue, config, control)
  echo -netdev "tap,id=$1,ifname=$2,script=no,downscript=no,queues=$queues,vhost=off" \
    -device "virtio-net-pci,netdev=$1,mac=$3,mq=on,vectors=$((2 * queues + 2)),rss=on"
}

ARGS=("$@")
logs=()
[ "$wire" = tap ] && tap_wire
case "$topo" in
  veth|none)
    start_guest a "$log"; logs+=("$log") ;;
  virtio2)
    if [ "$wire" = tap ]; then
      start_guest a "$log" $(tap_nic n1 zcta 52:54:00:18:00:01) $(tap_nic n2 zctb 52:54:00:18:00:02)
      logs+=("$log")
    else
    if [ "$wire" = tcp ]; then
      # A lossless wire: one TCP connection carries the frames, so a busy
      # receiver pushes back instead of dropping (as a NIC with pause frames).
      w1="socket,id=n1,listen=127.0.0.1:$((base+2))" w2="socket,id=n2,connect=127.0.0.1:$((base+2))"
    else
      w1="socket,id=n1,udp=127.0.0.1:$((base+1)),localaddr=127.0.0.1:$base"
      w2="socket,id=n2,udp=127.0.0.1:$base,localaddr=127.0.0.1:$((base+1))"
    fi
    start_guest a "$log" \
      -netdev "$w1" -device "virtio-net-pci,netdev=n1,mac=52:54:00:18:00:01" \
      -netdev "$w2" -device "virtio-net-pci,netdev=n2,mac=52:54:00:18:00:02"
    logs+=("$log")
    fi ;;
  twoguests)
    if [ "$wire" = tap ]; then
      start_guest a "$log.a" $(tap_nic n1 zcta 52:54:00:18:00:01)
      start_guest b "$log.b" $(tap_nic n2 zctb 52:54:00:18:00:02)
      logs+=("$log.a" "$log.b")
    else
    start_guest a "$log.a" \
      -netdev "socket,id=n1,udp=127.0.0.1:$((base+1)),localaddr=127.0.0.1:$base" \
      -device "virtio-net-pci,netdev=n1,mac=52:54:00:18:00:01"
    start_guest b "$log.b" \
      -netdev "socket,id=n2,udp=127.0.0.1:$base,localaddr=127.0.0.1:$((base+1))" \
      -device "virtio-net-pci,netdev=n2,mac=52:54:00:18:00:02"
    logs+=("$log.a" "$log.b")
    fi ;;
esac

tailpid=
if [ $verbose = 1 ]; then tail -n +1 -F "${logs[@]}" 2>/dev/null & tailpid=$!; fi

# Wait for every guest, within the time bound (looked at every 0.1 s: a
# run ends that much after its guest, and make check runs two dozen).
deadline=$((SECONDS + timeout))
timed_out=0
for p in "${pids[@]}"; do
  while kill -0 "$p" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then timed_out=1; break 2; fi
    sleep 0.1
  done
done
[ -n "$tailpid" ] && { sleep 0.2; kill "$tailpid" 2>/dev/null || true; }

status=0
if [ $timed_out = 1 ]; then
  log "run-guest: $(basename "$script") passed its time bound of ${timeout}s"
  status=124
fi
i=0
for role in $( [ "$topo" = twoguests ] && echo a b || echo a ); do
  glog=${logs[$i]}; i=$((i + 1))
  [ -f "$work/$role/dmesg" ] && cp "$work/$role/dmesg" "$glog.dmesg"
  if [ -d "$work/$role/artifacts" ]; then
    rm -rf "$glog.artifacts" && cp -r "$work/$role/artifacts" "$glog.artifacts"
  fi
  if splats=$( { scan_splats "$glog"; [ -f "$glog.dmesg" ] && scan_splats "$glog.dmesg"; } | sort -u); [ -n "$splats" ]; then
    log "run-guest: kernel report in $glog:"
    printf '%s\n' "$splats" | head -n 20 >&2
    [ $status = 0 ] && status=1
  fi
  if [ -f "$work/$role/rc" ]; then
    rc=$(cat "$work/$role/rc")
    [ "$rc" != 0 ] && [ $status = 0 ] && status=$rc
  else
    [ $timed_out = 0 ] && log "run-guest: guest $role stopped without an exit status (see $glog, $work/$role/qemu.out: $(head -c 300 "$work/$role/qemu.out" 2>/dev/null))"
    [ $status = 0 ] && status=125
  fi
done
exit $status
