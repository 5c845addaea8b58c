"""The one job pipeline behind every command and the service.

``run(job) -> Run`` reads the input (cells file or microdata), applies the primary rules,
protects (secondary suppression) or rounds, audits, measures the information loss and,
when the job asks, compares methods.  Every entry point -- ``tabprotect protect``,
``audit``, ``round``, ``audit-rounded``, ``primary``, ``report``, ``compare``, ``demo`` and
the service's worker -- calls :func:`run` and then writes the :class:`Run` with
:func:`tabprotect.io.results.write_outputs`, so one job gives one answer whichever way it
is run.

The job is checked against the schema (:mod:`tabprotect.io.schema`) before any work;
command-line options are given as ``overrides`` (job keys, e.g. ``{"protect":
{"method": "modular"}}``), merged into the job and checked the same way.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from tabprotect.errors import InputError
from tabprotect.io.job import Job, build_table, load_job, published_table
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd

Progress = Callable[[str, float], None]

#: what ``task`` may be; "auto" picks protect, round, compare or audit from the sections
TASKS = ("auto", "primary", "protect", "audit", "round", "audit-rounded", "compare",
         "cellkey")
#: the packages a task's step imports (``tabprotect.secondary`` is protect's entry to
#: every method; the method's own package loads when the registry looks it up): a
#: command that knows its task loads them with the pipeline (and scipy.sparse with them;
#: a job of rules alone never does)
STEP_PACKAGES = {"protect": ("tabprotect.secondary",), "audit": ("tabprotect.audit",),
                 "round": ("tabprotect.rounding", "tabprotect.audit_rounded"),
                 "audit-rounded": ("tabprotect.audit_rounded",),
                 "compare": ("tabprotect.compare",), "cellkey": ("tabprotect.census",)}

__all__ = ["Run", "run", "TASKS", "STEP_PACKAGES"]


@dataclass
class Run:
    """Everything one run of a job produced (what the outputs and the report show).

    Attributes
    ----------
    table : the table with its primary statuses and protection levels (confidential)
    kind : ``"primary"``, ``"suppression"``, ``"audit"``, ``"rounding"``,
        ``"adjustment"`` (controlled tabular adjustment), ``"audit-rounded"`` or
        ``"compare"``
    method : the protection method (or the rounding method and base)
    attacker : who the protection and the audit guard against, in words
    published : the table as published (final statuses) for suppression and audit runs
    rounded : the published values of rounding and adjustment runs (rounded, adjusted)
    audit : the audit result (the verdict is ``audit.passed``)
    info : the information loss (:class:`tabprotect.infoloss.InfoLoss`)
    rules : the :class:`tabprotect.primary.RuleResult` when the job has ``[rules]``
    comparison : one row per method of a comparison
    ru_map : microdata R-U map (``label``, a loss and a risk column)
    census : the cell key run (:class:`tabprotect.census.CensusRun`: the released
        microdata and every perturbed table)
    parameters : the job as run (checked, overrides merged)
    inputs : the input files (their checksums go into the trail)
    timings, results, notes : seconds per step, method numbers, remarks
    outputs : files written for the run (filled by the writer)
    """

    table: Table
    title: str = "tabprotect report"
    kind: str = "audit"
    method: str | None = None
    attacker: str = "outside intruder"
    published: Table | None = None
    rounded: np.ndarray | None = None
    audit: Any = None
    info: Any = None
    rules: Any = None
    comparison: pd.DataFrame | None = None
    ru_map: pd.DataFrame | None = None
    census: Any = None
    parameters: dict[str, Any] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    #: CPU seconds of this process per step (the steps of ``timings``)
    cpu_timings: dict[str, float] = field(default_factory=dict)
    #: the protection method's own stages (wall seconds, within its step)
    method_stages: dict[str, float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    outputs: dict[str, Path] = field(default_factory=dict)

    @property
    def status(self) -> np.ndarray:
        return (self.published if self.published is not None else self.table).status

    @property
    def passed(self) -> bool | None:
        """The audit's verdict; None when the run has no audit (primary rules only)."""
        return None if self.audit is None else bool(self.audit.passed)

    @property
    def verdict(self) -> str:
        """``PASSED``, ``FAILED``, ``NOT PROVEN`` (the audit stopped at its time limit
        before proving every primary protected) or ``no audit`` (primary rules only): the
        words of the outputs, the summary and the report's banner."""
        audit = self.audit
        if audit is None:
            return "no audit"
        if self.passed:
            return "PASSED"
        protected = getattr(audit, "protected", None)
        complete = getattr(audit, "complete", True)
        if protected is not None and not complete and np.asarray(protected).all():
            return "NOT PROVEN"
        return "FAILED"

    @property
    def unpublished(self) -> np.ndarray:
        """Cells whose value is not published (suppression and audit runs)."""
        mask = getattr(self.audit, "unpublished", None)
        if mask is not None and self.kind in ("suppression", "audit", "compare"):
            return np.asarray(mask, dtype=bool)
        return is_suppressed(self.status)


