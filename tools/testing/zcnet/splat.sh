#!/bin/bash
# Splat-detector self-test, guest side: loads a module that prints a kernel
# WARNING and otherwise succeeds. The runner must fail this run (see check.sh).
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
t_run "insmod zcnet_splat" insmod "$(ko zcnet_splat)"
t_run "rmmod zcnet_splat" rmmod zcnet_splat
t_done
