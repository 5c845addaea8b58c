"""tabprotect: statistical disclosure control for tables.

Build tables (``Table``, ``tabulate``), find unsafe cells (``apply_rules``), protect them
(``protect``, ``round_table``), prove what an intruder can still derive (``audit``,
``audit_rounded``), measure the information loss (``info_loss``), compare methods
(``compare``) and run a whole job (``run``: the pipeline behind every command).

Every public name is imported on first use, so that ``import tabprotect`` (and the
command line's start-up) loads neither pandas nor the solvers until a name needs them.
"""
import importlib
import types

__version__ = "0.1.0"

__all__ = ["Hierarchy", "Table", "link_tables", "tabulate", "apply_rules", "protect",
           "round_table", "audit", "AuditResult", "IntervalAudit", "VerdictAudit",
           "audit_rounded", "info_loss", "compare",
           "run", "Run", "InputError", "__version__"]

#: public name -> (module, attribute), imported on first use
_LAZY = {
    "InputError": ("tabprotect.errors", "InputError"),
    "Hierarchy": ("tabprotect.model", "Hierarchy"),
    "Table": ("tabprotect.model", "Table"),
    "link_tables": ("tabprotect.model", "link_tables"),
    "audit": ("tabprotect.audit", "audit"),
    "AuditResult": ("tabprotect.audit", "AuditResult"),
    "IntervalAudit": ("tabprotect.audit", "IntervalAudit"),
    "VerdictAudit": ("tabprotect.audit", "VerdictAudit"),
    "tabulate": ("tabprotect.tabulate", "tabulate"),
    "compare": ("tabprotect.compare", "compare"),
    "audit_rounded": ("tabprotect.audit_rounded", "audit_rounded"),
    "apply_rules": ("tabprotect.primary", "apply_rules"),
    "protect": ("tabprotect.secondary", "protect"),
    "round_table": ("tabprotect.rounding", "round_table"),
    "info_loss": ("tabprotect.infoloss", "info_loss"),
    "run": ("tabprotect.pipeline", "run"),
    "Run": ("tabprotect.pipeline", "Run"),
}
#: functions named like the module that holds them: the name stays the function
_SHADOWED = frozenset(name for name, (module, attr) in _LAZY.items()
                      if module == f"tabprotect.{name}")


class _Package(types.ModuleType):
    """The package module: loading ``tabprotect.audit`` (or ``tabulate``, ``compare``,
    ``audit_rounded``) binds the submodule to the package's attribute of that name; the
    public function of that name is kept there instead (as an eager ``from ... import``
    would leave it)."""

    def __setattr__(self, name, value):
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return                           # the function is looked up on first use
        super().__setattr__(name, value)


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tabprotect' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


importlib.import_module(__name__).__class__ = _Package
