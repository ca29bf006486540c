#!/bin/bash
# zcddp's first measurement (issue 11), one guest run in the veth topology
# (namespace a, 198.18.0.1, to b, 198.18.0.2), every path the same run:
#   tcp        zcbench tcp, plain TCP: the floor (ping-pong half round
#              trip, stream bandwidth)
#   zcddp      zcbench ddp, zcddp to zcddp: Send, RDMA Write (half round
#              trip of a Write answered by a Write, memory watched as
#              ib_write_lat does), RDMA Read (the whole Read) latency, RDMA
#              Write bandwidth
#   siw        perftest on soft-iWARP both sides (rdma_cm, -R):
#              ib_write_lat and ib_send_lat (t_typical, their medians)
#              and ib_write_bw, on a
#              veth pair of their own (see below)
#   zcddp-siw  zcddp-verbs -c (zcddp, leading) with siw_verbs -s (rdma-core
#              on siw) in their timing modes (-L, -B; siw_verbs.c has the
#              exchange): Send latency (half round trip of a Send answered
#              by a Send), RDMA Write latency (half round trip of a Write
#              answered by a Write, each side watching the last byte of
#              its region), RDMA Write bandwidth (Writes back to back, then
#              a Send siw answers on arrival), each size's last buffers
#              hashed on both sides
#   faults     RDMA Write bandwidth zcddp (CRC on; out-of-order placement
#              on and off, in-order direct placement off) and siw, and
#              TCP's stream, under netem on the sender's egress: clean, 1%
#              reordered, 1% lost; rounds, medians; for zcddp also every
#              CPU's busy time per byte, the receiver's copies per payload
#              byte and the share it placed out of order (its counters)
#   faultlat   latency under the same faults (netem on the requester's
#              egress), 4 B to 1 MiB: zcddp (CRC on; out-of-order placement
#              on and off) Send, Write and Write-and-Send, siw ib_send_lat
#              and ib_write_lat, TCP's ping-pong
#   rping      the rping iteration (Send, RDMA Read, Send, Send, RDMA
#              Write, Send: zcddp-ping's and rping's sequence) zcddp-ping to
#              zcddp-ping, zcddp-ping to rping on siw, rping to rping on
#              siw (zcbench and perftest do not speak each other's control
#              protocol: zcddp <-> siw runs the programs above)
# bench-ddp.py prints the medians side by side and the ratios. Results:
# $ZCNET_ARTIFACTS (runs.tsv and the programs' own outputs).
#
#   bench-ddp.sh [ZCBENCH_SECONDS=2] [ZCBENCH_ITERS=200] [BENCH_DDP_PARTS=all]
#                [BENCH_DDP_FAULTS=NAME:NETEM|...] [BENCH_DDP_FAULT_ROUNDS=3]
#                [BENCH_DDP_BASE_KO=PATH]
# BENCH_DDP_PARTS: the parts to run, of main (tcp, zcddp, siw), siwverbs
# (zcddp-siw), faults, faultlat and rping, comma-separated; all by default.
# BENCH_DDP_FAULTS: the faults of parts faults and faultlat, NAME:netem
# arguments, |-separated (default below).
# BENCH_DDP_BASE_KO: another build of zcddp.ko (a path the guest sees,
# under ZCNET_ROOT; the running kernel's vermagic), run in part faults
# beside this tree's with placement on, as zcddp-base: a change measured
# against the build before it in the same run and rounds.
set -u
for a in "$@"; do
  case "$a" in
    "") ;;
    ZCBENCH_SECONDS=*|ZCBENCH_ITERS=*|BENCH_DDP_PARTS=*|BENCH_DDP_FAULTS=*|BENCH_DDP_FAULT_ROUNDS=*|BENCH_DDP_BASE_KO=*)
      export "${a?}" ;;
    *) echo "bench-ddp: unknown argument $a"; exit 2 ;;
  esac
done
SECS=${ZCBENCH_SECONDS:-2}
# part NAME: whether part NAME runs.
part() { case ",${BENCH_DDP_PARTS:-all}," in *,all,*|*,"$1",*) return 0 ;; esac; return 1; }
ITERS=${ZCBENCH_ITERS:-200}
LAT_SIZES="4 64 1024 4096 65536 1048576"
BW_SIZES="4096 65536 1048576"
out=${ZCNET_ARTIFACTS:-/tmp}
mkdir -p "$out"
Z="$ZCNET_ROOT/tools/testing/zcnet"
. "$ZCNET_ROOT/scripts/topology.sh"
B=$ZC_IP_B
runs=$out/runs.tsv
# path op bytes value unit
printf 'path\top\tbytes\tvalue\tunit\n' > "$runs"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$runs"; }
csv() { local IFS=,; echo "$*"; }

