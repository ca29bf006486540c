#!/bin/bash
# PID 1 of a zcnet test guest (scripts/run-guest.sh boots the kernel with
# init=<this file>). The root file system is the host's, shared read-only over
# 9p; /run/zcnet/out is a writable 9p share of the host's run directory.
# Sets the guest up, builds the topology, runs the test script, records its exit
# status and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp 2>/dev/null
mount -t tmpfs tmpfs /root 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /run/zcnet/out /run/netns
mount -t 9p -o trans=virtio,version=9p2000.L zcout /run/zcnet/out || {
  echo "zcnet-init: cannot mount the output share" >/dev/console; echo b >/proc/sysrq-trigger; }
exec </dev/null >/dev/console 2>&1

# shellcheck source=/dev/null
. /run/zcnet/out/env
export ZCNET_ROOT ZCNET_TOPO ZCNET_ROLE ZCNET_MODROOT ZCNET_KREL ZCNET_ACCEL ZCNET_FLAVOUR ZCNET_WIRE
export ZCNET_ARTIFACTS=/run/zcnet/out/artifacts
mkdir -p "$ZCNET_ARTIFACTS"
# The checkout and the test kernel's modules, wherever they live on the host
# (the tmpfs mounts above may hide their host paths). Read-only and cached as
# the root is (run-guest.sh: cache=loose): the tree must not change while a
# guest runs.
mkdir -p "$ZCNET_ROOT" "$ZCNET_MODROOT" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro zcroot "$ZCNET_ROOT" || echo "zcnet-init: cannot mount the checkout at $ZCNET_ROOT"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro zcmods "$ZCNET_MODROOT" || echo "zcnet-init: cannot mount the modules"
export HOME=/root TERM=dumb LC_ALL=C
hostname "zcnet-$ZCNET_ROLE"
ip link set lo up

# Kernel modules of the test kernel live in its build cache, not in /lib/modules.
printf '#!/bin/sh\nexec /sbin/modprobe -d "%s" "$@"\n' "$ZCNET_MODROOT" > /run/zcnet/modprobe
chmod +x /run/zcnet/modprobe
echo /run/zcnet/modprobe > /proc/sys/kernel/modprobe
mkdir -p /run/zcnet/bin
ln -s /run/zcnet/modprobe /run/zcnet/bin/modprobe
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
# Power off from inside one reboot(2) call: the 9p root (this shell, its
# script, every binary) goes away while the machine powers off, and a PID 1
# that then faults in a page of it dies of SIGBUS or EIO, which panics the
# kernel. A child makes the call; this shell waits in wait(2), touching
# nothing. (sysrq-o returned at once and left PID 1 running through it.)
python3 -c 'import ctypes; ctypes.CDLL(None).reboot(0x4321FEDC)'
# Not reached unless reboot(2) failed.
echo o > /proc/sysrq-trigger
sleep 5
echo b > /proc/sysrq-trigger