class _Steps:
    """Times the steps of a run and reports them to ``progress``."""

    def __init__(self, timings: dict[str, float], progress: Progress | None):
        self.timings = timings
        self.cpu: dict[str, float] = {}
        self.progress = progress

    def __call__(self, name: str, fraction: float) -> "_Steps":
        self.name = name
        if self.progress:
            self.progress(name, fraction)
        return self

    def __enter__(self) -> "_Steps":
        self.start, self.cpu_start = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.timings[self.name] = round(time.perf_counter() - self.start, 4)
        self.cpu[self.name] = round(time.process_time() - self.cpu_start, 4)

    def scaled(self, start: float, end: float) -> Progress | None:
        """The progress of one step (0..1) mapped into [start, end] of the run."""
        if self.progress is None:
            return None
        progress = self.progress
        return lambda step, frac: progress(step, start + (end - start) *
                                           max(0.0, min(1.0, float(frac))))


def run(job: Job | str | Path, *, task: str = "auto",
        overrides: dict[str, dict[str, Any]] | None = None,
        progress: Progress | None = None) -> Run:
    """Run a job: table, primary rules, protection or rounding, audit, information loss.

    Parameters
    ----------
    job : a :class:`~tabprotect.io.job.Job` or the path of a job file
    task : what to do (:data:`TASKS`); ``"auto"`` protects when the job has
        ``[protect]``, rounds with ``[round]``, compares with ``[compare]`` and otherwise
        audits the statuses of the input
    overrides : job keys that replace the job's (``{"protect": {"time_limit": 30}}``);
        checked like the job
    progress : called as ``progress(step, fraction_done)``

    Returns
    -------
    Run (nothing is written: see :func:`tabprotect.io.results.write_outputs`)

    Examples
    --------
    >>> job = load_job(spec={"input": {"cells": "c.csv", "dimensions": ["r"]}}, base=".")
    >>> run(job, task="fly")
    Traceback (most recent call last):
    ...
    tabprotect.errors.InputError: job: unknown task 'fly' (known: auto, primary, protect, audit, round, audit-rounded, compare, cellkey)
    """
    if not isinstance(job, Job):
        job = load_job(job)
    if task not in TASKS:
        raise InputError(f"{job.label}: unknown task {task!r} (known: {', '.join(TASKS)})")
    if overrides:
        job = job.merged(overrides)
    cluster = job.section("cluster")
    if not cluster:
        return _run(job, task, progress, None)
    from tabprotect.parallel_dask import cluster_executor
    if "scheduler" not in cluster:
        raise InputError(f"{job.label} [cluster]: give 'scheduler' (the Dask scheduler's "
                         f"address, e.g. tcp://host:8786)")
    with cluster_executor(cluster["scheduler"], workers=cluster.get("workers"),
                          task_timeout=cluster.get("task_timeout"),
                          connect_timeout=float(cluster.get("connect_timeout", 10)),
                          where=f"{job.label} [cluster] scheduler") as executor:
        return _run(job, task, progress, executor)


