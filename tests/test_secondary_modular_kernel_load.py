"""When modular loads its compiled network kernel: the cache test on numba's files and
the early load of a process's second call."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tabprotect.secondary.modular import network_kernel
from tabprotect.secondary.modular.network_kernel import kernel_cached, load_kernel

ROOT = Path(__file__).resolve().parents[1]


def _cache_folder() -> Path:
    """The kernels' cache (filled by loading them once)."""
    load_kernel()
    return Path(network_kernel.kernel_cache_folder())


def test_cache_is_found_beside_its_kernels_and_missing_elsewhere(tmp_path):
    cache = _cache_folder()
    assert kernel_cached(str(cache))
    assert not kernel_cached(str(tmp_path))
    for f in cache.glob("network_kernel.*"):
        shutil.copy2(f, tmp_path / f.name)
    assert kernel_cached(str(tmp_path))
    # one index older than the source: numba would compile again, so no early load
    kernel = network_kernel._CACHED[0]
    index = next(tmp_path.glob(
        f"network_kernel.{kernel.__name__}-{kernel.__code__.co_firstlineno}.*nbi"))
    old = os.stat(network_kernel.__file__).st_mtime - 10
    os.utime(index, (old, old))
    assert not kernel_cached(str(tmp_path))
    index.unlink()
    assert not kernel_cached(str(tmp_path))


def test_cache_folder_is_numbas():
    """numba's own locator names the folder :func:`kernel_cache_folder` gives."""
    from numba.core.caching import FunctionCache
    load_kernel()
    locator = FunctionCache(network_kernel._search.py_func)._cache_path
    assert os.path.abspath(locator) == os.path.abspath(network_kernel.kernel_cache_folder())


_CALLS = """
import json, sys
from tabprotect.model import synthetic
from tabprotect.secondary import protect
from tabprotect.secondary.modular import network_kernel
t = synthetic.preset("2d-small", seed=1)
loaded = []
for kernel in sys.argv[1:]:
    protect(t, method="modular", singleton=False, time_limit=60, kernel=kernel)
    loaded.append(network_kernel.kernel_loaded())
print(json.dumps(loaded))
"""


def _loaded_after(*kernels: str) -> list[bool]:
    """Whether the kernel is loaded after each modular call of a new process (the
    ``kernel`` option of each call)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TABPROTECT_NO_NUMBA", None)
    out = subprocess.run([sys.executable, "-c", _CALLS, *kernels], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_call_of_a_process_loads_the_cached_kernel():
    """A one-table process searches by numpy (its search is small); its second modular
    call loads the kernel from the cache."""
    _cache_folder()
    assert _loaded_after("auto", "auto") == [False, True]


def test_kernel_option_python_never_loads_and_compiled_loads_at_once():
    _cache_folder()
    assert _loaded_after("python", "python", "compiled") == [False, False, True]


_CLI = """
import json, sys
from tabprotect.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "numba": "numba" in sys.modules}))
"""


def test_a_one_table_cli_job_with_a_small_search_never_imports_numba(tmp_path):
    """The CLI's one-table run searches by numpy until its searches cost what the load
    would: the demo job's small searches leave numba unimported (and the profile shows
    no load)."""
    _cache_folder()
    demo = ROOT / "fixtures" / "demo"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TABPROTECT_NO_NUMBA", None)
    out = subprocess.run(
        [sys.executable, "-c", _CLI, "protect", str(demo / "business.toml"), "--method",
         "modular", "--no-singleton", "-o", str(tmp_path / "out"), "--quiet", "--profile",
         str(tmp_path / "profile.json")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"code": 0, "numba": False}
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert "protect (modular)" in [s["stage"] for s in profile["stages"]]
    assert not [w for w in profile["within"] if "kernel" in w["part"]]


def _last_line(code: str, arg: str) -> str:
    """The last line ``code`` prints in a new process (numba on, the kernel cached)."""
    _cache_folder()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TABPROTECT_NO_NUMBA", None)
    out = subprocess.run([sys.executable, "-c", code, arg], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_the_load_leaves_the_collector_as_it_found_it():
    code = ("import gc, sys\n"
            "from tabprotect.secondary.modular.network_kernel import load_kernel\n"
            "gc.disable() if sys.argv[1] == 'off' else None\n"
            "load_kernel()\n"
            "print(gc.isenabled())\n")
    for state, expected in (("on", "True"), ("off", "False")):
        assert _last_line(code, state) == expected


def test_the_loads_objects_skip_the_young_generations():
    """The objects a load from the cache makes (some 10^5) go straight to the oldest
    generation, or stay frozen in a process that keeps a frozen generation: no young
    collection walks them and none counts towards a later call's full collection."""
    code = ("import gc, json, sys\n"
            "from tabprotect.secondary.modular.network_kernel import load_kernel\n"
            "gc.freeze() if sys.argv[1] == 'frozen' else None\n"
            "before = gc.get_freeze_count()\n"
            "load_kernel()\n"
            "print(json.dumps([len(gc.get_objects(0)) + len(gc.get_objects(1)), before,\n"
            "                  gc.get_freeze_count()]))\n")
    got = {state: json.loads(_last_line(code, state)) for state in ("plain", "frozen")}
    young, before, after = got["plain"]
    assert young < 5000 and before == after == 0
    young, before, after = got["frozen"]
    assert young < 5000 and after > before + 50_000


