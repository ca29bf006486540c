#!/bin/bash
# bench-ddp-twoguests.sh: zcddp's RDMA Write bandwidth between two guests,
# out-of-order placement on and off, by hand (Documentation/notes/
# 2026-12-08-zcddp-history.md, "Between two guests, one vCPU each"):
#
#   scripts/run-guest.sh --topo twoguests --cpus 1 --timeout 1800 \
#     --log out/tg.log tools/testing/zcnet/bench-ddp-twoguests.sh \
#     [ROUNDS=3] [SECS=6] ['NETEM=loss 1%'] [PERF=1] [BASE_KO=PATH]
#
# Guest a streams 64 KiB RDMA Writes with CRC (zcbench ddp) into guest b
# (zcbench ddp-serve) for SECS seconds, netem NETEM on a's egress; each
# round runs placement on (b's zcddp loaded with ooo=1), off (ooo=0) and
# on over the bare wire ("clean": the guests' UDP wire itself loses a
# little); with BASE_KO (a path both guests see), another build of
# zcddp.ko, placement on, after "on" in each round ("base"), on b only.
# Unlike veth, where both ends share one kernel and a segment's receive
# softirq runs on the sender's CPU, each end here has its own vCPU and
# kernel. The guests meet at TCP barriers, never by sleeping.
#
# a prints each run's bandwidth, its own busy share and TCP's loss
# recovery counters (nstat), then the medians and placement on against
# off; b prints its busy share by /proc/stat's ticks and by the time that
# passed less the idle time, its context switches and local timer
# interrupts a second, and the bytes it placed out of order. PERF=1: b samples its kernel
# (perf record -a -g -e cpu-clock:k) during each run and leaves the
# reports in its artifacts (self-R-MODE.txt, children-R-MODE.txt).
set -u
for a in "$@"; do
  case "$a" in
    ROUNDS=*|SECS=*|NETEM=*|PERF=*|BASE_KO=*) export "${a?}" ;;
    *) echo "bench-ddp-twoguests: unknown argument $a"; exit 2 ;;
  esac
done
role=${ZCNET_ROLE:-a}
ROUNDS=${ROUNDS:-3} SECS=${SECS:-6} NETEM=${NETEM:-loss 1%} PERF=${PERF:-} BASE_KO=${BASE_KO:-}
modes="on${BASE_KO:+ base} off clean"
. "$ZCNET_ROOT/scripts/topology.sh"
if [ "$role" = a ]; then
  NS=$ZC_NS_A PEER=$ZC_IP_B
else
  NS=$ZC_NS_B PEER=$ZC_IP_A
fi
PORT=5305
out=${ZCNET_ARTIFACTS:-/tmp}
mkdir -p "$out"
# meet N: both guests reach point N (a listens, b connects, bounded).
meet() {
  if [ "$role" = a ]; then
    ip netns exec "$NS" timeout 300 socat -u "TCP-LISTEN:$((7100 + $1)),reuseaddr" - >/dev/null
  else
    ip netns exec "$NS" timeout 300 socat -u - "TCP:$PEER:$((7100 + $1)),retry=3000,interval=0.1" </dev/null
  fi
}
# ticks: busy, idle (idle and iowait: under NO_HZ_IDLE measured by the
# clock, where busy is sampled at the tick) and all of /proc/stat's first
# line, in USER_HZ ticks; then its context switches and the local timer
# interrupts (/proc/interrupts' LOC), both counts so far.
ticks() {
  awk '/^cpu / { printf "%d %d %d ", $2 + $3 + $4 + $7 + $8, $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 }
       /^ctxt / { printf "%d ", $2 }' /proc/stat
  awk '$1 == "LOC:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i } END { print n + 0 }' /proc/interrupts
}
ooo_bytes() { ip netns exec "$NS" awk '$1 == "ZcddpBytesPlacedOutOfOrder" { print $2 }' /proc/net/zcddp_stat; }

insmod "$ZCNET_ROOT/net/ddp/zcddp.ko" || exit 1
for _ in $(seq 600); do ip netns exec "$NS" ping -c 1 -W 1 "$PEER" >/dev/null 2>&1 && break; done
echo "# guest $role: kernel $(uname -r) ($ZCNET_FLAVOUR), accel $ZCNET_ACCEL, $(nproc) CPUs;" \
  "netem '$NETEM' on a's egress, 64 KiB Writes with CRC, $SECS s a run, $ROUNDS rounds"
