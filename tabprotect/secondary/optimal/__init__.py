"""Optimal secondary suppression (Fischetti & Salazar-González): the minimum-cost pattern
that meets every primary cell's upper, lower and sliding protection levels.

Two exact engines share the attacker oracle of :mod:`tabprotect.secondary.attacker_oracle`:

* :mod:`~tabprotect.secondary.optimal.compact` -- one MILP with a deviation vector per
  primary and direction; needs finite deviation ranges; small tables.
* :mod:`~tabprotect.secondary.optimal.benders` -- row generation: a master over ``z``
  only (:mod:`~tabprotect.secondary.optimal.master`), with the capacity cuts derived
  from the duals of the attacker LPs (:mod:`~tabprotect.secondary.optimal.oracle`),
  added until every attacker LP is satisfied.  Cut coefficients are capped at the
  right-hand side, so infinite bounds need no big-M.  The master's LP relaxation is
  tightened first (:mod:`~tabprotect.secondary.optimal.lp_phase`: fractional
  separation, Chvatal-Gomory rounding of the cuts, bridgeless rows --
  :mod:`~tabprotect.secondary.optimal.cuts`), then either our own branch-and-cut on
  that LP (:mod:`~tabprotect.secondary.optimal.branch_and_cut`, ``search="bc"``,
  default) or the integer master re-solved by HiGHS after each round of cuts
  (:mod:`~tabprotect.secondary.optimal.milp_rounds`), until a proof or the time limit
  (best protected pattern, flagged unproven, with the gap to the bound).  Repair,
  pruning and swap heuristics (:mod:`~tabprotect.secondary.optimal.heuristics`) give
  the upper bounds; large tables start from the gauss method's repaired pattern
  (:mod:`~tabprotect.secondary.optimal.start`).

Single-contributor attackers (``freq == 1``) are part of the model: for a primary ``s``
and a single-contributor cell ``j`` the attacker problem with ``y_j = 0`` must also be
satisfied.  The initial master holds, for each primary and relation containing it, "some
other cell of the relation is suppressed" (and, with a single-contributor cell ``j`` in
the relation, "some cell other than ``s`` and ``j``").

Every setting is a field of :class:`OptimalOptions`, passed explicitly and recorded in
the result's details (``details["options"]``).
"""
from __future__ import annotations

from tabprotect.secondary.optimal.benders import benders
from tabprotect.secondary.optimal.compact import compact
from tabprotect.secondary.optimal.method import optimal
from tabprotect.secondary.optimal.options import OptimalOptions

__all__ = ["optimal", "OptimalOptions", "benders", "compact"]
