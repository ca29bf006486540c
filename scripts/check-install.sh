#!/usr/bin/env bash
# make check's install step: `make install` and `make uninstall` into a
# staging directory, then `make install` once more for the guest.
#   usage: check-install.sh DIR
# DIR starts with files of its own (a binary beside the tools, the kernel
# release's module directory with an empty modules.order); after install and
# uninstall its file list must be what it was, and the installed tree must
# hold the three modules and none of the test modules. DIR is left installed:
# modules.sh (guest) loads the modules from it by their aliases.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dir=${1:?usage: check-install.sh DIR}
kdir=$(cat "$ZCNET_ROOT/.zcnet-kdir")
rel=$(cat "$kdir/include/config/kernel.release")
rm -rf "$dir"
mkdir -p "$dir/usr/local/bin" "$dir/lib/modules/$rel"
echo theirs > "$dir/usr/local/bin/theirs"
: > "$dir/lib/modules/$rel/modules.order"
listing() { (cd "$dir" && find . -printf '%M %s %p\n' | LC_ALL=C sort); }
before=$(listing)
make -s -C "$ZCNET_ROOT" install DESTDIR="$dir"
installed=$(listing)
echo "installed:"; printf '%s\n' "$installed" | sed 's/^/  /'
bad=0
for ko in updates/drivers/net/zcfrag/zcfrag.ko updates/net/zcsock/zcsock.ko updates/net/ddp/zcddp.ko; do
  [ -f "$dir/lib/modules/$rel/$ko" ] || { echo "not installed: $ko"; bad=1; }
done
grep -q '^alias rtnl-link-zcfrag zcfrag$' "$dir/lib/modules/$rel/modules.alias" || { echo "modules.alias has no rtnl-link-zcfrag"; bad=1; }
if find "$dir" -name 'zcnet_*' | grep .; then echo "test modules installed"; bad=1; fi
make -s -C "$ZCNET_ROOT" uninstall DESTDIR="$dir"
after=$(listing)
if [ "$before" != "$after" ]; then
  echo "uninstall did not restore the directory:"; diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") || true; bad=1
fi
make -s -C "$ZCNET_ROOT" install DESTDIR="$dir"
exit $bad
