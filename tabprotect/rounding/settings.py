"""How controlled rounding solves its LPs: tuning that changes speed and, for tables whose
relaxation is fractional, how long the search for a smaller deviation runs."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["RoundingSettings"]


@dataclass(frozen=True)
class RoundingSettings:
    """Solver tuning of controlled rounding, recorded in the result's ``params``."""

    #: an LP-first rounding (2-D tables) with at least this many free cells is solved by
    #: sifting: below it the whole LP is solved at once faster than pricing rounds
    sifting_min_columns: int = 20_000
    #: columns per relation in sifting's first working set: enough that most relations
    #: can balance without a pricing round, few enough to keep the first LP small
    sifting_per_row: int = 24
    #: columns added to the working set per pricing round at most (largest reduced cost
    #: first): bounds the growth of the HiGHS model between solves
    sifting_max_add: int = 100_000
    #: without a time_limit, the wall-clock seconds branch and bound may spend improving
    #: the rounding of a table whose relaxation is fractional (3-D tables can need hours
    #: to prove the minimum); the rounding found and its gap to the bound are reported
    search_seconds: int = 30
    #: small-count rounding of a table of 3+ dimensions whose program has at least this
    #: many columns solves its relaxation by interior point (with crossover): several
    #: times faster than simplex there; below it simplex's vertex starts the swaps better
    ipm_min_columns: int = 5_000
    #: small-count rounding's perturbed swaps: cells each kick moves up and down; enough
    #: to leave the swaps' local optimum, few enough that the swaps after it stay short
    swap_kick: int = 8
    #: perturbed swaps end after this many kicks without a smaller deviation (or at a third
    #: of the search budget): the same choice on every run unless the budget ends them;
    #: few enough that a table branch and bound proves quickly loses little time
    swap_stall: int = 50

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RoundingSettings.{f.name} must be a positive integer, "
                                 f"not {value!r}")

    def recorded(self) -> dict[str, Any]:
        """The fields as recorded in a result's ``params``."""
        return dataclasses.asdict(self)
