#!/usr/bin/env python3
"""Runs a comparison command and holds its difference lines to a committed list, exactly.

    known_differences.py KNOWN_FILE PATTERN [--update] -- COMMAND ARGS...

The lines of COMMAND's output that match the regular expression PATTERN are its differences from
the engines (e.g. `MISMATCH ...` from `quantpath match --verify`). The check passes only when they
are exactly the lines of KNOWN_FILE: a new difference fails it, and so does a listed one that no
longer occurs (delete it from the list: the behaviour is fixed). `--update` rewrites KNOWN_FILE
from the current output instead. The list is what is left to do, in plain text; the goal is an
empty file.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def main() -> int:
    if "--" not in sys.argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = sys.argv.index("--")
    own, command = sys.argv[1:split], sys.argv[split + 1:]
    update = "--update" in own
    own = [a for a in own if a != "--update"]
    if len(own) != 2 or not command:
        print(__doc__, file=sys.stderr)
        return 2
    known_file, pattern = Path(own[0]), re.compile(own[1])
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        print(proc.stdout + proc.stderr, file=sys.stderr)
        print(f"{command[0]} exited {proc.returncode}", file=sys.stderr)
        return 2
    found = sorted({line for line in proc.stdout.splitlines() if pattern.search(line)})
    if update:
        known_file.write_text("".join(line + "\n" for line in found))
        print(f"{known_file}: {len(found)} lines")
        return 0
    known = set()
    if known_file.exists():
        known = {line for line in known_file.read_text().splitlines() if line.strip()}
    new = [line for line in found if line not in known]
    fixed = sorted(known - set(found))
    for line in new:
        print(f"new difference: {line}")
    for line in fixed:
        print(f"no longer a difference (remove it from {known_file.name}): {line}")
    print(f"{len(found)} differences, {len(known)} known, {len(new)} new, {len(fixed)} fixed")
    return 1 if new or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
