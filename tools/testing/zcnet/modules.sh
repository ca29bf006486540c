#!/bin/bash
# Loads, exercises and unloads the zcnet modules; checks the rust/ layer they
# share (extra bindings, C helpers, counters) end to end; then loads them,
# without insmod or modprobe, from a tree `make install` wrote.
#   usage: modules.sh [INSTALLED]   INSTALLED: a DESTDIR of `make install`
#   (default out/install; make check's install step, scripts/check-install.sh)
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
MODS="zcfrag zcsock zcddp"

for m in $MODS; do
  t_run "insmod $m" insmod "$(ko "$m")"
  t_expect "$m is live" live "$(cat /sys/module/$m/initstate 2>/dev/null)"
  [ $m = zcddp ] && t_expect "$m counters in debugfs" 0 "$(counter "$m" ulp_init_calls)"
done

# zcfrag registered its rtnetlink link kind (tools/testing/zcnet/zcfrag.sh
# tests the device itself).
out=$(ip link add zf0 link lo type zcfrag 2>&1); rc=$?
t_expect "ip link add ... type zcfrag reaches zcfrag (lo refused)" 2 "$rc"
case "$out" in *"must be an Ethernet device"*) t_ok "refusal explained through extack" ;; *) t_fail "refusal explained through extack" "$out" ;; esac

# zcsock and zcddp registered TCP ULPs: setsockopt(TCP_ULP) reaches them.
# ulp_try NAME: what setsockopt(TCP_ULP, NAME) on a fresh TCP socket answers;
# with zcsock, also its socket count while the socket lives.
ulp_try() {
  python3 -c 'import socket,sys,errno
s = socket.socket()
try:
    s.setsockopt(socket.IPPROTO_TCP, 31, sys.argv[1].encode())
    r = "accepted"
except OSError as e:
    r = "EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode.get(e.errno, e.errno)
if sys.argv[1] == "zcsock":
    r += " " + [l.split()[1] for l in open("/proc/net/zcsock_stat") if l.startswith("ZcsockCurrSockets")][0]
print(r)' "$1"
}
for m in zcsock zcddp; do
  grep -qw "$m" /proc/sys/net/ipv4/tcp_available_ulp && t_ok "$m in tcp_available_ulp" || t_fail "$m in tcp_available_ulp"
done
t_expect "setsockopt(TCP_ULP, zcsock) attaches it (one zcsock socket)" "accepted 1" "$(ulp_try zcsock)"
t_expect "the closed socket let zcsock go" 0 "$(awk '$1 == "ZcsockCurrSockets" { print $2 }' /proc/net/zcsock_stat)"
t_expect "setsockopt(TCP_ULP, zcddp) on an unconnected socket answers ENOTCONN" ENOTCONN "$(ulp_try zcddp)"
t_expect "zcddp counted the ULP init" 1 "$(counter zcddp ulp_init_calls)"

out=$(zcctl status)
printf '%s\n' "$out" | sed 's/^/# /'
t_expect "zcctl shows three live modules" 3 "$(printf '%s\n' "$out" | grep -c ' live ')"
t_run "zcctl counters" zcctl counters zcddp

for m in $MODS; do t_run "rmmod $m" rmmod "$m"; done
t_expect "no zcnet module left" "" "$(ls -d /sys/module/zcfrag /sys/module/zcsock /sys/module/zcddp 2>/dev/null)"
grep -qwE 'zcsock|zcddp' /proc/sys/net/ipv4/tcp_available_ulp && t_fail "ULPs unregistered" || t_ok "ULPs unregistered"
# Unregistered, the kind is unknown to rtnetlink; registered, zcfrag itself
# would refuse the missing lower device with its own message.
out=$(ip link add zf0 type zcfrag 2>&1)
case "$out" in
  *"Unknown device type"*) t_ok "link kind unregistered" ;;
  *) t_fail "link kind unregistered" "ip said: $out" ;;
esac

