"""Side-by-side comparison of protection methods (and parameter sets) on one table.

Each method runs on the same table; for each run the comparison lays out

* **information loss** (:mod:`tabprotect.infoloss`): cells, value and contributors
  suppressed and their shares; for rounding Hellinger distance, RAD, AAD and the change of
  Cramer's V;
* **residual risk** from the independent audit: the feasibility-interval widths of the
  primary cells relative to their values (smallest and median), the number of primary
  cells *at the minimum protection* (the interval reaches the required bound and no
  further, within a relative tolerance of 1e-6), and exactly disclosed cells;
* **time** and the **audit verdict**.

``compare(table, methods=["optimal", "hypercube", {"method": "optimal", "cost": "unity"}])``
-- a method is a name or a dict of ``protect`` options with ``method`` (and an optional
``label``); a rounding run is ``{"method": "rounding", "base": 5, "type": "controlled"}``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from tabprotect.audit_result import VerdictAudit
from tabprotect.errors import InputError
from tabprotect.infoloss import InfoLoss, info_loss
from tabprotect.io.output import write_frame
from tabprotect.model.table import Table

Progress = Callable[[str, float], None]
ROUNDING = ("rounding", "round")
#: cell key runs: on the table's own record keys, or on the table tabulated after swapping
CELLKEY = ("cellkey", "swap+cellkey")
_AT_MINIMUM_RTOL = 1e-6

__all__ = ["compare", "compare_job", "Comparison", "MethodRun", "residual_risk"]


@dataclass
class MethodRun:
    """One method (with its parameters) applied to the table."""

    label: str
    method: str
    params: dict[str, Any]
    seconds: float
    published: Table | None = None
    rounded: np.ndarray | None = None
    audit: Any = None
    info: InfoLoss | None = None
    result: Any = None
    error: str | None = None

    @property
    def passed(self) -> bool | None:
        return None if self.audit is None else bool(self.audit.passed)


@dataclass
class Comparison:
    """The runs of :func:`compare` and their side-by-side frame (one row per run)."""

    table: Table
    runs: list[MethodRun]
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def best(self) -> MethodRun | None:
        """The passing run with the least information loss among the runs of the same
        kind as the first passing one: suppression runs by the value suppressed, runs that
        publish changed values (rounding, cta, cell key) by the Hellinger distance.  The
        two measures have different units, so runs of different kinds are never ranked
        against each other; the order of the methods says which kind the user prefers."""
        ok = [r for r in self.runs if r.passed and r.info is not None]
        if not ok:
            return None
        kind = _loss(ok[0])[0]
        return min((r for r in ok if _loss(r)[0] == kind), key=lambda r: _loss(r)[1])

    def to_dict(self) -> dict[str, Any]:
        from tabprotect.infoloss import _jsonable
        return _jsonable({"cells": self.table.n_cells,
                          "primary": int((self.table.status == "U").sum()),
                          "runs": self.frame.to_dict(orient="records"),
                          "information_loss": {r.label: r.info.to_dict() for r in self.runs
                                               if r.info is not None},
                          "notes": self.notes})

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    def write_csv(self, path: str | Path) -> Path:
        return write_frame(self.frame, Path(path))


def _loss(run: MethodRun) -> tuple[str | None, float]:
    """The measure a run is ranked by, and its value (None, inf when it has neither)."""
    for key in ("value_suppressed", "hellinger"):
        if key in run.info.measures:
            return key, float(run.info.measures[key])
    return None, np.inf


def residual_risk(table: Table, audit) -> dict[str, float]:
    """What the audit leaves an intruder: interval widths relative to the cells, primary
    cells at their minimum protection, exact disclosures (widths and cells at their
    minimum are nan for a verdict audit, which has no intervals).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> from tabprotect.audit import audit
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    >>> t = t.replace(status=st, upl=np.where(st == "U", 2.0, 0.0))
    >>> residual_risk(t, audit(t))["primary_at_minimum"]   # interval [1, 5] reaches 3 + 2
    1.0
    """
    if isinstance(audit, VerdictAudit):
        # a verdict audit has bounds on the interval ends, not the intervals: no width
        # or "at its minimum" figure can be read from it
        lower = upper = np.full(table.n_cells, np.nan)
    else:
        lower, upper = np.asarray(audit.lower), np.asarray(audit.upper)
    value = np.abs(table.value)
    primary = table.status == "U"
    unpublished = getattr(audit, "unpublished", None)
    if unpublished is None:   # rounded tables: every cell is published, rounded
        unpublished = np.ones(table.n_cells, dtype=bool)
        primary = primary | (unpublished & (table.status != "Z"))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100 * (upper - lower) / np.where(value > 0, value, np.nan)
    rel_p = rel[primary & unpublished & np.isfinite(rel)]
    out = {
        "min_width_pct": float(rel_p.min()) if len(rel_p) else np.nan,
        "median_width_pct": float(np.median(rel_p)) if len(rel_p) else np.nan,
        "exactly_disclosed": float(np.asarray(getattr(audit, "exact",
                                                      np.zeros(table.n_cells, bool))).sum()),
    }
    req_lo = getattr(audit, "required_lower", None)
    req_hi = getattr(audit, "required_upper", None)
    if req_lo is not None and req_hi is not None:
        tol = _AT_MINIMUM_RTOL * np.maximum(1.0, value)
        on = primary & unpublished
        with np.errstate(invalid="ignore"):
            at_min = on & ((np.abs(upper - req_hi) <= tol) | (np.abs(lower - req_lo) <= tol))
            # a required bound at the a-priori bound (e.g. 0) is met by any pattern
            at_min &= ~((np.abs(lower - req_lo) <= tol) & (req_lo <= table.lb + tol)
                        & ~(np.abs(upper - req_hi) <= tol))
        out["primary_at_minimum"] = float(at_min.sum())
        out["primary_unprotected"] = float((~np.asarray(audit.protected) & on).sum())
    return out


def _normalise(methods: Sequence[str | dict] | None) -> list[dict[str, Any]]:
    if methods is None:
        from tabprotect.secondary import METHODS
        methods = sorted(METHODS)
    specs = []
    for m in methods:
        spec = {"method": m} if isinstance(m, str) else dict(m)
        if "method" not in spec:
            raise InputError(f"compare: a method entry needs 'method' ({spec})")
        specs.append(spec)
    if not specs:
        raise InputError("compare: no methods to compare")
    labels = [s.get("label") or _label(s) for s in specs]
    for s, lab in zip(specs, labels):
        s["label"] = lab
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise InputError(f"compare: label(s) {sorted(dup)} used twice; give each entry "
                         f"a distinct 'label'")
    return specs


def _label(spec: dict) -> str:
    if spec["method"] in CELLKEY:
        extra = [f"{k}={v}" for k, v in spec.items() if k not in ("method", "label")]
        return spec["method"] + (f" ({', '.join(extra)})" if extra else "")
    if spec["method"] in ROUNDING:
        return f"{spec.get('type', 'controlled')} rounding b={spec.get('base')}"
    extra = [f"{k}={v}" for k, v in spec.items() if k not in ("method", "label")]
    return spec["method"] + (f" ({', '.join(extra)})" if extra else "")


def compare(table: Table, methods: Sequence[str | dict] | None = None, *,
            cost: str | None = None, time_limit: float | None = None,
            progress: Progress | None = None, keyed: dict[str, Table] | None = None,
            executor: Any = None, **common) -> Comparison:
    """Run several protection methods on ``table`` and compare them.

    Parameters
    ----------
    table : the table with its primary cells (status ``U``, protection levels)
    methods : method names or dicts of options (``{"method": "optimal", "cost":
        "unity", "label": "optimal/unity"}``); rounding runs are
        ``{"method": "rounding", "base": 5, "type": "controlled"}``.  Default: every
        registered protection method (the suppression methods and ``cta``).
    cost, time_limit : defaults for every protection run (an entry may override them;
        cost None: each method's own default, ``value``, and ``relative`` for cta)
    progress : ``progress(step, fraction)``
    keyed : for cell key runs (``{"method": "cellkey", "D": 3, "V": 2, "js": 2}``, or
        ``"swap+cellkey"``), the table with record-key sums (:func:`tabulate_keys`) to
        perturb, by run label; default: ``table`` itself.  The published values are
        compared with ``table``'s.
    executor : a ``dask.distributed.Client`` (or a
        :class:`~tabprotect.parallel.TaskExecutor`): each run is one task there, the
        runs on different workers at once, each computed as it is here (same results;
        the table is sent to the cluster once)
    **common : further ``protect`` options for every suppression run

    Returns
    -------
    Comparison, whose ``frame`` has one row per run: ``label, method, audit_passed,
    seconds``, information loss, residual risk and ``error`` (a method that fails on the
    table is reported, not raised).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
    >>> cmp = compare(t, ["optimal", "hypercube"], cost="unity")
    >>> cmp.frame[["label", "audit_passed", "suppressed"]].values.tolist()
    [['optimal', True, 4.0], ['hypercube', True, 4.0]]
    """
    specs = _normalise(methods)
    if executor is not None:
        runs = _remote_runs(table, specs, cost, time_limit, common, keyed or {}, executor,
                            progress)
    else:
        runs = []
        for k, spec in enumerate(specs):
            if progress:
                progress(f"compare: {spec['label']}", k / len(specs))
            runs.append(_run_one(table, spec, cost, time_limit, common, keyed or {}))
    if progress:
        progress("compare: done", 1.0)
    rows = [_row(table, r) for r in runs]
    frame = pd.DataFrame(rows)
    notes = ["residual risk: widths are (upper - lower) / |value| of the primary cells "
             "(every non-empty cell for rounding); 'at minimum' = the interval reaches a "
             "required bound exactly"]
    return Comparison(table, runs, frame, notes)


def _remote_runs(table: Table, specs: list[dict], cost, time_limit, common, keyed,
                 executor: Any, progress: Progress | None) -> list[MethodRun]:
    """The runs of :func:`compare` as tasks of ``executor``, one per run (in run order)."""
    from tabprotect.parallel_dask import as_executor
    engine = as_executor(executor)
    # each task holds the same table object: sent to the cluster once, not per run
    tasks = [(table, spec, cost, time_limit, common,
              {k: v for k, v in keyed.items() if k == spec["label"]}) for spec in specs]
    done = []

    def arrived(i: int, run: MethodRun) -> None:
        done.append(i)
        if progress:
            progress(f"compare: {run.label} done", len(done) / len(specs))
    return engine.map(_run_task, tasks, workers=min(len(tasks), engine.workers),
                      on_result=arrived)


def _run_task(task: tuple) -> MethodRun:
    """One run of :func:`compare` inside a task of another engine: its own parallel work
    (a method's or the audit's ``workers``) runs in the task, one piece after another."""
    from tabprotect.parallel import InlineExecutor, use_executor
    with use_executor(InlineExecutor()):
        return _run_one(*task)


def _run_one(table: Table, spec: dict, cost, time_limit, common, keyed) -> MethodRun:
    opts = {k: v for k, v in spec.items() if k not in ("method", "label")}
    start = time.perf_counter()
    run = MethodRun(label=spec["label"], method=spec["method"], params=opts, seconds=0.0)
    try:
        if spec["method"] in CELLKEY:
            from tabprotect.cellkey import CellKeySettings, perturb
            settings = opts.pop("_settings", None) or CellKeySettings(**opts)
            run.params = {"D": settings.D, "V": settings.V, "js": settings.js,
                          "pstay": settings.pstay, "ptable": settings.ptable_file}
            result = perturb(keyed.get(run.label, table), settings=settings)
            run.rounded = np.asarray(result.published, dtype=float)
            run.info = info_loss(table, run.rounded)
        elif spec["method"] in ROUNDING:
            from tabprotect.rounding import round_table
            if "base" not in opts:
                raise InputError(f"compare: rounding entry '{run.label}' needs 'base'")
            kw = dict(opts)
            base = int(kw.pop("base"))
            kind = kw.pop("type", "controlled")
            kw.setdefault("time_limit", time_limit)
            result = round_table(table, base, kind, **kw)
            run.rounded = np.asarray(result.rounded, dtype=float)
            run.audit = result.audit
            run.info = info_loss(table, run.rounded)
        else:
            from tabprotect.secondary import METHODS, protect
            kw = {"cost": cost, "time_limit": time_limit, **common, **opts}
            method = METHODS.get(spec["method"])
            if method is not None and method.capabilities.adjusts_values:
                # cta publishes adjusted values: the suppression settings common to the
                # runs (singleton) do not apply to it
                kw = {k: v for k, v in kw.items() if k not in common or k in opts}
                result = protect(table, method=spec["method"], **kw)
                run.rounded = np.asarray(result.adjusted, dtype=float)
                run.audit = result.audit
                run.info = info_loss(table, run.rounded)
            else:
                result = protect(table, method=spec["method"], **kw)
                run.published = result.confidential_table
                run.audit = result.audit
                run.info = info_loss(table, result.confidential_table)
        run.result = result
    except InputError as exc:
        run.error = str(exc)
    run.seconds = time.perf_counter() - start
    return run


def _row(table: Table, run: MethodRun) -> dict[str, Any]:
    row: dict[str, Any] = {"label": run.label, "method": run.method,
                           "audit_passed": run.passed, "seconds": round(run.seconds, 3)}
    if run.info is not None:
        m = run.info.measures
        keys = (("suppressed", "secondary", "value_suppressed", "share_value",
                 "freq_suppressed", "share_freq", "secondary_value")
                if run.info.kind == "suppression"
                else ("hellinger", "rad", "aad", "rcv", "changed_cells", "max_abs_deviation"))
        row.update({k: m.get(k, np.nan) for k in keys})
    res = run.result
    if res is not None:
        for key in ("cost", "proven_optimal", "mip_gap"):
            v = getattr(res, key, None)
            if v is not None:
                row[key] = v
    if run.audit is not None and hasattr(run.audit, "additivity_error"):
        # an adjusted table: every cell published; the distance and the largest change
        m = run.audit.measures
        row.update({"l1": m["l1"], "l2": m["l2"], "max_rel_change": m["max_rel_change"],
                    "primary_unprotected": float((~run.audit.protected).sum())})
    elif run.audit is not None:
        row.update(residual_risk(table, run.audit))
    row["error"] = run.error
    return row


def compare_job(job, table: Table, methods: Sequence[str | dict] | None = None,
                time_limit: float | None = None, progress: Progress | None = None,
                executor: Any = None) -> Comparison:
    """:func:`compare` from a job's ``[compare]`` section (primary rules applied first
    when the job has ``[rules]`` and the table no primary cells yet).

    ``[compare]`` keys: ``methods`` (names, or tables of options such as
    ``{method = "optimal", cost = "unity", label = "optimal/unity"}``), ``cost``,
    ``time_limit`` and ``singleton``; the last three default to the job's ``[protect]``
    keys, so a job's attacker model holds for its comparison too.  ``executor``: the
    job's ``[cluster]``, where the runs go (see :func:`compare`).
    """
    opts = job.section("compare")
    known = {"methods", "cost", "time_limit", "singleton"}
    unknown = set(opts) - known
    if unknown:
        raise InputError(f"{job.label} [compare]: unknown key(s) {sorted(unknown)} "
                         f"(known: {', '.join(sorted(known))})")
    if "rules" in job.spec and not (table.status == "U").any():
        from tabprotect.primary import apply_rules, rules_from_job
        table = apply_rules(table, rules_from_job(job)).table
    methods = methods or opts.get("methods")
    methods, keyed = _cellkey_sources(job, table, methods)
    settings = {**{k: v for k, v in job.section("protect").items()
                   if k in ("cost", "time_limit", "singleton")}, **opts}
    common = {"singleton": bool(settings["singleton"])} if "singleton" in settings else {}
    return compare(table, methods, cost=settings.get("cost"),
                   time_limit=time_limit if time_limit is not None
                   else settings.get("time_limit"), progress=progress, keyed=keyed,
                   executor=executor, **common)


def _cellkey_sources(job, table: Table, methods):
    """Cell key entries of a job's comparison: their settings from ``[cellkey]`` (entry
    keys override) and the tables they perturb, tabulated from the job's microdata with
    record keys (after ``[swap]`` for ``swap+cellkey``)."""
    if not methods or not any((m if isinstance(m, str) else m.get("method")) in CELLKEY
                              for m in methods):
        return methods, {}
    from tabprotect.census import cellkey_settings, keyed_table
    specs = _normalise(methods)
    keyed: dict[str, Table] = {}
    for spec in specs:
        if spec["method"] in CELLKEY:
            over = {k: v for k, v in spec.items() if k not in ("method", "label")}
            keyed[spec["label"]] = keyed_table(job, table, spec["method"] == "swap+cellkey")
            for k in list(over):
                spec.pop(k)
            spec["_settings"] = cellkey_settings(job, over)
    return specs, keyed
