#!/usr/bin/env python3
"""Runs one of the kernel's own zero-copy selftests, unmodified, from a
client namespace to a server namespace, and writes what it cost in zcbench's
JSON format (tools/zcbench): throughput, the receiver's and the sender's CPU
time per byte, and every CPU's busy time per byte (/proc/stat: both ends, as
they share the machine).

  bench-baseline.py tcp_mmap|msg_zerocopy --bin DIR --dst IP [--src IP]
      [--client-ns a] [--server-ns b] [--port P] [--seconds S]
      [--label L] [--json FILE]

The measured window starts when the connection is established (seen in
/proc/PID/net/tcp of the server, polled every 5 ms), so that process
start-up, slow under TCG, stays out; CPU times are each process's (wait4)
less what it had used by then (/proc/PID/stat).

tcp_mmap (TCP_ZEROCOPY_RECEIVE): the server as `tcp_mmap -4 -s -z` (mmap()
receive), the client as `tcp_mmap -4 -z` (MSG_ZEROCOPY send), the program's
own documented use. The client sends until it is stopped (SIGTERM --seconds
after the connection); its socket then closes normally and the server prints
bytes, time and its receiving thread's CPU time (RUSAGE_THREAD), which are
taken as they are; the window ends when it has printed. Its stdout is a
pipe, so it runs under `stdbuf -oL`.

msg_zerocopy (MSG_ZEROCOPY): the receiver as `msg_zerocopy -4 -r tcp`
(which discards the data with MSG_TRUNC, copying nothing to user space), the
sender as `msg_zerocopy -4 -z tcp`, both `-t S`. Bytes from the receiver's
line (whole MiB); the window ends when the sender exits.
"""
import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
NUM = r"([0-9.eE+-]+)"