# The layer's KUnit suite (tools/testing/zcnet/modules/zcnet_layer_test_main.rs)
# runs when its module loads; its summary line is in the kernel log.
t_run "insmod zcnet_layer_test (KUnit suite zcnet_layer)" insmod "$(ko zcnet_layer_test)"
sum=$(dmesg | grep -a "# zcnet_layer: pass:" | tail -n 1)
dmesg | grep -aE "^\[ *[0-9.]+\] +(not )?ok [0-9]+ " | grep -v "zcnet_layer$" | tail -n 10 | _ktap_diag
case "$sum" in
  *"fail:0 "*) t_ok "KUnit zcnet_layer: ${sum#*# zcnet_layer: }" ;;
  *) t_fail "KUnit zcnet_layer" "${sum:-no result in the kernel log}" ;;
esac
t_run "rmmod zcnet_layer_test" rmmod zcnet_layer_test

# Eight load/unload cycles of all three (twenty before the test-time cut of
# 2026-11-27); the runner fails the run on any kernel report.
bad=0
for i in $(seq 8); do
  for m in $MODS; do insmod "$(ko "$m")" || bad=$((bad + 1)); done
  for m in zcddp zcsock zcfrag; do rmmod "$m" || bad=$((bad + 1)); done
done
t_expect "8 load/unload cycles" 0 "$bad"

# Autoload from the installed tree, with no insmod or modprobe of ours:
# rtnetlink asks for rtnl-link-zcfrag, TCP for tcp-ulp-zcsock and
# tcp-ulp-zcddp, and modprobe finds them in the tree's modules.alias (the
# modules' aliases, depmod run by make install). The kernel's modprobe
# helper reads the tree as its root (modprobe -d, as guest-init.sh's helper
# reads the kernel's own modules): the guest's root is the host's, read-only,
# with no /lib/modules to mount over. The kernel asks for a ULP only for a
# caller with CAP_NET_ADMIN.
inst=${1:-$ZCNET_ROOT/out/install}
if [ -f "$inst/lib/modules/$(uname -r)/modules.dep" ]; then
  helper=$(cat /proc/sys/kernel/modprobe)
  printf '#!/bin/sh\nexec /sbin/modprobe -d "%s" "$@"\n' "$inst" > /run/zcnet/modprobe-installed
  chmod +x /run/zcnet/modprobe-installed
  echo /run/zcnet/modprobe-installed > /proc/sys/kernel/modprobe
  t_expect "the installed tree holds no test module" "" "$(find "$inst/lib/modules" -name 'zcnet_*')"
  out=$(ip -n a link add zf0 link va type zcfrag 2>&1)
  t_expect "ip link add zf0 link va type zcfrag loads zcfrag from the installed tree${out:+ ($out)}" live "$(cat /sys/module/zcfrag/initstate 2>/dev/null)"
  t_expect "zf0 is a zcfrag device" zcfrag "$(ip -n a -d -o link show zf0 2>/dev/null | grep -o 'zcfrag' | head -n1)"
  ip -n a link del zf0 2>/dev/null
  t_expect "setsockopt(TCP_ULP, zcsock) without CAP_NET_ADMIN loads nothing" ENOENT \
    "$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all python3 -c 'import socket,errno
s = socket.socket()
try:
    s.setsockopt(socket.IPPROTO_TCP, 31, b"zcsock"); print("accepted")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))')"
  t_expect "zcsock not loaded for the unprivileged caller" "" "$(ls -d /sys/module/zcsock 2>/dev/null)"
  t_expect "setsockopt(TCP_ULP, zcsock) as root loads zcsock and attaches it" "accepted 1" "$(ulp_try zcsock)"
  t_expect "setsockopt(TCP_ULP, zcddp) as root loads zcddp (ENOTCONN unconnected)" ENOTCONN "$(ulp_try zcddp)"
  t_expect "zcddp is live" live "$(cat /sys/module/zcddp/initstate 2>/dev/null)"
  echo "$helper" > /proc/sys/kernel/modprobe
  for m in zcddp zcsock zcfrag; do [ ! -d /sys/module/$m ] || rmmod $m; done
else
  t_fail "autoload from the installed tree" "no $inst/lib/modules/$(uname -r)/modules.dep (make install DESTDIR=$inst on the host first)"
fi
t_done
