#!/bin/bash
# siw-race guest script (run through scripts/run-guest.sh --topo veth).
#
#   race-guest.sh KO DELAY_US WMEM RUN...
#
# KO: host path of a siw.ko to insmod (e.g. /tmp/siw-race/siw/siw.ko, built as README says), or
#     "stock" for the kernel's own siw (modprobe).
# DELAY_US: race_delay_us of the patched siw (0: detect only); ignored for stock.
# WMEM: "-" or net.ipv4.tcp_wmem for namespace a (siw's side in c runs),
#     commas for spaces (e.g. 4096,16384,65536): a small send buffer
#     makes siw's sends come back partial.
# RUN: DIR,SIZE,COUNT[,ZARGS] as zcddp-rounds.sh (siw_verbs <-> zcddp-verbs),
#      or r,SIZE,COUNT: siw-to-siw rping -V (CRC forced on via the patched
#      siw's mpa_crc_required, so only with a patched KO).
#      Also directives between runs: delay=N (race_delay_us), wmem=A,B,C
#      (tcp_wmem in a), wmemb=A,B,C (in b), tc=WORDS,... (tc in a, commas
#      for spaces, e.g. tc=qdisc,replace,dev,va,root,netem,delay,2ms), tcb=,
#      pin=CPUS (taskset of siw_verbs and rping, e.g. pin=0), guard=0|1
#      (race_guard: the kthread requeues instead of entering while the syscall is inside).
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
# sv_run from siw-lib.sh; siw_verbs under taskset -c $SV_PIN when set.
. "$ZCNET_ROOT/tools/testing/zcnet/siw-lib.sh"
SV_PIN=
KO=$1 DELAY=$2 WMEM=$3; shift 3
A=$ZCNET_ARTIFACTS
# The guest mounts tmpfs over /tmp: reach the host's /tmp through a
# non-recursive bind mount of the 9p root.
mkdir -p /run/hostroot && mount --bind / /run/hostroot || { t_fail "bind mount of /"; t_done; exit; }
H=/run/hostroot
modprobe -a ib_core iw_cm rdma_cm rdma_ucm ib_uverbs || { t_fail "rdma core modules"; t_done; exit; }
if [ "$KO" = stock ]; then
  t_run "modprobe stock siw" modprobe siw
else
  t_run "insmod $KO race_delay_us=$DELAY" insmod "$H$KO" race_delay_us="$DELAY"
fi
echo "# siw module: $(modinfo -F filename siw 2>/dev/null) srcversion $(cat /sys/module/siw/srcversion 2>/dev/null)"
ip netns exec a rdma link add siwa type siw netdev va && ip netns exec b rdma link add siwb type siw netdev vb ||
  { t_fail "siw on va and vb"; t_done; exit; }
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
if [ "$WMEM" != - ]; then
  ip netns exec a sysctl -w net.ipv4.tcp_wmem="${WMEM//,/ }"
  [ "${RACE_WMEM_B:-0}" = 1 ] && ip netns exec b sysctl -w net.ipv4.tcp_wmem="${WMEM//,/ }"
