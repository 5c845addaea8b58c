"""tabprotect: statistical disclosure control for tables.

Build tables (``Table``, ``tabulate``), find unsafe cells (``primary``), protect them
(``protect``, ``round_table``), and prove what an intruder can still derive (``audit``,
``audit_rounded``).
"""
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table, link_tables
from tabprotect.audit import AuditResult, audit

__version__ = "0.1.0"

__all__ = ["Hierarchy", "Table", "link_tables", "audit", "AuditResult", "InputError",
           "__version__"]


def __getattr__(name):
    # Methods are imported lazily so that `import tabprotect` stays light and a module
    # under construction never breaks the others.
    lazy = {
        "tabulate": ("tabprotect.tabulate", "tabulate"),
        "apply_rules": ("tabprotect.primary", "apply_rules"),
        "protect": ("tabprotect.secondary", "protect"),
        "round_table": ("tabprotect.rounding", "round_table"),
        "audit_rounded": ("tabprotect.audit_rounded", "audit_rounded"),
        "info_loss": ("tabprotect.infoloss", "info_loss"),
        "compare": ("tabprotect.compare", "compare"),
    }
    if name in lazy:
        import importlib
        module, attr = lazy[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tabprotect' has no attribute {name!r}")
