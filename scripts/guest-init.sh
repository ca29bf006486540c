#!/bin/bash
# PID 1 of a zcnet test guest (scripts/run-guest.sh boots the kernel with
# init=<this file>). The root file system is the host's, shared read-only over
# 9p; /run/zcnet/out is a writable 9p share of the host's run directory.
# Sets the guest up, builds the topology, runs the test script, records its exit
# status and ends the run (a restart QEMU takes as its exit).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -a -T "${0%/*}/guest-fstab" 2>/dev/null
zcout=
while read -r _ m _; do [ "$m" = /run/zcnet/out ] && zcout=1; done < /proc/mounts
[ -n "$zcout" ] || {
  echo "zcnet-init: cannot mount the output share" >/dev/console; echo b >/proc/sysrq-trigger; }
exec </dev/null >/dev/console 2>&1

# shellcheck source=/dev/null
. /run/zcnet/out/env
export ZCNET_ROOT ZCNET_TOPO ZCNET_ROLE ZCNET_MODROOT ZCNET_KREL ZCNET_ACCEL ZCNET_FLAVOUR ZCNET_WIRE
export ZCNET_ARTIFACTS=/run/zcnet/out/artifacts
mkdir -p "$ZCNET_ARTIFACTS" /run/zcnet/bin
# The checkout and the test kernel's modules, wherever they live on the host
# (the tmpfs mounts above may hide their host paths). Read-only and cached as
# the root is (run-guest.sh: cache=loose): the tree must not change while a
# guest runs.
# One mount process for both (fstab escapes a space as \040).
o=trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro,X-mount.mkdir
printf 'zcroot %s 9p %s 0 0\nzcmods %s 9p %s 0 0\n' "${ZCNET_ROOT// /\\040}" "$o" "${ZCNET_MODROOT// /\\040}" "$o" > /run/zcnet/fstab
mount -a -T /run/zcnet/fstab || echo "zcnet-init: cannot mount the checkout at $ZCNET_ROOT or the modules at $ZCNET_MODROOT"
export HOME=/root TERM=dumb LC_ALL=C
echo "zcnet-$ZCNET_ROLE" > /proc/sys/kernel/hostname
ip link set lo up

# Kernel modules of the test kernel live in its build cache, not in /lib/modules.
printf '#!/bin/sh\nexec /sbin/modprobe -d "%s" "$@"\n' "$ZCNET_MODROOT" > /run/zcnet/modprobe
chmod +x /run/zcnet/modprobe
echo /run/zcnet/modprobe > /proc/sys/kernel/modprobe
# python3 on the PATH is a virtual environment of the system's Python without
# its site-packages (/run/zcnet/pyvenv.cfg): the tests use the standard
# library only, and the host's site hooks (.pth files, sitecustomize) looked
# through every site directory at each start, 0.4 s of a 0.7 s start under
# TCG.
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' > /run/zcnet/pyvenv.cfg
ln -s /run/zcnet/modprobe /usr/bin/python3 /run/zcnet/bin/
# The test modules run as python3 -m zcddp_peer, zcsock_test: their
# bytecode, compiled on the host by build-test-progs.sh, is then read from
# __pycache__, where a script is compiled at every run (0.5 s under TCG for
# 1400 lines).
export PYTHONPATH=$ZCNET_ROOT/tools/testing/zcnet
export PATH=/run/zcnet/bin:$ZCNET_ROOT/tools/target/release:$PATH

# shellcheck source=topology.sh
. "$ZCNET_ROOT/scripts/topology.sh"
if topology_up; then
  echo "zcnet-init: topology $ZCNET_TOPO ready (role $ZCNET_ROLE); running $ZCNET_SCRIPT"
  cd "$ZCNET_ROOT" || exit 1
  bash "$ZCNET_SCRIPT" "${ZCNET_ARGS[@]}"
  rc=$?
else
  echo "zcnet-init: topology $ZCNET_TOPO failed to come up"
  rc=125
fi
echo "zcnet-init: script exited with $rc"
# With kmemleak (the debug flavour): scan twice (a leak must survive two scans
# to be reported); kmemleak then logs "N new suspected memory leaks".
if [ -w /sys/kernel/debug/kmemleak ]; then
  echo scan > /sys/kernel/debug/kmemleak; echo scan > /sys/kernel/debug/kmemleak
  head -n 60 /sys/kernel/debug/kmemleak
fi
# The whole kernel log, whatever the console log level let through.
dmesg > /run/zcnet/out/dmesg 2>/dev/null
echo "$rc" > /run/zcnet/out/rc
sync
# End the run from inside one reboot(2) call: the 9p root (this shell, its
# script, every binary) goes away while the machine stops, and a PID 1 that
# then faults in a page of it dies of SIGBUS or EIO, which panics the
# kernel. A child makes the call; this shell waits in wait(2), touching
# nothing. (sysrq-o returned at once and left PID 1 running through it.)
# A restart, not a power-off: QEMU runs with -no-reboot and exits, and the
# test kernel has no ACPI to power off with. perl starts in 0.19 s under
# TCG, python3 with ctypes in 0.56 (2026-11-27). 169: reboot on x86-64; the
# two magic numbers; LINUX_REBOOT_CMD_RESTART.
perl -e 'syscall(169, 0xfee1dead, 672274793, 0x01234567)'
# Not reached unless reboot(2) failed.
echo o > /proc/sysrq-trigger
sleep 5
echo b > /proc/sysrq-trigger
