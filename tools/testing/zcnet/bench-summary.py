#!/usr/bin/env python3
"""Summarises zcbench JSON files: the median over runs of each mode, and each
mode's ratio to the first mode, for latency and bandwidth.

  bench-summary.py FILE.json...              (bench.sh: modes side by side)
  bench-summary.py --by-mode FILE.json...    (bench-zcsock.sh: one row per
      mode; labels PATH/MODE, ratios against PATH/plain; zcsock's counters,
      the baselines' notes and issue 9's targets)"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

by_mode = sys.argv[1:2] == ["--by-mode"]
files = sys.argv[2:] if by_mode else sys.argv[1:]
runs = defaultdict(list)
meta = None
for path in files:
    with open(path) as f:
        j = json.load(f)
    runs[j["label"]].append(j)
    meta = meta or j
if not runs:
    sys.exit("bench-summary: no results")
modes = list(runs)
base = modes[0]
PAGE = 4096


def bw_median(label, field):
    """Median over runs of `field` of a mode's first bandwidth row."""
    vals = [j["bandwidth"][0][field] for j in runs[label]
            if j["bandwidth"] and j["bandwidth"][0].get(field) is not None]
    return statistics.median(vals) if vals else float("nan")


def share(label, field, per=PAGE):
    """Median over runs of field * per / bytes, in percent."""
    vals = [100.0 * j["bandwidth"][0][field] * per / j["bandwidth"][0]["bytes"] for j in runs[label]
            if j["bandwidth"] and j["bandwidth"][0].get(field) is not None]
    return statistics.median(vals) if vals else float("nan")


def notes(label):
    j = runs[label][0]
    row = j["bandwidth"][0] if j["bandwidth"] else {}
    faults = ""
    if "rx_minor_faults" in row:
        faults = f"rx faults/page {share(label, 'rx_minor_faults') / 100:.2f}"
    if j.get("zcsock") not in (None, "off"):
        zc = (f"tx by ref {share(label, 'tx_pages_by_ref'):.2f}%, rx remapped "
              f"{share(label, 'rx_pages_remapped'):.2f}%, cow {bw_median(label, 'tx_cow_faults'):.0f}")
        return ", ".join(x for x in (zc, faults) if x)
    if faults:
        return faults
    if "mmap_percent" in row:
        return f"{bw_median(label, 'mmap_percent'):.1f}% mmap'ed"
    return row.get("note", "")


def by_mode_summary():
    print(f"kernel {meta['kernel']} ({meta['flavour']}), accel {meta['accel']}, {meta['cpus']} CPUs; "
          f"medians of {min(len(v) for v in runs.values())} runs; ratio = mode / plain of the same path")
    print("MB/s: bytes over the receiver's time; rx ns/B: the receiving thread's (process's) CPU time"
          " per byte; all ns/B: every CPU's busy time per byte (both ends)\n")
    order = ["plain", "tcp_mmap", "msg_zerocopy", "zcsock-region", "zcsock-region-read", "zcsock-ordinary"]
    rank = {m: i for i, m in enumerate(order)}
    groups = defaultdict(list)
    for m in sorted(modes, key=lambda m: (m.split("/", 1)[0] if "/" in m else "",
                                          rank.get(m.split("/", 1)[-1], len(order)), m)):
        groups[m.split("/", 1)[0] if "/" in m else ""].append(m)
    cols = ("mbytes_per_s", "rx_cpu_ns_per_byte", "sys_cpu_ns_per_byte")
    print(f"{'path':<9} {'mode':<16} {'write':>7} {'MB/s':>8} {'ratio':>6} {'rx ns/B':>8} {'ratio':>6} "
          f"{'all ns/B':>8} {'ratio':>6}  notes")
    for g, ms in groups.items():
        b = next((m for m in ms if m.endswith("/plain") or m == "plain"), ms[0])
        bv = [bw_median(b, c) for c in cols]
        for m in ms:
            v = [bw_median(m, c) for c in cols]
            w = runs[m][0]["bandwidth"][0]["write"] if runs[m][0]["bandwidth"] else 0
            cells = " ".join(f"{x:>8.3f} {x / y if y else float('nan'):>6.2f}" if c != cols[0] else
                             f"{x:>8.1f} {x / y if y else float('nan'):>6.2f}" for c, x, y in zip(cols, v, bv))
            print(f"{g:<9} {m.split('/', 1)[-1]:<16} {w:>7} {cells}  {notes(m)}")
    print("\nissue 9's target: zcsock on regions at most half plain TCP's CPU per byte, and no more"
          " than the upstream baselines'")
    for g, ms in groups.items():
        zc = next((m for m in ms if m.split("/", 1)[-1] == "zcsock-region"), None)
        if not zc:
            continue
        for other, limit in (("plain", 0.5), ("tcp_mmap", 1.0), ("msg_zerocopy", 1.0)):
            o = next((m for m in ms if m.split("/", 1)[-1] == other), None)
            if not o:
                continue
            parts = []
            for c, name in ((cols[1], "receiver"), (cols[2], "all CPUs")):
                r = bw_median(zc, c) / bw_median(o, c)
                parts.append(f"{name} {r:.2f} ({'met' if r <= limit else 'NOT met'})")
            print(f"  {g}: zcsock-region / {other}, CPU per byte (want <= {limit:.2f}): " + ", ".join(parts))


if by_mode:
    by_mode_summary()
    sys.exit(0)


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

iperf = sorted(glob.glob(os.path.join(os.path.dirname(files[0]), "iperf3-*.iperf")))
if iperf:
    print("\niperf3 (a real peer, 128 KiB writes), receiver rate")
    for path in iperf:
        with open(path) as f:
            j = json.load(f)
        rx = j["end"]["sum_received"]
        label = os.path.basename(path)[len("iperf3-"):-len(".iperf")]
        print(f"{label:>16} {rx['bits_per_second'] / 8e6:>10.1f} MB/s over {rx['seconds']:.1f} s")
