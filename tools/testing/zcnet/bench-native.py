#!/usr/bin/env python3
"""Summarises bench-native.sh's runs.tsv: per mode the medians over runs of
throughput, the receiving CPU's time per byte (all of it, and split into the
network layers' interrupt and softirq time and the receiving program's user
and system time), copies per received byte and retransmissions; ratios
against virtio_net-1500; issue 10's targets; and a per-packet cost model
(E-UDP §4.4: time per packet = a + b * size, per layer) fitted by least
squares on the plain virtio_net runs at MTU 1500, 4148 and 9000, with each
mode's measured cost per wire frame beside the model's.

  bench-native.py runs.tsv"""
import csv
import statistics
import sys
from collections import defaultdict

TICK_NS = 1e9 / 100  # /proc/stat counts USER_HZ ticks
BASE = "virtio_net-1500"

rows = defaultdict(list)
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        for k in r:
            if k != "label":
                r[k] = float(r[k])
        rows[r["label"]].append(r)
if not rows:
    sys.exit("bench-native: no runs")


def med(label, fn):
    vals = [fn(r) for r in rows[label]]
    return statistics.median(vals) if vals else float("nan")


def busy(r):
    return r["irq"] + r["softirq"] + r["user"] + r["sys"]


stats = {}
for label in rows:
    stats[label] = {
        "mbs": med(label, lambda r: r["bytes"] / r["secs"] / 1e6),
        "cpu": med(label, lambda r: busy(r) * TICK_NS / r["bytes"]),
        "net": med(label, lambda r: (r["irq"] + r["softirq"]) * TICK_NS / r["bytes"]),
        "prog": med(label, lambda r: (r["user"] + r["sys"]) * TICK_NS / r["bytes"]),
        "load": med(label, lambda r: 100 * busy(r) / max(busy(r) + r["idle"], 1)),
        "copies": med(label, lambda r: (r["driver_copied"] + r["socket_copied"]) / r["bytes"]),
        "drv": med(label, lambda r: r["driver_copied"] / r["bytes"]),
        "retrans": med(label, lambda r: r["retrans"]),
        "frame": med(label, lambda r: r["bytes"] / max(r["wire_frames"], 1)),
        "n": len(rows[label]),
    }
base = stats.get(BASE)
print(f"{'mode':<24}{'MB/s':>8}{'x':>6}{'rx CPU ns/B':>12}{'x':>6}{'net ns/B':>10}"
      f"{'prog ns/B':>10}{'CPU1 %':>8}{'copies/B':>9}{'driver':>8}{'retrans':>8}{'B/frame':>9}")
for label, s in stats.items():
    tx = s["mbs"] / base["mbs"] if base else float("nan")
    cx = s["cpu"] / base["cpu"] if base else float("nan")
    print(f"{label:<24}{s['mbs']:>8.0f}{tx:>6.2f}{s['cpu']:>12.3f}{cx:>6.2f}{s['net']:>10.3f}"
          f"{s['prog']:>10.3f}{s['load']:>8.0f}{s['copies']:>9.2f}{s['drv']:>8.2f}"
          f"{s['retrans']:>8.0f}{s['frame']:>9.0f}")
print(f"(medians of {min(s['n'] for s in stats.values())} to {max(s['n'] for s in stats.values())} "
      "runs; x: ratio to virtio_net-1500, plain; net: interrupt and softirq time on the "
      "receiving CPU; prog: the receiving program's user and system time there)")

t = stats.get("native/zcsock")
if base and t:
    cpu_ratio = t["cpu"] / base["cpu"]
    tput_ratio = t["mbs"] / base["mbs"]
    print(f"issue 10 target: native with zcsock at CPU per byte <= 0.50 of virtio_net-1500: "
          f"{cpu_ratio:.2f} ({'met' if cpu_ratio <= 0.5 else 'not met'}); "
          f"throughput >= 1.5 times: {tput_ratio:.2f} ({'met' if tput_ratio >= 1.5 else 'not met'})")


def fit(points):
    """Least squares of y = a + b x; (a, b, r2)."""
    n = len(points)
    if n < 2:
        return float("nan"), float("nan"), float("nan")
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return my, 0.0, float("nan")
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a = my - b * mx
    ss = sum((y - my) ** 2 for _, y in points)
    res = sum((y - a - b * x) ** 2 for x, y in points)
    return a, b, (1 - res / ss) if ss else float("nan")


plain = [lab for lab in rows if lab.startswith("virtio_net-") and "/" not in lab]
layers = {
    "network layers (irq+softirq)": lambda r: r["irq"] + r["softirq"],
    "receiving program (user+sys)": lambda r: r["user"] + r["sys"],
    "receiving CPU, all": busy,
}
print("\nper-packet cost model, fitted on " + ", ".join(plain) +
      " (plain): time per wire frame = a + b * bytes per frame")
models = {}
for name, fn in layers.items():
    pts = [(r["bytes"] / r["wire_frames"], fn(r) * TICK_NS / r["wire_frames"])
           for lab in plain for r in rows[lab] if r["wire_frames"] > 0]
    a, b, r2 = fit(pts)
    models[name] = (a, b)
    print(f"  {name:<30} a = {a / 1000:7.2f} us   b = {b:6.3f} ns/B   R^2 = {r2:.3f}  ({len(pts)} runs)")
print("\nmeasured per wire frame against the model (receiving CPU, all):")
a, b = models["receiving CPU, all"]
for label in rows:
    per = med(label, lambda r: busy(r) * TICK_NS / max(r["wire_frames"], 1))
    size = stats[label]["frame"]
    print(f"  {label:<24} {size:7.0f} B/frame  {per / 1000:8.2f} us measured  "
          f"{(a + b * size) / 1000:8.2f} us modelled")
