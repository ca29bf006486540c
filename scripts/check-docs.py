#!/usr/bin/python3
"""Parses every .rst under Documentation/ with docutils; fails on any warning
(malformed tables, bad indentation, broken markup). The kernel's own rst
extensions (:c:func: etc.) are not used in zcnet's documents."""
import pathlib
import sys

import docutils.core
import docutils.utils

root = pathlib.Path(__file__).resolve().parent.parent / "Documentation"
bad = 0
for f in sorted(root.rglob("*.rst")):
    try:
        docutils.core.publish_doctree(
            f.read_text(),
            source_path=str(f),
            settings_overrides={"report_level": 2, "halt_level": 2, "warning_stream": sys.stdout},
        )
        print(f"ok {f.relative_to(root.parent)}")
    except docutils.utils.SystemMessage as e:
        bad += 1
        print(f"FAIL {f.relative_to(root.parent)}: {e}")
sys.exit(1 if bad else 0)
