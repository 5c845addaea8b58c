"""Settings of the repair steps that :class:`~tabprotect.secondary.ProtectSettings`
carries: the greedy method and repair's deviation LPs (:class:`GreedyOptions`) and the
search for integral witnesses (:class:`WitnessSearchSettings`).  They live apart from the
steps' code so that a job reads its settings without importing steps it may not run."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GreedyOptions:
    """Settings of the greedy method (:func:`tabprotect.secondary.greedy.greedy`) and of
    its repair step (:func:`~tabprotect.secondary.greedy.greedy_repair`, also protect()'s
    repair)."""

    #: audit/repair rounds before the method hands its pattern to protect()'s own audit
    #: and repair (the method only; the repair step makes one pass)
    max_rounds: int = 20
    #: from this many LP columns (2 per cell) a deviation LP is presolved: below, HiGHS'
    #: presolve costs more than the simplex it saves; above, it pays (4-D regions of
    #: 20,000+ columns: several times faster with it)
    deviation_lp_presolve_min_columns: int = 20_000
    #: from this many cells a repair region first gets the deviation LP on its
    #: suppressed cells alone: a primary already protected by a long move then costs a
    #: small feasibility LP instead of the region's full LP
    free_first_min_cells: int = 20_000
    #: greedy_repair(..., workers=n) uses worker processes only from this many
    #: primaries (sending a large table to a worker and setting up there takes time)
    parallel_min_primaries: int = 64
    #: the models of this many regions are kept for warm re-solves (primaries of one
    #: sub-table share its region; 0: every deviation LP solved cold)
    warm_regions: int = 16


@dataclass(frozen=True)
class WitnessSearchSettings:
    """How the search for integral witnesses spends its time."""

    #: a box with more suppressed cells than this is not searched (its MILP costs more
    #: than the cells the repair would add)
    max_cells: int = 3_000
    #: seconds of one MILP (an unsolved one leaves that direction open)
    milp_seconds: float = 1.0
    #: codes per dimension of a box (12 on 3-D count tables: a few hundred suppressed
    #: cells, MILPs of a tenth of a second; 16 makes them time out, 8 finds few moves)
    codes_per_dim: int = 12
    #: the search stops once this many primaries have been searched and fewer than
    #: ``min_hit_rate`` of them got a move (a pattern short even for the LP intruder has
    #: no witnesses to find: the time is the repair's)
    probe: int = 100
    min_hit_rate: float = 0.1
    #: against the single-contributor attack: where no move of a primary's box leaves
    #: alone every attacker its moves so far all move, moves leaving one such attacker
    #: alone each, at most this many per primary (each serves the primaries it passes)
    attacker_tries: int = 4
    #: integer audits with the single-contributor attack: components of the pattern
    #: from this many cells get the attack witnesses before the first audit (on 22^3
    #: gauss's one component of 2,116 cells: a 15 CPU s search, then the screen takes
    #: 1.3 s where it took minutes; on 16^3's 840 cells a 12 CPU s search, then the
    #: integer verdict audit passes in 43 CPU s, where without the moves its integer
    #: witnesses' MILPs had not decided a primary after 78)
    attack_min_cells: int = 500
    #: against the attack: at most this many primaries the boxes leave unserved get
    #: moves over their whole component (an LP of a few seconds per direction on 30^3
    #: gauss's 5,464-cell component; more open primaries are the repair's)
    attack_component_primaries: int = 40
    #: against the attack, a fractional least move over a component: its multiples up
    #: to this one are tried as the integral move before a MILP (3-D count tables'
    #: least moves are often half-integral, and the double of one within the bounds
    #: is a move of the primary twice as far)
    least_move_multiple: int = 4
    #: share of what the repair may spend of protect()'s budget for the search (the rest
    #: is the repair's; 0: no search)
    share: float = 0.5