def busy_ticks():
    """Every CPU's busy ticks (all but idle and iowait), /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4]


def cpu_seconds(ru):
    return ru.ru_utime + ru.ru_stime


def netns(ns, *argv):
    return ["ip", "netns", "exec", ns, *argv]


def tcp_states(pid, port):
    """The states (hex, as in /proc/net/tcp) of the TCP sockets on local
    port `port` in the network namespace of process `pid`."""
    try:
        with open(f"/proc/{pid}/net/tcp") as f:
            rows = [line.split() for line in f.readlines()[1:]]
    except OSError:
        return set()
    return {r[3] for r in rows if int(r[1].rsplit(":", 1)[1], 16) == port}


LISTEN, ESTABLISHED = "0A", "01"


def wait_state(pid, port, state, procs, what, timeout=30):
    """Polls every 5 ms until the namespace of `pid` has a socket on `port`
    in `state`; fails when one of `procs` ends first."""
    end = time.monotonic() + timeout
    while state not in tcp_states(pid, port):
        for p in procs:
            if p.poll() is not None:
                sys.exit(f"bench-baseline: {what}: {p.args[4]} ended first: {os.read(p.stdout.fileno(), 65536)!r}")
        if time.monotonic() > end:
            sys.exit(f"bench-baseline: {what}: not there after {timeout} s")
        time.sleep(0.005)


def cpu_ticks(pid):
    """CPU time (user + system) of process `pid` so far, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def reap(proc):
    """wait4 for a Popen child: (exit status, rusage)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru


def read_until(proc, pattern, timeout):
    """proc's stdout (unbuffered) until a whole line matches `pattern`, or
    `timeout` seconds."""
    fd, text, end = proc.stdout.fileno(), "", time.monotonic() + timeout
    while not re.search(pattern + r".*\n", text):
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        text += chunk.decode(errors="replace")
    return text


def spawn(ns, *argv):
    return subprocess.Popen(netns(ns, *argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)


def tcp_mmap(a):
    b = os.path.join(a.bin, "tcp_mmap")
    port = str(a.port)
    srv = spawn(a.server_ns, "stdbuf", "-oL", b, "-4", "-s", "-z", "-p", port)
    wait_state(srv.pid, a.port, LISTEN, [srv], "tcp_mmap -s listening")
    cli = spawn(a.client_ns, b, "-4", "-z", "-H", a.dst, "-p", port)
    # The window starts when the connection is there (process start-up,
    # slow under TCG, stays out), and ends when the server has printed.
    wait_state(srv.pid, a.port, ESTABLISHED, [srv, cli], "tcp_mmap connected")
    sys0, tx0 = busy_ticks(), cpu_ticks(cli.pid)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end and cli.poll() is None:
        time.sleep(0.05)
    if cli.returncode is None:
        cli.send_signal(signal.SIGTERM)
    _, tx_ru = reap(cli)
    cli_out = os.read(cli.stdout.fileno(), 65536).decode(errors="replace")
    text = read_until(srv, r"cpu usage user:", 120)
    sys1 = busy_ticks()
    srv.send_signal(signal.SIGTERM)
    reap(srv)
    got = re.search(rf"received {NUM} MB \({NUM} % mmap'ed\) in {NUM} s", text)
    cpu = re.search(rf"cpu usage user:{NUM} sys:{NUM}", text)
    if not got or not cpu:
        sys.exit(f"bench-baseline: tcp_mmap printed no result.\nserver: {text!r}\nclient: {cli_out!r}")
    nbytes = float(got[1]) * (1 << 20)
    return {
        "write": 512 * 1024,  # tcp_mmap's chunk_size: its sends and mmap()s
        "bytes": int(nbytes),
        "seconds": float(got[3]),
        # The receiving thread's own figure (RUSAGE_THREAD).
        "rx_cpu_s": float(cpu[1]) + float(cpu[2]),
        "tx_cpu_s": cpu_seconds(tx_ru) - tx0 / os.sysconf("SC_CLK_TCK"),
        "sys_ticks": sys1 - sys0,
        "mmap_percent": float(got[2]),
        "note": f"{float(got[2]):.1f}% mmap'ed",
        "output": text.strip() + "\n" + cli_out.strip(),
    }


def msg_zerocopy(a):
    b = os.path.join(a.bin, "msg_zerocopy")
    common = ["-4", "-D", a.dst, "-S", a.src, "-p", str(a.port), "-t", str(a.seconds)]
    rx = spawn(a.server_ns, b, *common, "-r", "tcp")
    wait_state(rx.pid, a.port, LISTEN, [rx], "msg_zerocopy -r listening")
    tx = spawn(a.client_ns, b, *common, "-z", "tcp")
    wait_state(rx.pid, a.port, ESTABLISHED, [rx, tx], "msg_zerocopy connected")
    sys0, t0, rx0, tx0 = busy_ticks(), time.monotonic(), cpu_ticks(rx.pid), cpu_ticks(tx.pid)
    tx_rc, tx_ru = reap(tx)
    secs, sys1 = time.monotonic() - t0, busy_ticks()
    rx_rc, rx_ru = reap(rx)
    tx_out = os.read(tx.stdout.fileno(), 65536).decode(errors="replace")
    rx_out = os.read(rx.stdout.fileno(), 65536).decode(errors="replace")
    got = re.search(r"rx=\d+ \((\d+) MB\)", rx_out)
    sent = re.search(r"tx=\d+ \((\d+) MB\) txc=(\d+) zc=(\w)", tx_out)
    if tx_rc or rx_rc or not got or not sent:
        sys.exit(f"bench-baseline: msg_zerocopy failed (sender {tx_rc}, receiver {rx_rc}).\n"
                 f"sender: {tx_out!r}\nreceiver: {rx_out!r}")
    zc = sent[3] == "y"
    hz = os.sysconf("SC_CLK_TCK")
    return {
        "write": 65535 - 20 - 20 - 40,  # its payload: IP_MAXPACKET less the headers it allows for
        "bytes": int(got[1]) << 20,
        "seconds": secs,
        "rx_cpu_s": cpu_seconds(rx_ru) - rx0 / hz,
        "tx_cpu_s": cpu_seconds(tx_ru) - tx0 / hz,
        "sys_ticks": sys1 - sys0,
        "zerocopy": zc,
        "note": "completions: zero-copy" if zc else "completions: copied (SO_EE_CODE_ZEROCOPY_COPIED)",
        "output": (tx_out.strip() + "\n" + rx_out.strip()),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("test", choices=["tcp_mmap", "msg_zerocopy"])
    p.add_argument("--bin", required=True, help="where the built selftests are")
    p.add_argument("--dst", required=True, help="the server's address")
    p.add_argument("--src", default="0.0.0.0", help="the client's address (msg_zerocopy -S)")
    p.add_argument("--client-ns", default="a")
    p.add_argument("--server-ns", default="b")
    p.add_argument("--port", type=int, default=8787)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--label")
    p.add_argument("--json")
    a = p.parse_args()
    r = tcp_mmap(a) if a.test == "tcp_mmap" else msg_zerocopy(a)
    n = max(r["bytes"], 1)
    row = {
        "write": r["write"],
        "bytes": r["bytes"],
        "seconds": round(r["seconds"], 4),
        "mbytes_per_s": round(r["bytes"] / r["seconds"] / 1e6, 3),
        "rx_cpu_ns_per_byte": round(r["rx_cpu_s"] * 1e9 / n, 4),
        "tx_cpu_ns_per_byte": round(r["tx_cpu_s"] * 1e9 / n, 4),
        "sys_cpu_ns_per_byte": round(r["sys_ticks"] * TICK_NS / n, 4),
        "note": r["note"],
    }
    for k in ("mmap_percent", "zerocopy"):
        if k in r:
            row[k] = r[k]
    with open("/proc/sys/kernel/osrelease") as f:
        kernel = f.read().strip()
    j = {
        "tool": a.test, "test": "tcp", "label": a.label or a.test,
        "kernel": kernel, "flavour": os.environ.get("ZCNET_FLAVOUR", "default"),
        "accel": os.environ.get("ZCNET_ACCEL", "unknown"), "cpus": os.cpu_count(),
        "iters": 0, "latency": [], "bandwidth": [row],
    }
    print(f"{j['label']}: {row['bytes']} bytes in {row['seconds']:.2f} s, {row['mbytes_per_s']:.1f} MB/s, "
          f"rx {row['rx_cpu_ns_per_byte']:.3f} ns/B, tx {row['tx_cpu_ns_per_byte']:.3f} ns/B, "
          f"all CPUs {row['sys_cpu_ns_per_byte']:.3f} ns/B; {row['note']}")
    print("\n".join("  | " + line for line in r["output"].splitlines()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(j, f)
            f.write("\n")


if __name__ == "__main__":
    main()
