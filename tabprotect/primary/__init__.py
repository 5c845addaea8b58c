"""Primary sensitivity rules: which cells are unsafe, and how much protection they need.

Rules follow tau-Argus semantics (DESIGN.md section 3).  For a cell with rule-variable total
``X`` (the shadow variable when the table has one, else the value) and largest
contributions ``x1 >= x2 >= ...`` (``table.top``, or the holding-level tops in
``table.extra["holding_top1.."]`` for holding rules):

===================  =============================================  =============================
rule                 unsafe iff (boundaries exact)                   upper protection level
===================  =============================================  =============================
frequency n          ``0 < freq < n`` (``freq == n`` is safe)        ``safety_range % * |value|``
                                                                     (frequency tables: count
                                                                     units, see below)
(n,k)-dominance      ``x1+..+xn > k/100 X`` (strict: ``=`` is safe)  ``D = 100/k (x1+..+xn) - X``
p% (coalition m)     ``X - (x1+..+x_{m+1}) < p/100 x1`` (strict)     ``D = p/100 x1 + x1+..+x_{m+1} - X``
pq (coalition m)     ``X - (x1+..+x_{m+1}) < p/q x1`` (strict)       ``D = p/q x1 + x1+..+x_{m+1} - X``
request p            largest contribution of a contributor who       ``safety_range % * |value|``
                     asked for protection ``> p/100 X``
zero                 ``value == 0`` and ``freq > 0``                 ``safety_range`` (absolute)
group (frequency     a relation's total ``> 0`` and all of it sits   LPL = one contributor
tables)              in one of its (>= 2) parts: that part           (1 in a count table), UPL 0
manual               a-priori status ``S``/``U``/``P`` from a file   file's ``upl/lpl/spl`` or
                                                                     ``manual_safety_range %``
===================  =============================================  =============================

Deficits ``D`` are in the rule variable's units and scaled to the response:
``UPL = |value| * D / X``.  A cell's UPL is the largest over the rules that fire; its LPL the
same, capped so that ``value - LPL >= lb`` (DESIGN.md section 3).  The sliding protection level
is 0 unless the manual file gives one (``spl`` column).  Floating-point noise does not flip a
boundary: a deficit counts only when it exceeds ``1e-9 * max(1, |X|)``.

Evaluation order (tau-Argus): empty (``freq == 0`` and ``value == 0``: status ``Z``, no rule
looks at it), dominance, p%/pq, request, frequency, zero; then the group check and the
manual statuses, which override everything (``S`` makes a cell safe, ``P`` protects it).  A
cell's ``reason`` lists every rule that fired in that order; the first one is what tau-Argus
would report as its status.

Frequency tables: the threshold rule on counts, with levels in count units: an unsafe count
``c`` needs ``UPL = max(n - c, ceil(safety_range % * c))`` (the intruder must not be able to
rule out that the cell reaches the threshold; for weighted counts ``n - freq`` contributors are
scaled by ``value / freq``).

Modules: ``base`` (the ``Rule`` interface and what rules share), ``magnitude``
(dominance, p%, pq, request), ``frequency`` (frequency, zero, group disclosure), ``manual``
(a-priori files), ``spec`` (rules from job keys), ``levels`` (protection levels and
statuses), ``apply`` (``apply_rules``, the evaluation order), ``result``.
"""
from tabprotect.primary.apply import EVALUATION_ORDER, apply_rules
from tabprotect.primary.base import Rule
from tabprotect.primary.frequency import FrequencyRule, GroupDisclosureRule, ZeroRule
from tabprotect.primary.magnitude import DominanceRule, PPercentRule, PQRule, RequestRule
from tabprotect.primary.manual import ManualStatus
from tabprotect.primary.result import PrimaryResult
from tabprotect.primary.spec import rules_from_job, rules_from_spec, top_k_needed

__all__ = ["Rule", "FrequencyRule", "DominanceRule", "PPercentRule", "PQRule", "RequestRule",
           "ZeroRule", "GroupDisclosureRule", "ManualStatus", "PrimaryResult", "apply_rules",
           "rules_from_spec", "rules_from_job", "top_k_needed", "EVALUATION_ORDER"]
