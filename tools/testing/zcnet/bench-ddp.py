#!/usr/bin/env python3
"""bench-ddp.sh's summary: medians by size side by side, and ratios.

    bench-ddp.py DIR    (tcp.json, zcddp.json and runs.tsv of one run)
"""
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def cell(runs, p, c, s, o):
    """The median of row (path p under fault c, operation o, size s)."""
    return runs.get((p + "@" + c, o, s))


def pct(runs, p, c, s):
    """The share of path p's payload placed out of order under c, %."""
    v = cell(runs, p, c, s, "ooo_share")
    return None if v is None else v * 100


def base_table(runs, rounds, conds):
    """This tree's zcddp against BENCH_DDP_BASE_KO's, placement on in both,
    with every round's bandwidth (a median of a few hides two groups)."""
    print("against the base build (BENCH_DDP_BASE_KO), placement on in both: MB/s and"
          " ns/B (medians), the share placed out of order (%), and every round's MB/s")
    print("{:>10} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>7} {:>7}  {}".format(
        "netem", "bytes", "zcddp", "base", "zcddp/base", "ns/B", "base ns/B", "ooo %",
        "base %", "rounds zcddp | base"))
    for c in conds:
        for s in sorted({s for p, o, s in runs if p.endswith("@" + c) and o == "write_bw"}):
            def each(p):
                return " ".join("{:.1f}".format(v) for v in rounds.get((p + "@" + c, "write_bw", s), []))

            z, b = cell(runs, "zcddp", c, s, "write_bw"), cell(runs, "zcddp-base", c, s, "write_bw")
            print("{:>10} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>7} {:>7}  {} | {}".format(
                c, s, fmt(z), fmt(b), fmt(ratio(z, b), "{:.2f}"),
                fmt(cell(runs, "zcddp", c, s, "sys_cpu"), "{:.2f}"),
                fmt(cell(runs, "zcddp-base", c, s, "sys_cpu"), "{:.2f}"),
                fmt(pct(runs, "zcddp", c, s), "{:.2f}"), fmt(pct(runs, "zcddp-base", c, s), "{:.2f}"),
                each("zcddp"), each("zcddp-base")))


