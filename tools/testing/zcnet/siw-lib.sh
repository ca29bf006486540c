# Helpers of the siw interop scripts (sourced by zcddp.sh and
# zcddp-rounds.sh); `listening NS PORT` must be defined by the caller.
#
# sv_run DIR SIZE COUNT TIMEOUT [ZARGS...]: one connection of siw_verbs
# (rdma-core on siw) with zcddp-verbs, COUNT rounds of SIZE bytes on PORT,
# both under `timeout TIMEOUT`; DIR c: siw_verbs connects from a,
# zcddp-verbs -s in b; DIR s: siw_verbs -s in b, zcddp-verbs -c in a.
# ZARGS go to zcddp-verbs. Their output in /tmp/vs and /tmp/vz, their
# exit statuses in RV and RZ. With SV_PIN set, siw_verbs runs under
# taskset -c $SV_PIN (siw-tx-race/race-guest.sh); SV_ARGS go to
# siw_verbs (its timing modes: "-L ITERS", which ZARGS give zcddp-verbs too).
sv_run() {
  local dir=$1 size=$2 count=$3 to=$4 pb ts=
  shift 4
  [ -n "${SV_PIN:-}" ] && ts="taskset -c $SV_PIN"
  if [ "$dir" = c ]; then
    ip netns exec b timeout "$to" zcddp-verbs -s -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -r 11 "$@" > /tmp/vz 2>&1 &
    pb=$!
    listening b "$PORT"
    ip netns exec a timeout "$to" $ts siw_verbs -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -r 11 ${SV_ARGS:-} > /tmp/vs 2>&1
    RV=$?
    wait $pb
    RZ=$?
  else
    ip netns exec b timeout "$to" $ts siw_verbs -s -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -r 11 ${SV_ARGS:-} > /tmp/vs 2>&1 &
    pb=$!
    listening b "$PORT"
    ip netns exec a timeout "$to" zcddp-verbs -c -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -r 11 "$@" > /tmp/vz 2>&1
    RZ=$?
    wait $pb
    RV=$?
  fi
}
