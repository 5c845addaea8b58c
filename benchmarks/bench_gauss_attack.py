"""gauss's pattern against the single-contributor attack on the generated count tables:
a sampled check by LPs independent of the audit, and the attack step's work.

For a table ``count_table(side)`` of ``bench_audit_modes.py`` (flat 3-D, Poisson(4)
counts, primaries the counts 1-2, an interval reaching count + 1 and 2 wide), gauss runs
with ``singleton=True``; then, for ``--sample`` primaries drawn at random and each
direction, scipy's HiGHS solves over the pattern's unpublished cells (every published
cell at its value):

1. a table with the primary moved by 1 that moves the fewest count-1 cells (the sum of
   their deviations, minimised): it holds against every attacker it leaves in place;
2. if it moved some, a table with those kept at their values: it holds against them;
3. if there is none, one table per such attacker.

A primary is short when a step finds no table.  Moving a primary by 1 each way is what
its levels ask (count + 1 above; 2 wide, the lower side at count - 1 at the most), so a
primary that passes is protected against every single contributor by LP; the check
proves nothing about an integer intruder.

Usage::

    python benchmarks/bench_gauss_attack.py --sides 22 --sample 30 [--code DIR]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

_CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else None
sys.path.insert(0, _CODE or str(Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.insert(1, str(Path(__file__).resolve().parent))

from bench_audit_modes import count_table  # noqa: E402
from tabprotect.secondary.base import METHODS, cost_vector  # noqa: E402


class Unpublished:
    """The intruder's system over one pattern's unpublished cells."""

    def __init__(self, table, status):
        hidden = np.isin(status, ("U", "M"))
        self.cells = np.flatnonzero(hidden)
        A = sp.csr_matrix(table.relations)
        rhs = -(A[:, ~hidden] @ table.value[~hidden])
        sub = A[:, self.cells]
        rows = np.asarray(abs(sub).sum(axis=1)).ravel() > 0
        self.A, self.rhs = sub[rows], rhs[rows]
        self.value = table.value[self.cells]
        self.attackers = np.flatnonzero(table.freq[self.cells] == 1)

    def least_moving(self, p: int, goal: float, kept: np.ndarray) -> np.ndarray | None:
        """A table with cell ``p`` (position in ``cells``) at ``goal`` and the attackers
        ``kept`` at their values, moving the other attackers the least; the attackers it
        moves (positions), or None when there is none."""
        n, m = len(self.cells), len(self.attackers)
        obj = np.concatenate([np.zeros(n), np.ones(2 * m)])
        pick = sp.csr_matrix((np.ones(m), (np.arange(m), self.attackers)), shape=(m, n))
        eq = sp.vstack([sp.hstack([self.A, sp.csr_matrix((self.A.shape[0], 2 * m))]),
                        sp.hstack([pick, -sp.eye(m), sp.eye(m)])]).tocsr()
        b = np.concatenate([self.rhs, self.value[self.attackers]])
        hi = np.full(n + 2 * m, np.inf)
        lo = np.zeros(n + 2 * m)
        lo[p] = hi[p] = goal
        at = np.searchsorted(self.attackers, kept)
        hi[n + at] = hi[n + m + at] = 0.0
        res = linprog(obj, A_eq=eq, b_eq=b, bounds=np.column_stack(
            [lo, np.where(np.isfinite(hi), hi, None)]), method="highs")
        if res.status != 0:
            return None
        x = res.x[:n]
        return self.attackers[np.abs(x[self.attackers] - self.value[self.attackers]) > 1e-7]


def check(system: Unpublished, p: int) -> tuple[bool, int]:
    """Whether primary ``p`` (position) reaches 1 up and 1 down against every attacker,
    and the LPs solved."""
    lps = 0
    for goal in (system.value[p] + 1, system.value[p] - 1):
        moved = system.least_moving(p, goal, np.zeros(0, np.int64))
        lps += 1
        if moved is None:
            return False, lps
        moved = moved[moved != p]
        if len(moved) == 0:
            continue
        lps += 1
        if system.least_moving(p, goal, moved) is not None:
            continue
        for a in moved:
            lps += 1
            if system.least_moving(p, goal, np.array([a])) is None:
                return False, lps
    return True, lps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, nargs="+", default=[22])
    ap.add_argument("--sample", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--code", help="import tabprotect from this checkout")
    args = ap.parse_args()
    print("| cells | primaries | attackers | secondaries | cost | unpublished "
          "| sampled | short | LPs | s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for side in args.sides:
        t = count_table(side)
        cost = cost_vector(t, "value")
        out = METHODS["gauss"].run(t, cost, singleton=True)
        system = Unpublished(t, out.status)
        primaries = np.flatnonzero(out.status[system.cells] == "U")
        rng = np.random.default_rng(args.seed)
        sample = rng.choice(primaries, min(args.sample, len(primaries)), replace=False)
        t0 = time.perf_counter()
        short = lps = 0
        for p in sample:
            ok, n = check(system, int(p))
            short += not ok
            lps += n
        print(f"| {t.n_cells:,} | {len(primaries):,} | {len(system.attackers):,} "
              f"| {int((out.status == 'M').sum()):,} | {cost[out.status == 'M'].sum():,.0f} "
              f"| {len(system.cells):,} | {len(sample)} | {short} | {lps} "
              f"| {time.perf_counter() - t0:.1f} |", flush=True)


if __name__ == "__main__":
    main()
