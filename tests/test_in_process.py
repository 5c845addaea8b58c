"""Small work stays in the calling process: protecting and auditing a small table with
every suppression method, at the default settings, starts no worker process (the pool of
``tabprotect.parallel`` costs more to start than such a table takes to protect)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tabprotect.secondary import METHODS

#: the suppression methods (a method that publishes adjusted values has no pattern)
SUPPRESSION = sorted(m for m, spec in METHODS.items() if not spec.capabilities.adjusts_values)

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import multiprocessing
from tabprotect.audit import audit
from tabprotect.model.synthetic import preset
from tabprotect.secondary import METHODS, protect
table = preset("2d-small", seed=3)
SUPPRESSION = sorted(m for m, spec in METHODS.items() if not spec.capabilities.adjusts_values)
for method in SUPPRESSION:
    res = protect(table, method=method, singleton=False)
    independent = audit(res.confidential_table)
    print(method, res.passed, independent.passed, len(multiprocessing.active_children()))
print("children", len(multiprocessing.active_children()))
"""


def test_small_tables_start_no_worker_process():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.split("\n")
    runs = [line.split() for line in lines if line and not line.startswith("children")]
    assert sorted(r[0] for r in runs) == SUPPRESSION, out.stdout
    for method, passed, independent, children in runs:
        assert passed == "True" and independent == "True", method
        assert children == "0", f"{method} started worker processes"
    assert "children 0" in lines
