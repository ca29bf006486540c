#!/usr/bin/env python3
"""Summarises zcbench JSON files: the median over runs of each mode, and each
mode's ratio to the first mode, for latency and bandwidth."""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
meta = None
for path in sys.argv[1:]:
    with open(path) as f:
        j = json.load(f)
    runs[j["label"]].append(j)
    meta = meta or j
if not runs:
    sys.exit("bench-summary: no results")
modes = list(runs)
base = modes[0]


def med(label, section, key, value, field):
    """Median over runs of `field` in the row of `section` whose `key` is `value`."""
    vals = [r[field] for j in runs[label] for r in j[section] if r[key] == value and field in r]
    return statistics.median(vals) if vals else float("nan")


print(f"kernel {meta['kernel']} ({meta['flavour']}), accel {meta['accel']}, "
      f"{meta['cpus']} CPUs; medians of {len(runs[base])} runs; ratio = mode / {base}")
print("\nlatency: half round trip, us (median of per-message medians)")
print(f"{'bytes':>8} " + " ".join(f"{m:>16} {'ratio':>6}" for m in modes))
for row in runs[base][0]["latency"]:
    n = row["bytes"]
    b = med(base, "latency", "bytes", n, "median_us")
    cells = []
    for m in modes:
        v = med(m, "latency", "bytes", n, "median_us")
        cells.append(f"{v:>16.2f} {v / b:>6.2f}")
    print(f"{row['bytes']:>8} " + " ".join(cells))
print("\nbandwidth: MB/s; receiver thread CPU ns per byte; all CPUs' busy ns per byte"
      " (both ends when they share the machine)")
print(f"{'write':>8} " + " ".join(f"{m:>16} {'ratio':>6} {'rx ns/B':>8} {'all ns/B':>8}" for m in modes))
for row in runs[base][0]["bandwidth"]:
    n = row["write"]
    b = med(base, "bandwidth", "write", n, "mbytes_per_s")
    cells = []
    for m in modes:
        v = med(m, "bandwidth", "write", n, "mbytes_per_s")
        c = med(m, "bandwidth", "write", n, "rx_cpu_ns_per_byte")
        a = med(m, "bandwidth", "write", n, "sys_cpu_ns_per_byte")
        cells.append(f"{v:>16.1f} {v / b:>6.2f} {c:>8.3f} {a:>8.3f}")
    print(f"{row['write']:>8} " + " ".join(cells))

iperf = sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "iperf3-*.iperf")))
if iperf:
    print("\niperf3 (a real peer, 128 KiB writes), receiver rate")
    for path in iperf:
        with open(path) as f:
            j = json.load(f)
        rx = j["end"]["sum_received"]
        label = os.path.basename(path)[len("iperf3-"):-len(".iperf")]
        print(f"{label:>16} {rx['bits_per_second'] / 8e6:>10.1f} MB/s over {rx['seconds']:.1f} s")
