"""Rules from job keys: a job's ``[rules]`` section -> rule objects."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from tabprotect.errors import InputError
from tabprotect.primary.base import Rule
from tabprotect.primary.frequency import FrequencyRule, GroupDisclosureRule, ZeroRule
from tabprotect.primary.magnitude import DominanceRule, PPercentRule, PQRule, RequestRule
from tabprotect.primary.manual import ManualStatus

__all__ = ["RULE_KEYS", "rules_from_spec", "rules_from_job", "top_k_needed"]


RULE_KEYS = {
    "frequency": ({"n", "safety_range", "holding", "weighted"}, FrequencyRule),
    "dominance": ({"n", "k", "holding"}, DominanceRule),
    "p": ({"p", "m", "holding"}, PPercentRule),
    "pq": ({"p", "q", "m", "holding"}, PQRule),
    "request": ({"p", "safety_range"}, RequestRule),
    "zero": ({"safety_range"}, ZeroRule),
    "group": ({"dimensions"}, GroupDisclosureRule),
}


def rules_from_spec(spec: Mapping[str, Any], job_or_base=None) -> list[Rule]:
    """Rules from a job's ``[rules]`` section.

    Format (every rule table may also be an array of tables, ``[[rules.dominance]]``)::

        [rules]
        manual = "apriori.csv"          # a-priori statuses / protection levels
        manual_safety_range = 10        # % of the value for manual U without levels
        [rules.frequency]
        n = 3
        safety_range = 30               # % of the value (count units in frequency tables)
        holding = false
        [[rules.dominance]]
        n = 1
        k = 85
        [[rules.p]]
        p = 10
        m = 1
        [[rules.pq]]
        p = 10
        q = 50
        [rules.request]
        p = 0
        safety_range = 10
        [rules.zero]
        safety_range = 5
        [rules.group]                   # frequency tables
        dimensions = ["occupation"]

    Examples
    --------
    >>> [r.label for r in rules_from_spec({"dominance": [{"n": 1, "k": 85}],
    ...                                    "p": {"p": 10}})]
    ['dominance(1,85)', 'p(10,1)']
    """
    base = None
    label = "[rules]"
    if job_or_base is not None:
        if hasattr(job_or_base, "section"):      # a Job
            base = job_or_base
            label = f"{job_or_base.label} [rules]"
        else:
            base = Path(job_or_base)
    rules: list[Rule] = []
    known = set(RULE_KEYS) | {"manual", "manual_safety_range"}
    unknown = set(spec) - known
    if unknown:
        raise InputError(f"{label}: unknown rule(s) {sorted(unknown)} "
                         f"(known: {', '.join(sorted(known))})")
    for kind, (keys, cls) in RULE_KEYS.items():
        if kind not in spec:
            continue
        entries = spec[kind]
        if isinstance(entries, Mapping):
            entries = [entries]
        if entries is True:
            entries = [{}]
        if not isinstance(entries, list):
            raise InputError(f"{label}: '{kind}' must be a table or an array of tables")
        for entry in entries:
            bad = set(entry) - keys
            if bad:
                raise InputError(f"{label} {kind}: unknown key(s) {sorted(bad)} "
                                 f"(known: {', '.join(sorted(keys))})")
            kwargs = dict(entry)
            if kind == "group" and "dimensions" in kwargs:
                kwargs["dimensions"] = tuple(kwargs["dimensions"])
            if kind in ("dominance",) and not {"n", "k"} <= set(kwargs):
                raise InputError(f"{label} dominance: give n and k")
            if kind in ("p", "pq") and "p" not in kwargs:
                raise InputError(f"{label} {kind}: give p")
            if kind == "pq" and "q" not in kwargs:
                raise InputError(f"{label} pq: give q")
            try:
                rules.append(cls(**kwargs))
            except InputError as err:   # the rule's own check, named by its job key
                raise InputError(f"{label.removesuffix('[rules]')}[rules.{kind}]: "
                                 f"{err}") from None
    if "manual" in spec:
        m = spec["manual"]
        if hasattr(base, "section"):
            path = base.resolve(m)
        elif base is not None:
            path = base / m
        else:
            path = Path(m)
        if not Path(path).exists():
            raise InputError(f"{label}: manual file {Path(path).name} not found")
        rules.append(ManualStatus(path, float(spec.get("manual_safety_range", 10.0))))
    return rules


def rules_from_job(job) -> list[Rule]:
    """The rules of a job's ``[rules]`` section (file names relative to the job file).

    Examples
    --------
    >>> from tabprotect.io.job import load_job
    >>> job = load_job(spec={"rules": {"frequency": {"n": 3}}}, base=".")
    >>> [r.label for r in rules_from_job(job)]
    ['frequency(3)']
    """
    return rules_from_spec(job.section("rules"), job)


def top_k_needed(rules: Sequence[Rule]) -> int:
    """How many largest contributions the rules look at.

    Examples
    --------
    >>> top_k_needed([DominanceRule(3, 75), PPercentRule(10, m=2)])
    3
    """
    return max([r.tops_needed for r in rules] + [1])
