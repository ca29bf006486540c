#!/bin/bash
# bench-ddp-zs.sh: zcddp-verbs against siw_verbs in their timing modes
# (-L), zcddp leading, with zcddp-verbs's rings and with --syscall,
# alternating, ROUNDS rounds of SIZES; one "RES ROUND MODE OP BYTES US"
# line per result (the leader's median) (Documentation/notes/2026-12-08-zcddp-history.md,
# "The receive ring"). By hand:
#
#   scripts/run-guest.sh --topo veth --timeout 900 --log out/zs-ab.log \
#     tools/testing/zcnet/bench-ddp-zs.sh [ROUNDS=5] [ITERS=2000] [SIZES="4 64 1024"]
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/siw-lib.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
for a in "$@"; do
  case "$a" in ROUNDS=*|ITERS=*|SIZES=*) export "${a?}" ;; esac
done
ROUNDS=${ROUNDS:-5} ITERS=${ITERS:-2000} SIZES=${SIZES:-4 64 1024}
modprobe -a siw rdma_ucm
ip netns exec a rdma link add siwa type siw netdev va
ip netns exec b rdma link add siwb type siw netdev vb
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
PORT=7400 bad=0
: > /tmp/res
for r in $(seq "$ROUNDS"); do
  for mode in rings syscall; do
    for size in $SIZES; do
      PORT=$((PORT + 1))
      f=()
      [ $mode = syscall ] && f=(--syscall)
      SV_ARGS="-L $ITERS" sv_run s "$size" 1 300 -L "$ITERS" "${f[@]}"
      if [ "$RZ $RV" = "0 0" ] && grep -q '^zcddp-verbs: all checked' /tmp/vz && grep -q '^siw_verbs: all checked' /tmp/vs; then
        awk -v r=$r -v m=$mode '$2 == "result" { print "RES", r, m, $3, $4, $5 }' /tmp/vz | tee -a /tmp/res
      else
        bad=$((bad + 1))
        echo "# $mode $size round $r: FAILED (zcddp-verbs $RZ, siw_verbs $RV)"
        tail -n 3 /tmp/vz /tmp/vs | sed 's/^/# /'
      fi
      grep -o 'completions and receives by [a-z]*' /tmp/vz | sed "s/^/# $mode $size: /"
    done
  done
done
# Medians of the rounds' medians, and rings over syscall.
awk '{ k = $4 " " $5; n[k, $3]++; v[k, $3, n[k, $3]] = $6; keys[k] = 1 }
  function med(k, m,   i, j, t, c, a) {
    c = n[k, m]; for (i = 1; i <= c; i++) a[i] = v[k, m, i]
    for (i = 2; i <= c; i++) { t = a[i]; for (j = i - 1; j > 0 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
  }
  END { for (k in keys) if (n[k, "rings"] && n[k, "syscall"])
    printf "# median %s us: rings %.2f syscall %.2f rings/syscall %.2f\n", k, med(k, "rings"), med(k, "syscall"), med(k, "rings") / med(k, "syscall") }' /tmp/res | sort
t_expect "every run checked on both sides" 0 "$bad"
t_run "rmmod zcddp" rmmod zcddp
t_done
