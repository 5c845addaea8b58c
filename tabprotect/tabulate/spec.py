"""What to tabulate: the validated description of a microdata tabulation.

:class:`MicrodataSpec` is built once from ``tabulate``'s arguments and handed to the engine;
it names the columns to read and how to treat them, so an engine never re-validates them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Dimension

__all__ = ["MicrodataSpec", "MISSING_POLICIES", "MICRODATA_KEYS"]

MISSING_POLICIES = ("error", "zero", "drop")

#: the keys of a job file's ``[microdata]`` section
MICRODATA_KEYS = {"file", "dimensions", "response", "kind", "weight", "holding", "shadow",
                  "cost", "request", "top_k", "unknown_code", "missing", "engine", "name",
                  "threads", "memory_limit"}


@dataclass
class MicrodataSpec:
    """The columns of a tabulation and their meaning (see ``tabulate`` for each one)."""

    dims: list[Dimension]
    response: str | None
    kind: str
    weight: str | None
    holding: str | None
    shadow: str | None
    cost: str | None
    request: str | None
    top_k: int
    unknown: dict[str, int]   # column -> hierarchy position receiving unknown codes
    missing: str

    @classmethod
    def make(cls, dimensions, response, kind, weight, holding, shadow, cost, request, top_k,
             unknown_code, missing) -> "MicrodataSpec":
        dims = _dimensions(dimensions)
        kind = _kind(kind, response, shadow)
        if holding is not None and weight is not None:
            raise InputError("holdings cannot be combined with sampling weights (as in "
                             "tau-Argus): a holding's contribution would mix weighted records")
        if missing not in MISSING_POLICIES:
            raise InputError(f"missing must be one of {', '.join(MISSING_POLICIES)}, "
                             f"not {missing!r}")
        return cls(dims, response, kind, weight, holding, shadow, cost, request,
                   _top_k(top_k), _unknown_positions(dims, unknown_code), missing)

    @property
    def rule_var(self) -> str | None:
        """The variable whose contributions feed the rules."""
        return self.shadow or self.response

    @property
    def numeric_columns(self) -> list[str]:
        cols = [c for c in (self.response, self.shadow, self.cost) if c is not None]
        return list(dict.fromkeys(cols))

    @property
    def columns(self) -> list[str]:
        cols = [d.name for d in self.dims] + self.numeric_columns
        cols += [c for c in (self.weight, self.holding, self.request) if c is not None]
        return list(dict.fromkeys(cols))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(d.hierarchy) for d in self.dims)


def _dimensions(dimensions) -> list[Dimension]:
    if not isinstance(dimensions, Mapping) or not dimensions:
        raise InputError("dimensions must be a non-empty {column: Hierarchy} mapping")
    dims = []
    for col, h in dimensions.items():
        if not isinstance(h, Hierarchy):
            raise InputError(f"dimension '{col}': expected a Hierarchy, got "
                             f"{type(h).__name__}")
        dims.append(Dimension(str(col), h))
    return dims


def _kind(kind, response, shadow) -> str:
    if kind is None:
        kind = "magnitude" if response is not None else "frequency"
    if kind not in ("magnitude", "frequency"):
        raise InputError(f"kind must be 'magnitude' or 'frequency', not {kind!r}")
    if kind == "magnitude" and response is None:
        raise InputError("a magnitude table needs a response variable")
    if kind == "frequency" and (response is not None or shadow is not None):
        raise InputError("a frequency table counts records: give no response/shadow "
                         "(or kind='magnitude')")
    return kind


def _top_k(top_k) -> int:
    try:
        top_k = int(top_k)
    except (TypeError, ValueError):
        raise InputError(f"top_k must be an integer, not {top_k!r}") from None
    if not 1 <= top_k <= 64:
        raise InputError(f"top_k must be between 1 and 64, not {top_k}")
    return top_k


def _unknown_positions(dims: list[Dimension], unknown_code) -> dict[str, int]:
    """Column -> position of the leaf code that receives the column's unknown codes."""
    unknown: dict[str, int] = {}
    if unknown_code is None:
        return unknown
    codes = (unknown_code if isinstance(unknown_code, Mapping)
             else {d.name: unknown_code for d in dims})
    for d in dims:
        if d.name not in codes:
            continue
        code = str(codes[d.name])
        if code not in d.hierarchy:
            raise InputError(f"unknown_code '{code}' is not a code of dimension "
                             f"'{d.name}'s hierarchy")
        pos = d.hierarchy.index(code)
        if not d.hierarchy.is_leaf[pos]:
            raise InputError(f"unknown_code '{code}' of dimension '{d.name}' must be "
                             f"a leaf (lowest-level) code")
        unknown[d.name] = pos
    return unknown
