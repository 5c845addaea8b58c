"""Modular (HiTaS) secondary suppression: optimal sub-tables, top-down, with backtracking.

A hierarchical table is split into its non-hierarchical sub-tables (a parent code with its
children in every dimension; :mod:`tabprotect.secondary.subtables`).  They are solved
top-down (by level), each with the optimal method on the small flat table:

* cells suppressed so far (primaries, and secondaries chosen in earlier sub-tables) are
  primaries of the sub-table: a carried secondary gets a protection level from the
  sub-table that suppressed it, so that a move of that sub-table can be matched in the
  others: by default how far the cell moves in the attacker moves that prove the
  sub-table's requirements (:func:`proof_levels`; ``carried_level="proof"``), else the
  median -- or, ``carried_level="max"``, the largest -- requirement of that sub-table's
  own primaries; capped by the cell's a-priori range;
* margin cells that a higher sub-table published (cells with the group's parent code in
  some dimension) must stay published: status ``P`` in the sub-table;
* when a sub-table cannot be protected that way, it is solved again with its margin cells
  allowed (at ``margin_penalty`` times their cost) and every newly suppressed margin cell
  is carried back: the higher sub-tables containing it are solved again with it as a
  primary (backtracking), and so on until no sub-table changes.

Sub-tables of one level share no cell, so they are independent given the levels above:
they are solved as one wave, in parallel worker processes (``workers``), and their results
applied in key order (deterministic).  A sub-table whose suppressed cells already protect
each other needs no MILP and is skipped; that test and the feasibility test use cube proofs
(:func:`cube_protected`) and attacker LPs only for what cubes cannot prove.  With a
``time_limit`` every wave's sub-tables get a share of the time left (the time plan; each
worker hands time its jobs did not use on to its later jobs), sub-tables queued in the
last part of it get a fast solve (the certified heuristic's first pass) instead of none;
protect() hands the method its share of the call's budget and keeps the audit's back.  Any
number of dimensions works: a sub-table is the product of one group per dimension.  The
full-table audit and repair of :func:`tabprotect.secondary.protect` have the last word.

The parts:

* :mod:`.options` -- :class:`ModularOptions`, every setting with its reason;
* :mod:`.method` -- :func:`modular`, the wave loop;
* :mod:`.coordinate` -- the work list, the pattern and carried levels, building a
  wave's jobs and applying their results (backtracking);
* :mod:`.time_plan` -- the budget's shares, the wave's planned end, the fast tail;
* :mod:`.jobs` -- one sub-table job and one worker's share of a wave;
* :mod:`.solver` -- the sub-table solve (network search, optimal method or certified
  heuristic) and the "already protected" test;
* :mod:`.network`, :mod:`.network_search`, :mod:`.network_check` -- 1-D and 2-D
  sub-tables as networks: the attacker's moves as maximum flows, the exact pattern by a
  search over their cuts (no MILP), patterns judged by the flows;
* :mod:`.certified` -- the certified heuristic for large sub-tables;
* :mod:`.subtable_cubes` -- cube proofs and the cube start pattern;
* :mod:`.proof` -- the proof levels carried by secondaries.
"""
from __future__ import annotations

from tabprotect.secondary.modular.certified import Unreachable, certified_pattern
from tabprotect.secondary.modular.method import modular
from tabprotect.secondary.modular.options import ModularOptions
from tabprotect.secondary.modular.proof import proof_levels
from tabprotect.secondary.modular.solver import (OptimalSubtableSolver, SubtableSolver,
                                                     optimal_subtable_solver, uses_heuristic)
from tabprotect.secondary.modular.subtable_cubes import cube_pattern, cube_protected

__all__ = ["modular", "ModularOptions", "SubtableSolver", "OptimalSubtableSolver",
           "optimal_subtable_solver", "uses_heuristic", "certified_pattern", "Unreachable",
           "proof_levels", "cube_pattern", "cube_protected"]
