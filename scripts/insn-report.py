#!/usr/bin/env python3
"""insn-report.py: guest instructions per iteration (or per byte), by
kernel function, from the zcinsn plugin's dumps
(tools/qemu-plugin/zcinsn.c).

  scripts/insn-report.py [--per N] [--widest] LOG [TOP]

LOG is the guest console log of a run that printed "# insn-K: BUILD OP
SIZE UNITS" for each dump (tools/testing/zcnet/bench-ddp-ab.sh,
bench-native.sh or bench-zcsock.sh with MARK=1, the guest booted with
ZCNET_INSN_DIR=DIR); the dumps are read from DIR/a/insn-K.txt (DIR from
the environment, out/insn by default) and the symbols from
LOG.artifacts/kallsyms-K. UNITS are the run's iterations
(bench-ddp-ab.sh) or bytes received (the stream benchmarks). For each
BUILD OP SIZE, the difference of the dumps of its two longest runs over
the difference of their units is the cost of one unit without the
start-up (--per N: of N units; --per 4096, a page of a stream; --widest:
of its shortest and longest runs instead, for streams whose rate wanders,
where two long runs can move about as many bytes): instructions in user
space, in the kernel, and the TOP kernel functions (default 40) side by
side for every build, with the difference to the first build.
"""
import bisect
import collections
import os
import re
import subprocess
import sys


# Kernel work driven by time, not by the iterations (ticks, scheduling,
# idling, lock spinning under contention, entropy): left out of the "paths"
# figure, which compares what the iterations themselves execute. A
# heuristic, by name.
TIMED = re.compile(
    r"spin_lock_slowpath|read_lock_slowpath|tick|timer|sched|idle|rcu|update_|clock|ktime|"
    r"timekeeping|blake2s|chacha|entropy|irq|apic|balance|load_avg|hrtimer|_raw_spin|"
    r"account|vtime|task_|pick_|switch|enqueue_task|dequeue|wake|ttwu|psi_|cgroup|nohz|"
    r"halt|native_|flush_tlb|smp_call|call_function")


