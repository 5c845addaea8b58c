"""The attacker oracle as the search uses it: deadlines on every LP, robustness against
rare solver failures, and the primal/dual simplex race.

The attacker LPs themselves (capacity cuts from their duals, the single-contributor
attackers) live in :mod:`tabprotect.secondary.attacker_oracle`.
"""
from __future__ import annotations

import copy
import dataclasses
import time

import highspy
import numpy as np

from solvers import HighsModel
from tabprotect.secondary.optimal.merged_lp import PairMergedModel
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.witness_check import witness_certified
from tabprotect.secondary.optimal.witness_separation import WitnessStore
from tabprotect.secondary.attacker_oracle import AttackerOracle, Check
from tabprotect.secondary.repair import GreedyRepair

#: HiGHS' simplex_strategy values of the dual and the primal simplex
DUAL_SIMPLEX = 1
PRIMAL_SIMPLEX = 4
#: HiGHS' simplex_iteration_limit when none is wanted (its default)
ITERATIONS_UNLIMITED = 2_147_483_647


def clean(z):
    """A fractional point with its tiny entries set to 0 (bounds of 1e-9 trip HiGHS)."""
    z = np.asarray(z)
    if z.dtype == bool:
        return z
    return np.where(z < 1e-7, 0.0, z)


class LPCount:
    """LPs solved so far (attacker, repair and prune LPs): the search's work clock.
    Unlike seconds it is the same on a loaded machine as on an idle one, so decisions
    taken by it (the heuristics' share) give the same search, pattern and tree every
    run."""

    def __init__(self):
        self.n = 0

    def add(self, n: int) -> None:
        self.n += int(n)


class DeadlineModel:
    """A :class:`~solvers.HighsModel` whose solves stop at a deadline (``None``: none),
    each solve counted in ``count``.  The repair reads only a solve's status and point,
    so no duals or reduced costs are copied out of HiGHS (the model spans the whole
    table)."""

    def __init__(self, model: HighsModel, count: LPCount | None = None):
        self._model = model
        self.deadline: float | None = None
        self.count = count if count is not None else LPCount()

    def __getattr__(self, name):
        return getattr(self._model, name)

    def solve(self, time_limit: float | None = None):
        self.count.add(1)
        if self.deadline is not None:
            left = max(1e-3, self.deadline - time.perf_counter())
            time_limit = left if time_limit is None else min(time_limit, left)
        return self._model.solve(time_limit=time_limit, duals=False)


class DeadlineRepair(GreedyRepair):
    """The greedy repair with its repair LPs stopped at the run's deadline.

    The base class checks the deadline between LPs only, and one repair LP over the
    whole table can take seconds; a repair LP stopped by the deadline leaves its
    condition unmet, like a repair that ran out of time between LPs.  Its LPs are
    counted in ``count`` (the oracle's LPs are counted by the oracle).
    """

    def __init__(self, *args, count: LPCount | None = None, **kw):
        super().__init__(*args, **kw)
        self.count = count if count is not None else LPCount()

    def run(self, suppressed: np.ndarray, *, deadline: float | None = None,
            primaries: np.ndarray | None = None, **kw) -> tuple[np.ndarray, list]:
        """As :meth:`GreedyRepair.run`, with one full check first: once it is complete
        the repair works on the primaries it found short only (suppressing more never
        weakens a condition, a single contributor's included: before its cell was
        suppressed the attacker's deviation there was 0 anyway), so its later rounds
        re-check those alone instead of every primary, and its first round repairs the
        shortfalls this check found."""
        if self.model is None:
            self.model = DeadlineModel(HighsModel(self.lp), self.count)
        self.model.deadline = deadline
        try:
            chk = self.oracle.check(suppressed, cuts=False, primaries=primaries,
                                    deadline=deadline)
            if chk.ok:
                return np.asarray(suppressed, bool).copy(), []
            if chk.complete:
                primaries = np.unique([s for s, _, _ in chk.violated]).astype(np.int64)
                # its first round takes the shortfalls found here (not checked again)
                kw["checked"] = chk
            return super().run(suppressed, deadline=deadline, primaries=primaries, **kw)
        finally:
            self.model.deadline = None


