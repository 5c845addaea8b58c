"""Settings of :func:`~tabprotect.secondary.protect`: how the call shares its budget,
which path it takes on large tables, and how it audits and repairs.  One frozen
dataclass, passed as ``protect(..., settings=ProtectSettings(...))`` and recorded in the
result's ``params["settings"]`` (the fields the call applied)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tabprotect.audit import AuditSettings
from tabprotect.secondary.attack_repair import AttackRepairSettings
from tabprotect.secondary.milp_repair import MilpRepairSettings
from tabprotect.secondary.product_limits import ProductSearchLimits
from tabprotect.secondary.repair_options import GreedyOptions, WitnessSearchSettings


@dataclass(frozen=True)
class ProtectSettings:
    """How :func:`~tabprotect.secondary.protect` audits, repairs and shares its time.
    No field changes what counts as protected: the final audit judges every pattern."""

    # ---- the path
    #: from this many cells: verdict audits, local repair (deviation LPs on each short
    #: primary's sub-tables, not the whole table), no up-front feasibility check
    large_table: int = 50_000
    #: audit_mode="auto" below large_table: intervals while their work estimate (LP
    #: pairs times component size, the attackers' included) stays below this, else the
    #: (far faster) verdict
    interval_audit_max_work: int = 250_000
    #: ... an integer audit (frequency tables) counts this many times: it proves each
    #: fractional LP bound with a MILP, about ten LPs' time on 3-D count tables
    interval_audit_integer_weight: float = 10.0

    # ---- the up-front feasibility check (everything suppressed: protectable?)
    #: runs only while primaries x candidate cells stays below this (above, its LPs take
    #: most of the call's time; the final audit judges instead)
    feasibility_check_max_work: int = 5_000_000
    #: the check against the single-contributor attackers (before a whole-table repair
    #: round against them, or after a failed final audit) while attackers x cells stays
    #: below this (each attacker costs a verdict pass over the all-suppressed pattern)
    feasibility_singleton_max_work: int = 200_000
    #: product tables below the audit's local-LP size: sibling cubes per primary handed
    #: to the check's audit as candidate witnesses (each spares it LPs; 0: none)
    feasibility_sibling_cubes: int = 2
    #: seconds for the check when the call has no time limit
    feasibility_check_seconds: float = 120.0

    # ---- the budget (``time_limit``)
    #: share of the budget for the feasibility check (past it the final audit judges)
    feasibility_share: float = 0.2
    #: share of what is left for the method (the audit and repair get the rest)
    method_share: float = 0.75
    #: ... from large_table cells on: the verdict audit and local repair of a large
    #: pattern need more of the budget
    method_share_large: float = 0.6
    #: the least time limit an audit gets once the budget is spent: the overrun the
    #: call allows (an audit stopped by its limit fails)
    audit_floor_seconds: float = 0.25
    #: share of what is left for the first audit (with the screen before it) when the
    #: call repairs within a time limit: a first audit slower than expected still leaves
    #: the repair and the final audit their time; the primaries it does not decide go
    #: to the repair, whose witnesses the later audits take as moves
    first_audit_share: float = 0.5

    # ---- passes before the first audit (large tables)
    #: "auto": interval-blind methods (gauss) on large product tables get cubes before
    #: the first audit, so it need not prove their many shortfalls one by one
    pre_repair: Literal["auto", "off"] = "auto"
    #: ... from this many cells (below, the first audit proves the shortfalls quickly and
    #: the pass costs more than it saves); also where the repair's chain cubes and
    #: block regions start
    pre_repair_min_cells: int = 500_000
    #: from this many dimensions the pass is the hypercube method on the pattern (leaf
    #: and chain cubes leave too many primaries for the audit's LPs in 4-D)
    hypercube_pass_min_dims: int = 4
    #: the cube passes search in ``audit_workers`` processes from this many primaries
    #: (the search is a Python loop per primary)
    cube_pass_parallel_min: int = 5_000
    #: from this many cells (other methods, product tables) the cubes the pattern
    #: already has go to the first audit as moves (they certify most primaries of a
    #: hypercube pattern without an LP)
    certify_pass_min_cells: int = 500_000

    # ---- audit and repair
    #: rounds of audit and repair before giving up (each round suppresses more)
    max_repair_rounds: int = 6
    #: below large_table a round repairs with attacker LPs on the whole table while its
    #: short primaries times the table's cells stay below this; past it (a product
    #: table) the round is the large path's: deviation LPs on each primary's sub-tables,
    #: leaf cubes for those not reached (46,656 cells, 3,600 short: the whole-table LPs
    #: added 53 cells in 30 s and left 1,827 short)
    whole_repair_max_work: int = 5_000_000
    #: from pre_repair_min_cells cells, the repair's deviation LPs first try regions of
    #: about this many suppressed cells around the primary (far cheaper there than the
    #: sub-table neighbourhoods, which must grow until the deviation fits)
    repair_block_sizes: tuple[int, ...] = (2_000, 5_000, 10_000)
    #: the large-table repair's deviation LPs (presolve, suppressed cells first, workers)
    repair_lps: GreedyOptions = field(default_factory=GreedyOptions)
    #: below pre_repair_min_cells a large-table round gives its short primaries
    #: deviation LPs first (a fraction of the leaf cubes' cells and cost, each LP slower
    #: than a cube search) for at most this many times the call's time so far; the
    #: primaries they do not reach get leaf cubes (0: cubes first)
    repair_lp_relative_seconds: float = 1.0
    #: ... and at most this share of what the repair may spend of a budget (the rest:
    #: the leaf cubes for the primaries not reached, a second round; at 0.75 the cubes
    #: of hier 37^3 under load run out of time and leave more primaries short)
    repair_lp_share: float = 0.5
    #: ... in batches of this many primaries per worker (the time is checked between
    #: batches: the first batch always runs and none is cut short by it, so a round
    #: with at most one batch of short primaries repairs the same on any machine;
    #: each primary gets a deviation or a cube)
    repair_lp_batch: int = 64
    #: the MILP repair that starts each round (the cheapest cells giving each short
    #: primary its witnesses; what it leaves goes to the LP repair)
    milp_repair: MilpRepairSettings = field(default_factory=MilpRepairSettings)
    #: the local repair round's part against single-contributor attackers: witness
    #: MILPs for the primaries the audit proves short against one, and the whole-table
    #: LP that refuses a primary no pattern protects against it (within
    #: ``feasibility_share`` of the budget)
    attack_repair: AttackRepairSettings = field(default_factory=AttackRepairSettings)
    #: integral witnesses inside the pattern for the primaries an integer audit leaves
    #: open, searched before any cell is added (product tables, no attackers)
    witness_search: WitnessSearchSettings = field(default_factory=WitnessSearchSettings)
    #: the exhaustive search of the product moves a pattern already has (the cube passes'
    #: certification of product tables, no cell added)
    product_search: ProductSearchLimits = field(default_factory=ProductSearchLimits)
    #: share of what is left after the first audit kept back for the final audit (at
    #: most the first audit's own seconds): the repair stages end that much earlier
    final_audit_reserve: float = 0.5
    #: the audits' settings (None: the audit's defaults)
    audit: AuditSettings | None = None

    def __post_init__(self):
        for name in ("feasibility_share", "method_share", "method_share_large",
                     "first_audit_share", "final_audit_reserve", "repair_lp_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"ProtectSettings.{name} must lie between 0 and 1")
        if self.pre_repair not in ("auto", "off"):
            raise ValueError(f"ProtectSettings.pre_repair must be 'auto' or 'off', not "
                             f"{self.pre_repair!r}")


#: the fields every call applies, and those of each part of the call that may not run
_ALWAYS = ("large_table", "audit_floor_seconds", "audit")
_SMALL_PATH = ("interval_audit_max_work", "interval_audit_integer_weight",
               "feasibility_check_max_work",
               "feasibility_singleton_max_work", "feasibility_sibling_cubes")
_REPAIR = ("max_repair_rounds", "first_audit_share", "final_audit_reserve")
_LARGE_REPAIR = ("pre_repair", "pre_repair_min_cells", "hypercube_pass_min_dims",
                 "cube_pass_parallel_min", "certify_pass_min_cells", "repair_block_sizes",
                 "repair_lp_relative_seconds", "repair_lp_share", "repair_lp_batch")
#: a small table's repair round when it takes the large path's deviation LPs and cubes
_LOCAL_ROUND = ("whole_repair_max_work", "repair_lp_relative_seconds", "repair_lp_share",
                "repair_lp_batch")
_REPAIR_LP_FIELDS = ("deviation_lp_presolve_min_columns", "free_first_min_cells",
                     "parallel_min_primaries", "warm_regions")


def applied_settings(settings: ProtectSettings, *, large: bool, repair: bool,
                     timed: bool) -> dict[str, Any]:
    """The fields of ``settings`` a call applied, for ``params["settings"]``: the
    feasibility check's and the interval audit's on the small-table path, the large
    path's passes and local repair there, the budget shares with a time limit, the
    repair's when it repairs; nested settings as dicts."""
    names = list(_ALWAYS)
    if not large:
        names += _SMALL_PATH
        names += ["feasibility_share"] if timed else ["feasibility_check_seconds"]
    if timed:
        names.append("method_share_large" if large else "method_share")
    if repair:
        names += _REPAIR
        if large:
            names += _LARGE_REPAIR
            if timed:
                names.append("feasibility_share")   # the attacker round's check
        else:
            names += _LOCAL_ROUND
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(settings, name)
        out[name] = value.as_dict() if isinstance(value, AuditSettings) else value
    out["product_search"] = asdict(settings.product_search)
    if repair:
        out["milp_repair"] = asdict(settings.milp_repair)
        out["attack_repair"] = asdict(settings.attack_repair)
        out["witness_search"] = asdict(settings.witness_search)
        out["repair_lps"] = {k: getattr(settings.repair_lps, k) for k in _REPAIR_LP_FIELDS}
    return out
