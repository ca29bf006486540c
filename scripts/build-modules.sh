#!/usr/bin/env bash
# Builds every zcnet module against a Linux 7.2 build tree with CONFIG_RUST=y.
#   usage: build-modules.sh [KDIR]     (default: the cached test kernel)
# Extra kbuild variables can be passed in ZCNET_KBUILD_FLAGS; ZCNET_TEST_MODULES=0
# builds the three modules only, not the test modules.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
KDIR=${1:-}
if [ -z "$KDIR" ]; then
  KDIR=$(kernel_build_dir)
  [ -f "$KDIR/.zcnet-complete" ] || KDIR=$("$ZCNET_ROOT/scripts/build-kernel.sh")
fi
[ -f "$KDIR/Makefile" ] || die "KDIR=$KDIR is not a kernel build tree"
grep -q '^CONFIG_RUST=y' "$KDIR/.config" 2>/dev/null || die "KDIR=$KDIR: the kernel is not configured with CONFIG_RUST=y"
rel=$(cat "$KDIR/include/config/kernel.release" 2>/dev/null || echo unknown)
case "$rel" in 7.2|7.2.*|7.2-*) ;; *) die "KDIR=$KDIR is Linux $rel; zcnet needs Linux 7.2" ;; esac
for opt in CONFIG_MODULES CONFIG_MODULE_UNLOAD CONFIG_NET CONFIG_INET; do
  grep -q "^$opt=y" "$KDIR/.config" || die "KDIR=$KDIR: zcnet needs $opt=y"
done

"$ZCNET_ROOT/scripts/gen-bindings.sh" "$KDIR"
# The objects of the last KDIR are stale when KDIR changes.
stamp="$ZCNET_ROOT/.zcnet-kdir"
if [ "$(cat "$stamp" 2>/dev/null)" != "$KDIR" ]; then
  # Only the module directories: kbuild's own `clean` for M= would delete every
  # *.o below the checkout, cargo's tools/target included.
  (cd "$ZCNET_ROOT" && find drivers net rust tools/testing/zcnet/modules \
    \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' -o -name '.*.cmd' \
       -o -name '*.rmeta' -o -name '*.d' -o -name 'modules.order' \) -delete 2>/dev/null)
  rm -f "$ZCNET_ROOT/Module.symvers" "$ZCNET_ROOT/modules.order" \
    "$ZCNET_ROOT/tools/testing/zcnet/modules/Module.symvers"
  echo "$KDIR" > "$stamp"
fi
extra=()
if [ ! -f "$KDIR/Module.symvers" ]; then
  # A tree prepared with `make modules_prepare` only: modpost cannot check the
  # modules' undefined symbols against the kernel's exports.
  log "modules: $KDIR has no Module.symvers (modules_prepare only); kernel symbols are not checked at build time"
  extra+=(KBUILD_MODPOST_WARN=1)
fi
kmake -C "$KDIR" M="$ZCNET_ROOT" -j"$(( $(nproc) + 1 ))" "${extra[@]}" ${ZCNET_KBUILD_FLAGS:-} modules
# The test-only modules, from their own Kbuild (the top-level one lists only
# the three that `make install` installs): their .ko files stay beside their
# sources, where the suites load them (ko in tools/testing/zcnet/ktap.sh).
# ZCNET_TEST_MODULES=0 (dkms.conf) leaves them out.
[ "${ZCNET_TEST_MODULES:-1}" = 0 ] ||
  kmake -C "$KDIR" M="$ZCNET_ROOT/tools/testing/zcnet/modules" -j"$(( $(nproc) + 1 ))" "${extra[@]}" ${ZCNET_KBUILD_FLAGS:-} modules
log "modules: built against $rel ($KDIR):"
find "$ZCNET_ROOT" -name '*.ko' -newer "$ZCNET_ROOT/rust/bindings/allowlist.txt" -printf '  %P\n' >&2 || true