class SafeOracle:
    """The attacker oracle, made robust for the search: HiGHS has (rarely) reported a
    warm re-solve of an attacker LP 'infeasible' although ``y = 0`` is always feasible.
    Such a check comes back incomplete (never 'protected', no cuts) and is counted in
    ``stats["oracle_errors"]``; the search then claims no optimality it relied on it
    for.  Fractional points are cleaned first: bounds of 1e-9 are what trips HiGHS.
    Every call's LPs are counted in ``count``."""

    def __init__(self, oracle: AttackerOracle, stats: dict, count: LPCount | None = None):
        self._oracle = oracle
        self._stats = stats
        self.count = count if count is not None else LPCount()

    def __getattr__(self, name):
        return getattr(self._oracle, name)

    def check(self, z, **kw) -> Check:
        try:
            return self._counted(self._oracle.check(clean(z), **kw))
        except RuntimeError:
            self._stats["oracle_errors"] += 1
            return Check(complete=False)

    def separate(self, z, **kw) -> Check:
        try:
            return self._counted(self._oracle.separate(clean(z), **kw))
        except RuntimeError:
            self._stats["oracle_errors"] += 1
            return Check(complete=False)

    def _counted(self, out: Check) -> Check:
        self.count.add(out.n_lp)
        return out

    def separate_some(self, z, part: np.ndarray, **kw) -> Check:
        """:meth:`separate` for the primaries ``part`` (bool mask over the primaries'
        slots) only: the others are given no levels, so their attacker LPs are skipped."""
        req = self._oracle.req
        view = copy.copy(self._oracle)
        view.req = dataclasses.replace(req, need_up=np.where(part, req.need_up, 0.0),
                                       need_down=np.where(part, req.need_down, 0.0),
                                       need_width=np.where(part, req.need_width, 0.0))
        try:
            return self._counted(view.separate(clean(z), **kw))
        except RuntimeError:
            self._stats["oracle_errors"] += 1
            return Check(complete=False)


class DeadlineReached(Exception):
    """An attacker LP was stopped by the call's deadline (the check ends incomplete)."""


