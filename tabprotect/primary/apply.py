"""Applying the rules in tau-Argus's evaluation order."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.primary.base import Rule
from tabprotect.primary.levels import Levels
from tabprotect.primary.manual import ManualStatus
from tabprotect.primary.result import PrimaryResult
from tabprotect.primary.spec import rules_from_spec

__all__ = ["EVALUATION_ORDER", "apply_rules"]

#: rule kinds in the order they are applied (tau-Argus): a cell's reason lists the rules
#: that fired in this order, the first being tau-Argus's status
EVALUATION_ORDER = ("empty", "dominance", "p", "pq", "request", "frequency", "zero", "group",
                    "manual")

def apply_rules(table: Table, rules: Sequence[Rule] | Mapping[str, Any], *,
                base: str | Path | None = None) -> PrimaryResult:
    """Apply sensitivity rules: primary statuses, protection levels and reasons.

    Parameters
    ----------
    table : a magnitude table (with ``top`` for dominance/p%/pq rules) or a frequency table
    rules : Rule objects, or a ``[rules]`` spec dict (see :func:`rules_from_spec`)
    base : folder that relative file names in a spec dict are resolved against

    Statuses given in the input table are kept as a-priori statuses: ``P`` stays protected
    and ``U`` stays unsafe (reason ``apriori``); ``M`` is dropped (recomputed later).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> from tabprotect.primary import DominanceRule, FrequencyRule
    >>> t = Table.from_arrays({"g": Hierarchy.flat(["a", "b"], total="T")}, [430, 330, 100],
    ...                       freq=[5, 3, 2], top=[[300, 50], [300, 20], [50, 50]])
    >>> res = apply_rules(t, [DominanceRule(1, 85), FrequencyRule(3, 10)])
    >>> res.table.status.tolist(), res.reason.tolist()
    (['S', 'U', 'U'], ['', 'dominance(1,85)', 'frequency(3)'])
    """
    if isinstance(rules, Mapping):
        rules = rules_from_spec(rules, base)
    rules = list(rules)
    for r in rules:
        if not isinstance(r, Rule):
            raise InputError(f"not a sensitivity rule: {r!r}")
    order = {k: i for i, k in enumerate(EVALUATION_ORDER)}
    rules.sort(key=lambda r: order[r.kind])
    f = np.nan_to_num(table.freq, nan=1.0)
    empty = (f == 0) & (table.value == 0)
    levels = Levels.start(table)
    for rule in rules:
        if isinstance(rule, ManualStatus):
            levels.add_manual(rule, table)
            continue
        mask, r_upl, r_lpl = rule.evaluate(table)
        if rule.kind != "group":
            mask = mask & ~empty
        levels.add(rule.label, mask, r_upl, r_lpl)
    new, reason = levels.finish(table, empty)
    return PrimaryResult(table=new, reason=reason, fired=levels.fired, rules=rules)
