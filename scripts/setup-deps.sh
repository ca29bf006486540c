#!/usr/bin/env bash
# Installs everything zcnet needs on a Debian 12 (bookworm) x86_64 machine:
#   - linux-source-7.2 from trixie-backports (suite added with the mirror URI the
#     machine's apt sources already use),
#   - Debian's rustc-web 1.85 + rust-src + clippy (all five packages pinned to one version),
#   - bindgen-cli 0.71.1 (cargo install --locked),
#   - clang/lld/llvm 19, QEMU, kernel build tools and the guest user-space tools.
# Idempotent: when everything is present it prints one line and exits.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

BINDGEN_VERSION=0.71.1
RUST_WEB_SERIES=1.85

# Packages that come from bookworm itself.
PKGS=(
  # kernel build
  make bc bison flex libelf-dev libssl-dev cpio kmod xz-utils lz4 python3 rsync
  # documentation check (scripts/check-docs.py)
  python3-docutils
  clang-19 lld-19 llvm-19 libclang-19-dev
  # the kernel's zero-copy selftests, built for make bench-zcsock
  # (scripts/build-baselines.sh; tcp_mmap also needs libssl-dev, above)
  gcc libc6-dev
  # runner (qemu-system-data: qboot.rom, the firmware of a kernel without
  # ACPI; perl-base: the guest's last reboot(2))
  qemu-system-x86 qemu-system-data perl-base
  # guest user space (reached by the guest over the 9p root)
  iproute2 ethtool iperf3 procps util-linux iputils-ping tcpdump socat
  rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
  # siw_verbs.c (scripts/build-test-progs.sh): rdma-core's headers
  libibverbs-dev librdmacm-dev
)
RUST_WEB_PKGS=(rustc-web rust-web-src libstd-rust-web-dev libstd-rust-web-1.85 rust-web-clippy)

need_apt=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need_apt+=("$p")
done
rustc_ok=0
if [ -x /usr/bin/rustc ] && /usr/bin/rustc --version 2>/dev/null | grep -q "^rustc ${RUST_WEB_SERIES}\." &&
   [ -d "$(/usr/bin/rustc --print sysroot)/lib/rustlib/src/rust/library" ] &&
   /usr/bin/clippy-driver --version 2>/dev/null | grep -Eq "^clippy 0\.1\.${RUST_WEB_SERIES#1.}( |$)"; then
  rustc_ok=1
fi
src_ok=0
ls /usr/src/linux-source-7.2.tar.* >/dev/null 2>&1 && src_ok=1
bindgen_ok=0
command -v bindgen >/dev/null 2>&1 && bindgen --version 2>/dev/null | grep -q "bindgen ${BINDGEN_VERSION}$" && bindgen_ok=1
[ $bindgen_ok = 0 ] && [ -x "$HOME/.cargo/bin/bindgen" ] &&
  "$HOME/.cargo/bin/bindgen" --version 2>/dev/null | grep -q "bindgen ${BINDGEN_VERSION}$" && bindgen_ok=1

if [ ${#need_apt[@]} = 0 ] && [ $rustc_ok = 1 ] && [ $src_ok = 1 ] && [ $bindgen_ok = 1 ]; then
  echo "setup-deps: everything present"
  exit 0
fi

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
APT="$SUDO apt-get -y -q -o Dpkg::Use-Pty=0"

# bindgen compiles (about 150 s of both cores) while apt downloads and
# unpacks: it needs nothing apt installs to build (clang-sys loads libclang
# at run time), and the kernel build is the first to run it.
bindgen_pid=
if [ $bindgen_ok = 0 ]; then
  log "setup-deps: cargo install bindgen-cli $BINDGEN_VERSION (in the background)"
  bindgen_log=$(mktemp "${TMPDIR:-/tmp}/zcnet-bindgen.XXXXXX")
  cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION" > "$bindgen_log" 2>&1 &
  bindgen_pid=$!
  trap 'kill "$bindgen_pid" 2>/dev/null || true' EXIT
fi

# trixie-backports, on the same mirror as the machine's own Debian sources.
bp=/etc/apt/sources.list.d/zcnet-trixie-backports.sources
if [ ! -f "$bp" ]; then
  uri=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list 2>/dev/null |
        grep -E '/debian/?( |$)' | grep -v security | head -n1 |
        sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*$//' || true)
  [ -n "$uri" ] || die "setup-deps: no Debian mirror URI found in the apt sources"
  log "setup-deps: adding trixie-backports from $uri"
  printf 'Types: deb\nURIs: %s\nSuites: trixie-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" |
    $SUDO tee "$bp" >/dev/null
  # Never take anything else from trixie: only the kernel source package.
  printf 'Package: *\nPin: release n=trixie-backports\nPin-Priority: 1\n\nPackage: linux-source-7.2\nPin: release n=trixie-backports\nPin-Priority: 500\n' |
    $SUDO tee /etc/apt/preferences.d/zcnet-trixie-backports >/dev/null
fi
if [ ${#need_apt[@]} != 0 ] || [ $rustc_ok = 0 ] || [ $src_ok = 0 ]; then
  log "setup-deps: apt-get update"
  $APT update >/dev/null
fi

# One apt-get install for all of it.
install=("${need_apt[@]}")
if [ $rustc_ok = 0 ]; then
  ver=$(apt-cache madison rustc-web | awk '{print $3}' | grep "^${RUST_WEB_SERIES}\." | sort -V | tail -n1)
  [ -n "$ver" ] || die "setup-deps: no rustc-web ${RUST_WEB_SERIES}.x in the apt sources"
  log "setup-deps: Debian rustc-web $ver (+ rust-src, libstd)"
  for p in "${RUST_WEB_PKGS[@]}"; do install+=("$p=$ver"); done
fi
if [ $src_ok = 0 ]; then
  ver=$(apt-cache madison linux-source-7.2 2>/dev/null | awk '{print $3}' | sort -V | tail -n1)
  [ -n "$ver" ] || die "setup-deps: linux-source-7.2 is not available from trixie-backports (apt-cache madison linux-source-7.2 is empty); zcnet needs a Linux 7.2 source"
  log "setup-deps: linux-source-7.2 $ver"
  install+=("linux-source-7.2=$ver")
fi
if [ ${#install[@]} != 0 ]; then
  log "setup-deps: installing ${install[*]}"
  # --allow-downgrades: a machine may have a newer rustc-web from the
  # security suite (the kernel needs exactly this one).
  $APT install --no-install-recommends --allow-downgrades "${install[@]}" >/dev/null
fi

if [ -n "$bindgen_pid" ]; then
  rc=0; wait "$bindgen_pid" || rc=$?
  trap - EXIT
  grep -v '^ *\(Updating\|Downloaded\|Downloading\)' "$bindgen_log" || true
  rm -f "$bindgen_log"
  [ $rc = 0 ] && "$HOME/.cargo/bin/bindgen" --version | grep -q "$BINDGEN_VERSION" ||
    die "setup-deps: bindgen $BINDGEN_VERSION did not install (cargo install: exit $rc)"
fi
log "setup-deps: done"
