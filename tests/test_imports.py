"""Imports between tabprotect modules point one way: the import graph (module-level and
function-level imports) has no cycle."""
from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

PACKAGES = ("tabprotect", "solvers")
ROOT = Path(__file__).resolve().parents[1]

#: import cycles that are known and being removed; each entry is the set of modules on
#: one cycle.  The test fails on any other cycle, and on an entry that no longer exists.
KNOWN_CYCLES: list[frozenset[str]] = [
]


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(tree: ast.Module):
    """Every import statement, at module level or inside a function (a function-level
    import is a dependency too, only a later one), except type-checking-only imports."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for part in node.body for n in ast.walk(part))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
            yield node


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports.  ``from p import name`` points at
    ``p.name`` when that is a module, else at ``p``."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]   # an attribute of a module
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset("abc")]


def test_the_graph_sees_relative_and_from_imports():
    graph = import_graph()
    assert "tabprotect.model.table" in graph["tabprotect.secondary.gauss.method"]
    assert "solvers" not in graph["tabprotect.model.table"]


def test_no_import_cycle_between_package_modules():
    found = cycles({k: set(v) for k, v in import_graph().items()})
    unexpected = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert not unexpected, f"import cycles: {unexpected}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"cycles fixed, remove them from KNOWN_CYCLES: {gone}"


def _python(code: str, *args, keep_switch: bool = False) -> subprocess.CompletedProcess:
    """Run ``code`` in a new Python with this tree first on its path (``args`` as its
    ``sys.argv[1:]``); TABPROTECT_NO_NUMBA unset unless ``keep_switch``, so that a test
    of what a run does not import is not passed by the switch alone."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not keep_switch:
        env.pop("TABPROTECT_NO_NUMBA", None)
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_a_non_gauss_run_imports_neither_numba_nor_scipy_stats():
    # numba (the gauss kernels), scipy.stats (cta's rank correlation) and the optional
    # packages (plots, the PuLP backend, the service, Dask) are imported on first use, and
    # scipy.linalg (which scipy's graph module would import) not at all by such a run:
    # importing tabprotect, its methods and the CLI, and protecting with a method that
    # calls no kernel, or with gauss on a table below its python_below_cells (the plain
    # kernel), loads none of them; the first compiled gauss call loads numba (four
    # threads calling it at once compile the kernels once).
    code = (
        "import sys\n"
        "import tabprotect, tabprotect.secondary, tabprotect.pipeline, tabprotect.cli\n"
        "from tabprotect.model.synthetic import preset\n"
        "heavy = ('numba', 'scipy.stats', 'scipy.linalg', 'matplotlib', 'pulp', 'fastapi',"
        " 'dask')\n"
        "assert not [m for m in heavy if m in sys.modules], 'import'\n"
        "t = preset('2d-small', seed=1)\n"
        "r = tabprotect.secondary.protect(t, method='hypercube', singleton=False)\n"
        "assert r.passed\n"
        "assert not [m for m in heavy if m in sys.modules], 'hypercube'\n"
        "r = tabprotect.secondary.protect(t, method='gauss', singleton=False)\n"
        "assert r.passed\n"
        "assert not [m for m in heavy if m in sys.modules], 'small gauss'\n"
        "import threading\n"
        "go, out = threading.Barrier(4), []\n"
        "def first_gauss():\n"
        "    go.wait()\n"
        "    out.append(tabprotect.secondary.protect(\n"
        "        t, method='gauss', singleton=False,\n"
        "        options=tabprotect.secondary.GaussOptions(kernel='compiled')))\n"
        "threads = [threading.Thread(target=first_gauss) for _ in range(4)]\n"
        "[th.start() for th in threads]; [th.join() for th in threads]\n"
        "assert len(out) == 4 and all(r.passed for r in out), 'gauss in threads'\n"
        "assert len({tuple(r.status) for r in out}) == 1 and 'numba' in sys.modules\n")
    _python(code)


def test_a_modular_cli_job_imports_no_other_method(tmp_path):
    # the registry imports a method's package when the method is looked up: a modular
    # job on a 2-D table (network sub-tables, no MILP) loads neither the optimal, gauss
    # nor cta packages, and the CLI's parser loads no method at all
    rows = [("1", "a", 10), ("1", "b", 1), ("1", "c", 7), ("2", "a", 8), ("2", "b", 9),
            ("2", "c", 6), ("3", "a", 5), ("3", "b", 12), ("3", "c", 2)]
    (tmp_path / "cells.csv").write_text(
        "r,c,v\n" + "".join(f"{r},{c},{v}\n" for r, c, v in rows))
    job = tmp_path / "job.toml"
    job.write_text(f'[input]\ncells = "{tmp_path / "cells.csv"}"\ndimensions = ["r", "c"]\n'
                   'value = "v"\nfreq = "v"\ncompute_totals = true\n'
                   '[hierarchies.r]\nflat = true\n[hierarchies.c]\nflat = true\n'
                   '[rules.frequency]\nn = 3\n[protect]\nmethod = "modular"\n'
                   'singleton = false\n')
    code = (
        "import sys\n"
        "import tabprotect.cli as cli\n"
        "cli.build_parser()\n"
        "others = ('tabprotect.secondary.optimal', 'tabprotect.secondary.gauss',\n"
        "          'tabprotect.adjust', 'tabprotect.secondary.modular')\n"
        "loaded = lambda: [m for m in others if m in sys.modules]\n"
        "assert not loaded(), ('parser', loaded())\n"
        "from tabprotect.secondary import METHODS\n"
        "assert {'optimal', 'gauss', 'cta', 'modular'} <= set(METHODS), list(METHODS)\n"
        "assert not loaded(), ('secondary', loaded())\n"
        "assert cli.main(['protect', sys.argv[1], '-o', sys.argv[2], '--quiet']) == 0\n"
        "assert loaded() == ['tabprotect.secondary.modular'], loaded()\n")
    _python(code, job, tmp_path / "out", keep_switch=True)


