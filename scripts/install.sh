#!/usr/bin/env bash
# `make install` and `make uninstall` (Documentation/install.rst).
#   usage: install.sh install|uninstall
# Environment (the Makefile passes its variables): DESTDIR (staging root, ""
# for the running system), PREFIX (/usr/local), KDIR (the kernel build tree;
# default: the one `make modules` last built against), INSTALL_MOD_DIR
# (updates), IP_PLUGIN_DIR (where ip looks for link plugins).
#
# install: the modules through kbuild's modules_install (into
# $DESTDIR/lib/modules/<release>/$INSTALL_MOD_DIR, then depmod as kbuild runs
# it: with -b $DESTDIR when DESTDIR is set), the tools into $PREFIX/bin, their
# man pages (tools/target/man, written by `make tools`) into
# $PREFIX/share/man/man1, the ip plugin, the UAPI headers into
# $PREFIX/include, the modules-load.d example into $PREFIX/share/zcnet. Every file and directory it creates is written to
# a manifest, $DESTDIR$PREFIX/share/zcnet/install-manifest; uninstall removes
# exactly those (directories only when empty) and, when the modules directory
# was there before, runs depmod again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DESTDIR=${DESTDIR:-}
# kbuild runs in KDIR: a relative DESTDIR would land there.
[ -z "$DESTDIR" ] || DESTDIR=$(realpath -m "$DESTDIR")
PREFIX=${PREFIX:-/usr/local}
INSTALL_MOD_DIR=${INSTALL_MOD_DIR:-updates}
IP_PLUGIN_DIR=${IP_PLUGIN_DIR:-/usr/lib/ip}
MANIFEST=$PREFIX/share/zcnet/install-manifest
# The tools a user runs (the test programs of tools/testing stay in the tree).
TOOLS="zcctl zcbench zcddp-mpa zcddp-ping zcddp-copy zcddp-poll zcddp-verbs"
MODULES="drivers/net/zcfrag/zcfrag.ko net/zcsock/zcsock.ko net/ddp/zcddp.ko"

# Manifest lines: "k RELEASE" (the modules' kernel release), "d PATH" (a
# directory install created), "f PATH" (a file it created); paths without
# DESTDIR.
declare -A SEEN=()
ENTRIES=()
record() { [ -n "${SEEN[$1 $2]:-}" ] || { SEEN[$1 $2]=1; ENTRIES+=("$1 $2"); }; }

# mkdirs DIR: creates DIR (a path without DESTDIR) and records each
# directory that was not there.
mkdirs() {
  local d=$1 missing=()
  while [ "$d" != / ] && [ ! -d "$DESTDIR$d" ]; do missing=("$d" "${missing[@]}"); d=$(dirname "$d"); done
  for d in "${missing[@]}"; do mkdir "$DESTDIR$d"; record d "$d"; done
}
# put MODE SRC DST: installs SRC as DST (a path without DESTDIR).
put() {
  mkdirs "$(dirname "$3")"
  [ -e "$DESTDIR$3" ] || record f "$3"
  install -m "$1" "$2" "$DESTDIR$3"
}
# tree DIR: every path below DIR (with DESTDIR), one a line, sorted.
tree() { [ -d "$1" ] && find "$1" -mindepth 1 | LC_ALL=C sort || true; }

# write_manifest: the manifest, itself and its directories included.
write_manifest() {
  mkdirs "$(dirname "$MANIFEST")"
  [ -e "$DESTDIR$MANIFEST" ] || record f "$MANIFEST"
  printf '%s\n' "${ENTRIES[@]}" > "$DESTDIR$MANIFEST"
}

