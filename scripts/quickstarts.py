#!/usr/bin/python3
"""The README's quick starts: every fenced code block right after a marker

    <!-- quickstart host=a|b|a,b [serve=PORT] [file=NAME] -->

host: the host that runs it, A or B (a,b: both, one after the other);
serve=PORT: a server, left running while the blocks after it run, ready once
something listens on TCP PORT; file=NAME: not run but saved as NAME in the
host's directory. The blocks keep the README's order. A block that runs
chains no commands with && or ||: it runs under bash -e, which does not stop
at a failure before the last command of such a chain.

    quickstarts.py README DIR   writes DIR/N (the block's text, as written)
                                and prints one line a block: "N LINE HOSTS
                                SERVE FILE" (SERVE and FILE "-" when unset)

tools/testing/zcnet/quickstart.sh runs them in a guest; scripts/check-docs.py
checks the markers."""
import pathlib
import re
import sys

MARKER = re.compile(r"<!--\s*quickstart\b(.*?)-->")
KEYS = {"host", "serve", "file"}


def blocks(text):
    """The marked blocks, in order, as dicts (line: the marker's line, from
    1; host: a list; serve, file: a string or None; text); ValueError names
    the line of a malformed marker or block."""
    lines = text.splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        m = MARKER.search(line)
        if not m:
            continue
        where = f"line {i + 1}"
        opts = {}
        for word in m.group(1).split():
            key, eq, value = word.partition("=")
            if key not in KEYS or not eq or not value:
                raise ValueError(f"{where}: '{word}' is not one of host=, serve=, file=")
            opts[key] = value
        hosts = opts.get("host", "").split(",")
        if not hosts or any(h not in ("a", "b") for h in hosts):
            raise ValueError(f"{where}: host=a, host=b or host=a,b is required")
        if "serve" in opts and not opts["serve"].isdigit():
            raise ValueError(f"{where}: serve= takes a TCP port")
        if "file" in opts and not re.fullmatch(r"[A-Za-z0-9_.-]+", opts["file"]):
            raise ValueError(f"{where}: file= takes a plain file name")
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise ValueError(f"{where}: no fenced code block right after the marker")
        body = []
        for j in range(i + 2, len(lines)):
            if lines[j].startswith("```"):
                break
            body.append(lines[j])
        else:
            raise ValueError(f"{where}: the code block is not closed")
        if "file" not in opts:
            for k, cmd in enumerate(body):
                if re.search(r"&&|\|\|", cmd.split("#")[0]):
                    raise ValueError(f"line {i + 3 + k}: && or || in a quick start: under bash -e a "
                                     "failure before the last command of the chain goes unnoticed "
                                     "(one command a line)")
        out.append({"line": i + 1, "host": hosts, "serve": opts.get("serve"),
                    "file": opts.get("file"), "text": "".join(body)})
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: quickstarts.py README DIR")
    try:
        found = blocks(pathlib.Path(sys.argv[1]).read_text())
    except ValueError as e:
        sys.exit(f"quickstarts: {sys.argv[1]}: {e}")
    if not found:
        sys.exit(f"quickstarts: {sys.argv[1]}: no quick-start block")
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for n, b in enumerate(found, 1):
        (out / str(n)).write_text(b["text"])
        print(n, b["line"], ",".join(b["host"]), b["serve"] or "-", b["file"] or "-")


if __name__ == "__main__":
    main()
