#!/usr/bin/env bash
# Builds the C test programs of tools/testing/zcnet (siw_verbs.c: an
# rdma-core program for zcddp's interop with soft-iWARP, linked with
# librdmacm and libibverbs, whose headers the setup installs; zcseeded.c,
# the suites' seeded transfer data) and of
# tools/qemu-plugin (zcinsn.so, a QEMU plugin counting guest instructions,
# and zcmark, the guest's marker for it) into tools/target/release, which
# the guest has on its PATH beside the cargo tools; and the bytecode of the
# Python test modules, with the guest's interpreter (the host's system Python:
# the guest's root is the host's), which the guest cannot write to the
# read-only checkout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cc=$(host_cc build-test-progs)
[ -f /usr/include/rdma/rdma_cma.h ] && [ -f /usr/include/infiniband/verbs.h ] ||
  die "build-test-progs: no rdma-core headers (librdmacm-dev, libibverbs-dev): run scripts/setup-deps.sh"
out=$ZCNET_ROOT/tools/target/release
mkdir -p "$out"
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -o "$out/siw_verbs.tmp" \
  "$ZCNET_ROOT/tools/testing/zcnet/siw_verbs.c" -lrdmacm -libverbs
mv "$out/siw_verbs.tmp" "$out/siw_verbs"
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -o "$out/zcseeded.tmp" "$ZCNET_ROOT/tools/testing/zcnet/zcseeded.c"
mv "$out/zcseeded.tmp" "$out/zcseeded"
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
  -o "$out/zcinsn.so.tmp" "$ZCNET_ROOT/tools/qemu-plugin/zcinsn.c" -lpthread
mv "$out/zcinsn.so.tmp" "$out/zcinsn.so"
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -o "$out/zcmark.tmp" "$ZCNET_ROOT/tools/qemu-plugin/zcmark.c"
mv "$out/zcmark.tmp" "$out/zcmark"
/usr/bin/python3 -m compileall -q "$ZCNET_ROOT/tools/testing/zcnet" > /dev/null