class HybridOracle(AttackerOracle):
    """:class:`AttackerOracle` whose calls race the primal and the dual simplex; the
    answers are the same LPs' optima either way.

    Per oracle call (one check of a pattern, one separation round) all LPs re-solve with
    the simplex of the fewer simplex iterations per LP so far, kept separately for checks
    and for the separation: switching within a run of LPs is what costs (the dual simplex
    started from a primal optimal basis needs far more iterations than from its own),
    while which simplex is fast depends on the pattern.  Every ``race_every`` calls a
    trial call uses the other one, given up for the rest of the call once its iterations
    per LP exceed ``race_cap`` times the faster one's; one trial LP is stopped at
    ``race_lp_cap`` times that and finished by the faster simplex.  While the same simplex
    stays faster, trials come twice as rarely each time (up to every ``race_every_max``
    calls).  The race counts iterations, not seconds, so that a run takes the same route
    (the same cuts, the same tree) on a loaded machine as on an idle one.
    Attacker LPs of at least ``merge_pairs_min_cols`` columns are solved as
    :class:`PairMergedModel`.

    A call's ``deadline`` stops its LPs as well, not only the loop between them: one
    attacker LP over a whole general table can take seconds.  A check stopped so is
    incomplete (what it found violated so far is kept); a separation stopped so returns
    no cuts.
    """

    def __init__(self, *args, racing: bool = True, options: OptimalOptions | None = None,
                 **kwargs):
        self.options = options if options is not None else OptimalOptions()
        super().__init__(*args, **kwargs)
        self.racing = racing   # False: the dual simplex only, like AttackerOracle
        self.merged_lps = 0    # attacker LPs solved with two-cell rows merged away
        self.witness_certified = 0   # primaries the witness pass settled in checks
        # earlier separation optima, to skip the LPs they show met (shared with views)
        self.witnesses = WitnessStore(self.options.separation_witnesses,
                                      self.slot if self.options.share_separation_witnesses
                                      else None,
                                      negated=self.options.negated_separation_witnesses,
                                      reach=self._witness_reach())
        self.last_x = None     # the primal optimum of the latest attacker LP
        # iterations per LP of each simplex (by HiGHS strategy number) and the trial
        # schedule, by context; shared with copies of the oracle (views)
        self._race = {"check": {"calls": 0}, "sep": {"calls": 0}}
        self._call: list = [None]
        # the attacker LP of each component met (see _component_model)
        self._models: dict = {}
        self._models_held = 0
        self._deadline: float | None = None   # of the call under way
        # the last active cells and their components (shared with views: the chunks of
        # one node's separation group the same point's cells)
        self._grouped: list = [None, None]
        self._warm = False     # the call under way starts kept models from their basis

    def check(self, z, **kw) -> Check:
        return self._raced("check", self._witnessed_check, z, **kw)

    def _witness_reach(self) -> np.ndarray | None:
        """Per primary slot, the least move a kept separation witness must make of it
        (``1 - separation_witness_slack`` times its smaller level; 0 with a width, whose
        bound adds up smaller moves); None: every witness is kept."""
        slack = self.options.separation_witness_slack
        if slack is None:
            return None
        req = self.req
        least = np.minimum(np.where(req.need_up > 0, req.need_up, np.inf),
                           np.where(req.need_down > 0, req.need_down, np.inf))
        least = np.where(np.isfinite(least), least, 0.0)
        return np.where(req.need_width > 0, 0.0, (1.0 - slack) * least)

    def _check_component(self, comp, targets, z, out, cuts, deadline, first_only):
        try:
            if self.req.singleton[comp].any():
                targets = self._singletons_fixed(comp, targets, z, out)
                if len(targets) == 0:
                    return
            super()._check_component(comp, targets, z, out, cuts, deadline, first_only)
        except DeadlineReached:
            out.complete = False

    def _singletons_fixed(self, comp, targets, z, out) -> np.ndarray:
        """The targets not settled by one attacker LP per direction with every
        single-contributor cell but the primary kept at its value.  That LP restricts
        each single-contributor attacker's LP (and the plain attacker's), so a primary
        whose levels it meets meets them against all of them; the rest go through the
        per-attacker LPs.  Two LPs per primary instead of two per primary and attacker."""
        req = self.req
        single = req.singleton[comp]
        lo = np.where(single, 0.0, -req.down[comp] * z[comp])
        hi = np.where(single, 0.0, req.up[comp] * z[comp])
        model = self._component_model(comp, lo, hi)
        local = {int(c): k for k, c in enumerate(comp)}
        open_ = []
        for s in targets:
            k, p = local[int(s)], self.slot[s]
            if single[k]:
                model.set_col_bounds([k], -req.down[s] * z[s], req.up[s] * z[s])
            vu, _ = self._solve(model, k, 1.0)
            vd, _ = self._solve(model, k, -1.0)
            out.n_lp += 2
            if single[k]:
                model.set_col_bounds([k], 0.0, 0.0)
            tol = req.tol[p]
            if not (vu >= req.need_up[p] - tol and vd >= req.need_down[p] - tol
                    and vu + vd >= req.need_width[p] - tol):
                open_.append(int(s))
        return np.asarray(open_, dtype=np.int64)

    def _time_left(self) -> float | None:
        """Seconds to the call's deadline (None: none); DeadlineReached once past it."""
        if self._deadline is None:
            return None
        left = self._deadline - time.perf_counter()
        if left <= 0:
            raise DeadlineReached
        return left

    def _witnessed_check(self, z, *, primaries=None, **kw) -> Check:
        """The check, after a witness pass (:mod:`.witness_check`) on patterns with at
        least ``witness_check_min_targets`` primaries to check and no single-contributor
        attackers: the per-primary LPs run for what the witnesses leave open only."""
        opt = self.options
        zf = np.asarray(z, dtype=float)
        targets = np.asarray(self.req.primary if primaries is None else primaries,
                             dtype=np.int64)
        if (opt.witness_check_min_targets is None
                or len(targets) < opt.witness_check_min_targets
                or self.req.singleton.any()
                or not np.all((zf <= 1e-9) | (zf >= 1.0 - 1e-9))):
            return AttackerOracle.check(self, z, primaries=primaries, **kw)
        done, n_lp = witness_certified(self.A, self.req, self.slot, zf, targets,
                                       rounds=opt.witness_check_rounds,
                                       deadline=kw.get("deadline"))
        self.witness_certified += int(done.sum())
        if done.all():
            out = Check()
        else:
            out = AttackerOracle.check(self, z, primaries=targets[~done], **kw)
        out.n_lp += n_lp
        return out

    def _components(self, active: np.ndarray) -> list[np.ndarray]:
        """The components of ``active``, the last grouping reused when the cells are
        the same (each chunk of a node's separation asks for the same point's)."""
        key = np.asarray(active, np.int64).tobytes()
        if self._grouped[0] != key:
            self._grouped[:] = [key, super()._components(active)]
        return self._grouped[1]

    def _component_model(self, comp, lo, hi):
        """The component's attacker LP, one model per component kept while their
        matrices hold at most ``component_models_nonzeros`` entries: the search meets
        the same components at point after point, and a model's set-up costs more than
        its small LPs.  A kept model gets the new bounds.  In a separation and in a
        check without cuts (with ``warm_attacker_lps``) it starts from its last basis,
        which takes HiGHS less time than a start from scratch: the optima are the same,
        the duals (and a separation's cuts from them) may be other optimal ones.  In a check with cuts it starts from scratch, so its optima and cuts are
        those of a new model."""
        key = np.asarray(comp, np.int64).tobytes()
        kept = self._models.get(key)
        if kept is not None:
            model = kept[0]
            model.set_col_bounds(np.arange(len(comp)), lo, hi)
            if not self._warm:
                model.forget_basis()
            return model
        model = super()._component_model(comp, lo, hi)
        nnz = self.component_rows.of(comp)[1].nnz
        budget = self.options.component_models_nonzeros
        if nnz <= budget:
            while self._models and self._models_held + nnz > budget:
                old = next(iter(self._models))
                self._models_held -= self._models.pop(old)[1]
            self._models[key] = (model, nnz)
            self._models_held += nnz
        return model

    def _new_model(self, lp):
        threshold = self.options.merge_pairs_min_cols
        if threshold is not None and lp.n_cols >= threshold:
            model = PairMergedModel(lp, **self._model_options)
            self.merged_lps += int(model.n_model_rows < model.m)
            return model
        return super()._new_model(lp)

    def separate(self, z, **kw) -> Check:
        return self._raced("sep", self._timed_separate, z, **kw)

    def _timed_separate(self, z, **kw) -> Check:
        self.witnesses.at_point()
        try:
            return AttackerOracle.separate(self, z, **kw)
        except DeadlineReached:
            return Check(complete=False)

    def _condition_cut(self, lp, s, p, kind, sign, rhs, j, out: Check, min_violation):
        """No cut from an up or down LP whose optimum meets the level within
        ``min_violation``: at the LP's optimal duals the cut's left-hand side at the point
        is that optimum (strong duality), so such a cut is not violated (capping a
        coefficient at the level can only lower it where a cell's multiplier exceeds one;
        that cut is left out, which only weakens the bound)."""
        if kind == "width":
            return lp.cut(s, p, kind, sign, rhs, j, out)
        val, duals = lp.solve(s, p, sign, rhs, j, out)
        if duals is None or val >= rhs * (1.0 - min_violation):
            return None
        return self._cut(s, sign, duals, lp.rows, rhs, kind, j)

    def _separation_met(self, p, kind, sign, s, j, z, rhs, min_violation) -> bool:
        """A condition an earlier separation optimum, scaled into the current bounds,
        shows met (:mod:`.witness_separation`): its LP would give no violated cut."""
        store = self.witnesses
        if store.keep <= 0:
            return False
        floor = rhs * (1.0 - min_violation)
        req = self.req
        if kind == "width":
            got = store.bound(p, 1.0, s, j, req.up, req.down, z, rhs, goal=floor)
            met = got + store.bound(p, -1.0, s, j, req.up, req.down, z, rhs,
                                    goal=floor - got) >= floor
        else:
            met = store.bound(p, sign, s, j, req.up, req.down, z, rhs, goal=floor) >= floor
        if met:
            store.skipped += 2 if kind == "width" else 1
        return met

    def _separation_solved(self, p: int, sign: float, comp: np.ndarray) -> None:
        """Keep the LP's optimum (``last_x``, local to ``comp``) for later rounds."""
        if self.witnesses.keep > 0 and self.last_x is not None:
            self.witnesses.add(p, sign, int(self.req.primary[p]), comp,
                               np.asarray(self.last_x, float))

    def _raced(self, context: str, call, z, **kw) -> Check:
        """``call(z, **kw)`` as one raced oracle call of ``context``, its LPs stopped at
        the call's ``deadline``; a separation's and a check's without cuts start kept
        models from their last basis (``warm_attacker_lps``)."""
        self._begin(context)
        outer, self._deadline = self._deadline, kw.get("deadline")
        outer_warm, self._warm = self._warm, self.options.warm_attacker_lps and (
            context == "sep" or not kw.get("cuts", True))
        try:
            return call(z, **kw)
        finally:
            self._deadline, self._warm = outer, outer_warm
            self._end()

    def _begin(self, context: str) -> None:
        race = self._race[context]
        race["calls"] += 1
        opt = self.options
        dual, primal = DUAL_SIMPLEX, PRIMAL_SIMPLEX
        fast = None
        if dual not in race:
            strategy = dual  # the safe one first: primal re-solves can be 100x slower
        elif primal not in race:
            strategy, fast = primal, dual
        else:
            fast = primal if race[primal] < race[dual] else dual
            strategy = fast
            if race["calls"] >= race.get("next_trial", 0):
                strategy = dual if fast == primal else primal
                # a trial that keeps losing comes back less and less often
                every = race["every"] = (opt.race_every if race.get("winner") != fast
                                         else min(2 * race.get("every", opt.race_every),
                                                  opt.race_every_max))
                race["winner"] = fast
                race["next_trial"] = race["calls"] + every
        self._call[0] = {"race": race, "strategy": strategy,
                         "fast": fast if strategy != fast else None, "lps": 0, "work": 0}

    def _end(self) -> None:
        call, self._call[0] = self._call[0], None
        if call is not None and call["lps"]:
            self._record(call)

    @staticmethod
    def _record(call) -> None:
        race, strategy = call["race"], call["strategy"]
        per_lp = call["work"] / call["lps"]
        race[strategy] = per_lp if strategy not in race else 0.5 * (race[strategy] + per_lp)

    def _plain_solve(self, model, k, sign):
        """One attacker LP as :class:`AttackerOracle` solves it, within the deadline."""
        left = self._time_left()
        model.set_objective(indices=[k], values=[float(sign)], sense="max")
        res = model.solve(time_limit=left)
        if res.status in ("time_limit", "time_limit_no_solution"):
            raise DeadlineReached
        if res.status == "unbounded":
            return np.inf, None
        if res.status != "optimal":
            raise RuntimeError(f"attacker LP ended with status {res.status}")
        self.last_x = res.x
        return float(res.objective), res.duals

    def _run_until(self, h, limit: float | None):
        """``h.run()`` stopped after ``limit`` seconds (None: none); its model status.
        HiGHS' time limit counts the object's whole run time, not this run's; without a
        limit the option is left at infinity, where every run leaves it."""
        if limit is None:
            h.run()
            return h.getModelStatus()
        h.setOptionValue("time_limit", h.getRunTime() + limit)
        try:
            h.run()
            return h.getModelStatus()
        finally:
            h.setOptionValue("time_limit", np.inf)

    def _solve(self, model, k, sign):
        call = self._call[0]
        if not self.racing or call is None:
            return self._plain_solve(model, k, sign)
        h = model.highs
        opt = self.options
        race, strategy, fast = call["race"], call["strategy"], call["fast"]
        if h.getNumCol() < opt.race_min_cols:
            # the dual simplex alone, its LPs kept out of the race's count
            race, strategy, fast = None, DUAL_SIMPLEX, None
        model.set_objective(indices=[k], values=[float(sign)], sense="max")
        S = highspy.HighsModelStatus
        left = self._time_left()
        self._set_strategy(model, strategy)
        cap = (None if fast is None
               else max(opt.race_min_iterations, int(opt.race_lp_cap * race[fast])))
        ms = self._run_capped(h, left, cap)
        if race is not None:
            call["lps"] += 1
            call["work"] += self._iterations(h)
        if fast is not None and (ms == S.kIterationLimit or (
                call["lps"] >= opt.race_trial_lps
                and call["work"] > opt.race_cap * race[fast] * call["lps"])):
            # the trial lost: its work so far is recorded, the faster one takes over
            # from scratch (from the trial's basis the dual simplex stays slow for every
            # later LP of the model)
            self._record(call)
            call.update(strategy=fast, fast=None, lps=0, work=0)
            h.clearSolver()
            self._set_strategy(model, fast)
            if ms == S.kIterationLimit:
                ms = self._run_capped(h, self._time_left(), None)
                call["lps"] += 1
                call["work"] += self._iterations(h)
        if ms == S.kUnbounded:
            return np.inf, None
        sol = h.getSolution() if ms == S.kOptimal else None
        if sol is None or not sol.dual_valid:
            # anything unusual: the plain path from scratch (HighsModel's own checks)
            h.clearSolver()
            self._set_strategy(model, DUAL_SIMPLEX)
            return self._plain_solve(model, k, sign)
        duals = np.array(sol.row_dual, float)
        x = np.array(sol.col_value, float)
        if isinstance(model, PairMergedModel):
            duals = model.full_duals(duals)
            x = model.sgn * x[model.cls]
        self.last_x = x
        return float(h.getObjectiveValue()), duals

    def _run_capped(self, h, left: float | None, cap: int | None):
        """``h.run()`` within ``left`` seconds (DeadlineReached past them) and, with
        ``cap``, at most ``cap`` simplex iterations; its model status."""
        if cap is not None:
            h.setOptionValue("simplex_iteration_limit", cap)
        try:
            ms = self._run_until(h, left)
        finally:
            if cap is not None:
                h.setOptionValue("simplex_iteration_limit", ITERATIONS_UNLIMITED)
        if ms == highspy.HighsModelStatus.kTimeLimit:
            raise DeadlineReached
        return ms

    @staticmethod
    def _iterations(h) -> int:
        """The last run's simplex iterations, plus one: an LP solved without any still
        counts."""
        return 1 + int(h.getInfoValue("simplex_iteration_count")[1])

    @staticmethod
    def _set_strategy(model, strategy: int) -> None:
        if getattr(model, "_race_strategy", DUAL_SIMPLEX) != strategy:
            model.highs.setOptionValue("simplex_strategy", strategy)
            model._race_strategy = strategy