def test_a_cold_count_job_with_the_attack_step_loads_no_optional_scipy_module(tmp_path):
    # gauss's attack step (a 3-D count table, single contributors as intruders) labels
    # the pattern's components in plain numpy: the CLI job loads neither scipy's graph
    # module nor scipy.linalg (some 0.1 s of a cold run), nor pandas, numba or the
    # optional packages
    from helpers import flat_count_table
    from tabprotect.secondary.base import cost_vector
    from tabprotect.secondary.gauss import gauss
    t = flat_count_table((3, 3, 3), 12, 1.5)
    assert gauss(t, cost_vector(t, "freq"), singleton=True).details["attack_lps"] > 0
    cells = t.to_frame(("freq", "upl", "spl"))
    cells["status"] = np.where(t.status == "U", "U", "")
    cells.to_csv(tmp_path / "cells.csv", index=False)
    hierarchies = "".join(f'[hierarchies.{d}]\nflat = true\ntotal = "T"\n' for d in "abc")
    job = tmp_path / "job.toml"
    job.write_text(f'[input]\ncells = "{tmp_path / "cells.csv"}"\n'
                   'dimensions = ["a", "b", "c"]\nvalue = "freq"\nfreq = "freq"\n'
                   'status = "status"\nupl = "upl"\nspl = "spl"\nkind = "frequency"\n'
                   f'{hierarchies}[protect]\nmethod = "gauss"\ncost = "freq"\n'
                   'singleton = true\n')
    code = (
        "import sys\n"
        "import tabprotect.cli as cli\n"
        "assert cli.main(['protect', sys.argv[1], '-o', sys.argv[2], '--quiet']) == 0\n"
        "heavy = ('scipy.sparse.csgraph', 'scipy.sparse.linalg', 'scipy.linalg',\n"
        "         'scipy.optimize', 'scipy.stats', 'pandas', 'numba', 'matplotlib',\n"
        "         'pulp', 'dask')\n"
        "print([m for m in heavy if m in sys.modules])\n")
    proc = _python(code, job, tmp_path / "out")
    assert proc.stdout.splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "published.csv").exists()


def test_a_primary_cli_job_imports_no_scipy(tmp_path):
    # a job of rules alone (microdata tabulated, or cells whose totals are computed)
    # never calls scipy: the table keeps its relations as CSR arrays and makes their
    # scipy matrix on first read, so scipy.sparse (some 0.1 s of a cold run) is not
    # imported; its files are written as usual
    (tmp_path / "micro.csv").write_text("r,c,v\n" + "".join(
        f"{r},{c},{(7 * r + 3 * c) % 11 + 1}\n" for r in range(1, 4) for c in range(1, 4)
        for _ in range(r)))
    (tmp_path / "cells.csv").write_text("r,c,v\n" + "".join(
        f"{r},{c},{(7 * r + 3 * c) % 11 + 1}\n" for r in range(1, 4) for c in range(1, 4)))
    hierarchies = '[hierarchies.r]\nflat = true\n[hierarchies.c]\nflat = true\n'
    rules = '[rules.frequency]\nn = 3\n[[rules.p]]\np = 10\n'
    (tmp_path / "micro.toml").write_text(
        f'[microdata]\nfile = "{tmp_path / "micro.csv"}"\ndimensions = ["r", "c"]\n'
        f'response = "v"\n{hierarchies}{rules}')
    (tmp_path / "cells.toml").write_text(
        f'[input]\ncells = "{tmp_path / "cells.csv"}"\ndimensions = ["r", "c"]\n'
        f'value = "v"\nfreq = "v"\ncompute_totals = true\n{hierarchies}'
        '[rules.frequency]\nn = 3\n')
    code = (
        "import sys\n"
        "import tabprotect.cli as cli\n"
        "for job, out in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    assert cli.main(['primary', job, '-o', out, '--quiet']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n")
    proc = _python(code, tmp_path / "micro.toml", tmp_path / "out-micro",
                   tmp_path / "cells.toml", tmp_path / "out-cells")
    assert proc.stdout.splitlines()[-1] == "[]"
    for out in ("out-micro", "out-cells"):
        assert (tmp_path / out / "primary.csv").exists()