def main():
    d = sys.argv[1]
    tcp = load(os.path.join(d, "tcp.json"))
    ddp = load(os.path.join(d, "zcddp.json"))
    runs = {}
    try:
        with open(os.path.join(d, "runs.tsv")) as f:
            next(f)
            for line in f:
                path, op, size, value, _ = line.rstrip("\n").split("\t")
                runs.setdefault((path, op, int(size)), []).append(float(value))
    except OSError:
        pass
    # Rows measured in rounds: their median.
    rounds = runs
    runs = {k: statistics.median(v) for k, v in runs.items()}
    # The run's kernel and machine: from any zcbench JSON of the run
    # (part faults alone writes no tcp.json or zcddp.json).
    head = ddp or tcp
    for name in sorted(os.listdir(d)) if head is None else []:
        if name.endswith(".json"):
            head = load(os.path.join(d, name))
            if head:
                break
    head = head or {}
    print("bench-ddp: kernel {} ({}), accel {}, {} CPUs".format(
        head.get("kernel", "?"), head.get("flavour", "?"), head.get("accel", "?"), head.get("cpus", "?")))
    tlat = {r["bytes"]: r["median_us"] for r in (tcp or {}).get("latency", [])}
    dlat = {(r["op"], r["bytes"]): r["median_us"] for r in (ddp or {}).get("latency", [])}
    sizes = sorted(set(tlat) | {s for _, s in dlat}
                   | {s for p, o, s in runs if o in ("write_lat", "send_lat") and "@" not in p})
    cols = ("bytes", "tcp", "send", "write", "read", "siw_send", "siw_write", "zs_send",
            "zs_write", "send/siw", "write/siw", "zs_write/siw", "write/tcp")
    line = " ".join(["{:>9}"] * 9 + ["{:>12}"] * 4)
    # (A run of other parts alone, faults say, has neither table.)
    if sizes:
        print("latency, median us (tcp, send, write: half round trip; read: the whole Read;"
              " siw: ib_write_lat / ib_send_lat t_typical; zs_*: zcddp-verbs to siw_verbs,"
              " half round trip; Sends spin on the CQ)")
        print(line.format(*cols))
    for s in sizes:
        d = dlat.get(("send", s))
        w = dlat.get(("write", s))
        ss = runs.get(("siw", "send_lat", s))
        sw = runs.get(("siw", "write_lat", s))
        zw = runs.get(("zcddp-siw", "write_lat", s))
        print(line.format(
            s, fmt(tlat.get(s)), fmt(d), fmt(w), fmt(dlat.get(("read", s))),
            fmt(ss), fmt(sw), fmt(runs.get(("zcddp-siw", "send_lat", s))), fmt(zw),
            fmt(ratio(d, ss), "{:.2f}"), fmt(ratio(w, sw), "{:.2f}"),
            fmt(ratio(zw, sw), "{:.2f}"), fmt(ratio(w, tlat.get(s)), "{:.2f}")))
    tbw = {r["write"]: r["mbytes_per_s"] for r in (tcp or {}).get("bandwidth", [])}
    dbw = {r["write"]: r["mbytes_per_s"] for r in (ddp or {}).get("bandwidth", [])}
    sizes = sorted(set(tbw) | set(dbw) | {s for p, o, s in runs if o == "write_bw" and "@" not in p})
    if sizes:
        print("bandwidth, MB/s (10^6 bytes; tcp: stream writes; zcddp, siw and zcddp-siw:"
              " RDMA Writes)")
        print("{:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>15} {:>12}".format(
            "bytes", "tcp", "zcddp", "siw", "zcddp-siw", "zcddp/siw", "zcddp-siw/siw", "zcddp/tcp"))
    for s in sizes:
        z = dbw.get(s)
        sw = runs.get(("siw", "write_bw", s))
        zs = runs.get(("zcddp-siw", "write_bw", s))
        print("{:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>15} {:>12}".format(
            s, fmt(tbw.get(s)), fmt(z), fmt(sw), fmt(zs), fmt(ratio(z, sw), "{:.2f}"),
            fmt(ratio(zs, sw), "{:.2f}"), fmt(ratio(z, tbw.get(s)), "{:.2f}")))
    conds = []
    for p, o, s in runs:
        if "@" in p and p.split("@")[1] not in conds:
            conds.append(p.split("@")[1])
    bw_conds = [c for c in conds if any(p.endswith("@" + c) and o == "write_bw" for p, o, s in runs)]
    if bw_conds:
        conds = bw_conds
        print("RDMA Write bandwidth under faults, MB/s, medians of {} rounds (netem on the"
              " sender's egress; tcp: its stream, the floor)".format(
                  max(len(v) for k, v in rounds.items() if "@" in k[0])))
        print("(in order: zcddp with out-of-order placement off, module parameter ooo=0;"
              " staged: in-order direct placement off, rxdirect=0)")
        print("{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>14} {:>13} {:>12}".format(
            "netem", "bytes", "tcp", "zcddp", "in order", "staged", "siw", "zcddp/siw",
            "zcddp/inorder", "zcddp/staged", "zcddp/clean"))
        for c in conds:
            for s in sorted({s for p, o, s in runs if p.endswith("@" + c) and o == "write_bw"}):
                z = runs.get(("zcddp@" + c, "write_bw", s))
                zi = runs.get(("zcddp-inorder@" + c, "write_bw", s))
                zs = runs.get(("zcddp-staged@" + c, "write_bw", s))
                sw = runs.get(("siw@" + c, "write_bw", s))
                print("{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>14} {:>13} {:>12}".format(
                    c, s, fmt(runs.get(("tcp@" + c, "write_bw", s))), fmt(z), fmt(zi), fmt(zs),
                    fmt(sw), fmt(ratio(z, sw), "{:.2f}"), fmt(ratio(z, zi), "{:.2f}"),
                    fmt(ratio(z, zs), "{:.2f}"),
                    fmt(ratio(z, runs.get(("zcddp@clean", "write_bw", s))), "{:.2f}")))
        print("the same runs: every CPU's busy time per byte, ns/B (both ends share the"
              " guest), the receiver's copies per payload byte and the share of the payload"
              " it placed out of order, % (from its counters)")
        print("{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13} {:>9} {:>9} {:>9} {:>7} {:>9}".format(
            "netem", "bytes", "tcp", "zcddp", "in order", "staged", "zcddp/staged",
            "copies", "in order", "staged", "ooo %", "in order"))
        for c in conds:
            for s in sorted({s for p, o, s in runs if p.endswith("@" + c) and o == "write_bw"}):
                def g(p, o):
                    return cell(runs, p, c, s, o)
                print("{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13} {:>9} {:>9} {:>9} {:>7} {:>9}".format(
                    c, s, fmt(g("tcp", "sys_cpu"), "{:.2f}"), fmt(g("zcddp", "sys_cpu"), "{:.2f}"),
                    fmt(g("zcddp-inorder", "sys_cpu"), "{:.2f}"),
                    fmt(g("zcddp-staged", "sys_cpu"), "{:.2f}"),
                    fmt(ratio(g("zcddp", "sys_cpu"), g("zcddp-staged", "sys_cpu")), "{:.2f}"),
                    fmt(g("zcddp", "copies"), "{:.2f}"), fmt(g("zcddp-inorder", "copies"), "{:.2f}"),
                    fmt(g("zcddp-staged", "copies"), "{:.2f}"), fmt(pct(runs, "zcddp", c, s), "{:.2f}"),
                    fmt(pct(runs, "zcddp-inorder", c, s), "{:.2f}")))
        if any(p.startswith("zcddp-base@") for p, o, s in runs):
            base_table(runs, rounds, conds)
    lconds = []
    for p, o, s in runs:
        if "@" in p and o.endswith("_lat") and p.split("@")[1] not in lconds:
            lconds.append(p.split("@")[1])
    if lconds:
        print("latency under faults, median us, half round trips (netem on the requester's egress;"
              " zcddp with CRC; in order: out-of-order placement off, ooo=0)")
        print("(wsend: an RDMA Write and a Send after it, each side waiting for the Send's receive;"
              " write: the last byte watched, which placement out of order may fill early)")
        cols = [("tcp", "tcp_lat", "tcp"), ("zcddp", "send_lat", "send"),
                ("zcddp-inorder", "send_lat", "send io"), ("siw", "send_lat", "siw send"),
                ("zcddp", "wsend_lat", "wsend"), ("zcddp-inorder", "wsend_lat", "wsend io"),
                ("zcddp", "write_lat", "write"), ("zcddp-inorder", "write_lat", "write io"),
                ("siw", "write_lat", "siw write")]
        print("{:>10} {:>9} ".format("netem", "bytes") + " ".join("{:>9}".format(h) for _, _, h in cols)
              + " {:>9} {:>10} {:>11}".format("send/siw", "wsend/siw", "wsend/io"))
        for c in lconds:
            for s in sorted({s for p, o, s in runs if p.endswith("@" + c) and o.endswith("_lat")}):
                v = [runs.get((p + "@" + c, o, s)) for p, o, _ in cols]
                print("{:>10} {:>9} ".format(c, s) + " ".join("{:>9}".format(fmt(x)) for x in v)
                      + " {:>9} {:>10} {:>11}".format(
                          fmt(ratio(v[1], v[3]), "{:.2f}"), fmt(ratio(v[4], v[8]), "{:.2f}"),
                          fmt(ratio(v[4], v[5]), "{:.2f}")))
    paths = ["zcddp-zcddp", "zcddp-siw", "siw-zcddp", "siw-siw"]
    sizes = sorted({s for p, o, s in runs if o == "rping_iter"})
    if sizes:
        print("rping iteration, us (client-server: wall time of the client / iterations,"
              " start-up included)")
        print("{:>9} ".format("bytes") + " ".join("{:>12}".format(p) for p in paths))
        for s in sizes:
            print("{:>9} ".format(s) + " ".join(
                "{:>12}".format(fmt(runs.get((p, "rping_iter", s)))) for p in paths))


if __name__ == "__main__":
    main()
