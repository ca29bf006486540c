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
# siw's accept race (zcddp.rst, "siw loses a first FPDU that comes too
# soon") stalls a pairing in which zcddp sends first now and then: the
# pairings with that signature run again, up to SIW_TRIES tries in all.
SIW_TRIES=3
# siw_unread: /proc/net/tcp lines on stdin hold an established socket on
# local port PORT with bytes it never read (rx_queue): siw's end of a
# connection that its accept race left stalled.
siw_unread() {
  awk -v p="$(printf ':%04X' "$PORT")" '
    substr($2, length($2) - 4) == p && $4 == "01" {
      split($5, q, ":"); if (q[2] !~ /^0+$/) f = 1 }
    END { exit !f }'
}
sv_run() {
  local dir=$1 size=$2 count=$3 to=$4 pb pz ts= try
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
    return
  fi
  for try in $(seq $SIW_TRIES); do
    ip netns exec b timeout "$to" $ts siw_verbs -s -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -r 11 ${SV_ARGS:-} > /tmp/vs 2>&1 &
    pb=$!
    listening b "$PORT"
    ip netns exec a timeout "$to" zcddp-verbs -c -a "$ZC_IP_B" -p "$PORT" -S "$size" -C "$count" -r 11 "$@" > /tmp/vz 2>&1 &
    pz=$!
    # siw's end of the connection as zcddp-verbs last saw it waiting:
    # b's TCP sockets copied every half second while it runs (siw tears
    # the socket down once zcddp-verbs has gone), by one shell in b whose
    # builtins keep it cheap beside the timing modes.
    : > /tmp/vss
    ip netns exec b bash -c 'while kill -0 '$pz' 2> /dev/null; do
        mapfile -t l < /proc/net/tcp; mapfile -t -O ${#l[@]} l < /proc/net/tcp6
        printf "%s\n" "${l[@]}" > /tmp/vss; sleep 0.5; done'
    wait $pz
    RZ=$?
    if [ $RZ != 0 ] && [ $try -lt $SIW_TRIES ] && sv_first_lost; then
      grep -i "$(printf ':%04X ' "$PORT")" /tmp/vss | sed 's/^/# siw stalled: /'
      echo "# siw left zcddp-verbs's first FPDU unread (its accept race, not zcddp's): once more"
      kill $pb 2>/dev/null; wait $pb
      continue
    fi
    wait $pb
    RV=$?
    break
  done
}
# sv_first_lost: siw's accept race in sv_run's DIR s: zcddp-verbs, which
# sends first, received nothing and checked nothing, and a socket of siw's
# on PORT held unread bytes while zcddp-verbs waited.
sv_first_lost() {
  grep -q 'nothing received' /tmp/vz && ! grep -q ' ok (hash\|median' /tmp/vz && siw_unread < /tmp/vss
}
