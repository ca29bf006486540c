#!/usr/bin/env bash
# Builds (or reuses) the zcnet test kernel in a cache outside the repository.
# The cache directory is keyed by kernel version, config fragments, flavour and
# tool versions (scripts/lib.sh: kernel_cache_key). Prints the build directory.
#   ZCNET_FLAVOUR=debug  adds KASAN, PROVE_LOCKING, DEBUG_ATOMIC_SLEEP, KMEMLEAK.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkgver=$(kernel_pkg_version)
[ -n "$pkgver" ] || die "linux-source-7.2 is not installed: run scripts/setup-deps.sh"
B=$(kernel_build_dir)
if [ -f "$B/.zcnet-complete" ]; then
  log "kernel: cached build $B"
  echo "$B"
  exit 0
fi
# One build at a time per cache: a second `make` waits for the first (and then
# finds its result) instead of wiping the tree under it.
mkdir -p "$ZCNET_CACHE"
exec 9>"$ZCNET_CACHE/.build-kernel.lock"
if ! flock -n 9; then
  log "kernel: another build is running; waiting for it"
  flock 9
fi
if [ -f "$B/.zcnet-complete" ]; then
  log "kernel: cached build $B"
  echo "$B"
  exit 0
fi

# Unpack the source once per package version.
S=$(kernel_src_dir)
if [ ! -f "$S/.zcnet-unpacked" ]; then
  log "kernel: unpacking linux-source-7.2 $pkgver into $S"
  rm -rf "$S" "$S.tmp"
  mkdir -p "$S.tmp"
  tar -C "$S.tmp" --strip-components=1 -xf /usr/src/linux-source-7.2.tar.*
  touch "$S.tmp/.zcnet-unpacked"
  mv "$S.tmp" "$S"
fi

frags=("$ZCNET_ROOT/kernel/zcnet.config")
case "$ZCNET_FLAVOUR" in
  default) ;;
  debug|alt) frags+=("$ZCNET_ROOT/kernel/zcnet-$ZCNET_FLAVOUR.config") ;;
  *) die "kernel: unknown ZCNET_FLAVOUR '$ZCNET_FLAVOUR' (default, debug or alt)" ;;
esac

log "kernel: configuring $B ($ZCNET_FLAVOUR)"
rm -rf "$B"
mkdir -p "$B"
kmake -C "$S" O="$B" allnoconfig >/dev/null
(cd "$S" && PATH="$LLVM_BIN:$PATH" scripts/kconfig/merge_config.sh -m -O "$B" "$B/.config" "${frags[@]}" >/dev/null)
kmake -C "$S" O="$B" olddefconfig >/dev/null

# Every option of the fragments must have landed as asked (Rust silently drops
# out when the toolchain is not found, for instance).
bad=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  opt=${line%%=*} val=${line#*=}
  if [ "$val" = n ]; then
    # Unset, or absent because what it depends on is off.
    ! grep -qE "^$opt=[ym]" "$B/.config" || { log "kernel: $opt is set, wanted n"; bad=1; }
  else
    grep -qx "$opt=$val" "$B/.config" || { log "kernel: wanted $opt=$val, got: $(grep "^$opt=\|^# $opt " "$B/.config" || echo unset)"; bad=1; }
  fi
done < <(cat "${frags[@]}" | grep -E '^CONFIG_' | awk -F= '{ last[$1] = $0; order[NR] = $1 } END { for (i = 1; i <= NR; i++) if (order[i] in last) { print last[order[i]]; delete last[order[i]] } }')
if [ $bad = 1 ]; then
  kmake -C "$S" O="$B" rustavailable >&2 || true
  die "kernel: the configuration did not take every option of the fragment (see above)"
fi

start=$(date +%s)
if [ "$ZCNET_FLAVOUR" = alt ]; then
  log "kernel: preparing the tree for external modules (modules_prepare)"
  kmake -C "$B" -j"$(( $(nproc) + 1 ))" modules_prepare >"$B/build.log" 2>&1 || { tail -n 40 "$B/build.log" >&2; die "kernel: modules_prepare failed, log in $B/build.log"; }
else
  log "kernel: building bzImage and modules with $(( $(nproc) + 1 )) jobs (takes minutes on 2 cores)"
  kmake -C "$B" -j"$(( $(nproc) + 1 ))" bzImage modules >"$B/build.log" 2>&1 || { tail -n 40 "$B/build.log" >&2; die "kernel: build failed, log in $B/build.log"; }
  kmake -C "$B" INSTALL_MOD_PATH="$B/mod-root" modules_install >/dev/null
fi
echo "$(( $(date +%s) - start ))" > "$B/.zcnet-build-seconds"
touch "$B/.zcnet-complete"
log "kernel: built in $(cat "$B/.zcnet-build-seconds") s: $B"
echo "$B"