def demangle_all(names):
    """Rust symbols by c++filt (binutils demangles Rust's v0 scheme), crate
    hashes dropped; unchanged when c++filt is missing."""
    rust = sorted({n.split(" ")[0] for n in names if n.startswith("_R")})
    try:
        out = subprocess.run(["c++filt"], input="\n".join(rust), capture_output=True,
                             text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {r: re.sub(r"\[[0-9a-f]{16}\]", "", d) for r, d in zip(rust, out)}


def demangle(name, table):
    head, _, tail = name.partition(" ")
    return table.get(head, head) + (" " + tail if tail else "")


def load_syms(path):
    addrs, names = [], []
    for line in open(path):
        parts = line.split()
        if len(parts) < 3 or parts[1] not in "tTwW":
            continue
        a = int(parts[0], 16)
        if a == 0:
            continue
        name = parts[2] + (" " + parts[3] if len(parts) > 3 else "")
        addrs.append(a)
        names.append(name)
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def load_dump(path, addrs, names):
    """(total, user, {function: instructions}, {function: calls}, kernel
    blocks, {function: blocks}); calls are executions of the block at the
    function's start."""
    by_sym, calls, blocks = collections.Counter(), collections.Counter(), collections.Counter()
    total = user = kblocks = 0
    for line in open(path):
        f = line.split()
        if f[0] == "total":
            total = int(f[1])
            continue
        if f[0] == "user":
            user = int(f[1])
            continue
        a = int(f[0], 16)
        if not a >> 63:
            continue
        i = bisect.bisect_right(addrs, a) - 1
        name = names[i] if i >= 0 else "?"
        by_sym[name] += int(f[1])
        b = int(f[2]) if len(f) > 2 else 0
        if i >= 0 and addrs[i] == a:
            calls[name] += b
        blocks[name] += b
        kblocks += b
    return total, user, by_sym, calls, kblocks, blocks


def main():
    args = sys.argv[1:]
    per = 1
    widest = False
    while args[:1] in (["--per"], ["--widest"]):
        if args[0] == "--widest":
            widest = True
            args = args[1:]
        elif len(args) > 1:
            per = int(args[1])
            args = args[2:]
        else:
            break
    if not args:
        sys.exit(__doc__)
    log = args[0]
    top = int(args[1]) if len(args) > 1 else 40
    d = os.path.join(os.environ.get("ZCNET_INSN_DIR", "out/insn"), "a")
    runs = collections.defaultdict(list)
    for line in open(log, errors="replace"):
        m = re.search(r"# insn-(\d+): (\S+) (\S+) (\S+) (\d+)", line)
        if m:
            runs[(m[2], m[3], m[4])].append((int(m[5]), m[1]))
    res = {}
    for key, lst in runs.items():
        lst.sort()
        if len(lst) < 2:
            continue
        (n1, k1), (n2, k2) = (lst[0] if widest else lst[-2]), lst[-1]
        t1, u1, s1, b1, k1, bl1 = load_dump(os.path.join(d, "insn-%s.txt" % k1),
                               *load_syms("%s.artifacts/kallsyms-%s" % (log, k1)))
        t2, u2, s2, b2, k2, bl2 = load_dump(os.path.join(d, "insn-%s.txt" % k2),
                               *load_syms("%s.artifacts/kallsyms-%s" % (log, k2)))
        n = (n2 - n1) / per
        syms = {s: ((s2[s] - s1[s]) / n, (b2[s] - b1[s]) / n) for s in set(s1) | set(s2)}
        paths = [s for s in set(s1) | set(s2) if not TIMED.search(s)]
        mods = collections.Counter()
        for s in paths:
            m = re.search(r"\[(\w+)\]", s)
            mods[m[1] if m else "vmlinux"] += (s2[s] - s1[s]) / n
        res[key] = ((u2 - u1) / n, (t2 - t1 - (u2 - u1)) / n, syms, (k2 - k1) / n,
                    sum(s2[s] - s1[s] for s in paths) / n,
                    sum(bl2[s] - bl1[s] for s in paths) / n, mods)
    if not res:
        sys.exit("insn-report: no run with two dumps in " + log)
    keys = sorted(res, key=lambda k: (k[1], k[2], k[0] != "siw", k[0]))
    unit = "iteration" if per == 1 else "%d units" % per
    print("instructions per %s (difference of two runs), guest user and kernel" % unit)
    for k in keys:
        print("  %-28s user %9.0f  kernel %9.0f in %7.0f blocks" %
              (" ".join(k), res[k][0], res[k][1], res[k][3]))
    print("kernel paths (without the time-driven work: ticks, scheduling, idling, lock"
          " spinning), by module")
    for k in keys:
        mods = ", ".join("%s %.0f" % (m, v) for m, v in res[k][6].most_common() if abs(v) >= 50)
        print("  %-28s %9.0f in %7.0f blocks; %s" % (" ".join(k), res[k][4], res[k][5], mods))
    table = demangle_all({s for k in keys for s in res[k][2]})
    for op, size in sorted({(k[1], k[2]) for k in keys}):
        ks = [k for k in keys if k[1] == op and k[2] == size]
        allsyms = collections.Counter()
        for k in ks:
            for s, v in res[k][2].items():
                allsyms[s] = max(allsyms[s], abs(v[0]))
        print("\n%s %s: kernel functions, instructions/calls per %s" % (op, size, unit))
        print("%-50s" % "function" + "".join("%14s" % k[0][:13] for k in ks) +
              ("%8s" % "diff" if len(ks) > 1 else ""))
        for s, _ in allsyms.most_common(top):
            vals = [res[k][2].get(s, (0.0, 0.0)) for k in ks]
            print("%-50s" % demangle(s, table)[-50:] + "".join("%8.0f/%-5.0f" % v for v in vals) +
                  ("%8.0f" % (vals[-1][0] - vals[0][0]) if len(ks) > 1 else ""))


if __name__ == "__main__":
    main()
