#!/bin/bash
# zcfrag-admission.sh on the native front end (virtio2): zf0 and zf1 are
# va's and vb's virtio-net devices bound to zcfrag itself.
export ZCFRAG_FRONT=native
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-admission.sh"