fi
echo "# tcp_wmem a: $(ip netns exec a sysctl -n net.ipv4.tcp_wmem) b: $(ip netns exec b sysctl -n net.ipv4.tcp_wmem)"
counters() {
  local p out=
  for p in proc_calls proc_calls_kthread overlap_proc overlap_tx overlap_in_delay partial_sends partial_sends_syscall delays guard_requeues ctrl_partial sq_paused inprogress ws_wakeups ws_inside ws_inside_syscall ws_in_delay overlap_phases; do
    [ -r /sys/module/siw/parameters/$p ] && out="$out $p=$(cat /sys/module/siw/parameters/$p)"
  done
  echo "# siw-race counters:${out:- (stock siw: none)}"
}
PORT=7300 i=0
for run in "$@"; do
  case "$run" in
    delay=*) echo "${run#delay=}" > /sys/module/siw/parameters/race_delay_us
             echo "# race_delay_us now $(cat /sys/module/siw/parameters/race_delay_us)"; continue ;;
    wmem=*) ip netns exec a sysctl -w net.ipv4.tcp_wmem="$(echo "${run#wmem=}" | tr , ' ')"; continue ;;
    tc=*) ip netns exec a tc $(echo "${run#tc=}" | tr , ' '); ip netns exec a tc qdisc show dev va | sed 's/^/# tc a: /'; continue ;;
    tcb=*) ip netns exec b tc $(echo "${run#tcb=}" | tr , ' '); ip netns exec b tc qdisc show dev vb | sed 's/^/# tc b: /'; continue ;;
    guard=*) echo "${run#guard=}" > /sys/module/siw/parameters/race_guard; echo "# race_guard now $(cat /sys/module/siw/parameters/race_guard)"; continue ;;
    pin=*) SV_PIN=${run#pin=}; echo "# siw_verbs pinned to CPU(s) $SV_PIN"; continue ;;
    wmemb=*) ip netns exec b sysctl -w net.ipv4.tcp_wmem="$(echo "${run#wmemb=}" | tr , ' ')"; continue ;;
  esac
  i=$((i + 1))
  IFS=, read -r dir size count zargs <<< "$run"
  zargs=${zargs//+/ }
  PORT=$((PORT + 1)) t=$SECONDS
  dmesg -c > "$A/dmesg-before-$i.txt"
  if [ "$dir" = r ]; then
    echo 1 > /sys/module/siw/parameters/mpa_crc_required
    ip netns exec b timeout 1500 ${SV_PIN:+taskset -c $SV_PIN} rping -s -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -V > /tmp/vz 2>&1 &
    pb=$!
    listening b "$PORT"
    ip netns exec a timeout 1500 ${SV_PIN:+taskset -c $SV_PIN} rping -c -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -V > /tmp/vs 2>&1
    RV=$? ; wait $pb; RZ=$?
    echo 0 > /sys/module/siw/parameters/mpa_crc_required
    # rping exits 0 even when the connection failed: "state 10" is its ERROR state.
    t_expect "run $i [delay=$(cat /sys/module/siw/parameters/race_delay_us 2>/dev/null) guard=$(cat /sys/module/siw/parameters/race_guard 2>/dev/null) wmem_a=$(ip netns exec a sysctl -n net.ipv4.tcp_wmem | tr "\t" ,)]: rping siw-to-siw CRC $size B x $count, no error state ($((SECONDS - t)) s)" "0 0 0" "$RV $RZ $(cat /tmp/vs /tmp/vz | grep -ci 'state 10\|error\|fail')"
    tail -n 5 /tmp/vs /tmp/vz | sed 's/^/# /'
  else
    # shellcheck disable=SC2086
    sv_run "$dir" "$size" "$count" 1500 $zargs
    rv=$RV rz=$RZ
    [ "$rv $rz" = "0 0" ] || sed 's/^/# /' /tmp/vs /tmp/vz | tail -n 20
    t_expect "run $i [delay=$(cat /sys/module/siw/parameters/race_delay_us 2>/dev/null) guard=$(cat /sys/module/siw/parameters/race_guard 2>/dev/null) wmem_a=$(ip netns exec a sysctl -n net.ipv4.tcp_wmem | tr "\t" ,)]: siw_verbs -$dir, $size B x $count${zargs:+, $zargs}: every round checked on both sides ($((SECONDS - t)) s)" \
      "0 0 $count $count 0" \
      "$rv $rz $(grep -o '^siw_verbs: [0-9]* rounds' /tmp/vs | cut -d' ' -f2) $(grep -o '^zcddp-verbs: [0-9]* rounds' /tmp/vz | cut -d' ' -f2) $(cat /tmp/vs /tmp/vz | grep -c MISMATCH)"
  fi
  cp /tmp/vs "$A/vs-$i.txt"; cp /tmp/vz "$A/vz-$i.txt"
  counters | tee "$A/counters-$i.txt"
  dmesg > "$A/dmesg-$i.txt"
  echo "# run $i kernel lines: siw-race $(grep -c 'siw-race:' "$A/dmesg-$i.txt"), zcddp CRC $(grep -c 'zcddp: CRC of the FPDU' "$A/dmesg-$i.txt"), zcddp terminating $(grep -c 'zcddp: terminating' "$A/dmesg-$i.txt"), siw TERMINATE $(grep -ci 'terminate' "$A/dmesg-$i.txt")"
  echo "# run $i siw crc errors: $(grep -c 'siw: crc error' "$A/dmesg-$i.txt"), other siw warnings: $(grep 'siw: ' "$A/dmesg-$i.txt" | grep -vc 'siw-race\|crc error')"
  grep -E 'siw-race:|zcddp: CRC|zcddp: terminating|TERMINATE|siw: ' "$A/dmesg-$i.txt" | head -n 14 | sed 's/^/# /'
done
counters
rmmod zcddp
t_done
