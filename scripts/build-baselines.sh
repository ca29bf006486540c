#!/usr/bin/env bash
# Builds the kernel's own zero-copy baselines for the zcsock benchmark
# (make bench-zcsock), unmodified, from the kernel source the setup installed
# (unpacked by build-kernel.sh): tools/testing/selftests/net/tcp_mmap.c
# (TCP_ZEROCOPY_RECEIVE) and msg_zerocopy.c (MSG_ZEROCOPY), with gcc and the
# selftests' own flags, against that kernel's uapi headers (make
# headers_install into a scratch directory). The binaries go to out/baselines
# (ignored by git; the guest sees the checkout, not the cache) and are reused
# while the key (kernel package, gcc, the two sources) holds. Prints the
# directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgver=$(kernel_pkg_version)
[ -n "$pkgver" ] || die "baselines: linux-source-7.2 is not installed: run scripts/setup-deps.sh"
S=$(kernel_src_dir)
[ -f "$S/.zcnet-unpacked" ] || die "baselines: no unpacked kernel source in $S: run 'make kernel'"
N="$S/tools/testing/selftests/net"
progs=(tcp_mmap msg_zerocopy)
for p in "${progs[@]}"; do [ -f "$N/$p.c" ] || die "baselines: no $N/$p.c in the kernel source"; done
command -v gcc >/dev/null || die "baselines: no gcc: run scripts/setup-deps.sh"

B="$ZCNET_ROOT/out/baselines"
key=$( { echo "recipe 1"; echo "$pkgver"; gcc --version | head -n1; for p in "${progs[@]}"; do sha256sum < "$N/$p.c"; done; } | sha256sum | cut -c1-12)
if [ "$(cat "$B/.key" 2>/dev/null)" = "$key" ]; then
  echo "$B"
  exit 0
fi
log "baselines: building ${progs[*]} from $N"
rm -rf "$B"
mkdir -p "$B"
hdr=$(mktemp -d "${TMPDIR:-/tmp}/zcnet-uapi.XXXXXX")
trap 'rm -rf "$hdr"' EXIT
make -s -C "$S" O="$hdr/obj" INSTALL_HDR_PATH="$hdr/usr" headers_install >"$B/build.log" 2>&1 ||
  { tail -n 20 "$B/build.log" >&2; die "baselines: headers_install failed, log in $B/build.log"; }
# The selftests' Makefile: CFLAGS -Wall -Wl,--no-as-needed -O2 -g and the
# installed headers; tcp_mmap links -lpthread -lcrypto.
cflags=(-Wall -Wl,--no-as-needed -O2 -g -isystem "$hdr/usr/include")
gcc "${cflags[@]}" -o "$B/tcp_mmap" "$N/tcp_mmap.c" -lpthread -lcrypto >>"$B/build.log" 2>&1 &&
  gcc "${cflags[@]}" -o "$B/msg_zerocopy" "$N/msg_zerocopy.c" >>"$B/build.log" 2>&1 ||
  { tail -n 20 "$B/build.log" >&2; die "baselines: gcc failed, log in $B/build.log"; }
echo "$key" > "$B/.key"
echo "$B"
