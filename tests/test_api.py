"""The package's public names: every name of ``__all__`` resolves, and none is a module,
even after calls that load the modules of the same name."""
import importlib
import types

import numpy as np

import tabprotect as tp
from tabprotect.model import Hierarchy


def small_table():
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = tp.Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    st = t.status.copy()
    st[4] = "U"
    return t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))


def test_public_names_stay_functions_after_protect():
    result = tp.protect(small_table(), method="optimal", cost="unity")
    assert tp.audit(result.confidential_table).passed   # the pattern passes an independent audit
    for module in ("tabprotect.tabulate", "tabprotect.compare", "tabprotect.audit_rounded",
                   "tabprotect.rounding", "tabprotect.pipeline"):
        importlib.import_module(module)
    assert callable(tp.tabulate) and not isinstance(tp.tabulate, types.ModuleType)
    assert callable(tp.compare) and not isinstance(tp.compare, types.ModuleType)
    assert not isinstance(tp.audit_rounded, types.ModuleType)
    frame = tp.compare(small_table(), ["hypercube"], cost="unity").frame
    assert bool(frame["audit_passed"].iloc[0])


def test_every_name_in_all_resolves():
    assert len(set(tp.__all__)) == len(tp.__all__)
    for name in tp.__all__:
        value = getattr(tp, name)
        assert not isinstance(value, types.ModuleType), name
        assert name in dir(tp)
