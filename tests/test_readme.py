"""The README's Python example runs and its pattern passes an independent audit."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tabprotect.audit import audit

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs_and_is_protected(capsys):
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    result = namespace["result"]
    independent = audit(result.confidential_table, singleton=True)
    assert independent.passed
    assert (result.table.status == "U").any() and (result.table.status == "M").any()
    assert np.array_equal(independent.lower, result.audit.lower)
    # what the example prints: the published view hides which cells are primary, and the
    # intervals show no negative zero
    printed = capsys.readouterr().out
    assert "-0.0" not in printed and set(result.published()["status"]) <= {"S", "X", "P", "Z"}


def test_readme_quick_start_matches_ci():
    # the quick start is exactly two commands, and CI runs both verbatim on a fresh copy
    text = README.read_text()
    quick = re.search(r"## Quick start\n(.*?)\n## ", text, re.S).group(1)
    block = re.search(r"```sh\n(.*?)```", quick, re.S).group(1)
    commands = [ln.strip() for ln in block.splitlines() if ln.strip()]
    assert len(commands) == 2
    assert "tabprotect demo" in commands[0] and "pytest" in commands[1]
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    for command in commands:
        assert command in ci
    # CI copies the tracked files to an empty folder and runs the commands there
    assert "git -C \"$repo\" ls-files" in ci and 'cd "$clone"' in ci
