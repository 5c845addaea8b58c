"""Phase 1 of the Benders search: the master's LP relaxation tightened by fractional
separation (capacity cuts at fractional points, their roundings, support cuts, cover
cuts of the pool) until the bound stalls, no cut is found or the phase's share of the
time is used."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tabprotect.secondary.optimal.search import Search, round_bound
from tabprotect.secondary.attacker_oracle import Check


@dataclass
class LPPhase:
    """What the LP phase leaves: its last master solve, the bound and the LP point;
    ``settled``: whether the phase ended on a complete capacity separation at that
    point that found no new cut."""

    result: object | None = None
    lower_bound: float = 0.0
    zlp: np.ndarray | None = None
    settled: bool = False


class _Chunks:
    """Round-robin chunks of the primaries (slots) for the LP phase's separation."""

    def __init__(self, n_prim: int, chunk: int | None):
        self.n_prim = n_prim
        self.size = min(n_prim, chunk or n_prim) if n_prim else 1
        self.cursor = 0

    def next(self) -> np.ndarray:
        slots = (self.cursor + np.arange(self.size)) % self.n_prim
        self.cursor = (self.cursor + self.size) % self.n_prim
        part = np.zeros(self.n_prim, bool)
        part[slots] = True
        return part


def _separate(s: Search, zc: np.ndarray, chunks: _Chunks, lp_deadline: float | None,
              fractional_check: bool) -> tuple[int, int, bool]:
    """One round's separation: the primaries in chunks, round-robin from where the last
    round stopped; the round ends after the first chunk with a cut, and finds "no cut"
    only after a whole cycle of empty chunks at this point.  Returns (new cuts,
    primaries swept, whether every oracle call finished)."""
    oracle, req = s.oracle, s.req
    n_new = empty = 0
    complete = True
    z = s.full_z(zc)
    while empty < chunks.n_prim:
        part = chunks.next()
        to = time.perf_counter()
        if chunks.size == chunks.n_prim:
            chk = oracle.check(z, deadline=s.deadline) if fractional_check else Check()
            sep = oracle.separate(z, deadline=s.deadline)
        else:
            chk = (oracle.check(z, primaries=req.primary[part], deadline=s.deadline)
                   if fractional_check else Check())
            sep = oracle.separate_some(z, part, deadline=s.deadline)
        s.stats["oracle_seconds"] += time.perf_counter() - to
        s.stats["lp_solves"] += chk.n_lp + sep.n_lp
        complete = complete and chk.complete and sep.complete
        n_new = s.add_cuts(chk, zc) + s.add_cuts(sep, zc)
        if n_new or (lp_deadline is not None and time.perf_counter() > lp_deadline):
            break
        empty += chunks.size
    return n_new, (chunks.size if n_new else empty), complete


def lp_phase(s: Search, fractional_check: bool) -> LPPhase:
    """Separate at the master's LP optimum until the bound stalls (the stall test runs
    per sweep over all primaries)."""
    opt, master = s.options, s.master
    master.relax(True)
    out = LPPhase()
    last = -np.inf
    stall = swept = 0
    lp_deadline = None if s.time_limit is None else s.t0 + opt.lp_phase_share * s.time_limit
    n_prim = len(s.req.primary)
    chunks = _Chunks(n_prim, opt.lp_separation_chunk)
    covers = (s.use_covers and opt.lp_phase_covers is not None
              and n_prim >= opt.lp_phase_covers)
    s.stats["lp_phase_covers"] = covers
    res = None
    for _ in range(opt.max_rounds):
        if lp_deadline is not None and time.perf_counter() > lp_deadline:
            break
        tm = time.perf_counter()
        # the row duals and reduced costs are read only by the MILP rounds (from the
        # phase's last solve): the branch-and-cut re-solves the root itself
        res = master.model.solve(time_limit=s.left(), duals=opt.search != "bc")
        s.stats["master_seconds"] += time.perf_counter() - tm
        if res.status != "optimal":
            break
        out.lower_bound = max(out.lower_bound,
                              round_bound(float(res.objective), s.integral_costs))
        s.stats["rounds_lp"] += 1
        zc = np.clip(res.x, 0.0, 1.0)
        if master.activate_static(zc):
            continue  # violated lazy static rows joined the model: solve again
        n_new, n_swept, complete = _separate(s, zc, chunks, lp_deadline, fractional_check)
        swept += n_swept
        n_new += s.add_support(zc, opt.support_max_lps)
        if covers:
            n_new += s.add_covers(zc)
        if n_new == 0:
            out.settled = complete and n_swept >= n_prim
            break
        if swept >= n_prim:
            swept = 0
            if res.objective <= last * (1 + opt.lp_stall_tol) + 1e-12:
                stall += 1
                if stall >= opt.lp_stall_rounds:
                    break
            else:
                stall = 0
            last = float(res.objective)
        s.report(f"LP round {s.stats['rounds_lp']}: bound {res.objective:.6g}", 0.2)
    out.result = res
    s.stats["root_bound"] = out.lower_bound
    s.lower_bound = max(s.lower_bound, out.lower_bound)
    s.stats["root_seconds"] = time.perf_counter() - s.t0
    if res is not None and res.status == "optimal":
        out.zlp = np.clip(res.x[: master.k], 0.0, 1.0)
        s.lp_hint[s.cand_idx] = out.zlp
    return out
