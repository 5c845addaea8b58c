"""The job-file schema: every section and key with its type, default and range.

:func:`check_job` checks a parsed job before any work: an unknown section or key, a value
of the wrong type, a value out of range, ``inf``/``nan`` and a wrong choice are each one
:class:`~tabprotect.errors.InputError` naming the file, the section and the key.  The
reference tables of ``docs/jobs.md`` are generated from the same declarations
(:func:`tabprotect.io.reference.reference_markdown`; ``python -m tabprotect.io.reference
docs/jobs.md`` rewrites them), and a test checks that the two agree.

Options of one protection method (``[protect] engine``, ``subtable_time_limit``, ...) are
the keyword options the method's function declares; they are checked when the job names
that method.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Iterator

from tabprotect.errors import InputError

__all__ = ["Key", "Section", "SECTIONS", "check_job", "file_keys", "method_option_keys"]


@dataclass(frozen=True)
class Key:
    """One key of a section: ``type`` is one of :data:`TYPES`; ``low``/``high`` bound
    numbers (``low_open``: the bound itself is excluded); ``choices`` lists the allowed
    strings; ``path``: a file name relative to the job file."""

    name: str
    type: str
    default: Any = None
    doc: str = ""
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    path: bool = False

    def range_text(self) -> str:
        if self.choices:
            return " \\| ".join(f"`{c}`" for c in self.choices)
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Section:
    """A section: ``shape`` is ``"table"`` (keys below), ``"named"`` (one sub-table per
    name, each with the keys below: ``[hierarchies.NAME]``) or ``"rules"``."""

    name: str
    doc: str
    keys: tuple[Key, ...]
    shape: str = "table"

    def key(self, name: str) -> Key | None:
        return next((k for k in self.keys if k.name == name), None)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "list of strings": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "list of integers": lambda v: isinstance(v, list) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in v),
    "string or table": lambda v: isinstance(v, (str, dict)),
    "string or boolean": lambda v: isinstance(v, (str, bool)),
    "string or list": lambda v: isinstance(v, (str, list)),
    "number or string": lambda v: isinstance(v, str) or _is_number(v),
    "list": lambda v: isinstance(v, list),
    "table": lambda v: isinstance(v, dict),
    "scalar": lambda v: isinstance(v, (str, int, float, bool)),
}

_TIME = dict(type="number", low=0, low_open=True)
_COLUMN = dict(type="string")
_SINGLETON_DOC = ("also protect against (and audit as) each single contributor of a "
                  "cell; false: outside intruders only")

SECTIONS: dict[str, Section] = {s.name: s for s in (
    Section("job", "what the run is called", (
        Key("title", "string", doc="title of the report"),
    )),
    Section("input", "a cells file: one row per cell, one column per dimension; or a "
            "general table: `jj`, or `cells` + `relations`", (
        Key("cells", "string", path=True, doc="CSV or Parquet cells file"),
        Key("dimensions", "list of strings", doc="the code columns, in order"),
        Key("jj", "string", path=True, doc="tau-Argus JJ file (a general table; 9- or "
            "10-field cell lines), instead of `cells`"),
        Key("relations", "string", path=True, doc="relations file `rel,cell,coef` (a "
            "general table with `cells`, instead of `dimensions`)"),
        Key("id", "string", "cell", doc="cell id column of `cells` with `relations`"),
        Key("value", default="value", doc="value column", **_COLUMN),
        Key("freq", default="freq", doc="contributor-count column (optional in the file "
            "unless the job names it; with `kind = \"frequency\"` absent: the value column, "
            "the count; counts must be whole numbers)", **_COLUMN),
        Key("top", doc="prefix of the largest-contribution columns (`top1, top2, ...`)",
            **_COLUMN),
        Key("cost", doc="cost column (`[protect] cost = \"column\"`)", **_COLUMN),
        Key("lb", doc="a-priori lower bound column", **_COLUMN),
        Key("ub", doc="a-priori upper bound column", **_COLUMN),
        Key("status", doc="given statuses: letters S U M P Z or the words safe, unsafe "
            "(or primary), secondary, protected, empty", **_COLUMN),
        Key("upl", doc="upper protection level column", **_COLUMN),
        Key("lpl", doc="lower protection level column", **_COLUMN),
        Key("spl", doc="sliding protection level column", **_COLUMN),
        Key("extra", "list of strings", [], doc="further per-cell columns kept with the table"),
        Key("compute_totals", "boolean", False, doc="totals absent from the file are "
            "computed (present ones are checked); false: every total must be in the file"),
        Key("tolerance", "number", 1e-6, low=0, doc="additivity tolerance, relative to "
            "max(1, \\|total\\|) (`jj`, `relations`: to the relation's largest "
            "\\|value\\|)"),
        Key("kind", "string", doc="table kind (default: from the data)",
            choices=("magnitude", "frequency")),
        Key("name", "string", doc="table name (default: the file name)"),
    )),
    Section("hierarchies", "the hierarchy of dimension NAME (flat when absent); give one "
            "of pairs, hrc, levels, file + columns, codes, flat", (
        Key("pairs", "string", path=True, doc="`parent,child` CSV"),
        Key("hrc", "string", path=True, doc="tau-Argus .hrc file"),
        Key("lead", "string", "@", doc=".hrc level marker"),
        Key("levels", "list of integers", doc="code lengths per level (codes from the data)"),
        Key("file", "string", path=True, doc="correspondence table (with `columns`)"),
        Key("columns", "list of strings", doc="level columns, coarse to fine"),
        Key("codes", "list of strings", doc="the codes of a flat hierarchy"),
        Key("flat", "boolean", False, doc="flat, codes from the data"),
        Key("total", "string", "Total", doc="code of the grand total"),
    ), shape="named"),
    Section("microdata", "tabulation from microdata (instead of `[input]`); the keys of "
            "`risk` and `perturb` too", (
        Key("file", "string", path=True, doc="CSV or Parquet microdata file"),
        Key("dimensions", "list of strings", doc="code columns (tabulation)"),
        Key("response", doc="response variable (absent: a frequency table)", **_COLUMN),
        Key("kind", "string", doc="table kind", choices=("magnitude", "frequency")),
        Key("weight", doc="sampling-weight column", **_COLUMN),
        Key("holding", doc="enterprise-group column", **_COLUMN),
        Key("shadow", doc="shadow variable for the rules", **_COLUMN),
        Key("cost", doc="cost variable", **_COLUMN),
        Key("request", doc="request-flag column", **_COLUMN),
        Key("top_k", "integer", doc="largest contributions kept (default: what the rules "
            "need, at least 3)", low=1),
        Key("unknown_code", "string or table", doc="code receiving unknown codes (or "
            "{column = code})"),
        Key("missing", "string", "error", doc="missing codes", choices=("error", "zero",
                                                                        "drop")),
        Key("engine", "string", "auto", choices=("auto", "memory", "pandas", "duckdb", "dask"),
            doc="tabulation engine"),
        Key("name", "string", doc="table name"),
        Key("threads", "integer", low=1, doc="duckdb threads"),
        Key("memory_limit", "string", doc="duckdb memory limit, e.g. \"4GB\""),
        Key("keys", "list of strings", doc="risk: key variables"),
        Key("household", doc="risk: household column", **_COLUMN),
        Key("sampling_fraction", "number or string", low=0, low_open=True, high=1,
            doc="risk: sampling fraction, or the column holding it (with `pi_key`)"),
        Key("pi_key", doc="risk: column along which the sampling fraction varies",
            **_COLUMN),
    )),
    Section("rules", "primary sensitivity rules (each rule a table or an array of "
            "tables; see docs/primary.md)", (
        Key("manual", "string", path=True, doc="a-priori statuses / protection levels file"),
        Key("manual_safety_range", "number", low=0, doc="% of the value for manual U "
            "cells without levels"),
        Key("frequency", "table", doc="`n` (int >= 1), `safety_range` (%), `holding`, "
            "`weighted`"),
        Key("dominance", "table", doc="`n`, `k` (%), `holding`"),
        Key("p", "table", doc="`p` (%), `m`, `holding`"),
        Key("pq", "table", doc="`p`, `q` (%), `m`, `holding`"),
        Key("request", "table", doc="`p` (%), `safety_range`"),
        Key("zero", "table", doc="`safety_range`"),
        Key("group", "table", doc="`dimensions` (frequency tables)"),
    ), shape="rules"),
    Section("protect", "secondary suppression (docs/secondary.md) or controlled tabular "
            "adjustment (`method = \"cta\"`, docs/cta.md); a method's own options are "
            "accepted for that method", (
        Key("method", "string", "optimal", doc="the method",
            choices=("optimal", "modular", "hypercube", "gauss", "greedy", "cta")),
        Key("cost", "string", choices=("unity", "freq", "value", "log", "column",
                                       "relative"),
            doc="what a suppression costs (default value); cta: the weight of a unit "
                "change (default relative: one over the absolute value; relative is for cta "
                "only)"),
        Key("cost_column", "string", doc="the extra column used by cost = \"column\""),
        Key("time_limit", doc="seconds for the whole protection (method, audit and repair)",
            **_TIME),
        Key("singleton", "boolean", True, doc=_SINGLETON_DOC + " (suppression only)"),
        Key("coalition", "integer", low=2, doc="also protect against every coalition of up "
            "to this many contributors pooling their own contributions (suppression only; "
            "needs singleton = true and, for magnitude tables, `top` columns)"),
        Key("repair", "boolean", True, doc="repair audit shortfalls by further suppression"),
        Key("mip_gap", "number", low=0, high=1, doc="relative MILP gap to stop at"),
        Key("empty", "string", "publish", choices=("publish", "suppress"),
            doc="may empty cells be secondary suppressions; publish (shown Z) also tells "
                "the intruder that a suppressed count is at least 1 (docs/audit.md)"),
        Key("audit_mode", "string", "auto", choices=("auto", "intervals", "verdict"),
            doc="audit of the final pattern"),
        Key("audit_workers", "integer", 1, low=1, doc="processes for the audit"),
    )),
    Section("audit", "the audit of a given pattern (status column), docs/audit.md", (
        Key("integer", "boolean", doc="integer intervals (default: frequency tables)"),
        Key("singleton", "boolean", False, doc=_SINGLETON_DOC),
        Key("coalition", "integer", low=2, doc="also audit against every coalition of up "
            "to this many contributors pooling their own contributions (includes the "
            "single contributors)"),
        Key("time_limit", doc="seconds for the audit", **_TIME),
        Key("published", "string", "all", choices=("all", "margins"),
            doc="what the intruder sees (margins: every inner cell unpublished)"),
        Key("mode", "string", "intervals", choices=("intervals", "verdict"),
            doc="verdict: only whether each primary is protected"),
        Key("workers", "integer", 1, low=1, doc="processes for independent components"),
        Key("empty", "string", "publish", choices=("publish", "suppress"),
            doc="the publication's empty cells, as [protect] empty: publish (shown Z) tells "
                "the intruder that a suppressed count is at least 1; suppress: it may be 0"),
    )),
    Section("round", "rounding (docs/rounding.md)", (
        Key("base", "integer", low=1, doc="the rounding base (required)"),
        Key("method", "string", "controlled",
            choices=("deterministic", "random", "controlled", "small-count")),
        Key("seed", "integer", low=0, doc="random rounding seed (drawn and reported when absent)"),
        Key("k_step", "integer", 0, low=0, doc="controlled: K-step relaxation"),
        Key("step_penalty", "number", low=0, doc="controlled: cost of a K step"),
        Key("threshold", "integer", low=1, doc="small-count: counts below it are rounded"),
        Key("margins_from_interior", "boolean", False,
            doc="random: totals are sums of rounded inner cells"),
        Key("weights", "string", "unity", choices=("unity", "relative"),
            doc="controlled: deviation weights"),
        Key("partition", "string or boolean", "auto", doc="controlled: auto, true or false"),
        Key("time_limit", doc="seconds for the solver", **_TIME),
        Key("mip_gap", "number", low=0, high=1, doc="relative MILP gap"),
        Key("audit", "boolean", True, doc="audit the rounded table"),
        Key("published", "string", "all", choices=("all", "margins"),
            doc="audit: which cells the intruder sees"),
        Key("small_max", "integer", 2, low=0, doc="audit: largest value counted as small"),
    )),
    Section("compare", "methods laid side by side (docs/report.md)", (
        Key("methods", "list", doc="names, or tables of options with `method` and "
            "`label` (default: every method); `cellkey` and `swap+cellkey` entries take "
            "[cellkey] keys"),
        Key("cost", "string", choices=("unity", "freq", "value", "log", "column",
                                       "relative"),
            doc="default: [protect] cost, else each method's own (value; cta: relative)"),
        Key("time_limit", doc="seconds per method (default: [protect] time_limit)",
            **_TIME),
        Key("singleton", "boolean", True, doc=_SINGLETON_DOC + " (default: [protect] "
            "singleton)"),
    )),
    Section("risk", "microdata disclosure risk (docs/microdata.md)", (
        Key("k", "integer", 3, low=1, doc="k-anonymity threshold"),
        Key("individual", "boolean", True, doc="individual risk"),
        Key("method", "string", "approx", choices=("approx", "exact")),
        Key("threshold", "number", 0.1, low=0, high=1,
            doc="count records with risk above this"),
        Key("loglinear", "boolean", False, doc="log-linear risk"),
        Key("model", "string or list", "main", doc="log-linear model"),
        Key("missing_matches", "boolean", False, doc="a missing key matches any value"),
        Key("publish_counts", "boolean", False, doc="summary.json and the trail give the "
            "sample uniques, the k-anonymity violations and the records above the "
            "threshold (default: withheld, as many offices keep them; the terminal shows "
            "them)"),
    )),
    Section("perturb", "microdata perturbation (docs/microdata.md)", (
        Key("method", "string", choices=("pram", "invariant_pram", "swap")),
        Key("variables", "list of strings", doc="PRAM variables"),
        Key("variable", "string", doc="swap variable"),
        Key("seed", "integer", low=0),
        Key("d", "number", 0.8, low=0, high=1, doc="generated PRAM matrix diagonal"),
        Key("a", "number", 1.0, low=0, doc="invariant PRAM"),
        Key("matrix", "table", doc="{variable = {true = {released = probability}}}"),
        Key("unperturbed", "list", [], doc="categories left unchanged"),
        Key("spread", "string", "equal"),
        Key("strata", "string"),
        Key("control", "string or list", doc="swap: control variables"),
        Key("rate", "number", 0.05, low=0, high=1, doc="swap rate"),
        Key("targeted", "boolean", False, doc="swap the riskiest records first"),
        Key("publish_counts", "boolean", False, doc="swap: summary.json and the trail give "
            "the swap count, the rate and the risk after (default: withheld, as many "
            "offices keep them)"),
    )),
    Section("swap", "targeted record swapping of the microdata (docs/census.md)", (
        Key("geography", "string", doc="leaf-code column whose [hierarchies.NAME] gives the "
            "levels (it travels with the swapped households)"),
        Key("levels", "list of strings", doc="geography columns, coarse to fine (instead "
            "of `geography`)"),
        Key("risk_variables", "list of strings", doc="their combination within an area "
            "makes a record rare"),
        Key("k", "integer", 3, low=2, doc="rare: fewer than k records share area and risk "
            "values"),
        Key("rate", "number", 0.05, low=0, high=1, doc="least share of households moved"),
        Key("similar", "list of strings", [], doc="partners agree on these "
            "(`household_size` is computed)"),
        Key("carry", "list of strings", [], doc="household variables moved with the "
            "geography"),
        Key("household", doc="household column (default: [microdata] household; absent: "
            "persons)", **_COLUMN),
        Key("seed", "integer", low=0, doc="random seed (default: drawn, printed and "
            "withheld from summary and trail)"),
        Key("publish_counts", "boolean", False, doc="summary.json and the trail give the "
            "rate, the households moved and the records at risk per level (default: "
            "withheld, as many offices keep them; the report shows them)"),
    )),
    Section("cellkey", "the cell key method on tables of the microdata (docs/census.md)", (
        Key("D", "integer", 3, low=1, doc="largest change of a count"),
        Key("V", "number", 2.0, low=0, low_open=True, doc="variance of the count noise"),
        Key("js", "integer", 0, low=0, doc="counts 1..js are never published"),
        Key("pstay", "number", low=0, high=1, doc="probability of no change (default: "
            "maximum entropy)"),
        Key("mono", "boolean", False, doc="ptable's monotony condition: noise "
            "probabilities fall as the noise grows"),
        Key("ptable", "string", path=True, doc="tau-Argus ptable file (instead of D, V, js, "
            "pstay, mono)"),
        Key("key", "string", "rkey", doc="record-key column (added when absent)"),
        Key("seed", "integer", low=0, doc="seed of added record keys"),
        Key("tables", "list", [], doc="further linked tables: lists of dimension columns"),
        Key("m", "number", 0.1, low=0, low_open=True, high=1, doc="magnitude noise: share "
            "of the largest contribution"),
        Key("magnitude_D", "integer", 5, low=1, doc="magnitude noise steps"),
        Key("magnitude_V", "number", 3.0, low=0, low_open=True, doc="magnitude noise "
            "variance (in steps)"),
        Key("restore_additivity", "boolean", False, doc="publish the least-cost additive "
            "counts within the ptable's range"),
        Key("time_limit", doc="seconds for each additivity repair", **_TIME),
    )),
    Section("report", "the report and its information-loss measures", (
        Key("title", "string", doc="title (default: [job] title)"),
        Key("by", "string", doc="information loss: average over the tables of this "
            "dimension"),
        Key("cells", "string", "inner", choices=("inner", "all"),
            doc="information loss over inner or all cells"),
        Key("zero", "string", "unit", choices=("unit", "skip", "inf"),
            doc="relative loss of zero cells"),
        Key("rows", "string", doc="dimension of the rows (Cramer's V)"),
        Key("cols", "string", doc="dimension of the columns (Cramer's V)"),
    )),
    Section("cluster", "the parallel work on a Dask cluster (docs/scale-out.md)", (
        Key("scheduler", "string", doc="the Dask scheduler's address, e.g. "
            "\"tcp://10.0.0.5:8786\" (required)"),
        Key("workers", "integer", low=1, doc="tasks in flight at a time (default: the "
            "cluster's threads)"),
        Key("task_timeout", doc="seconds a task may take before the run fails",
            **_TIME),
        Key("connect_timeout", "number", 10, low=0, low_open=True,
            doc="seconds to wait for the scheduler"),
    )),
    Section("output", "where outputs go", (
        Key("dir", "string", "out", doc="output folder (relative to the job file; "
            "`-o` overrides)"),
    )),
)}

#: keys of one rule table of [rules]; each rule's numeric keys are >= 0
RULE_KEYS = {"frequency": {"n": "integer", "safety_range": "number", "holding": "boolean",
                           "weighted": "boolean"},
             "dominance": {"n": "integer", "k": "number", "holding": "boolean"},
             "p": {"p": "number", "m": "integer", "holding": "boolean"},
             "pq": {"p": "number", "q": "number", "m": "integer", "holding": "boolean"},
             "request": {"p": "number", "safety_range": "number"},
             "zero": {"safety_range": "number"},
             "group": {"dimensions": "list of strings"}}

#: keyword options every method receives from protect() (not method-specific), and
#: objects no job file can give (an options object, a solver, a start pattern)
_PROTECT_COMMON = {"table", "cost", "time_limit", "progress", "singleton", "mip_gap",
                   "empty", "start", "options", "solver"}


# ---------------------------------------------------------------- checking
def _where(label: str, section: str, key: str | None = None) -> str:
    return f"{label} [{section}]" + (f" {key}" if key else "")


def check_value(key: Key, value: Any, where: str) -> None:
    """One value against its key: type, finiteness, range and choices."""
    if not TYPES[key.type](value):
        raise InputError(f"{where}: must be {_article(key.type)}, not {_type_name(value)}")
    for x in (value if isinstance(value, list) else [value]):
        if isinstance(x, float) and not math.isfinite(x):
            raise InputError(f"{where}: must be a finite number")
    if key.choices and isinstance(value, str) and value not in key.choices:
        raise InputError(f"{where}: must be one of {', '.join(map(str, key.choices))}")
    if _is_number(value):
        if key.low is not None and (value < key.low or (key.low_open and value == key.low)):
            raise InputError(f"{where}: must be {'>' if key.low_open else '>='} {key.low:g}")
        if key.high is not None and value > key.high:
            raise InputError(f"{where}: must be <= {key.high:g}")


def _article(type_name: str) -> str:
    return ("an " if type_name[0] in "aeiou" else "a ") + type_name


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _check_table(section: Section, values: dict, where: str, extra: dict[str, Key]) -> None:
    for name, value in values.items():
        key = section.key(name) or extra.get(name)
        if key is None:
            known = sorted([k.name for k in section.keys] + list(extra))
            raise InputError(f"{where}: unknown key '{name}' (known: {', '.join(known)})")
        check_value(key, value, f"{where} {name}")


def check_job(spec: dict[str, Any], label: str = "job") -> None:
    """Check a parsed job against :data:`SECTIONS`; raises InputError naming file and key."""
    for name, values in spec.items():
        section = SECTIONS.get(name)
        if section is None:
            raise InputError(f"{label}: unknown section [{name}] (known: "
                             f"{', '.join(sorted(SECTIONS))})")
        if not isinstance(values, dict):
            raise InputError(f"{label}: [{name}] must be a table")
        where = _where(label, name)
        if section.shape == "named":
            for sub, keys in values.items():
                if not isinstance(keys, dict):
                    raise InputError(f"{where}: [{name}.{sub}] must be a table")
                _check_table(section, keys, _where(label, f"{name}.{sub}"), {})
                if name == "hierarchies":
                    _check_hierarchy_source(keys, _where(label, f"{name}.{sub}"))
        elif section.shape == "rules":
            _check_rules(section, values, label)
        elif name == "protect":
            _check_table(section, values, where, _method_keys(values, where))
            _check_cost_column(values, where)
        elif name == "compare":
            _check_table(section, values, where, {})
            _check_compare_methods(values.get("methods", []), where)
        elif name == "round":
            _check_table(section, values, where, {})
            _check_round_keys(values, values.get("method", "controlled"), where)
        elif name == "microdata":
            _check_table(section, values, where, {})
            for key in DUCKDB_KEYS:         # read by DuckDB alone (which auto may choose)
                if key in values and values.get("engine", "auto") not in ("auto", "duckdb"):
                    raise InputError(f"{where}: '{key}' applies to the duckdb engine only "
                                     f"(the engine is {values['engine']})")
        else:
            _check_table(section, values, where, {})
    _check_dimension_names(spec, label)


#: the keys that give a hierarchy, and the keys that go with one of them only
HIERARCHY_SOURCES = ("pairs", "hrc", "levels", "columns", "codes", "flat")
HIERARCHY_COMPANIONS = {"lead": "hrc", "file": "columns"}


def _check_hierarchy_source(keys: dict, where: str) -> None:
    """One source per hierarchy (a second would be ignored), and a key that goes with
    another source only (``lead`` with ``hrc``, ``file`` with ``columns``) given with it."""
    given = [k for k in HIERARCHY_SOURCES if k in keys and keys[k] is not False]
    if len(given) > 1:
        raise InputError(f"{where}: give one of {', '.join(HIERARCHY_SOURCES)}, not "
                         f"{' and '.join(given)} (the others would be ignored)")
    for key, source in HIERARCHY_COMPANIONS.items():
        if key in keys and source not in keys:
            raise InputError(f"{where}: '{key}' goes with '{source}', which is not given")


def _check_dimension_names(spec: dict[str, Any], label: str) -> None:
    """A dimension named twice in one list, and a ``[hierarchies.NAME]`` for no column the
    job names (it would be ignored), are errors naming the key."""
    named: set[str] = set()
    for section, key in (("input", "dimensions"), ("microdata", "dimensions"),
                         ("microdata", "keys")):
        values = spec.get(section, {}).get(key)
        if isinstance(values, list):
            twice = sorted({v for v in values if values.count(v) > 1})
            if twice:
                raise InputError(f"{_where(label, section, key)}: {twice[0]!r} is named "
                                 f"twice")
            named.update(map(str, values))
    for table in spec.get("cellkey", {}).get("tables", []) or []:
        if isinstance(table, list):
            named.update(map(str, table))
    geography = spec.get("swap", {}).get("geography")
    if isinstance(geography, str):
        named.add(geography)
    _check_group_dimensions(spec, label)
    hierarchies = spec.get("hierarchies", {})
    if not named or not isinstance(hierarchies, dict):
        return
    unused = sorted(set(hierarchies) - named)
    if unused:
        raise InputError(f"{label} [hierarchies.{unused[0]}]: '{unused[0]}' is not a "
                         f"dimension of the job (named: {', '.join(sorted(named))})")


def _check_group_dimensions(spec: dict[str, Any], label: str) -> None:
    """``[rules.group] dimensions`` names dimensions of the table."""
    group = spec.get("rules", {}).get("group")
    table = spec.get("input", spec.get("microdata", {})).get("dimensions")
    if not isinstance(group, dict) or not isinstance(table, list):
        return
    wanted = group.get("dimensions")
    unknown = [d for d in (wanted if isinstance(wanted, list) else []) if d not in table]
    if unknown:
        raise InputError(f"{_where(label, 'rules.group', 'dimensions')}: {unknown[0]!r} is "
                         f"not a dimension of the table ({', '.join(map(str, table))})")


def _check_rules(section: Section, values: dict, label: str) -> None:
    for name, value in values.items():
        if name not in RULE_KEYS:
            _check_table(section, {name: value}, _where(label, "rules"), {})
            continue
        entries = [value] if isinstance(value, dict) else value
        if value is True:
            entries = [{}]
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise InputError(f"{_where(label, 'rules', name)}: must be a table or an array "
                             f"of tables")
        keys = {k: Key(k, t, low=0) for k, t in RULE_KEYS[name].items()}
        rule_section = Section(f"rules.{name}", "", tuple(keys.values()))
        for entry in entries:
            _check_table(rule_section, entry, _where(label, f"rules.{name}"), {})


#: [round] keys that some rounding methods alone read (rounding and its audit); given with
#: another method they would be ignored, so they are refused (``mip_gap``: the MILPs of
#: controlled and small-count rounding)
ROUND_METHOD_KEYS = {"seed": ("random",), "margins_from_interior": ("random",),
                     "k_step": ("controlled",), "step_penalty": ("controlled",),
                     "weights": ("controlled",), "partition": ("controlled",),
                     "mip_gap": ("controlled", "small-count"),
                     "threshold": ("small-count",)}


def _check_round_keys(values: dict, method: Any, where: str) -> None:
    for key, owners in ROUND_METHOD_KEYS.items():
        if key in values and method not in owners:
            raise InputError(f"{where}: '{key}' applies to {' and '.join(owners)} rounding "
                             f"only (the method is {method})")


#: [microdata] keys the DuckDB engine alone reads
DUCKDB_KEYS = ("threads", "memory_limit")


def _check_compare_methods(methods: list, where: str) -> None:
    for i, entry in enumerate(methods):
        if isinstance(entry, str):
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("method"), str):
            raise InputError(f"{where} methods[{i}]: give a method name or a table with "
                             f"'method'")
        if entry["method"] in ("cellkey", "swap+cellkey"):
            rest = {k: v for k, v in entry.items() if k not in ("method", "label")}
            _check_table(SECTIONS["cellkey"], rest, f"{where} methods[{i}]", {})
            continue
        if entry["method"] in ("rounding", "round"):
            keys = {k.name: k for k in SECTIONS["round"].keys}
            keys["type"] = Key("type", "string", choices=SECTIONS["round"].key(
                "method").choices)
            rest = {k: v for k, v in entry.items() if k not in ("method", "label")}
            _check_table(Section("round", "", tuple(keys.values())), rest,
                         f"{where} methods[{i}]", {})
            _check_round_keys(rest, rest.get("type", "controlled"), f"{where} methods[{i}]")
            continue
        rest = {k: v for k, v in entry.items() if k not in ("label",)}
        _check_table(SECTIONS["protect"], rest, f"{where} methods[{i}]",
                     _method_keys(rest, f"{where} methods[{i}]"))
        _check_cost_column(rest, f"{where} methods[{i}]")


def _check_cost_column(values: dict, where: str) -> None:
    """``cost_column`` is read by ``cost = "column"`` alone (otherwise it would be
    ignored)."""
    if "cost_column" in values and values.get("cost") != "column":
        raise InputError(f"{where}: 'cost_column' applies to cost = \"column\" only (the "
                         f"cost is {values.get('cost', 'the default')})")


def method_option_keys(method: str) -> dict[str, Key]:
    """The options of one protection method: the fields of its registered options class
    (``METHODS[method].options``) and its run settings, with their types from the
    annotations; objects no job file can give (a solver, a start pattern) are left out."""
    import dataclasses

    from tabprotect.secondary import METHODS
    from tabprotect.secondary.base import option_help
    spec = METHODS.get(method)
    if spec is None:
        return {}
    why = option_help(spec.options)
    fields = {f.name: f.default for f in dataclasses.fields(spec.options)}
    lows = {f.name: f.metadata["low"] for f in dataclasses.fields(spec.options)
            if "low" in f.metadata}
    params = inspect.signature(spec.run).parameters
    fields.update({k: params[k].default for k in spec.extra if k in params})
    hints = {**_type_hints(spec.run), **_type_hints(spec.options)}
    out = {}
    for name, default in fields.items():
        if name in _PROTECT_COMMON:
            continue
        kind, choices = _key_type(hints.get(name), default)
        if kind is None:
            continue
        out[name] = Key(name, kind, default if default is not dataclasses.MISSING else None,
                        doc=why.get(name, ""), choices=choices,
                        low=lows.get(name, 0) if kind in ("integer", "number") else None)
    return out


def _type_hints(obj) -> dict:
    import typing
    try:
        return typing.get_type_hints(obj)
    except Exception:   # an annotation that does not resolve: typed by its default
        return {}


def _key_type(hint, default) -> tuple[str | None, tuple]:
    """The job-file type of an option (None: not a job key) and its choices."""
    import types
    import typing
    args = [a for a in typing.get_args(hint) if a is not type(None)] \
        if typing.get_origin(hint) in (typing.Union, types.UnionType) else [hint]
    if len(args) == 1 and typing.get_origin(args[0]) is typing.Literal:
        return "string", tuple(typing.get_args(args[0]))
    base = args[0] if len(args) == 1 else None
    if base is None and hint is None:
        base = type(default) if default is not None else None
    table = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if base in table:
        return table[base], ()
    return None, ()


def _method_keys(values: dict, where: str) -> dict[str, Key]:
    method = values.get("method", "optimal")
    if not isinstance(method, str):
        return {}
    common = {k.name for k in SECTIONS["protect"].keys}
    if set(values) <= common:
        return {}
    return method_option_keys(method)


def file_keys(spec: dict[str, Any]) -> Iterator[str]:
    """The file names a job's keys give (``path`` keys of the schema)."""
    for name, values in spec.items():
        section = SECTIONS.get(name)
        if section is None or not isinstance(values, dict):
            continue
        tables = values.values() if section.shape == "named" else [values]
        for table in tables:
            if not isinstance(table, dict):
                continue
            for key in section.keys:
                if key.path and isinstance(table.get(key.name), str):
                    yield table[key.name]
