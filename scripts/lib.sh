# Shared shell helpers for zcnet scripts (sourced, not run).
log() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# host_cc WHO: the C compiler for host programs ($CC, else clang-19 from the
# setup packages, else cc); WHO names the caller in the error.
host_cc() {
  [ -n "${CC:-}" ] && { echo "$CC"; return; }
  command -v clang-19 || command -v cc || die "$1: no C compiler (clang-19 is in the setup packages)"
}
# Where cached kernel builds and other large artefacts live (outside the repo).
ZCNET_CACHE=${ZCNET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/zcnet}
LLVM_BIN=/usr/lib/llvm-19/bin

# Which kernel flavour: "default", "debug" (KASAN, lockdep, kmemleak) or "alt"
# (a differently configured tree prepared for external modules only).
ZCNET_FLAVOUR=${ZCNET_FLAVOUR:-default}
ZCNET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The tools kbuild is run with: Debian's rustc 1.85 (it has rust-src), bindgen
# 0.71.1 from cargo, LLVM 19.
BINDGEN=${BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
kmake() {
  PATH="$LLVM_BIN:$PATH" make -s LLVM=1 RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc \
    BINDGEN="$BINDGEN" "$@"
}

# Kernel source version, from the installed linux-source-7.2 package.
kernel_pkg_version() {
  dpkg-query -W -f='${Version}' linux-source-7.2 2>/dev/null || true
}

# Where the kernel source of the installed package is unpacked (by
# build-kernel.sh), once per package version.
kernel_src_dir() {
  local v
  v=$(kernel_pkg_version)
  echo "$ZCNET_CACHE/src/linux-${v%%-*}"
}

# The cache key of a kernel build: kernel version, config fragments, flavour and
# the versions of every tool that goes into it.
kernel_cache_key() {
  local frags=("$ZCNET_ROOT/kernel/zcnet.config")
  [ "$ZCNET_FLAVOUR" = default ] || frags+=("$ZCNET_ROOT/kernel/zcnet-$ZCNET_FLAVOUR.config")
  {
    echo "recipe 1"
    kernel_pkg_version
    echo "$ZCNET_FLAVOUR"
    # The options only: a comment's edit does not rebuild a kernel.
    sed '/^[[:space:]]*#/d; /^[[:space:]]*$/d' "${frags[@]}"
    /usr/bin/rustc --version 2>/dev/null
    "$BINDGEN" --version 2>/dev/null
    "$LLVM_BIN/clang" --version 2>/dev/null | head -n1
  } | sha256sum | cut -c1-12
}

# Where the cached kernel build for the current flavour lives.
kernel_build_dir() {
  local v
  v=$(kernel_pkg_version)
  v=${v%%-*}
  echo "$ZCNET_CACHE/kernel/linux-$v-$ZCNET_FLAVOUR-$(kernel_cache_key)"
}

# Kernel reports that fail a run: lines the kernel printed (they carry the
# printk timestamp) that show an Oops, BUG, WARNING, KASAN/UBSAN/KFENCE or lockdep
# report, a hung task, a soft or hard lockup, an RCU stall, a kmemleak finding or
# a panic. Prints the offending lines; returns 0 when there are any.
SPLAT_RE='^\[ *[0-9]+\.[0-9]+\] .*(Oops|BUG:|WARNING:|kernel BUG at|KASAN|UBSAN|KFENCE|general protection fault|possible recursive locking|possible circular locking|inconsistent lock state|blocked for more than|soft lockup|hard LOCKUP|detected stalls on CPUs|self-detected stall|unreferenced object|suspected memory leak|Kernel panic|Call Trace:)'
scan_splats() {
  tr -d '\r' < "$1" | grep -aE "$SPLAT_RE"
}
