"""A cold protect job loads the steps it runs: the modular and gauss methods on a small
table import neither the other methods' passes, the repair steps a passing pattern does
not need, the Dask executor, the product-structure search nor the other solver backends."""
from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import write_audit_job

#: modules a small job whose first pattern passes never calls
UNUSED = ("solvers.pulp_backend", "solvers.scipy_backend", "tabprotect.model.structure",
          "tabprotect.parallel_dask", "tabprotect.secondary.attack_witnesses",
          "tabprotect.secondary.deviation", "tabprotect.secondary.greedy",
          "tabprotect.secondary.passes", "tabprotect.secondary.witness_search")


@pytest.mark.parametrize("method", ["modular", "gauss"])
def test_a_cold_protect_job_loads_no_unused_step(tmp_path, method):
    job = write_audit_job(tmp_path)
    code = ("import sys\n"
            "from tabprotect.cli import main\n"
            "code = main(['protect', sys.argv[1], '--method', sys.argv[2], '--quiet'])\n"
            f"unused = {UNUSED!r}\n"
            "print('loaded:', *[m for m in unused if m in sys.modules], code)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(job), method],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "loaded: 0"
    assert (tmp_path / "out" / "published.csv").exists()
