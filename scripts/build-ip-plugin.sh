#!/usr/bin/env bash
# Builds the iproute2 link plugin (tools/iproute2/link_zcfrag.c) into
# tools/target/ip/link_zcfrag.so. ip finds it through IP_LIB_DIR (the tests
# set it) or, after `make install-ip`, in its own plugin directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=$ZCNET_ROOT/tools/target/ip
mkdir -p "$out"
cc=$(host_cc build-ip-plugin)
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared \
  -o "$out/link_zcfrag.so.tmp" "$ZCNET_ROOT/tools/iproute2/link_zcfrag.c"
mv "$out/link_zcfrag.so.tmp" "$out/link_zcfrag.so"
