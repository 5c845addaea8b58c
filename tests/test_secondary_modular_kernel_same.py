"""The compiled kernel changes the network search's speed, never its answer: the same
sub-table or job gives the same pattern (or the same fallback to the MILP) with kernel
"python" and "compiled", in a new process and in one that has loaded the kernel."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lp_oracle import protected
from test_secondary_modular_network import _subtable
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.modular.network_cuts import SearchLimits
from tabprotect.secondary.modular.network_kernel import load_kernel
from tabprotect.secondary.modular.network_search import network_pattern

ROOT = Path(__file__).resolve().parents[1]

#: random sub-tables (seed, shape, singleton, max_nodes) whose row rounds reach the
#: node budget or ask the uniqueness MILPs, with at most three free nodes listed (the
#: other conditions met by maximum flows); the last three find their patterns
_CASES = [(1, (6, 7), True, 30), (2, (6, 7), True, 30), (9, (6, 7), False, 30),
          (3, (6, 7), True, 100), (23, (7, 8), True, 100), (18, (7, 8), True, 100),
          (1, (6, 7), True, 2000), (3, (6, 7), True, 2000), (18, (7, 8), True, 2000)]


def _case(seed, shape, singleton):
    t = _subtable(shape, seed, published=0.2)
    return (t, Requirements.from_table(t, singleton=singleton), cost_vector(t, "value"),
            candidate_cells(t))


def _cells(z) -> list | None:
    return None if z is None else np.flatnonzero(z).tolist()


@pytest.mark.parametrize("seed,shape,singleton,max_nodes", _CASES)
def test_loaded_kernel_gives_the_numpy_searchs_pattern_and_fallback(seed, shape,
                                                                    singleton, max_nodes):
    """The search without the kernel and with it loaded returns the same cells, or
    both give up (the caller's MILP then solves the sub-table); scipy's LPs judge a
    pattern protected."""
    t, req, c, cand = _case(seed, shape, singleton)
    limits = dict(max_nodes=max_nodes, max_free_nodes=3)
    plain = network_pattern(t, req, c, cand, limits=SearchLimits(compiled=False, **limits))
    load_kernel()
    compiled = network_pattern(t, req, c, cand, limits=SearchLimits(**limits))
    assert _cells(compiled) == _cells(plain)
    if plain is not None:
        assert protected(t, plain, singleton=singleton).all()


_TWO_CALLS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_secondary_modular_kernel_same import _CASES, _case, _cells
from tabprotect.secondary.modular.network_cuts import SearchLimits
from tabprotect.secondary.modular.network_kernel import kernel_loaded, load_kernel
from tabprotect.secondary.modular.network_search import network_pattern
out = []
for seed, shape, singleton, max_nodes in _CASES:
    t, req, c, cand = _case(seed, shape, singleton)
    limits = SearchLimits(max_nodes=max_nodes, max_free_nodes=3)
    first = _cells(network_pattern(t, req, c, cand, limits=limits))
    out.append([kernel_loaded(), first])
load_kernel()
for seed, shape, singleton, max_nodes in _CASES:
    t, req, c, cand = _case(seed, shape, singleton)
    limits = SearchLimits(max_nodes=max_nodes, max_free_nodes=3)
    out.append([kernel_loaded(), _cells(network_pattern(t, req, c, cand, limits=limits))])
print(json.dumps(out))
"""


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TABPROTECT_NO_NUMBA", None)
    return env


def test_two_calls_of_one_process_give_the_same_patterns():
    """In a new process the sub-tables are searched first as a new process searches
    them (by numpy, the kernel loaded part-way when the rounds ask for it), then again
    with the kernel loaded: the same cells each time."""
    load_kernel()                       # (fills the cache the new process reads)
    out = subprocess.run([sys.executable, "-c", _TWO_CALLS, str(ROOT / "tests")],
                         env=_env(), capture_output=True, text=True, timeout=300,
                         check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    cold, warm = got[:len(_CASES)], got[len(_CASES):]
    assert all(loaded for loaded, _ in warm)
    assert [cells for _, cells in cold] == [cells for _, cells in warm]


_JOB_CALLS = """
import json, sys
import numpy as np
from tabprotect.pipeline import run
out = []
for kernel in sys.argv[2:]:
    r = run(sys.argv[1], task="protect", overrides={"protect": {"kernel": kernel}})
    out.append([np.asarray(r.published.status).tolist(), bool(r.audit.passed)])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_job_publishes_the_same_cells_by_every_kernel_and_call(tmp_path):
    """The peer benchmark's 2-D NK enterprise table of seed 53, one of whose
    sub-tables the kernel's former larger budget left to the MILP: in one new process,
    kernel "python", "auto" (cold), "auto" (warm: the kernel loaded) and "compiled"
    publish the same cells, and the LP audit passes each."""
    from test_secondary_modular_kernel_load import nk_variant_job
    load_kernel()
    job = nk_variant_job(53, tmp_path, "auto")
    kernels = ["python", "auto", "auto", "compiled", "python"]
    out = subprocess.run([sys.executable, "-c", _JOB_CALLS, str(job), *kernels],
                         env=_env(), cwd=tmp_path, capture_output=True, text=True,
                         timeout=900, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(passed for _, passed in got)
    assert all(status == got[0][0] for status, _ in got)