echo "# kernel $(uname -r) ($ZCNET_FLAVOUR), accel $ZCNET_ACCEL, $(nproc) CPUs, $ITERS iterations, ${SECS} s per bandwidth size"
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko" || exit 1

. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"

if part main; then
  # Plain TCP.
  ip netns exec b zcbench serve --listen "$B:5301" > "$out/tcp-serve.log" 2>&1 &
  ps=$!
  listening b 5301
  ip netns exec a zcbench tcp --connect "$B:5301" --json "$out/tcp.json" --label tcp \
    --lat-sizes "$(csv $LAT_SIZES)" --bw-sizes "$(csv $BW_SIZES)" --iters "$ITERS" --seconds "$SECS" \
    | tee "$out/tcp.txt" || echo "# tcp failed"
  kill $ps 2>/dev/null; wait $ps 2>/dev/null

  # zcddp to zcddp.
  ip netns exec b zcbench ddp-serve --listen "$B:5302" > "$out/ddp-serve.log" 2>&1 &
  ps=$!
  listening b 5302
  ip netns exec a zcbench ddp --connect "$B:5302" --json "$out/zcddp.json" --label zcddp \
    --lat-sizes "$(csv $LAT_SIZES)" --bw-sizes "$(csv $BW_SIZES)" --iters "$ITERS" --seconds "$SECS" \
    | tee "$out/zcddp.txt" || { echo "# zcddp failed"; cat "$out/ddp-serve.log"; }
  kill $ps 2>/dev/null; wait $ps 2>/dev/null
fi

# siw to siw with perftest. perftest's server listens on the wildcard
# address, so rdma_cm listens on every siw device; siw makes each listening
# socket in the server's namespace, bound to its device's ifindex
# (siw_create_listen). va and vb are both ifindex 2 of their namespaces,
# so the second listen failed with EADDRINUSE (cma_listen_on_dev, error
# -98) and the server with it. perftest therefore runs on a veth pair of
# its own with distinct ifindexes (pa 31 in a, pb 32 in b, 198.18.1.0/24),
# the only siw devices while it runs; siwa and siwb (va, vb) come after,
# for the rping pairings.
PB=198.18.1.2
siw=
psiw=
if modprobe -a siw rdma_ucm 2>/dev/null; then
  siw=yes
  if ip link add pa index 31 netns a type veth peer name pb index 32 netns b &&
     ip -n a link set pa up && ip -n a addr add 198.18.1.1/24 dev pa &&
     ip -n b link set pb up && ip -n b addr add "$PB/24" dev pb &&
     ip netns exec a rdma link add siwpa type siw netdev pa &&
     ip netns exec b rdma link add siwpb type siw netdev pb; then
    psiw=yes
  else
    echo "# no veth pair for perftest: siw perftest columns empty"
  fi
else
  echo "# no siw: siw columns empty"