def test_a_networks_flow_runs_the_specialisation_the_load_compiled():
    """A network's memoised (read-only) ends reach the compiled flow with the array
    flags of the load's warm-up call: numba compiles no second specialisation (most of
    a second's CPU in a user's first run) at the first flow, and the flow is the
    Python one."""
    import numpy as np
    import scipy.sparse as sp

    from tabprotect.secondary.modular.network import Network, max_flow
    load_kernel()
    net = Network.of(sp.csr_matrix([[1.0, -1.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]]))
    assert not net.tail.flags.writeable
    fwd, bwd = np.array([2.0, 1.5, 4.0, 0.5]), np.array([1.0, 3.0, 0.25, 2.0])
    total, side = net.flow(fwd, bwd, 1, 0, (0,))
    ref_total, ref_side = max_flow(net.capacities(fwd, bwd, (0,)).tolist(), 1, 0)
    assert total == ref_total and (side == ref_side).all()
    assert len(network_kernel.flow_compiled.signatures) == 1


_NK_JOB = """[microdata]
file = "{ent}/micro.csv.gz"
dimensions = ["region", "industry"]
response = "turnover"

[hierarchies.region]
hrc = "{ent}/region.hrc"

[hierarchies.industry]
hrc = "{ent}/industry.hrc"

[rules.frequency]
n = 3
safety_range = 10

[[rules.dominance]]
n = 1
k = 80

[protect]
method = "modular"
cost = "value"
singleton = false
kernel = "{kernel}"
"""


def nk_variant_job(seed: int, folder: Path, kernel: str, name: str = "job") -> Path:
    """A job file for the peer benchmark's 2-D NK enterprise table of variant ``seed``
    (its data written under ``folder``) with the modular search's ``kernel``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from peer_variants import write_variant
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    if not (folder / "data" / "enterprise").exists():
        write_variant(seed, folder / "data")
    job = folder / f"{name}.toml"
    job.write_text(_NK_JOB.format(ent=folder / "data" / "enterprise", kernel=kernel))
    return job


_ROUNDS_LOAD = """
import json, sys
import numpy as np
from tabprotect.pipeline import run
from tabprotect.secondary import protect
from tabprotect.secondary.modular import OptimalSubtableSolver
from tabprotect.secondary.modular.network_cuts import SearchLimits
from tabprotect.secondary.modular.network_kernel import kernel_loaded
after = None if sys.argv[2] == "never" else int(sys.argv[2])
table = run(sys.argv[1], task="primary").table
before = kernel_loaded()
solver = OptimalSubtableSolver(singleton=False,
                               search=SearchLimits(load_after_rounds=after))
res = protect(table, method="modular", cost="value", singleton=False, solver=solver)
print(json.dumps([before, kernel_loaded(), np.asarray(res.status).tolist(),
                  bool(res.passed)]))
"""


@pytest.mark.slow
def test_a_load_within_the_run_keeps_the_pattern_of_a_run_that_never_loads(tmp_path):
    """The peer benchmark's 2-D NK enterprise table of seed 24 (1,260 cells), whose
    optimum rounds need the uniqueness MILPs: a new process whose search loads the
    cached kernel after its first certified optimum round (``load_after_rounds=1``)
    loads it part-way through its sub-tables and publishes the same cells as one
    whose search never loads it (``load_after_rounds=None``), and the LP audit passes
    both."""
    _cache_folder()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TABPROTECT_NO_NUMBA", None)
    job = nk_variant_job(24, tmp_path, "auto")
    got = {}
    for after in ("1", "never"):
        out = subprocess.run([sys.executable, "-c", _ROUNDS_LOAD, str(job), after],
                             env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        got[after] = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["1"][:2] == [False, True] and got["never"][:2] == [False, False]
    assert got["1"][3] and got["never"][3]
    assert got["1"][2] == got["never"][2] and got["1"][2].count("M") > 100
