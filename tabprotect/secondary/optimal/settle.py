"""Primaries the unpublished cells protect already: a pattern only ever adds suppressions
to the cells that are unpublished anyway (primaries and earlier secondaries), and
suppressing more never weakens a condition (every attacker LP only gains room; a
single contributor's too: before its cell was suppressed its deviation there was 0
anyway).  A primary whose conditions that pattern alone meets is protected by every
pattern, so the search leaves it out: no attacker LP, no cut, no start for it.

On tables with many primaries that protect each other (CBS: 2,467 primaries, 2 of them
short with the primaries alone) the search then works on the few that are left.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from solvers import HighsModel, LinearProgram
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.oracle import DUAL_SIMPLEX, HybridOracle
from tabprotect.secondary.optimal.witness_check import (is_deviation, keep_witness,
                                                         witness_certified)
from tabprotect.secondary.witness_search import moves_matrix
from tabprotect.secondary.attack_requirements import Requirements


@dataclasses.dataclass
class Settled:
    """The requirements of the primaries left open (``req``) and what the pass did."""

    req: Requirements
    settled: int
    complete: bool
    lps: int
    seconds: float
    #: the witnesses that settled primaries, one row per deviation over the table's
    #: cells (None: none), for protect()'s audit to check and use
    moves: object = None

    def as_details(self) -> dict:
        return {"settled_primaries": self.settled, "settle_complete": self.complete,
                "settle_lps": self.lps, "settle_seconds": round(self.seconds, 3)}


def restrict(req: Requirements, keep: np.ndarray) -> Requirements:
    """``req`` for the primaries ``keep`` (bool mask over the primaries) only."""
    return dataclasses.replace(req, primary=req.primary[keep], need_up=req.need_up[keep],
                               need_down=req.need_down[keep],
                               need_width=req.need_width[keep], tol=req.tol[keep])


def settle(table, req: Requirements, fixed: np.ndarray, *, deadline: float | None,
           options: OptimalOptions) -> Settled:
    """The primaries the ``fixed`` (unpublished) cells alone leave short, or that the
    pass did not reach by ``deadline``.

    A witness pass settles most primaries that protect each other with a few aggregate
    LPs.  Only when it settles at least ``settle_check_min_share`` of them are the rest
    (then few, and worth an LP each; otherwise most are short, and the search's own LPs
    find that) pushed one at a time (:func:`single_witnesses`, each solution settling
    every primary it moves far enough), and the attacker LPs check what is left.  A check the deadline stops settles
    only what the witnesses proved (a primary is never dropped on an unfinished
    check).  Without the witness pass (single-contributor attackers) nothing is settled
    and the pass costs nothing.
    """
    t0 = time.perf_counter()
    n = len(req.primary)
    if req.singleton.any() or n == 0:
        return Settled(req=req, settled=0, complete=False, lps=0, seconds=0.0)
    z = fixed.astype(float)
    oracle = HybridOracle(table, req, simplex_strategy=DUAL_SIMPLEX, racing=False,
                          options=options)
    kept: list = []
    done, n_lp = witness_certified(oracle.A, req, oracle.slot, z, req.primary,
                                   rounds=options.settle_witness_rounds, deadline=deadline,
                                   keep=kept)
    complete = bool(done.all())
    if len(done) and not complete and done.mean() >= options.settle_check_min_share:
        more, n_more = single_witnesses(oracle.A, req, z, ~done, deadline=deadline,
                                        keep=kept)
        done |= more
        n_lp += n_more
    rest = req.primary[~done]
    if (len(rest) and done.mean() >= options.settle_check_min_share
            and (deadline is None or time.perf_counter() < deadline)):
        chk = oracle.check(fixed, cuts=False, primaries=rest, deadline=deadline)
        n_lp += chk.n_lp
        complete = chk.complete
        if complete:
            short = np.zeros(table.n_cells, bool)
            short[[s for s, _, _ in chk.violated]] = True
            done = ~short[req.primary]
    return Settled(req=restrict(req, ~done), settled=int(done.sum()), complete=complete,
                   lps=n_lp, seconds=time.perf_counter() - t0,
                   moves=moves_matrix(kept, table.n_cells) if kept else None)


def single_witnesses(A, req: Requirements, z: np.ndarray, open_: np.ndarray, *,
                     deadline: float | None, keep: list | None = None
                     ) -> tuple[np.ndarray, int]:
    """The primaries among ``open_`` (bool mask over the primaries) that a witness of
    one LP per open primary and direction settles, and the LPs solved; ``keep``, when
    given, gets each witness that settles a condition not settled before.

    Each LP pushes one primary alone (over every unpublished cell, within its range);
    its solution is a deviation the intruder cannot rule out, so it settles each open
    primary it moves by the level in that direction, and those need no LP of their own
    there.  Primaries with a width requirement stay open (both directions at once).
    Ends at ``deadline`` (what it settled so far holds)."""
    slots = np.flatnonzero(open_ & (req.need_width <= 0))
    done = np.zeros(len(req.primary), bool)
    if len(slots) == 0:
        return done, 0
    active = np.flatnonzero(z > 0.5)
    col = np.full(len(z), -1, np.int64)
    col[active] = np.arange(len(active))
    sub = A[:, active].tocsr()
    rows = np.flatnonzero(np.diff(sub.indptr) > 0)
    tcol = col[req.primary[slots]]
    need = {1.0: req.need_up[slots], -1.0: req.need_down[slots]}
    # ranges capped well above every level: the LP stays bounded, and a deviation
    # within smaller ranges is still one the intruder cannot rule out
    cap = 2.0 * max(float(need[1.0].max()), float(need[-1.0].max()), 0.5)
    model = HighsModel(LinearProgram(
        c=np.zeros(len(active)), A=sub[rows], row_lower=np.zeros(len(rows)),
        row_upper=np.zeros(len(rows)), col_lower=-np.minimum(req.down[active], cap),
        col_upper=np.minimum(req.up[active], cap), sense="max"),
        simplex_strategy=DUAL_SIMPLEX)
    met = {d: need[d] <= 0 for d in need}
    tol = req.tol[slots]
    n_lp = 0
    for k in range(len(slots)):
        for sign in (1.0, -1.0):
            if met[sign][k]:
                continue
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return _settled(done, slots, met), n_lp
            model.set_objective(indices=[int(tcol[k])], values=[sign], sense="max")
            res = model.solve(time_limit=left)
            n_lp += 1
            if res.status != "optimal" or res.x is None:
                continue
            y = np.asarray(res.x, dtype=float)
            if not is_deviation(sub[rows], y):
                continue   # no certificate from it
            new = False
            for d in (1.0, -1.0):
                # the attacker LPs' own test (a level equal to the range is met)
                hit = (d * y[tcol] >= need[d] - tol) & ~met[d]
                new = new or bool(hit.any())
                met[d] |= hit
            if new:
                keep_witness(keep, active, y)
    return _settled(done, slots, met), n_lp


def _settled(done: np.ndarray, slots: np.ndarray, met: dict) -> np.ndarray:
    done[slots[met[1.0] & met[-1.0]]] = True
    return done
