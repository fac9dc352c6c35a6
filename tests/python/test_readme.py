"""The README's Python example works as written: run from the repository root, it prints what the
README says it prints."""

import re
import subprocess
import sys

from conftest import ROOT


def test_the_readme_example_prints_what_the_readme_says():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Python\n", 1)[1]
    code, printed = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    assert "import" in code and len(code.strip().splitlines()) == 5
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
