"""The LP audit: what an intruder can derive about suppressed cells.

The intruder knows every published value, the relations ``A x = 0`` of the table and the
a-priori bounds ``lb <= x <= ub``.  For each unpublished cell ``i`` the audit computes the
feasibility interval ``[min x_i, max x_i]`` over that polytope and checks every primary cell
against its protection levels.

Why it is fast (and still exact):

* published cells are substituted out, so the LP has one column per *suppressed* cell;
* cells alone among the unpublished cells of a relation are pinned down without an LP;
* the suppressed cells split into independent components (cells linked through relations);
  each component is its own small LP, and components can be solved in parallel processes;
* per component one persistent HiGHS model is built once; only the objective changes
  between the solves, so every re-solve starts from the previous basis;
* every LP solution is a feasible table, so it is a *witness*: a bound is already known
  exactly when some earlier solution sits at the cell's a-priori bound, and (verdict mode)
  a primary cell is already proven protected when the witnesses seen so far spread it
  across its required interval. Verdict mode first solves a few LPs with aggregate
  objectives that push many primaries towards their requirements at once, and solves the
  per-cell LPs only for what is left; an unprotected cell always gets its exact LP bound.

Single-contributor attackers (``singleton=True``): the contributor of a suppressed cell
with ``freq == 1`` knows that cell; each such attacker's interval of every other primary
of the component is computed (or, in verdict mode, decided) with that cell fixed, and the
primary must meet its requirement against each attacker separately. Coalitions
(``coalition=n``) pool the contributions of up to ``n`` contributors in the same way
(:mod:`tabprotect.audit.contributors`).

The result types are in :mod:`tabprotect.audit_result`. Modules:

``core``        the entry point :func:`audit`: input checks, components, the result
``settings``    :class:`AuditSettings`, the tuning settings (recorded in ``params``)
``system``      one component's LP and its warm HiGHS model
``intervals``   intervals mode: exact min and max per cell
``verdict``     verdict and screen modes: witnesses first, per-cell LPs for the rest
``witness``     the state of a verdict search (witness values, exact ends, shortfalls)
``aggregate``   aggregate LPs over a whole component
``regions``     neighbourhoods and blocks of a component and the LPs over them
``local``       local LPs around a primary (witnesses and outer bounds)
``blocks``      block LPs on huge components
``moves``       candidate moves offered by a caller, checked and used as witnesses
``contributors`` attackers among the contributors: single contributors, coalitions
``component``   one component's task and outcome
``dispatch``    components in this process or in worker processes
``assemble``    per-cell figures, the verdict and the result types
"""
from tabprotect.audit_result import (AuditResult, IntervalAudit, VerdictAudit,
                                     meets_requirement)
from tabprotect.audit.core import MODES, audit, required_interval, rescale_audit
from tabprotect.audit.moves import mirror_share
from tabprotect.audit.settings import AuditSettings

__all__ = ["audit", "AuditResult", "IntervalAudit", "VerdictAudit", "MODES", "AuditSettings",
           "required_interval", "meets_requirement", "mirror_share", "rescale_audit"]