n=0 bad=0
declare -A bw
for r in $(seq "$ROUNDS"); do
  for mode in $modes; do
    n=$((n + 1))
    if [ "$role" = b ]; then
      ko=$ZCNET_ROOT/net/ddp/zcddp.ko
      [ $mode = base ] && ko=$BASE_KO
      rmmod zcddp && insmod "$ko" ooo=$([ $mode = off ] && echo 0 || echo 1) || exit 1
      ip netns exec b zcbench ddp-serve --listen "$ZC_IP_B:$PORT" > "$out/serve-$r-$mode.log" 2>&1 &
      s=$!
      for _ in $(seq 200); do ip netns exec b ss -Hltn "sport = :$PORT" | grep -q . && break; sleep 0.05; done
      o0=$(ooo_bytes)
      read -r b0 i0 t0 c0 l0 <<< "$(ticks)"
      e0=${EPOCHREALTIME/./}
      meet $((2 * n))
      pp=
      if [ -n "$PERF" ]; then perf record -q -a -g -e cpu-clock:k -o /tmp/perf.data 2>/dev/null & pp=$!; fi
      meet $((2 * n + 1))
      read -r b1 i1 t1 c1 l1 <<< "$(ticks)"
      e1=${EPOCHREALTIME/./}
      if [ -n "$pp" ]; then
        kill -INT $pp; wait $pp
        perf report -i /tmp/perf.data --stdio --no-children --sort sym -g none 2>/dev/null |
          grep -v '^#' | grep '%' | head -n 80 > "$out/self-$r-$mode.txt"
        perf report -i /tmp/perf.data --stdio --children --sort sym -g none 2>/dev/null |
          grep -v '^#' | grep '%' | head -n 250 > "$out/children-$r-$mode.txt"
        echo "# round $r $mode: perf's idle share $(awk '/pv_native_safe_halt|default_idle$/ { print $1; exit }' "$out/self-$r-$mode.txt")"
      fi
      kill $s 2>/dev/null; wait $s 2>/dev/null
      # USER_HZ is 100: a tick is 10 ms, elapsed in microseconds.
      span=$(( (e1 - e0) * $(nproc) ))
      echo "round $r $mode receiver: busy $(( 100 * (b1 - b0) / (t1 - t0) ))% by /proc/stat's ticks," \
        "$(( 100 - (i1 - i0) * 10000 * 100 / span ))% by the time that passed less idle;" \
        "/proc/stat accounted $(( (t1 - t0) * 10000 * 100 / span ))% of that time;" \
        "$(( (c1 - c0) * 1000000 / (e1 - e0) )) context switches and $(( (l1 - l0) * 1000000 / (e1 - e0) ))" \
        "timer interrupts a second; $(( $(ooo_bytes) - o0 )) B placed out of order"
    else
      meet $((2 * n))
      # shellcheck disable=SC2086 # netem's words
      [ $mode = clean ] || ip netns exec a tc qdisc replace dev va root netem $NETEM
      ip netns exec a nstat -n
      read -r b0 _ t0 _ <<< "$(ticks)"
      if ! ip netns exec a timeout $((SECS + 120)) zcbench ddp --connect "$ZC_IP_B:$PORT" --crc \
          --json "$out/bw-$r-$mode.json" --label "$mode" --lat-sizes none --bw-sizes 65536 \
          --seconds "$SECS" > "$out/bw-$r-$mode.txt" 2>&1; then
        echo "# round $r $mode: zcbench failed"; tail -n 3 "$out/bw-$r-$mode.txt"; bad=1
      fi
      read -r b1 _ t1 _ <<< "$(ticks)"
      ip netns exec a tc qdisc del dev va root 2>/dev/null
      ip netns exec a nstat | grep -E 'TcpRetransSegs|SackRecovery|LossProbes|Timeouts' | sed "s/^/# round $r $mode: /"
      meet $((2 * n + 1))
      bw[$r-$mode]=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["bandwidth"][0]["mbytes_per_s"])' \
        "$out/bw-$r-$mode.json" 2>/dev/null || echo -)
      echo "round $r $mode sender: ${bw[$r-$mode]} MB/s, busy $(( 100 * (b1 - b0) / (t1 - t0) ))%"
    fi
  done
done
if [ "$role" = a ]; then
  for r in $(seq "$ROUNDS"); do printf '%s %s %s %s\n' "${bw[$r-on]}" "${bw[$r-off]}" "${bw[$r-clean]}" "${bw[$r-base]:-0}"; done |
    python3 -c '
import statistics, sys
rows = [[float(x) for x in l.split()] for l in sys.stdin if "-" not in l.split()]
if rows:
    on, off, clean, base = (statistics.median(c) for c in zip(*rows))
    ratios = ", ".join("%.2f" % (r[0] / r[1]) for r in rows)
    print("medians of %d rounds, MB/s: placement on %.1f, off %.1f, on over the bare wire %.1f;"
          " on/off %.2f (rounds: %s)" % (len(rows), on, off, clean, on / off, ratios))
    if base:
        print("the base build (BASE_KO), placement on: %.1f; on/base %.2f (rounds: %s)"
              % (base, on / base, ", ".join("%.2f" % (r[0] / r[3]) for r in rows)))'
fi
exit $bad