def _run(job: Job, task: str, progress: Progress | None, executor: Any) -> Run:
    """:func:`run` once the job is checked; ``executor``: the cluster's, or None."""
    if task == "auto":
        task = next((t for t in ("protect", "round", "cellkey", "compare") if t in job.spec),
                    "audit")
    steps = _Steps({}, progress)
    title = job.section("job").get("title") or job.section("report").get("title") \
        or f"tabprotect report: {job.label}"
    if task == "cellkey":
        return _cellkey_run(job, steps, str(title), progress)
    if task == "audit-rounded":
        with steps("read the published table", 0.0):
            table = published_table(job)
    else:
        with steps("build table", 0.0):
            table = build_table(job, progress=_text_progress(progress))
    result = Run(table=table, title=str(title), parameters=job.spec,
                 inputs=job.input_files(), timings=steps.timings, cpu_timings=steps.cpu)
    if task == "primary" or ("rules" in job.spec and task in ("protect", "audit",
                                                               "compare")):
        with steps("primary rules", 0.1), _in_section(job, "rules"):
            _primary_step(result, job, keep_secondaries=task == "audit")
    if task == "primary":
        result.kind = "primary"
        return result
    if task == "protect":
        with _in_section(job, "protect"):
            _protect_step(result, job, steps, executor)
    elif task == "round":
        with _in_section(job, "round"):
            _round_step(result, job, steps)
    elif task == "audit-rounded":
        with _in_section(job, "audit"):
            _audit_rounded_step(result, job, steps)
    elif task == "compare":
        with _in_section(job, "compare"):
            _compare_step(result, job, steps, main=True, executor=executor)
    else:
        with _in_section(job, "audit"):
            _audit_step(result, job, steps, executor)
    if task in ("protect", "audit") and "compare" in job.spec:
        with _in_section(job, "compare"):
            _compare_step(result, job, steps, main=False, executor=executor)
    _info_step(result, job, steps)
    return result


@contextlib.contextmanager
def _in_section(job: Job, section: str):
    """A refusal from within a step names the job and the section whose settings the step
    read, unless it names the job already."""
    try:
        yield
    except InputError as exc:
        message = str(exc)
        if len(exc.args) == 1 and not message.startswith(job.label):
            exc.args = (f"{job.label} [{section}]: {message}",)
        raise


def _text_progress(progress: Progress | None):
    """The tabulation's one-argument progress, passed on as a step of the run."""
    if progress is None:
        return None
    return lambda message: progress(f"tabulate: {message}", 0.05)


# ---------------------------------------------------------------- steps
def _primary_step(result: Run, job: Job, keep_secondaries: bool) -> None:
    """Apply ``[rules]``; the statuses of the input stay a-priori statuses (``U``, ``P``),
    and an audit keeps the input's secondaries (``M``): it judges the given pattern."""
    from tabprotect.primary import apply_rules, rules_from_job
    rules = rules_from_job(job)
    if not rules:
        raise InputError(f"{job.label}: [rules] names no rule (e.g. [rules.frequency] n = 3)")
    given = result.table.status
    result.rules = apply_rules(result.table, rules)
    table = result.rules.table
    if keep_secondaries and (given == "M").any():
        status = table.status.copy()
        status[(given == "M") & (status == "S")] = "M"
        table = table.replace(status=status)
    result.table = table


def _needs_primaries(table: Table, job: Job) -> None:
    if not (table.status == "U").any():
        raise InputError(f"{job.label}: no primary unsafe cells (status U) to protect; give "
                         f"a [rules] section or a status column with U cells in [input]")


def _attacker(singleton: bool) -> str:
    return ("outside intruder and single-contributor attackers" if singleton
            else "outside intruder (single-contributor attackers not modelled: "
                 "singleton = false)")


