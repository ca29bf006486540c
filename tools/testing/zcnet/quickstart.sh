#!/bin/bash
# The README's quick starts, run as written (veth): every block marked
# <!-- quickstart host=... --> (scripts/quickstarts.py), in the README's
# order, host A's in namespace a and host B's in namespace b, each namespace's
# interface named eth0 with the README's address (A 10.0.0.1, B 10.0.0.2).
# Each block runs as one `bash -e -o pipefail` script in its host's directory
# (/tmp/quickstart/a, b): every command must succeed. A serve=PORT block
# stays running until TCP PORT listens in its namespace, the next block runs,
# and then it must end with status 0. The modules load as the README says
# they do once installed: from the tree `make install DESTDIR=INSTALLED`
# wrote (make check's install step), through their aliases; ip's plugin and
# the tools come from there too.
#   usage: quickstart.sh [INSTALLED [README]]   (README: a file under the
#   checkout; by default the checkout's README.md)
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
inst=${1:-$ZCNET_ROOT/out/install}
readme=${2:-$ZCNET_ROOT/README.md}
work=/tmp/quickstart
BOUND=300
mkdir -p "$work/a" "$work/b"

# The README's two hosts: the veth ends renamed eth0, with its addresses.
for h in a b; do
  [ $h = a ] && { dev=$ZC_IF_A ip=10.0.0.1; } || { dev=$ZC_IF_B ip=10.0.0.2; }
  ip -n $h -batch - <<EOF
link set $dev down
link set $dev name eth0
addr flush dev eth0
addr add $ip/24 dev eth0
link set eth0 up
EOF
done
t_expect "hosts A and B: eth0 with 10.0.0.1 and 10.0.0.2" "10.0.0.1/24 10.0.0.2/24" \
  "$(ip -n a -4 -o addr show dev eth0 | awk '{ print $4 }') $(ip -n b -4 -o addr show dev eth0 | awk '{ print $4 }')"
ns_anchor a b

# The installed tree: the kernel's module helper finds zcnet's modules there
# (modprobe -d, as modules.sh does) and everything else among the test
# kernel's own; its tools and ip plugin come first.
if [ -f "$inst/lib/modules/$(uname -r)/modules.dep" ]; then
  printf '#!/bin/sh\n/sbin/modprobe -d "%s" "$@" 2>/dev/null || exec /sbin/modprobe -d "%s" "$@"\n' \
    "$inst" "$ZCNET_MODROOT" > /run/zcnet/modprobe-quickstart
  chmod +x /run/zcnet/modprobe-quickstart
  echo /run/zcnet/modprobe-quickstart > /proc/sys/kernel/modprobe
  export PATH=$inst/usr/local/bin:$PATH
  plugin=$(find "$inst" -name link_zcfrag.so | head -n 1)
  export IP_LIB_DIR=${plugin%/*}
  t_ok "modules, tools and ip plugin from the installed tree $inst"
else
  for m in zcfrag zcsock zcddp; do insmod "$(ko $m)"; done
  export IP_LIB_DIR=$ZCNET_ROOT/tools/target/ip
  t_skip "modules, tools and ip plugin from the installed tree" "no $inst (make install DESTDIR=$inst first): the checkout's, loaded by insmod"
fi

list=$(python3 "$ZCNET_ROOT/scripts/quickstarts.py" "$readme" "$work/blocks" 2>&1) ||
  { t_fail "quick starts extracted from $readme" "$list"; t_done; exit; }
t_ok "$(wc -l <<<"$list") quick-start blocks extracted from ${readme#"$ZCNET_ROOT"/}"

# run_block N HOST: block N on HOST (namespace HOST), in its directory, its
# output (with each command, bash -x) in $work/N.HOST.log. Called in a
# subshell, which becomes timeout: stopping that pid (TERM) stops the
# block's whole process group.
run_block() {
  cd "$work/$2" && exec timeout $BOUND ip netns exec "$2" bash -e -o pipefail -x "$work/blocks/$1" > "$work/$1.$2.log" 2>&1
}
# show N HOST: the block's log as diagnostics.
show() { head -n 200 "$work/$1.$2.log" | _ktap_diag; }
# name N LINE HOST: what a block is called in the results: its first and
# last commands.
name() {
  local first last
  first=$(grep -v '^\s*$' "$work/blocks/$1" | head -n 1 | sed 's/ *#.*//')
  last=$(grep -v '^\s*$' "$work/blocks/$1" | tail -n 1 | sed 's/ *#.*//')
  [ "$last" = "$first" ] || first="$first ... $last"
  echo "README line $2, host $(tr a-b A-B <<<"$3"): $first" | cut -c1-120
}

# A server started and not yet waited for: its pid, block, host and name.
srv_pid= srv=
server_done() {
  [ -n "$srv_pid" ] || return 0
  local rc
  # The client's block ran; a server still waiting after a failed client
  # would wait for its bound: stopped.
  [ "$1" = 0 ] || kill "$srv_pid" 2>/dev/null
  wait "$srv_pid"; rc=$?
  show $srv
  [ $rc = 0 ] && t_ok "$srv_name" || t_fail "$srv_name" "exit $rc"
  srv_pid=
}

while read -r n line hosts serve file; do
  for h in ${hosts//,/ }; do
    nm=$(name "$n" "$line" "$h")
    if [ "$file" != - ]; then
      cp "$work/blocks/$n" "$work/$h/$file"
      t_ok "README line $line: $file saved on host $(tr a-b A-B <<<"$h")"
    elif [ "$serve" != - ]; then
      server_done 0
      (run_block "$n" "$h") &
      srv_pid=$! srv="$n $h" srv_name=$nm
      # Ready once the port listens (bounded; the server may not die first).
      for _ in $(seq $((20 * BOUND))); do
        ns_listening "$h" "$serve" && break
        kill -0 $srv_pid 2>/dev/null || break
        sleep 0.05
      done
      ns_listening "$h" "$serve" && t_ok "$nm: listening on $serve" || t_fail "$nm: listening on $serve"
    else
      (run_block "$n" "$h"); rc=$?
      show "$n" "$h"
      [ $rc = 0 ] && t_ok "$nm" || t_fail "$nm" "exit $rc"
      server_done $rc
    fi
  done
done <<<"$list"
server_done 0

# What the zcsock quick start promises: pages sent by reference from A's
# region, received pages remapped into B's (over zf0).
if [ -r "/proc/${NS_PID[a]}/net/zcsock_stat" ]; then
  tx=$(ns_stat a zcsock_stat ZcsockTxPagesByRef) rx=$(ns_stat b zcsock_stat ZcsockRxPagesRemapped)
  [ "${tx:-0}" -ge 256 ] && t_ok "zcsock: A sent 256 region pages by reference ($tx)" || t_fail "zcsock: A sent 256 region pages by reference" "ZcsockTxPagesByRef ${tx:-none}"
  [ "${rx:-0}" -gt 0 ] && t_ok "zcsock: B remapped received pages ($rx)" || t_fail "zcsock: B remapped received pages" "ZcsockRxPagesRemapped ${rx:-none}"
fi
t_done
