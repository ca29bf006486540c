# Network topologies of the test guests (sourced by guest-init.sh and tests).
#
# Every topology gives two namespaces, `a` and `b`, with one interface each:
# `va` (198.18.0.1/24, fd00:18::1/64) in `a` and `vb` (198.18.0.2/24,
# fd00:18::2/64) in `b`. 198.18.0.0/15 is the benchmarking range of RFC 2544:
# the addresses exist only inside the guest.
#   veth      one guest, a veth pair va <-> vb (the default, fast)
#   virtio2   one guest, two virtio-net NICs joined through a QEMU socket netdev
#   twoguests two guests; guest `a` has namespace a with va, guest `b` has b with vb
ZC_NS_A=a ZC_NS_B=b ZC_IF_A=va ZC_IF_B=vb
ZC_IP_A=198.18.0.1 ZC_IP_B=198.18.0.2 ZC_IP6_A=fd00:18::1 ZC_IP6_B=fd00:18::2
ZC_MAC_A=52:54:00:18:00:01 ZC_MAC_B=52:54:00:18:00:02
export ZC_NS_A ZC_NS_B ZC_IF_A ZC_IF_B ZC_IP_A ZC_IP_B ZC_IP6_A ZC_IP6_B ZC_MAC_A ZC_MAC_B

# The name of the interface with MAC $1 in the root namespace.
ifname_by_mac() {
  local d a
  for d in /sys/class/net/*; do
    read -r a < "$d/address" 2>/dev/null && [ "$a" = "$1" ] && { echo "${d##*/}"; return 0; }
  done
  return 1
}

# ns_setup NS IF IP IP6: bring the interface (already in NS) up with addresses.
# One ip process per namespace (ip -batch): under TCG each start costs about
# 0.1 s, and a guest brought up its topology with 11 of them.
ns_setup() {
  ip -n "$1" -batch - <<EOF
link set lo up
link set $2 up
addr add $3/24 dev $2
addr add $4/64 dev $2 nodad
EOF
}

# move_nic MAC NS NAME: move a NIC into NS under NAME.
move_nic() {
  local dev
  dev=$(ifname_by_mac "$1") || { echo "topology: no NIC with MAC $1"; return 1; }
  # Renamed before the move (a NIC is down until ns_setup).
  printf 'netns add %s\nlink set %s name %s\nlink set %s netns %s\n' "$2" "$dev" "$3" "$3" "$2" | ip -batch -
}

# ns_anchor NS...: a sleeping process in each namespace, its PID in
# NS_PID[NS]: /proc/PID/net shows that namespace's sockets and /proc/net
# files to the caller, without a process for every look (ip netns exec
# costs 0.1 s under TCG). Returns once each is inside its namespace.
declare -A NS_PID
ns_anchor() {
  local ns line fifo=/tmp/ns-anchor.$$
  rm -f "$fifo"; mkfifo "$fifo" || return 1
  for ns in "$@"; do
    ip netns exec "$ns" sh -c 'echo in; exec sleep 2147483647' > "$fifo" &
    NS_PID[$ns]=$!
    read -r line < "$fifo" && [ "$line" = in ] || { rm -f "$fifo"; return 1; }
  done
  rm -f "$fifo"
}
# ns_listening NS PORT: something in NS listens on TCP PORT (IPv4 or IPv6),
# from NS_PID[NS]'s /proc/net/tcp{,6} (ns_anchor).
ns_listening() {
  local f l st port
  printf -v port '%04X' "$2"
  for f in tcp tcp6; do
    while read -r _ l _ st _; do
      [ "$st" = 0A ] && [ "${l##*:}" = "$port" ] && return 0
    done < "/proc/${NS_PID[$1]}/net/$f"
  done
  return 1
}
# ns_stat NS FILE NAME: the value of line "NAME value" of /proc/net/FILE in
# NS (ns_anchor); nothing when the file or the line is missing.
ns_stat() {
  local k v
  [ -r "/proc/${NS_PID[$1]}/net/$2" ] || return 0
  while read -r k v; do [ "$k" = "$3" ] && { echo "$v"; return 0; }; done < "/proc/${NS_PID[$1]}/net/$2"
}

topology_up() {
  case "$ZCNET_TOPO" in
    veth)
      printf 'netns add a\nnetns add b\nlink add va netns a type veth peer name vb netns b\n' | ip -batch - &&
      ns_setup a va "$ZC_IP_A" "$ZC_IP6_A" && ns_setup b vb "$ZC_IP_B" "$ZC_IP6_B" ;;
    virtio2)
      move_nic "$ZC_MAC_A" a va && move_nic "$ZC_MAC_B" b vb &&
      ns_setup a va "$ZC_IP_A" "$ZC_IP6_A" && ns_setup b vb "$ZC_IP_B" "$ZC_IP6_B" ;;
    twoguests)
      if [ "$ZCNET_ROLE" = a ]; then
        move_nic "$ZC_MAC_A" a va && ns_setup a va "$ZC_IP_A" "$ZC_IP6_A"
      else
        move_nic "$ZC_MAC_B" b vb && ns_setup b vb "$ZC_IP_B" "$ZC_IP6_B"
      fi ;;
    none) true ;;
    *) echo "topology: unknown topology '$ZCNET_TOPO'"; return 1 ;;
  esac
}
