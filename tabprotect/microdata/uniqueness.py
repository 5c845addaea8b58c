"""Uniqueness-based identification risk with a population file (after Kim & Jeong).

An intruder holds a file ``F2`` (names + key values) drawn from the population
``P`` and links it to the released sample ``F1`` on the keys.  A target ``A``
is identified correctly when it is in the release, in the intruder's file and
population unique on the keys (``A in P1``):

    Pr(correct) = P(A in F1) P(A in F2) P(A in P1)

with ``P(A in F1) = n1/N``, ``P(A in F2) = n2/N`` for independent draws.
Variants:

* ``subsample=True`` -- the release ``F1`` is a subsample of the intruder's
  file ``F2`` (e.g. the intruder has the sampling frame), so
  ``P(A in F2 | A in F1) = 1`` and the product becomes ``P(A in F1) P(A in P1)``;
* ``response_knowledge=True`` -- the intruder knows the target responded
  (is in F1): ``P(A in F1) = 1``;
* the broader form replaces the population-unique indicator by ``1/C`` for a
  population equivalence class of size ``C`` (a random pick among the ``C``
  look-alikes), i.e. ``P(A in P1)`` by the average of ``1/C_A`` over the
  population, which is ``(number of population classes) / N``.

Per released record the conditional probability of a correct link is
``P(A in F2 | A in F1) / C`` (zero unless ``C = 1`` in the narrow form).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ._validate import RowError, check_columns
from .keys import combine_codes

__all__ = ["UniquenessRisk", "uniqueness_risk"]


@dataclass
class UniquenessRisk:
    """Probabilities of correct identification (see module docstring)."""

    N: int
    n_release: int
    n_intruder: int
    n_population_uniques: int
    n_population_classes: int
    p_in_release: float
    p_in_intruder: float
    p_population_unique: float
    subsample: bool
    response_knowledge: bool
    population_class_size: np.ndarray  # per released record
    record_risk: np.ndarray            # narrow form, per released record
    record_risk_broad: np.ndarray      # 1/C form, per released record
    params: dict = field(default_factory=dict)

    @property
    def p_in_both(self) -> float:
        """P(A in F1 and A in F2)."""
        if self.subsample:
            return self.p_in_release
        return self.p_in_release * self.p_in_intruder

    @property
    def prob_correct(self) -> float:
        """P(A in F1) P(A in F2) P(A in P1) (adjusted for subsample / response knowledge)."""
        return self.p_in_both * self.p_population_unique

    @property
    def prob_correct_broad(self) -> float:
        """Broader form: population-unique indicator replaced by 1/C."""
        return self.p_in_both * self.n_population_classes / self.N

    @property
    def n_release_population_uniques(self) -> int:
        return int(np.count_nonzero(self.population_class_size == 1))

    @property
    def expected_correct(self) -> float:
        """Expected number of released records correctly identified (narrow form)."""
        return float(self.record_risk.sum())

    @property
    def expected_correct_broad(self) -> float:
        return float(self.record_risk_broad.sum())

    def summary(self) -> dict:
        return {"N": self.N, "n_release": self.n_release, "n_intruder": self.n_intruder,
                "n_population_uniques": self.n_population_uniques,
                "n_release_population_uniques": self.n_release_population_uniques,
                "p_in_release": self.p_in_release, "p_in_intruder": self.p_in_intruder,
                "p_population_unique": self.p_population_unique, "prob_correct": self.prob_correct,
                "prob_correct_broad": self.prob_correct_broad, "expected_correct": self.expected_correct,
                "expected_correct_broad": self.expected_correct_broad}


def uniqueness_risk(release: pd.DataFrame, population: pd.DataFrame, keys: Sequence[str],
                    intruder_size: int | float | None = None, subsample: bool = False,
                    response_knowledge: bool = False) -> UniquenessRisk:
    """Kim & Jeong style uniqueness risk of a released sample given the population file.

    Parameters
    ----------
    release : the released sample ``F1`` (its key values must occur in the population).
    population : the population file ``P`` (true key values).
    keys : key columns.
    intruder_size : size ``n2`` of the intruder's file ``F2`` (an int), or its
        fraction of the population (a float in (0, 1]); default: the whole
        population (``P(A in F2) = 1``).
    subsample : the release is a subsample of the intruder's file.
    response_knowledge : the intruder knows the target is in the release.

    Examples
    --------
    >>> pop = pd.DataFrame({"k": [1, 1, 2, 3, 3, 3, 4, 5]})
    >>> rel = pop.iloc[[0, 2, 6]]
    >>> r = uniqueness_risk(rel, pop, ["k"], intruder_size=0.5)
    >>> r.n_population_uniques, r.prob_correct
    (3, 0.0703125)
    """
    keys = check_columns(release, keys)
    check_columns(population, keys)
    N, n1 = len(population), len(release)
    if N == 0 or n1 == 0:
        raise ValueError("population and release must be non-empty")
    if n1 > N:
        raise ValueError("the release cannot be larger than the population")
    if intruder_size is None:
        n2 = N
    elif isinstance(intruder_size, float) and intruder_size <= 1.0:
        if intruder_size <= 0:
            raise ValueError("intruder_size must be positive")
        n2 = int(round(intruder_size * N))
    else:
        n2 = int(intruder_size)
        if not (0 < n2 <= N):
            raise ValueError("intruder_size must lie in (0, N]")
    if subsample and n2 < n1:
        raise ValueError("a release that is a subsample of the intruder's file cannot be larger than it")
    both = pd.concat([population[keys], release[keys]], ignore_index=True)
    codes = np.column_stack([pd.factorize(both[k], use_na_sentinel=False)[0] for k in keys])
    cell, nc = combine_codes(codes)
    pop_cnt = np.bincount(cell[:N], minlength=nc)
    C = pop_cnt[cell[N:]]
    if (C == 0).any():
        i = int(np.flatnonzero(C == 0)[0])
        raise RowError("the released record's key combination is absent from the "
                       "population", i, release.index)
    n_pu = int(np.count_nonzero(pop_cnt == 1))
    n_classes = int(np.count_nonzero(pop_cnt > 0))
    p1 = 1.0 if response_knowledge else n1 / N
    p2 = n2 / N
    p2_given_1 = 1.0 if subsample else p2
    rr = np.where(C == 1, p2_given_1, 0.0)
    rb = p2_given_1 / C
    return UniquenessRisk(N=N, n_release=n1, n_intruder=n2, n_population_uniques=n_pu,
                          n_population_classes=n_classes, p_in_release=p1, p_in_intruder=p2,
                          p_population_unique=n_pu / N, subsample=bool(subsample),
                          response_knowledge=bool(response_knowledge), population_class_size=C,
                          record_risk=rr, record_risk_broad=rb)
