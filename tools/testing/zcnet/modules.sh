#!/bin/bash
# Loads, exercises and unloads the zcnet modules; checks the rust/ layer they
# share (extra bindings, C helpers, counters) end to end.
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
t_done