fi
# says FILE TEXT PID: waits (10 s at most) until FILE holds TEXT, or PID
# is gone (a listener on rdma_cm is no socket that ss shows).
says() {
  local i
  for i in $(seq 200); do
    grep -q "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# perf TOOL SIZE ARGS: one perftest run, its result line. The server is
# ready when it says it waits for the client (an rdma_cm listen is no
# socket that ss shows).
# PERF_TAG names the files of runs of the same tool and size apart.
perf() {
  local tool=$1 size=$2 port=18515; shift 2
  local f="$out/$tool-$size${PERF_TAG:-}"
  # A server file left by an earlier run would say it waits at once.
  rm -f "$f.s"
  ip netns exec b timeout 120 "$tool" -d siwpb -R -p $port -s "$size" "$@" > "$f.s" 2>&1 &
  local ps=$!
  says "$f.s" 'Waiting for client' $ps
  ip netns exec a timeout 120 "$tool" -d siwpa -R -p $port -s "$size" "$@" "$PB" > "$f.c" 2>&1
  wait $ps
  # The result line: the size first, then numbers only.
  awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/ { print; exit }' "$f.c"
}
if [ -n "$psiw" ] && part main; then
  for s in $LAT_SIZES; do
    # bytes iterations t_min t_max t_typical t_avg ...
    l=$(perf ib_write_lat "$s" -n "$ITERS")
    echo "# ib_write_lat $s: ${l:-failed}"
    # A failure is no one size's: the rest would fail the same way.
    [ -z "$l" ] && { tail -n 5 "$out/ib_write_lat-$s.s" "$out/ib_write_lat-$s.c"; break; }
    row siw write_lat "$s" "$(awk '{ print $5 }' <<<"$l")" us
  done
  for s in $LAT_SIZES; do
    # The same columns; both sides spin on their CQ, as zcbench's Send
    # latency does.
    l=$(perf ib_send_lat "$s" -n "$ITERS")
    echo "# ib_send_lat $s: ${l:-failed}"
    [ -z "$l" ] && { tail -n 5 "$out/ib_send_lat-$s.s" "$out/ib_send_lat-$s.c"; break; }
    row siw send_lat "$s" "$(awk '{ print $5 }' <<<"$l")" us
  done
  for s in $BW_SIZES; do
    # bytes iterations BW_peak BW_average[MiB/s] MsgRate
    l=$(perf ib_write_bw "$s" -D "$SECS")
    echo "# ib_write_bw $s: ${l:-failed}"
    # (ib_write_bw on siw fails now and then, at any size: the next may not.)
    [ -z "$l" ] && { tail -n 5 "$out/ib_write_bw-$s.s" "$out/ib_write_bw-$s.c"; continue; }
    row siw write_bw "$s" "$(awk '{ printf "%.3f", $4 * 1.048576 }' <<<"$l")" MB/s
  done
fi
# RDMA Write bandwidth under faults on the sender's egress (netem; this
# iproute2 may not take a seed, then netem's own): clean, 1% of the
# segments reordered (sent at once while the rest wait 2 ms), 1% lost.
# FAULT_SIZE bytes a Write, FAULT_ROUNDS rounds (medians). siw to siw here
# on pa/pb (perftest); zcddp to zcddp with out-of-order placement on and
# off, and TCP's stream, on va/vb at the end (each round reloads zcddp).
FAULT_SIZE=65536
FAULT_ROUNDS=${BENCH_DDP_FAULT_ROUNDS:-3}
FAULTS=${BENCH_DDP_FAULTS:-"clean:|reorder1:delay 2ms reorder 1%|loss1:loss 1%"}
IFS='|' read -r -a faults <<< "$FAULTS"
netem() { # NS DEV NETEM-ARGS (empty: none)
  ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null
  [ -z "$3" ] && return 0
  # shellcheck disable=SC2086 # netem's words
  ip netns exec "$1" tc qdisc add dev "$2" root netem $3 seed 1 2>/dev/null ||
    ip netns exec "$1" tc qdisc add dev "$2" root netem $3
}
if [ -n "$psiw" ] && part faults; then
  for r in $(seq "$FAULT_ROUNDS"); do
    for f in "${faults[@]}"; do
      name=${f%%:*} args=${f#*:}
      netem a pa "$args"
      l=$(PERF_TAG="-$name-$r" perf ib_write_bw "$FAULT_SIZE" -D "$SECS")
      [ -n "$l" ] && row "siw@$name" write_bw "$FAULT_SIZE" "$(awk '{ printf "%.3f", $4 * 1.048576 }' <<<"$l")" MB/s
      echo "# faults $name, round $r: siw ${l:-failed}"
    done
    netem a pa ""
  done
fi

# Latency under the same faults (part faultlat), FAULT_LAT_SIZES, ITERS
# round trips a size, one round; netem on the requester's egress only (a:
# its Sends and Writes are faulted, the answers are not). siw: ib_send_lat
# and ib_write_lat (siw places in order, so the last byte it watches
# arrives last).
FAULT_LAT_SIZES="4 4096 65536 1048576"
if [ -n "$psiw" ] && part faultlat; then
  for f in "${faults[@]}"; do
    name=${f%%:*} args=${f#*:}
    netem a pa "$args"
    for t in ib_send_lat ib_write_lat; do
      for s in $FAULT_LAT_SIZES; do
        l=$(PERF_TAG="-$name" perf $t "$s" -n "$ITERS")
        [ -n "$l" ] && row "siw@$name" "${t#ib_}" "$s" "$(awk '{ print $5 }' <<<"$l")" us
        echo "# faults $name: siw $t $s ${l:-failed}"
      done
    done
  done
  netem a pa ""
fi

if [ -n "$psiw" ]; then
  ip netns exec a rdma link delete siwpa
  ip netns exec b rdma link delete siwpb
fi
if [ -n "$siw" ] && ! { ip netns exec a rdma link add siwa type siw netdev va &&
                        ip netns exec b rdma link add siwb type siw netdev vb; }; then
  echo "# no siw on va/vb: siw rping columns empty"
  siw=
fi

# zcddp-verbs -c in a with siw_verbs -s on siwb in b, timing modes, one
# connection per size: -L for LAT_SIZES, -B for BW_SIZES (both where a
# size is in both). The leader's "result" lines go to runs.tsv, and only
# when both sides printed "all checked" (every check passed on each).
bad=0
vt() {
  local size=$1 flags=$2 port=7175 rs rz
  # shellcheck disable=SC2086 # flags are words
  ip netns exec b timeout 300 siw_verbs -s -a "$B" -p $port -S "$size" -r 5 $flags > "$out/vt-$size.s" 2>&1 &
  local ps=$!
  says "$out/vt-$size.s" 'siw_verbs: listening' $ps
  # shellcheck disable=SC2086
  ip netns exec a timeout 300 zcddp-verbs -c -a "$B" -p $port -S "$size" -r 5 $flags > "$out/vt-$size.c" 2>&1
  rz=$?
  wait $ps
  rs=$?
  if [ $rz = 0 ] && [ $rs = 0 ] && grep -q '^zcddp-verbs: all checked' "$out/vt-$size.c" &&
     grep -q '^siw_verbs: all checked' "$out/vt-$size.s"; then
    awk '$1 == "zcddp-verbs:" && $2 == "result" { print $3, $4, $5, $6 }' "$out/vt-$size.c" |
      while read -r op bytes value unit; do row zcddp-siw "$op" "$bytes" "$value" "$unit"; done
    echo "# zcddp-siw $size ($flags): ok, checked on both sides"
  else
    echo "# zcddp-siw $size ($flags): FAILED (zcddp-verbs $rz, siw_verbs $rs)"
    tail -n 4 "$out/vt-$size.c" "$out/vt-$size.s"
    bad=1
  fi
}
if [ -n "$siw" ] && part siwverbs; then
  for s in $(printf '%s\n' $LAT_SIZES $BW_SIZES | sort -n -u); do
    f=
    case " $LAT_SIZES " in *" $s "*) f="-L $ITERS" ;; esac
    case " $BW_SIZES " in *" $s "*) f="$f -B $SECS" ;; esac
    vt "$s" "$f"
  done
fi

# The rping iteration: COUNT iterations of SIZE, its time per iteration.
# rp NAME SERVER... -- CLIENT...
rp() {
  local name=$1 size=$2 count=$3 sv=() cl=(); shift 3
  while [ "$1" != -- ]; do sv+=("$1"); shift; done; shift; cl=("$@")
  ip netns exec b timeout 300 "${sv[@]}" -s -a "$B" -p 7174 -S "$size" > "$out/rp-$name-$size.s" 2>&1 &
  local ps=$!
  listening b 7174
  local t0 t1 rc
  t0=$(date +%s%N)
  ip netns exec a timeout 300 "${cl[@]}" -c -a "$B" -p 7174 -S "$size" -C "$count" -V > "$out/rp-$name-$size.c" 2>&1
  rc=$?
  t1=$(date +%s%N)
  # rping's server keeps serving (-P is not given: it exits with the client).
  wait $ps
  if [ $rc = 0 ]; then
    row "$name" rping_iter "$size" "$(awk -v a="$t0" -v b="$t1" -v n="$count" 'BEGIN { printf "%.1f", (b - a) / 1000 / n }')" us
    echo "# rping iteration $name $size: ok"
  else
    echo "# rping iteration $name $size: failed ($rc)"; tail -n 3 "$out/rp-$name-$size.c"
  fi
}
for s in 64 65535; do
  part rping || break
  rp zcddp-zcddp $s "$ITERS" zcddp-ping -- zcddp-ping
  if [ -n "$siw" ]; then
    rp zcddp-siw $s "$ITERS" rping -- zcddp-ping
    rp siw-zcddp $s "$ITERS" zcddp-ping -- rping
    rp siw-siw $s "$ITERS" rping -- rping
  fi
done

# The faults on va/vb: zcddp with out-of-order placement on (ooo=1, the
# default) and off (ooo=0: in order only, as siw places), zcddp with
# in-order direct placement off (rxdirect=0: every received byte staged,
# two or three copies), and TCP's stream.
jbw() { # JSON KEY: the one bandwidth row's KEY
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["bandwidth"][0][sys.argv[2]])' "$1" "$2" 2>/dev/null
}
# zstat NAME: a counter of b's /proc/net/zcddp_stat (0 without zcddp).
zstat() { ip netns exec b awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' /proc/net/zcddp_stat 2>/dev/null || echo 0; }
# copies: b's received payload bytes and their copies so far: placed
# directly (one copy, skb to registration), out of order (one: out of
# the skb in TCP's out-of-order queue into the registration; not copied
# again in order; two before 2026-11-28, through a scratch buffer), staged (two: out of TCP into
# the staging buffer, then into the registration; a third through the
# parser's FPDU buffer for those reassembled there).
copies() {
  echo "$(zstat ZcddpBytesPlaced) $(( $(zstat ZcddpRxBytesDirect) + $(zstat ZcddpBytesPlacedOutOfOrder) +
    2 * ( $(zstat ZcddpRxBytesStagedSmall) + $(zstat ZcddpRxBytesStagedFraming) ) +
    $(zstat ZcddpRxBytesReassembled) ))"
}
# zb KIND PATH TAG PORT: one zcbench KIND (tcp, ddp) bandwidth run, as PATH@NAME.
# zcddp negotiates CRC here: out-of-order placement checks each FPDU's CRC
# before it places a byte, so it runs only on a connection with CRC
# (without it, ooo=1 and ooo=0 would be the same). siw's initiator never
# asks for CRC (its mpa_crc_required is a constant false): siw runs without.
zb() {
  local v= c0 c1 o0 o1 crc=
  [ "$1" = ddp ] && crc=--crc
  c0=$(copies) o0=$(zstat ZcddpBytesPlacedOutOfOrder)
  ip netns exec a zcbench "$1" --connect "$B:$4" --json "$out/$2-$3.json" --label "$2-$3" \
    --lat-sizes none --bw-sizes "$FAULT_SIZE" --seconds "$SECS" $crc > "$out/$2-$3.txt" 2>&1 &&
    v=$(jbw "$out/$2-$3.json" mbytes_per_s) && row "$2@$name" write_bw "$FAULT_SIZE" "$v" MB/s &&
    row "$2@$name" sys_cpu "$FAULT_SIZE" "$(jbw "$out/$2-$3.json" sys_cpu_ns_per_byte)" ns/B
  if [ "$1" = ddp ] && [ -n "$v" ]; then
    c1=$(copies) o1=$(zstat ZcddpBytesPlacedOutOfOrder)
    set -- $c0 $c1
    [ $(($3 - $1)) -gt 0 ] && row "$PATHNAME@$name" copies "$FAULT_SIZE" \
      "$(awk -v p=$(($3 - $1)) -v c=$(($4 - $2)) 'BEGIN { printf "%.3f", c / p }')" copies/B &&
      row "$PATHNAME@$name" ooo_share "$FAULT_SIZE" \
        "$(awk -v p=$(($3 - $1)) -v o=$((o1 - o0)) 'BEGIN { printf "%.4f", o / p }')" share
  fi
  echo "# faults $name: $PATHNAME ${v:-failed}"
}
modes="1:1 0:1 1:0"
if [ -n "${BENCH_DDP_BASE_KO:-}" ]; then
  if [ -f "$BENCH_DDP_BASE_KO" ]; then
    modes="$modes base"
  else
    echo "# BENCH_DDP_BASE_KO=$BENCH_DDP_BASE_KO: no such file in the guest"
  fi
