#!/bin/bash
# zcfrag-badinput.sh on the native front end (virtio2): the same crafted
# frames from vb, at va's virtio-net device bound to zcfrag itself.
export ZCFRAG_FRONT=native
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-badinput.sh"
