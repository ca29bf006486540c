#!/bin/bash
# zcsock's randomized stress (issue 43) for a long run, over loopback:
# zcsock_stress.py (send, receive, write, fork(), munmap(), exit(), close(),
# urgent data and threads mixed with a fixed seed) for SECONDS (600 when
# not given), then the same with a page changed on purpose, which must
# fail; no kernel warning, the module unloads, kmemleak clean on the debug
# kernel. zcsock.sh runs a 20-second one.
#
#   zcsock-stress.sh [SECONDS [SEED]]
#   make stress-zcsock [STRESS_SECONDS=600] [ZCNET_FLAVOUR=debug]
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
secs=${1:-600} seed=${2:-1}
t_run "insmod zcsock" insmod "$(ko zcsock)"
python3 -m zcsock_stress --seconds "$secs" --seed "$seed" --workers 4 > /tmp/zi.stress 2>&1
echo $? > /tmp/zi.stress.rc
t_report /tmp/zi.stress
t_expect "stress for $secs s, seed $seed: ran to the end" 0 "$(cat /tmp/zi.stress.rc)"
python3 -m zcsock_stress --seconds 3 --seed "$seed" --inject > /tmp/zi.stress.inject 2>&1
rc=$?
t_expect "harness: stress with a kept page changed on purpose fails" "1 1" \
  "$rc $(grep -c '^not ok stress: worker 0' /tmp/zi.stress.inject)"
for i in $(seq 100); do rmmod zcsock 2>/dev/null && break; sleep 0.1; done
t_expect "zcsock unloads after the stress" "" "$(grep -w zcsock /proc/modules)"
t_expect "no kernel warning (WARN, BUG) in the whole run" 0 "$(dmesg | grep -cE 'WARNING:|BUG:')"
kmemleak_clean "kmemleak: nothing leaked (debug kernel)"
t_done