fi
for r in $(seq "$FAULT_ROUNDS"); do
  part faults || break
  for mode in $modes; do
    ko=$ZCNET_ROOT/net/ddp/zcddp.ko
    [ "$mode" = base ] && mode=1:1 ko=$BENCH_DDP_BASE_KO
    ooo=${mode%:*} rxd=${mode#*:}
    path=zcddp; [ $ooo = 0 ] && path=zcddp-inorder; [ $rxd = 0 ] && path=zcddp-staged
    [ "$ko" = "${BENCH_DDP_BASE_KO:-}" ] && path=zcddp-base
    PATHNAME=$path
    if ! { rmmod zcddp && insmod "$ko" ooo=$ooo rxdirect=$rxd; }; then
      echo "# zcddp not reloaded from $ko with ooo=$ooo rxdirect=$rxd"; continue
    fi
    ip netns exec b zcbench ddp-serve --listen "$B:5303" > "$out/ddp-serve-$path-$r.log" 2>&1 &
    fps=$!
    listening b 5303
    for f in "${faults[@]}"; do
      name=${f%%:*} args=${f#*:}
      netem a va "$args"
      zb ddp $path "$name-$r" 5303
    done
    netem a va ""
    kill $fps 2>/dev/null; wait $fps 2>/dev/null
  done
  for f in "${faults[@]}"; do
    name=${f%%:*} args=${f#*:}
    netem a va "$args"
    # (zcbench serve takes one connection.)
    ip netns exec b zcbench serve --listen "$B:5304" > "$out/tcp-serve-$name-$r.log" 2>&1 &
    fpt=$!
    listening b 5304
    PATHNAME=tcp
    zb tcp tcp "$name-$r" 5304
    kill $fpt 2>/dev/null; wait $fpt 2>/dev/null
  done
  netem a va ""
done

# zcddp under the faults (part faultlat): CRC on, out-of-order placement
# on and off; Send, Write (the last byte watched: with placement on it can
# be seen before a hole in the Write is filled) and Write-and-Send (the
# Send's receive: the Write before it is placed) latency; TCP's ping-pong
# as the floor.
# latrows JSON PATH [OP]: zcbench's latency rows into runs.tsv, as PATH's
# OP (default: the row's op, as OP_lat).
latrows() {
  python3 - "$1" "$2" "${3:-}" >> "$runs" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["latency"]:
    op = sys.argv[3] or r["op"] + "_lat"
    print("\t".join([sys.argv[2], op, str(r["bytes"]), str(r["median_us"]), "us"]))
PY
}
if part faultlat; then
  for ooo in 1 0; do
    path=zcddp; [ $ooo = 0 ] && path=zcddp-inorder
    if ! { rmmod zcddp && insmod "$ZCNET_ROOT/net/ddp/zcddp.ko" ooo=$ooo; }; then
      echo "# zcddp not reloaded with ooo=$ooo"; continue
    fi
    for f in "${faults[@]}"; do
      name=${f%%:*} args=${f#*:}
      ip netns exec b zcbench ddp-serve --listen "$B:5305" > "$out/lat-serve-$path-$name.log" 2>&1 &
      fls=$!
      listening b 5305
      netem a va "$args"
      o0=$(zstat ZcddpBytesPlacedOutOfOrder)
      if ip netns exec a timeout 900 zcbench ddp --connect "$B:5305" --crc --json "$out/lat-$path-$name.json" \
        --label "$path@$name" --lat-sizes "$(csv $FAULT_LAT_SIZES)" --lat-ops send,write,wsend \
        --bw-sizes none --iters "$ITERS" > "$out/lat-$path-$name.txt" 2>&1; then
        latrows "$out/lat-$path-$name.json" "$path@$name"
        echo "# faults $name: $path latency done, $(( $(zstat ZcddpBytesPlacedOutOfOrder) - o0 )) bytes placed out of order"
      else
        echo "# faults $name: $path latency failed"; tail -n 3 "$out/lat-$path-$name.txt" "$out/lat-serve-$path-$name.log"
      fi
      netem a va ""
      kill $fls 2>/dev/null; wait $fls 2>/dev/null
    done
  done
  for f in "${faults[@]}"; do
    name=${f%%:*} args=${f#*:}
    ip netns exec b zcbench serve --listen "$B:5306" > "$out/lat-tcp-serve-$name.log" 2>&1 &
    fls=$!
    listening b 5306
    netem a va "$args"
    if ip netns exec a timeout 900 zcbench tcp --connect "$B:5306" --json "$out/lat-tcp-$name.json" \
      --label "tcp@$name" --lat-sizes "$(csv $FAULT_LAT_SIZES)" --bw-sizes none --iters "$ITERS" \
      > "$out/lat-tcp-$name.txt" 2>&1; then
      latrows "$out/lat-tcp-$name.json" "tcp@$name" tcp_lat
    else
      echo "# faults $name: tcp latency failed"
    fi
    netem a va ""
    kill $fls 2>/dev/null; wait $fls 2>/dev/null
  done
fi

python3 "$Z/bench-ddp.py" "$out"
# A zcddp <-> siw check that failed fails the run.
exit $bad
