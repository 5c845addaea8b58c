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


def test_readme_quick_start_matches_ci():
    text = README.read_text()
    test_cmd = [ln for ln in text.splitlines() if "pytest" in ln and ln.startswith("python3")]
    assert len(test_cmd) == 1
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert test_cmd[0].strip() in ci
