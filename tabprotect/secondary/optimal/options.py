"""Settings of the optimal method: one frozen dataclass, passed from :func:`optimal`
down to every part of the search and recorded in the result's details.

``None`` in a field marked "auto" means: chosen from the costs (equal costs, i.e. unity,
or not), as the field's comment says.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class OptimalOptions:
    """How the optimal method searches.  Every field changes speed or the route to the
    optimum, never what counts as protected."""

    # ---- engine and search
    #: "compact", "benders" or "auto" (compact while the compact model stays small)
    engine: str = "auto"
    #: Benders search: "bc" (own branch-and-cut on the LP master) or "milp" (HiGHS
    #: MILP master re-solved after each round of cuts)
    search: str = "bc"
    #: "auto" takes the compact model only below this many primaries x directions x
    #: movable cells: its LP relaxation is weak, so Benders wins well before memory matters
    compact_limit: int = 2_000
    #: relative gap of a "proven optimal" pattern when the caller gives no mip_gap
    default_mip_gap: float = 1e-6
    #: cut rounds per phase (LP phase, one node, MILP rounds): a guard against cycling
    max_rounds: int = 10_000
    #: branch-and-cut nodes at most (None: until proven or out of time); a
    #: deterministic stop for tests and reproducible runs
    max_nodes: int | None = None
    #: drop candidates that can never move (alone in a relation): they only cost
    reduce: bool = True
    #: bridgeless rows and Chvatal-Gomory roundings of the cuts: a tighter master
    strong: bool = True
    #: branch-and-cut: a bridgeless row enters the master when a master point violates
    #: it, not up front (each model row slows every re-solve; few of them ever bind)
    lazy_static: bool = True

    # ---- primaries the unpublished cells protect already (settle.py)
    #: leave out of the search the primaries the unpublished cells alone protect: they
    #: are protected by every pattern, and their attacker LPs are most of the work on
    #: tables whose primaries protect each other
    settle: bool = True
    #: ... from this many primaries: with fewer the search's own attacker LPs cost less
    #: than the pass, and few primaries seldom protect each other
    settle_min_primaries: int = 20
    #: share of the time limit for that pass (an unfinished check settles only what the
    #: witness LPs proved)
    settle_share: float = 0.2
    #: rounds per direction of the witness LPs that settle many primaries at once
    settle_witness_rounds: int = 5
    #: the attacker LPs check the primaries the witnesses leave only when the witnesses
    #: settled this share of them: the primaries then protect each other and the few
    #: left are worth an LP each; otherwise most are short (the search finds that)
    settle_check_min_share: float = 0.5

    # ---- large tables: start pattern
    #: from this many candidate cells (Benders, no start given) the search starts from
    #: the gauss method's repaired pattern: the repair heuristic alone is weak there
    gauss_start_min_candidates: int = 10_000
    #: ... and from this many primaries (None: the primaries alone never call for it):
    #: there the start's early incumbent keeps the tree smaller; with fewer the LP phase
    #: runs first (see lp_before_repair_min_cells) and its rounded points give a first
    #: incumbent as cheap as gauss's repaired pattern, without the start's repair
    gauss_start_min_primaries: int | None = 300
    #: the start's gauss runs its swap pass from this many primaries on (None: always):
    #: there the search rarely finishes and the start is often the result; with fewer
    #: the search finds the cheaper patterns itself and the swap LPs only cost time
    gauss_start_swaps_min_primaries: int | None = 300
    #: share of the time limit the gauss start may use (it ends early when gauss does):
    #: all of it, as gauss alone gets: a start that finishes is the pattern the result
    #: never costs more than, and on tables where gauss needs the whole limit a start cut
    #: short is a worse pattern than gauss's own, which the search cannot improve on in
    #: the time left anyway
    gauss_start_share: float = 1.0
    #: share of the start's time for gauss's width step (the LPs that give each primary
    #: its range), gauss's own default: the start is the pattern gauss alone gives
    gauss_start_widths_share: float = 0.7
    #: with a start (finished or not) and at most this share of the limit left, it is the
    #: result: setting up the search costs seconds on the tables where gauss took most
    #: of the limit, and it finds nothing better in the rest (on smaller tables a start
    #: not known to be protected first gets a search of fallback_min_seconds)
    min_search_share: float = 0.1

    # ---- LP phase (fractional separation on the master's LP relaxation)
    #: the LP phase stops after lp_stall_rounds sweeps improving the bound by less than
    #: lp_stall_tol (relative): the separation has converged
    lp_stall_tol: float = 1e-5
    lp_stall_rounds: int = 10
    #: share of the time limit the LP phase may use: the rest goes to the search
    lp_phase_share: float = 0.5
    #: primaries per separation chunk in the LP phase (None: all every round); helps when
    #: attacker LPs are dear and the master LP is cheap
    lp_separation_chunk: int | None = None
    #: exact (uncapped) attacker LPs at fractional points besides the capped separation;
    #: auto: only with equal costs, where a bound moves in whole units and rare exact
    #: cuts can lift it
    fractional_check: bool | None = None
    #: cover cuts of the pool cuts in the LP phase too (where the search uses them) on
    #: tables with at least this many primaries (None: never): there the capacity cuts
    #: alone leave the LP bound far below the optimum, which sizes the tree, and the
    #: rounded LP points seed the incumbents; with a few primaries the covers mostly
    #: add cheap LP rounds the root does anyway
    lp_phase_covers: int | None = 20

    # ---- master
    #: multiplier of HiGHS' dual-simplex cost perturbation on the master LP (None: HiGHS'
    #: default); perturbation makes child LPs with equal costs need more iterations
    master_cost_perturbation: float | None = 0.0
    #: MILP-rounds search: pool cuts with at most this slack at the last LP point stay in
    #: the integer master (a MILP that only meets them again is wasted)
    keep_slack: float = 0.1
    #: MILP-rounds search: improving solutions of a master run checked besides its final
    #: one (more patterns cut off per master solve)
    saved_patterns: int = 8
    #: MILP-rounds search: gap of the early master solves, whose only job is to produce
    #: patterns to cut off
    loose_mip_gap: float = 0.02
    #: MILP-rounds search: seconds for one early master solve (doubled when it finds
    #: nothing)
    round_time_limit: float = 3.0

    # ---- heuristics (upper bound)
    #: at most this share of the LPs solved (attacker, repair and prune LPs) goes to the
    #: repair heuristics once a protected pattern is known: they only feed the upper
    #: bound; counted in LPs, not seconds, so the same job takes the same search
    heuristic_share: float = 0.25
    #: share of the time limit for the first repair from the primaries alone (big tables:
    #: the LP phase's points then seed the first incumbent instead)
    first_repair_share: float = 0.1
    #: without a start, on tables of at least this many cells the LP phase runs before
    #: any repair and its point seeds the first incumbent (the repair from the primaries
    #: alone only when that fails): each repair LP spans the whole table, and the LP
    #: point rounded and repaired is a cheaper pattern than the primaries repaired, for
    #: less work (None: never)
    lp_before_repair_min_cells: int | None = 0
    #: without an incumbent, on tables of at least this many cells, the LP point's whole
    #: support is repaired first (the fewest conditions left to fix: the quickest
    #: protected pattern where each repair LP spans a large table); below it the
    #: rounding at 0.5 comes first, as with an incumbent: its repaired pattern is cheaper
    #: and the tree it leaves smaller (None: always the support first)
    support_first_min_cells: int | None = 5_000
    #: ... and for the first repair from a seed (an unfinished gauss start): the repair
    #: is the route to a protected pattern there, the LP phase only gives a bound
    seed_repair_share: float = 0.8
    #: a prune never tries the suppressions a pool cut pins (the pattern without one
    #: violates the cut by more than this, relative to its right-hand side 1; None: all
    #: are tried): a cut every protected pattern meets shows the prune's LPs would
    #: refuse them, and a node's integral point is mostly pinned
    pin_margin: float | None = 1e-3
    #: share of the time limit a prune of a repaired pattern may use
    prune_share: float = 0.1
    #: a repaired pattern is pruned only when it costs less than this multiple of the
    #: incumbent: pruning costs attacker LPs
    prune_within: float = 1.15
    #: the unfinished repair from the primaries may continue after the LP phase for this
    #: share of the limit (its patterns are often cheaper than repaired LP supports)
    primary_repair_share: float = 0.1
    #: swap search around every new incumbent (publish one secondary, repair the rest)
    local_search: bool = True
    #: prune by attacker witnesses (re-solve only the conditions a removal affects)
    #: instead of one full oracle check per removal
    witness_prune: bool = True
    #: the witness prune rejects a removal that pins a primary through the relations
    #: without an LP (a propagation over the relations next to the cell; the LPs would
    #: reject it as well)
    prune_pin_propagation: bool = True
    #: at most this many (condition, suppressed cell) entries in the witness map (memory)
    witness_max_entries: int = 50_000_000
    #: the witness prune keeps one warm attacker LP per condition and direction while
    #: the columns of the models kept stay below this (memory); the rest share one
    #: model per component of the suppressed cells
    witness_warm_entries: int = 500_000
    #: seconds past its deadline the one full check confirming a witness prune may run:
    #: a prune that reached its deadline is still worth keeping
    prune_confirm_seconds: float = 2.0
    #: while no protected pattern is known the search ends this share of the time limit
    #: early, leaving it to the fallback repair, which ends by the deadline ...
    fallback_reserve_share: float = 0.05
    #: ... or this many seconds after a search that ended late (also the least time of
    #: the short search after a start not known to be protected)
    fallback_min_seconds: float = 1.0

    # ---- branch-and-cut
    #: separation rounds per node below the root (the root: see root_stall_rounds) ...
    node_cut_rounds: int = 5
    #: ... and the relative bound gain below which a node stops separating and branches
    node_cut_tol: float = 1e-4
    #: the root stops separating and branches once its bound gained less than
    #: root_stall_tol (relative) over its last root_stall_rounds rounds (None: the root
    #: separates until no cut is found); a long tail of rounds each moving the bound a
    #: little costs more than the tree it saves
    root_stall_rounds: int | None = 3
    root_stall_tol: float = 3e-3
    #: the repair heuristic runs on every n-th node's LP point
    heuristic_every: int = 10
    #: a new incumbent from a node is pruned (its redundant suppressions published again)
    cleanup_incumbents: bool = True
    #: node incumbents are cleaned up only while the heuristics keep within
    #: heuristic_share of the LPs: a node's LP-optimal integral point seldom has a
    #: suppression to spare, and on tables the tree proves in seconds its clean-ups
    #: (each solving every attacker LP once) cost more than the tree
    cleanup_within_share: bool = True
    #: share of the time limit a node incumbent's clean-up may use
    cleanup_share: float = 0.05
    #: a plunge goes on to a child (the up one, else the down one) only while its bound
    #: lies within this share of the gap between the best open bound and the incumbent
    #: (None: always): a child near the incumbent's cost rarely leads to a cheaper
    #: pattern, and from the heap it is pruned once a cheaper incumbent is found
    plunge_gap_share: float | None = 0.25
    #: an integral node point found short also gets the capped separation of every
    #: primary, besides the cuts of the conditions its check finds violated (False: those
    #: alone): they cut the point off, and the separation's LPs mostly repeat the check's
    integral_separation: bool = False
    #: an open node keeps its parent's simplex basis (warm start after a jump)
    node_basis: bool = True
    #: below the root, separate only for primaries with a cut binding at the node's LP
    #: point: the others' conditions hold there by the known cuts
    restrict_separation: bool = True
    #: slack (rhs 1) at which a pool cut counts as binding for that restriction
    binding_slack: float = 1e-6
    #: below the root, primaries are separated in chunks of this size, latest violated
    #: first, and a round ends after the first chunk with a cut (None: all at once)
    separation_chunk: int | None = 10
    #: branching rule: "reliability" (pseudo-costs, strong branching while unreliable),
    #: "fractional" (most fractional column) or "auto" (fractional with equal costs,
    #: where strong branching buys no bound; reliability otherwise)
    branching: str = "auto"
    #: observations per column and direction before its pseudo-cost counts as reliable
    reliable: int = 2
    #: candidates strong-branched per node at most (two LPs each) ...
    sb_candidates: int = 4
    #: ... stopping after this many without a better score
    sb_lookahead: int = 2
    #: strong branching only at nodes taken from the heap (a plunge then branches on
    #: pseudo-costs alone)
    sb_only_at_jumps: bool = False
    #: before the tree, pool cuts with more slack than purge_slack at the root point leave
    #: the master LP (they wait in the pool): slack rows slow every node LP
    purge_root: bool = True
    purge_slack: float = 0.05
    #: every purge_tree_every nodes, pool cuts with slack above purge_tree_slack leave the
    #: model again (None: never): otherwise the node LPs only grow
    purge_tree_every: int | None = 5
    purge_tree_slack: float = 0.05
    #: with equal costs the tree purge runs only while the model holds more than this many
    #: pool cuts (None: never with equal costs), since purged rows tend to come back there
    purge_tree_equal_costs_rows: int | None = 0
    #: cover cuts from the pool cuts near binding at each node (None = auto: only when
    #: the costs differ)
    cover_cuts: bool | None = True
    #: pool rows with left side at most 1 + cover_row_slack are searched for covers
    cover_row_slack: float = 0.25
    #: cover cuts per call at most (most violated first) ...
    cover_max_cuts: int = 50
    #: ... each violated by at least this much
    cover_min_violation: float = 1e-3
    #: rounds of Gomory mixed-integer cuts at the root after the capacity separation
    #: converges (None = auto: gomory_auto_rounds when the costs differ, none with equal
    #: costs, where they gave no bound); each round's cuts are dense rows that make
    #: every later master LP and strong-branching LP dearer
    gomory_rounds: int | None = None
    gomory_auto_rounds: int = 1
    #: Gomory cuts per round at most
    gomory_per_round: int = 40
    #: smallest fractionality of a basic column used as a Gomory source row
    gomory_min_frac: float = 0.01
    #: largest coefficient ratio of an accepted Gomory cut (numerical safety)
    gomory_max_dynamism: float = 1e6
    #: Chvatal-Gomory multipliers tried per capacity cut at most
    rounding_tries: int = 12

    # ---- support cuts (bridgeless rows generalised to combinations of relations)
    #: separate them in the LP phase and the tree (raise some root bounds, slow the tree)
    support_cuts: bool = False
    #: only for candidates with at least this value at the LP point ...
    support_min_z: float = 0.05
    #: ... at most this many separation LPs per round (support_node_max_lps below the root)
    support_max_lps: int = 400
    support_node_max_lps: int = 60
    #: a support cut is kept when the point violates it by more than this
    support_min_violation: float = 1e-3

    # ---- attacker oracle
    #: the attacker LPs re-solve with the dual simplex (False: HiGHS' own choice)
    dual_oracle: bool = True
    #: race the primal and the dual simplex per oracle call (which one is fast depends on
    #: the pattern, by up to 100x either way); auto: when the costs differ
    race_simplex: bool | None = None
    #: a trial call with the slower simplex every race_every calls, backing off up to
    #: race_every_max while the same one keeps winning
    race_every: int = 8
    race_every_max: int = 128
    #: a trial is given up after race_trial_lps LPs with more than race_cap times the
    #: faster one's simplex iterations per LP (iterations, not seconds: the same route
    #: on a loaded machine as on an idle one) ...
    race_trial_lps: int = 4
    race_cap: float = 1.5
    #: ... and any one trial LP is stopped at race_lp_cap times that (at least
    #: race_min_iterations) and finished by the faster simplex
    race_lp_cap: float = 20.0
    race_min_iterations: int = 300
    #: attacker LPs with fewer columns always re-solve with the dual simplex: they take a
    #: fraction of a millisecond either way, and the simplex the race picks changes their
    #: (degenerate) optima and with them the cuts
    race_min_cols: int = 200
    #: checks of this many primaries or more (no single-contributor attackers) start
    #: with a witness pass: a few aggregate LPs settle most primaries, the per-primary
    #: LPs run for the rest (None: never)
    witness_check_min_targets: int | None = 20
    #: rounds of aggregate LPs per direction in that pass (each on the open primaries)
    witness_check_rounds: int = 3
    #: attacker LPs with at least this many columns merge their two-cell rows first
    #: (smaller LPs, same optimum; None: never); below it merging does not pay
    merge_pairs_min_cols: int | None = 700
    #: the oracle keeps one attacker LP model per component met while their matrices
    #: hold at most this many entries (memory): setting a model up costs more than its
    #: small LPs, and the search meets the same components at point after point
    component_models_nonzeros: int = 2_000_000
    #: a kept component model's LPs in separations and in checks without cuts start
    #: from its last basis (a new point changes its bounds only: less solver time than
    #: a start from scratch); checks with cuts start from scratch (warm, their cuts at
    #: integral points gave larger trees)
    warm_attacker_lps: bool = True
    #: attacker optima kept per primary and direction: a separation LP is skipped when
    #: one of them, scaled into the LP's bounds, already meets the level (0: none)
    separation_witnesses: int = 3
    #: an optimum also serves the other primaries it moves (as many again per primary
    #: and direction): a cycle through several primaries proves each of them
    share_separation_witnesses: bool = True
    #: the optima kept for the other direction count too, negated (-w is a deviation
    #: as well): a primary's down optimum often proves its up level at the next point
    negated_separation_witnesses: bool = True
    #: a witness is kept for a primary only when it moves it by at least (1 - this) times
    #: the primary's smaller level (None: any move): t <= 1, so a smaller move proves
    #: nothing at a violation tolerance below this, and would push out those that do
    separation_witness_slack: float | None = 1e-3

    def replace(self, **changes) -> "OptimalOptions":
        """A copy with ``changes`` (unknown names are an error)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        """The settings as a plain dict (recorded in the result)."""
        return dataclasses.asdict(self)

    def __post_init__(self):
        if self.engine not in ("auto", "compact", "benders"):
            raise ValueError(f"engine must be 'auto', 'compact' or 'benders', not "
                             f"{self.engine!r}")
        if self.search not in ("bc", "milp"):
            raise ValueError(f"search must be 'bc' or 'milp', not {self.search!r}")
        if self.branching not in ("auto", "reliability", "fractional"):
            raise ValueError(f"branching must be 'auto', 'reliability' or 'fractional', "
                             f"not {self.branching!r}")
