#!/usr/bin/python3
"""make check's docs step.

- Parses every .rst under Documentation/ with docutils; fails on any warning
  (malformed tables, bad indentation, broken markup). The kernel's own rst
  extensions (:c:func: etc.) are not used in zcnet's documents.
- The user guides (README.md, Documentation/install.rst, design.rst and
  every Documentation/networking/*.rst) hold no dated entry: a date such as
  2026-11-28 belongs in a dated file under Documentation/notes/, which
  Documentation/benchmarks.rst lists.
- README.md has no dead reference: every relative link target, and every
  path of the repository it names (a word starting with one of the
  repository's top-level directories, in text or code), exists, or is build
  output git ignores (modules, tools/target/, out/).
- README.md's quick-start markers are well formed (scripts/quickstarts.py;
  tools/testing/zcnet/quickstart.sh runs the blocks in a guest).

  check-docs.py [ROOT]   ROOT: the repository (default: this script's)"""
import pathlib
import re
import subprocess
import sys

import docutils.core
import docutils.utils

import quickstarts

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent).resolve()
bad = 0


def fail(what):
    global bad
    bad += 1
    print(f"FAIL {what}")


for f in sorted((root / "Documentation").rglob("*.rst")):
    try:
        docutils.core.publish_doctree(
            f.read_text(),
            source_path=str(f),
            settings_overrides={"report_level": 2, "halt_level": 2, "warning_stream": sys.stdout},
        )
        print(f"ok {f.relative_to(root)}")
    except docutils.utils.SystemMessage as e:
        fail(f"{f.relative_to(root)}: {e}")

# Dated entries: the user guides say what is, the notes say what was
# measured when.
DATE = re.compile(r"\b(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b")
GUIDES = ["README.md", "Documentation/install.rst", "Documentation/design.rst"] + sorted(
    str(p.relative_to(root)) for p in (root / "Documentation" / "networking").glob("*.rst"))
for name in GUIDES:
    dated = [(n, line.strip()) for n, line in enumerate((root / name).read_text().splitlines(), 1) if DATE.search(line)]
    for n, line in dated:
        fail(f"{name}:{n}: a dated entry (move it to Documentation/notes/): {line[:100]}")
    if not dated:
        print(f"ok {name}: no dated entry")

# Dead references in README.md.
readme = (root / "README.md").read_text()
top = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")} | {".ci"}
PATHWORD = re.compile(r"(?<![\w/.~$-])((?:\.ci|[A-Za-z][\w-]*)/[\w./*-]*)")


def ignored(rel):
    """rel is build output: git ignores it (false when git cannot tell)."""
    r = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", "--no-index", rel],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def exists(rel):
    rel = rel.rstrip("/")
    if any(c in rel for c in "*?["):
        return any(root.glob(rel))
    return (root / rel).exists()


refs = []
for n, line in enumerate(readme.splitlines(), 1):
    for target in re.findall(r"\]\(([^)\s]+)\)", line):
        if not re.match(r"[a-z][a-z0-9+.-]*:|#", target):
            refs.append((n, target.split("#")[0], "link"))
    for word in PATHWORD.findall(line):
        word = word.rstrip(".,:;")
        if word.split("/")[0] in top:
            refs.append((n, word, "path"))
refs = list(dict.fromkeys((n, t) for n, t, _ in refs))
dead = [(n, t) for n, t in refs if not exists(t) and not ignored(t)]
for n, t in dead:
    fail(f"README.md:{n}: dead link or path {t}")
if not dead:
    print(f"ok README.md: {len(refs)} links and paths, none dead")

try:
    print(f"ok README.md: {len(quickstarts.blocks(readme))} quick-start blocks")
except ValueError as e:
    fail(f"README.md: quick starts: {e}")

sys.exit(1 if bad else 0)