def _protect_step(result: Run, job: Job, steps: _Steps, executor: Any = None) -> None:
    from tabprotect.secondary import protect
    opts = job.section("protect")
    _needs_primaries(result.table, job)
    method = opts.get("method", "optimal")
    kwargs = {k: v for k, v in opts.items() if k != "method"}
    if executor is not None:
        kwargs["executor"] = executor
    with steps(f"protect ({method})", 0.2):
        res = _hint_singleton(
            lambda: protect(result.table, method=method, progress=steps.scaled(0.2, 0.75),
                            **kwargs), job, "protect")
    if getattr(res, "adjusted", None) is not None:
        _adjustment_result(result, res)
        return
    result.kind = "suppression"
    result.method = method
    result.method_stages = dict(getattr(res, "stage_seconds", None) or {})
    coalition = opts.get("coalition")
    result.attacker = _attacker(bool(opts.get("singleton", True))) if not coalition else (
        f"outside intruder and every coalition of up to {coalition} contributors")
    result.published = res.confidential_table
    result.audit = res.audit
    result.results = {k: v for k, v in res.summary().items()
                      if k not in ("cells", "method", "audit")}
    result.notes.extend(res.notes or [])
    if not res.passed and coalition:
        result.notes.append(f"the pattern failed its audit against coalitions of up to "
                            f"{coalition} contributors; without [protect] coalition it is "
                            f"judged against single contributors only")
    elif not res.passed and opts.get("singleton", True):
        result.notes.append("the pattern failed its audit against single-contributor "
                            "attackers included; singleton = false in [protect] protects "
                            "against outside intruders only")
    if "audit" in job.spec:
        result.notes.append("[audit] is read by `tabprotect audit` (a given pattern); "
                            "protect audits its own pattern against the attacker of "
                            "[protect] (singleton, coalition, empty)")
    if method == "optimal" and not res.proven_optimal:
        result.notes.append("the optimal method stopped before proving optimality (time "
                            "limit): the pattern is the best found, and it is audited")


#: who a controlled tabular adjustment protects against, in words
ADJUSTMENT_ATTACKER = ("an intruder who reads every published (adjusted) value: each "
                       "sensitive cell lies at least its protection level from its true "
                       "value")


def _adjustment_result(result: Run, res) -> None:
    """A run of a method that publishes adjusted values (``cta``)."""
    result.kind = "adjustment"
    result.method = res.method
    result.attacker = ADJUSTMENT_ATTACKER
    result.rounded = np.asarray(res.adjusted, dtype=float)
    result.audit = res.audit
    result.results = {k: v for k, v in res.summary().items()
                      if k not in ("cells", "method", "audit")}
    result.notes.extend(res.notes or [])


def _hint_singleton(call, job: Job, section: str):
    """Run ``call``; an unprotectable primary under the single-contributor attack names
    the option that changes the attacker model."""
    from tabprotect.errors import InfeasibleRulesError
    try:
        return call()
    except InfeasibleRulesError as exc:
        if "single-contributor" in str(exc):
            raise InfeasibleRulesError(
                f"{job.label} [{section}]: {exc}; to protect against outside intruders "
                f"only, set singleton = false in [{section}]") from None
        raise


def _round_step(result: Run, job: Job, steps: _Steps) -> None:
    from tabprotect.audit_rounded import audit_rounded
    from tabprotect.rounding import round_table
    opts = dict(job.section("round"))
    if "base" not in opts:
        raise InputError(f"{job.label} [round]: give 'base' (the rounding base)")
    method = opts.get("method", "controlled")
    keys = ("seed", "margins_from_interior", "weights", "k_step", "step_penalty",
            "threshold", "partition", "time_limit", "mip_gap")
    with steps("round", 0.2):
        res = round_table(result.table, int(opts["base"]), method, audit=False,
                          **{k: opts[k] for k in keys if k in opts})
    result.kind = "rounding"
    result.method = f"{res.method} rounding, base {res.base}"
    result.rounded = np.asarray(res.rounded, dtype=float)
    result.results = {k: v for k, v in res.summary().items() if k != "cells"}
    result.notes.extend(res.notes or [])
    if "rules" in job.spec:
        result.notes.append("the job's [rules] are not applied: rounding gives no cell a "
                            "protection level, and its audit checks the rounding's ranges "
                            "only (to protect primary cells, use [protect])")
    _unused_audit_note(result, job)
    if opts.get("audit", True):
        with steps("audit", 0.6):
            result.audit = audit_rounded(res, published=_published_mask(result.table, opts),
                                         small_max=int(opts.get("small_max", 2)))
        result.notes.extend(result.audit.notes or [])


