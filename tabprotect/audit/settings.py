"""The audit's tuning settings: one frozen dataclass, passed explicitly to
:func:`tabprotect.audit.audit` and recorded in the result's ``params``.

None of them changes a verdict but ``attacker_seconds``, a time limit (what it stops is
undecided, never passed): they choose how the verdict modes look for witnesses
and where work goes to worker processes (an interval audit uses them for its
attackers among the contributors, and otherwise only ``parallel_min_cells``,
``dual_min_vars``, the ``stack_`` sizes and ``attacker_sibling_cubes``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tabprotect.errors import InputError


@dataclass(frozen=True)
class AuditSettings:
    """How the audit spends its LPs (see the module docstring).

    Sizes count the variables of one component: its unpublished cells not pinned down
    by a relation.
    """

    #: below this many unpublished cells a process pool costs more than it saves
    parallel_min_cells: int = 5000
    #: in this process (the verdict modes: where a primary is open, no moves were given
    #: and an integer intruder's LP vertices are integral), components up to this size
    #: are bounded together
    #: in stacked LPs (a small component's LPs cost the solver's set-up, not pivots)
    stack_max_vars: int = 200
    #: variables of one stacked LP (past this a stack's solves cost more than set-ups)
    stack_max_total: int = 2000
    #: intervals mode on product tables: sibling cubes per primary offered to the
    #: attackers' passes as witnesses (each may spare an attacker its LPs; 0: none)
    attacker_sibling_cubes: int = 4
    #: verdict modes: components from this size try local LPs around each open primary
    #: before its whole-component LP (local witnesses and outer bounds are cheap there)
    local_min_vars: int = 2000
    #: relation steps of the growing neighbourhoods of the local LPs, tried in turn
    local_hops: tuple[int, ...] = (2, 3, 4)
    #: a neighbourhood larger than this (or than half the component) gets no local LP
    local_max_vars: int = 50_000
    #: verdict modes: components from this size get block LPs (regions around open
    #: primaries, the rest at its true values) instead of aggregate LPs over the whole
    #: component, whose interior-point solves take minutes at 10^5-10^6 variables
    block_min_vars: int = 10_000
    #: variables per block of the shared block passes (one pass per size)
    block_sizes: tuple[int, ...] = (5_000,)
    #: variables per block of the solo passes, which push one primary per block (a
    #: block shared by many primaries may leave one behind that it could move)
    solo_block_sizes: tuple[int, ...] = (5_000,)
    #: share of a block (first grown) whose primaries seed no block of their own
    block_core_share: float = 1 / 3
    #: block LPs from this size are solved by interior point without crossover (a
    #: witness needs a feasible point, not a basis; several times faster than simplex)
    block_ipm_vars: int = 5_000
    #: optimality tolerance of those interior-point solves (a witness is feasible
    #: whatever its optimality; the feasibility tolerance stays HiGHS' default)
    block_ipm_tolerance: float = 1e-6
    #: from this size the warm per-component model re-solves with the dual simplex
    #: (after an objective change HiGHS picks the primal simplex, several times slower
    #: on large components and faster on small ones)
    dual_min_vars: int = 2000
    #: screen mode: the larger block passes run only while the previous pass certified
    #: at least this share of the primaries it tried (the repair handles the rest)
    screen_block_min_yield: float = 0.1
    #: coalition audits: most coalitions judged per component (each costs a pass of
    #: LPs over the component); more is an error, not a silent cut
    max_coalitions: int = 10_000
    #: integer audits: branch-and-bound LPs on the warm model per fractional bound or
    #: wanted integral table before the MILP solver takes over (a fresh MILP costs
    #: as much as tens of warm re-solves on a small component; a search still open
    #: after 60 mostly is a deep tree on a component of hundreds of cells, whose later
    #: re-solves cost more each and where HiGHS' MILP, with its presolve and cuts,
    #: answers in a fraction of the remaining nodes' time)
    integer_nodes: int = 60
    #: integer verdict modes: where no integral table reaches a primary's goal, the
    #: goals between it and the value a witness attains (at most this many) are tried
    #: in turn for the exact bound, each a goal search that stops at its first table,
    #: before the search for the optimum (which has to close the tree by its bound)
    descent_goals: int = 2
    #: verdict modes: aggregate LPs over components from this size by interior point
    #: (faster on thousands of cells); below, by the simplex method, whose warm
    #: re-solves across the attackers of a small component win
    aggregate_ipm_vars: int = 2000
    #: verdict modes: most aggregate LP rounds over a whole component (up, down, then
    #: random mixed directions), stopped early when two rounds gain next to nothing;
    #: the mixed rounds settle primaries that share relations (one up, one down) at one
    #: LP each, cheaper than the per-cell LPs they spare (CBS: 18 LPs instead of 31)
    aggregate_rounds: int = 16
    #: integer verdict modes: the open primaries of a component get integral least
    #: moves (:mod:`tabprotect.audit.least_moves`) before the per-cell bounds, or before
    #: a screen counts them short, while there are at most this many. 0 (never) by
    #: default: on a 22^3 count table they certify a third of what the screen leaves
    #: (repair adds 441 cells instead of 667) at 10-15 times the screen's time
    least_move_primaries: int = 0
    #: attacker audits: components with at least this many attackers get aggregate
    #: witness passes against groups of them at once (:mod:`tabprotect.audit.
    #: attack_groups`) before each attacker's own pass (with fewer, the group passes
    #: cost more than they spare); 0: per-attacker passes alone
    attacker_group_min: int = 6
    #: a group pass of at least this many attackers ends with per-cell LPs against the
    #: whole group (one LP pair stands for that many); a smaller group leaves them to
    #: the members' own passes, which its witnesses already spare most LPs
    attacker_group_cell_lps: int = 8
    #: attacker audits: least-move LPs per primary that look for small moves certifying
    #: it against many attackers at once (:mod:`tabprotect.audit.attack_moves`) before
    #: the group and own passes; 0: none
    attacker_move_lps: int = 8
    #: attacker moves: a primary with at least this many attackers to judge it
    #: first gets the attacker-weighted move pair (each covers many attackers at
    #: one LP; with fewer, one least move per attacker costs fewer LPs); 0: always
    attacker_pair_min: int = 20
    #: the attacker-weighted move's cost per unit of moving a cell an attacker of the
    #: primary knows (one elsewhere): high, so that it moves such a cell only where the
    #: goal cannot be reached without it
    attacker_weight: float = 1000.0
    #: the least moves of a component stop once fewer than this share of their LPs gave
    #: a move (checked from twice ``attacker_move_lps`` LPs on): on a flat 10^3 count
    #: table nine in ten least moves are fractional, and their LPs cost more than the
    #: group and own passes they spare
    attacker_move_min_yield: float = 0.25
    #: attacker audits: wall-clock seconds for the attackers' passes of one component
    #: (None: up to the audit's time limit); a primary a pass leaves unfinished is
    #: undecided (``incomplete``, never passed), like one the time limit stops
    attacker_seconds: float | None = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("local_hops", "block_sizes", "solo_block_sizes"):
                if not isinstance(value, tuple) or not all(
                        isinstance(v, int) and not isinstance(v, bool) and v >= 1
                        for v in value):
                    raise InputError(f"AuditSettings.{f.name} must be a tuple of positive "
                                     f"integers, not {value!r}")
            elif f.name in ("block_core_share", "screen_block_min_yield",
                            "attacker_move_min_yield",
                            "block_ipm_tolerance"):
                if isinstance(value, bool) or not isinstance(value, (int, float)) \
                        or not 0 <= value <= 1:
                    raise InputError(f"AuditSettings.{f.name} must be a number in [0, 1], "
                                     f"not {value!r}")
            elif f.name == "attacker_weight":
                if isinstance(value, bool) or not isinstance(value, (int, float)) \
                        or not 1 <= value < float("inf"):
                    raise InputError(f"AuditSettings.{f.name} must be a finite number "
                                     f">= 1, not {value!r}")
            elif f.name == "attacker_seconds":
                if value is not None and (isinstance(value, bool) or not isinstance(
                        value, (int, float)) or not value >= 0):
                    raise InputError(f"AuditSettings.attacker_seconds must be None or a "
                                     f"number >= 0, not {value!r}")
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"AuditSettings.{f.name} must be an integer >= 0, "
                                 f"not {value!r}")

    @property
    def block_ipm_options(self) -> dict:
        """HiGHS options of the interior-point block LPs."""
        return {"solver": "ipm", "run_crossover": "off",
                "ipm_optimality_tolerance": float(self.block_ipm_tolerance)}

    def as_dict(self) -> dict:
        """The settings as plain values (for ``params`` and the audit trail)."""
        return {f.name: (list(v) if isinstance(v, tuple) else v)
                for f in dataclasses.fields(self) for v in [getattr(self, f.name)]}
