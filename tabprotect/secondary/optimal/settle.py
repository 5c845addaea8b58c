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

from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.oracle import DUAL_SIMPLEX, HybridOracle
from tabprotect.secondary.optimal.witness_check import witness_certified
from tabprotect.secondary.repair import Requirements


@dataclasses.dataclass
class Settled:
    """The requirements of the primaries left open (``req``) and what the pass did."""

    req: Requirements
    settled: int
    complete: bool
    lps: int
    seconds: float

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

    Without single-contributor attackers a witness pass first settles most primaries
    with a few aggregate LPs; the attacker LPs then check the rest.  A check the
    deadline stops settles only what the witnesses proved (a primary is never dropped
    on an unfinished check).
    """
    t0 = time.perf_counter()
    n = len(req.primary)
    done = np.zeros(n, bool)
    n_lp = 0
    z = fixed.astype(float)
    oracle = HybridOracle(table, req, simplex_strategy=DUAL_SIMPLEX, racing=False,
                          options=options)
    if not req.singleton.any() and n:
        done, n_lp = witness_certified(oracle.A, req, oracle.slot, z, req.primary,
                                       rounds=options.settle_witness_rounds,
                                       deadline=deadline)
    complete = True
    rest = req.primary[~done]
    if len(rest) and (deadline is None or time.perf_counter() < deadline):
        chk = oracle.check(fixed, cuts=False, primaries=rest, deadline=deadline)
        n_lp += chk.n_lp
        complete = chk.complete
        if complete:
            short = np.zeros(table.n_cells, bool)
            short[[s for s, _, _ in chk.violated]] = True
            done = ~short[req.primary]
    elif len(rest):
        complete = False
    return Settled(req=restrict(req, ~done), settled=int(done.sum()), complete=complete,
                   lps=n_lp, seconds=time.perf_counter() - t0)