def _published_mask(table: Table, opts: dict) -> np.ndarray | None:
    return ~table.is_inner if opts.get("published", "all") == "margins" else None


def _audit_rounded_step(result: Run, job: Job, steps: _Steps) -> None:
    from tabprotect.audit_rounded import audit_rounded
    opts = job.section("round")
    if "base" not in opts:
        raise InputError(f"{job.label} [round]: give 'base' (the rounding base)")
    method = opts.get("method", "controlled")
    table = result.table
    with steps("audit", 0.2):
        result.audit = audit_rounded(
            table, base=int(opts["base"]), method=method,
            published=_published_mask(table, opts), k_step=opts.get("k_step", 0),
            threshold=opts.get("threshold"),
            margins_from_interior=opts.get("margins_from_interior"),
            small_max=int(opts.get("small_max", 2)), time_limit=opts.get("time_limit"))
    result.kind = "audit-rounded"
    _unused_audit_note(result, job)
    result.method = f"{method} rounding, base {opts['base']}"
    result.rounded = table.value.copy()
    result.notes.extend(result.audit.notes or [])


def _nothing_to_audit(job: Job) -> str:
    """The error of an audit of statuses without suppressed cells; a job whose [protect]
    or [round] step this task does not run is pointed to the task that does."""
    steps = [s for s in ("protect", "round") if s in job.spec]
    if steps:
        return (f"{job.label}: nothing to audit: the audit task audits the input's "
                f"suppressed cells (status U or M) and there are none; the job's [{steps[0]}] "
                f"step is run by its own task ({steps[0]}, or report)")
    return (f"{job.label}: nothing to audit: no [protect] or [round] step and no suppressed "
            f"cells (status U or M); give a status column in [input] or [audit] published = "
            f"\"margins\"")


def _unused_audit_note(result: Run, job: Job) -> None:
    """A rounded table's audit takes its settings from [round]: say so when [audit] is
    given, whose keys (published, small_max, ...) would otherwise be silently ignored."""
    if "audit" in job.spec:
        result.notes.append("the job's [audit] section is not used: a rounded table's audit "
                            "takes its settings (published, small_max) from [round]")


def _audit_step(result: Run, job: Job, steps: _Steps, executor: Any = None) -> None:
    from tabprotect.audit import audit
    table = result.table
    opts = job.section("audit")
    unpublished = None
    if opts.get("published", "all") == "margins":
        unpublished = table.is_inner.copy()
    elif not table.suppressed.any():
        raise InputError(_nothing_to_audit(job))
    singleton = bool(opts.get("singleton", False))
    coalition = opts.get("coalition")
    empty = opts.get("empty", "publish")
    if table.empty != empty:   # the intruder knows the policy (Table.known_lb)
        table = result.table = table.replace(empty=empty)
    table = result.table = _rule_bound(result, table)
    with steps("audit", 0.3):
        result.audit = audit(table, unpublished=unpublished, integer=opts.get("integer"),
                             singleton=singleton, time_limit=opts.get("time_limit"),
                             mode=opts.get("mode", "intervals"),
                             workers=max(int(opts.get("workers", 1)),
                                         executor.workers if executor else 1),
                             coalition=coalition)
    result.kind = "audit"
    result.attacker = _attacker(singleton) if not coalition else (
        f"outside intruder and every coalition of up to {coalition} contributors")
    result.published = table
    result.results = {k: v for k, v in result.audit.summary().items()
                      if k in ("mode", "unprotected_primary", "exactly_disclosed")}


def _rule_bound(result: Run, table: Table) -> Table:
    """``table`` with the bound an intruder who knows the rules reads off a pattern of
    primaries only (:meth:`PrimaryResult.count_bound`), and a note; unchanged elsewhere."""
    suppressed = table.suppressed
    bound = None if result.rules is None else result.rules.count_bound(suppressed)
    if bound is None:
        return table
    result.notes.append("the pattern holds primaries of the minimum-frequency rule only: "
                        "an intruder who knows the rule bounds each suppressed count below "
                        "its threshold, and the audit models that bound")
    return table.replace(ub=np.where(suppressed, np.minimum(table.ub, bound), table.ub))


