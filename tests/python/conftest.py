"""Shared fixtures: the repository's folders and the CLI the module is compared with."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llama-tiny-fp8"
PRODUCERS = ROOT / "tests" / "data" / "producers"


@pytest.fixture(scope="session")
def cli():
    """Runs the quantpath CLI (QUANTPATH_CLI, set by scripts/test-python) and parses its JSON."""
    path = os.environ.get("QUANTPATH_CLI")
    if not path:
        pytest.skip("QUANTPATH_CLI is not set (scripts/test-python sets it)")

    def run(*args, expect=(0,)):
        done = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        assert done.returncode in expect, done.stderr
        return json.loads(done.stdout) if "--json" in args else done

    return run
