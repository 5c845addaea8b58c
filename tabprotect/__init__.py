"""tabprotect: statistical disclosure control for tables.

Build tables (``Table``, ``tabulate``), find unsafe cells (``apply_rules``), protect them
(``protect``, ``round_table``), prove what an intruder can still derive (``audit``,
``audit_rounded``), measure the information loss (``info_loss``), compare methods
(``compare``) and run a whole job (``run``: the pipeline behind every command).
"""
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table, link_tables
from tabprotect.audit import AuditResult, IntervalAudit, VerdictAudit, audit
# A function named like its module is imported here: loading the module later (by any
# caller) then leaves ``tabprotect.tabulate``, ``compare`` and ``audit_rounded`` the functions.
from tabprotect.tabulate import tabulate
from tabprotect.compare import compare
from tabprotect.audit_rounded import audit_rounded

__version__ = "0.1.0"

__all__ = ["Hierarchy", "Table", "link_tables", "tabulate", "apply_rules", "protect",
           "round_table", "audit", "AuditResult", "IntervalAudit", "VerdictAudit",
           "audit_rounded", "info_loss", "compare",
           "run", "Run", "InputError", "__version__"]

#: the other public names, imported on first use so that ``import tabprotect`` stays light
_LAZY = {
    "apply_rules": ("tabprotect.primary", "apply_rules"),
    "protect": ("tabprotect.secondary", "protect"),
    "round_table": ("tabprotect.rounding", "round_table"),
    "info_loss": ("tabprotect.infoloss", "info_loss"),
    "run": ("tabprotect.pipeline", "run"),
    "Run": ("tabprotect.pipeline", "Run"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tabprotect' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