def _compare_step(result: Run, job: Job, steps: _Steps, main: bool,
                  executor: Any = None) -> None:
    from tabprotect.compare import compare_job
    table = result.table
    if main:
        _needs_primaries(table, job)
    with steps("compare", 0.85 if not main else 0.2):
        comparison = compare_job(job, table, progress=steps.scaled(0.2, 0.8) if main
                                 else None, executor=executor)
    result.comparison = comparison.frame
    if not main:
        return
    result.kind = "compare"
    singleton = job.section("compare").get("singleton",
                                           job.section("protect").get("singleton", True))
    result.attacker = _attacker(bool(singleton))
    best = comparison.best()
    if best is None:
        result.notes.append("no method passed the audit: nothing is publishable")
        failed = next((r for r in comparison.runs if r.audit is not None), None)
        if failed is not None:
            result.method, result.audit = failed.label, failed.audit
            result.published = failed.published
        return
    result.method = best.label
    result.published = best.published
    result.audit = best.audit
    if best.published is None:
        # the best publishes changed values (rounding, cta): the run is written, reported
        # and summarised as a run of that kind, with its values as the published table
        from tabprotect.compare import ROUNDING
        result.rounded = best.rounded
        result.kind = "rounding" if best.method in ROUNDING else "adjustment"
    result.notes.append(f"published table and audit of '{best.label}', the passing method "
                        f"with the least information loss among the runs of its kind "
                        f"(suppression, or changed values), the kind of the first passing "
                        f"method listed")


def _cellkey_run(job: Job, steps: _Steps, title: str, progress: Progress | None) -> Run:
    """Swap (with ``[swap]``), record keys, every table of ``[microdata]`` and
    ``[cellkey] tables`` perturbed by the cell key method; the first table is the run's."""
    from tabprotect.census import cellkey_job, summary
    if "microdata" not in job.spec:
        raise InputError(f"{job.label}: the cell key method needs [microdata] (record keys "
                         "travel with the records)")
    with steps("cell key", 0.0):
        census = cellkey_job(job, progress=_text_progress(progress))
    first = census.tables[0]
    s = first.settings
    result = Run(table=first.table, title=title, kind="cellkey", parameters=job.spec,
                 inputs=job.input_files(), timings=steps.timings, cpu_timings=steps.cpu,
                 method=(f"cell key (ptable {Path(s.ptable_file).name})" if s.ptable_file else
                         f"cell key D={s.D} V={s.V:g} js={s.js}")
                 + (" after targeted swapping" if census.swap is not None else ""),
                 attacker="intruder who knows the ptable")
    result.census = census
    if "seed" in job.section("cellkey") and not census.keys_added:
        result.notes.append(f"[cellkey] seed is not used: the records carry their keys "
                            f"(column '{s.key}'), and those keys decide the perturbation")
    if "rules" in job.spec:
        result.notes.append("the job's [rules] are not applied: the cell key method gives no "
                            "cell a protection level (to protect primary cells, use "
                            "[protect])")
    result.published = first.published_table
    result.results = {"cellkey": summary(census)}
    with steps("information loss", 0.9):
        from tabprotect.infoloss import info_loss
        opts = job.section("report")
        result.info = info_loss(first.table, first.published.astype(float),
                                **{k: opts[k] for k in ("by", "cells", "zero", "rows",
                                                        "cols") if k in opts})
    return result


def _info_step(result: Run, job: Job, steps: _Steps) -> None:
    from tabprotect.infoloss import info_loss
    if result.kind == "audit-rounded":
        return                       # the true values are not known
    if result.kind == "compare" and result.published is None:
        return
    with steps("information loss", 0.9):
        if result.kind in ("rounding", "adjustment"):
            opts = job.section("report")
            result.info = info_loss(result.table, result.rounded,
                                    **{k: opts[k] for k in ("by", "cells", "zero", "rows",
                                                            "cols") if k in opts})
        else:
            result.info = info_loss(result.table, result.published)