do_install() {
  local kdir=${KDIR:-} rel modlib f before after p
  [ -n "$kdir" ] || kdir=$(cat "$ZCNET_ROOT/.zcnet-kdir" 2>/dev/null) ||
    die "install: no modules built; run \`make modules tools\` first (KDIR=/lib/modules/\$(uname -r)/build for the running kernel)"
  for f in $MODULES; do
    [ -f "$ZCNET_ROOT/$f" ] || die "install: $f is not built; run \`make modules tools\` first"
  done
  for f in $TOOLS; do
    [ -x "$ZCNET_ROOT/tools/target/release/$f" ] || die "install: tools/target/release/$f is not built; run \`make tools\` first"
  done
  [ -f "$ZCNET_ROOT/tools/target/ip/link_zcfrag.so" ] || die "install: the ip plugin is not built; run \`make tools\` first"
  for f in $TOOLS; do
    [ -f "$ZCNET_ROOT/tools/target/man/$f.1" ] || die "install: tools/target/man/$f.1 is not written; run \`make tools\` first"
  done
  rel=$(cat "$kdir/include/config/kernel.release") || die "install: KDIR=$kdir is not a kernel build tree"
  # A second install over the first: what the first created stays listed.
  if [ -f "$DESTDIR$MANIFEST" ]; then
    while read -r k p; do record "$k" "$p"; done < "$DESTDIR$MANIFEST"
  fi
  record k "$rel"
  [ -z "$DESTDIR" ] || mkdir -p "$DESTDIR"
  # The manifest is written however install ends: a failed install leaves
  # what it did undoable too.
  trap write_manifest EXIT

  # The modules, as kbuild installs any external module (modules.order of
  # the top-level Kbuild: the test modules are not in it).
  modlib=/lib/modules/$rel
  mkdirs "$modlib"
  before=$(tree "$DESTDIR$modlib")
  kmake -C "$kdir" M="$ZCNET_ROOT" INSTALL_MOD_PATH="$DESTDIR" INSTALL_MOD_DIR="$INSTALL_MOD_DIR" modules_install
  # kbuild skips depmod without the tree's System.map (a distribution's
  # headers package): run it as kbuild would have.
  if [ ! -r "$kdir/System.map" ] && command -v depmod >/dev/null; then
    depmod -a ${DESTDIR:+-b "$DESTDIR"} "$rel"
  fi
  after=$(tree "$DESTDIR$modlib")
  while read -r p; do
    [ -n "$p" ] || continue
    if [ -d "$p" ]; then record d "${p#"$DESTDIR"}"; else record f "${p#"$DESTDIR"}"; fi
  done < <(LC_ALL=C comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))

  for f in $TOOLS; do put 0755 "$ZCNET_ROOT/tools/target/release/$f" "$PREFIX/bin/$f"; done
  # The tools' pages and their subcommands' (zcctl-frag.1, ...).
  for f in "$ZCNET_ROOT"/tools/target/man/*.1; do
    put 0644 "$f" "$PREFIX/share/man/man1/${f##*/}"
  done
  put 0644 "$ZCNET_ROOT/tools/target/ip/link_zcfrag.so" "$IP_PLUGIN_DIR/link_zcfrag.so"
  for f in "$ZCNET_ROOT"/include/uapi/*/*.h; do
    put 0644 "$f" "$PREFIX/include/${f#"$ZCNET_ROOT/include/uapi/"}"
  done
  put 0644 "$ZCNET_ROOT/packaging/modules-load.d/zcnet.conf" "$PREFIX/share/zcnet/modules-load.d/zcnet.conf"
  log "install: modules in $DESTDIR$modlib/$INSTALL_MOD_DIR, tools in $DESTDIR$PREFIX/bin; manifest $DESTDIR$MANIFEST"
}

do_uninstall() {
  local k p rel= modlib
  [ -f "$DESTDIR$MANIFEST" ] || die "uninstall: no $DESTDIR$MANIFEST (nothing installed with DESTDIR='$DESTDIR' PREFIX=$PREFIX)"
  local dirs=()
  while read -r k p; do
    case "$k" in
      k) rel=$p ;;
      f) rm -f "$DESTDIR$p" ;;
      d) dirs+=("$p") ;;
    esac
  done < "$DESTDIR$MANIFEST"
  rm -f "$DESTDIR$MANIFEST"
  # Deepest first; a directory something else has put files in stays.
  while read -r p; do
    [ -n "$p" ] || continue
    rmdir "$DESTDIR$p" 2>/dev/null || log "uninstall: $DESTDIR$p is not empty; left in place"
  done < <(printf '%s\n' "${dirs[@]}" | LC_ALL=C sort -r)
  # The modules' directory was there before (the running system's): its
  # depmod files no longer name the removed modules once depmod runs again.
  modlib=/lib/modules/$rel
  if [ -n "$rel" ] && [ -f "$DESTDIR$modlib/modules.dep" ] && command -v depmod >/dev/null; then
    depmod -a ${DESTDIR:+-b "$DESTDIR"} "$rel"
  fi
  log "uninstall: removed what $DESTDIR$MANIFEST listed"
}

case "${1:-}" in
  install) do_install ;;
  uninstall) do_uninstall ;;
  *) die "usage: install.sh install|uninstall" ;;
esac
