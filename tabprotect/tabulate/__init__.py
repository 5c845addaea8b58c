"""Microdata -> :class:`~tabprotect.model.Table`: counts, sums and the largest contributions.

One row of the microdata is one contributor (an enterprise, a person).  ``tabulate`` gives,
for every cell of the cartesian product of the dimensions' hierarchies (every total and
subtotal included):

* ``value``  - the sum of the response (weighted: ``sum w x``), or the (weighted) count for a
  frequency table;
* ``freq``   - the number of contributors (records, unweighted);
* ``top``    - the ``top_k`` largest contributions of the variable the sensitivity rules look
  at (the *shadow* variable when given, else the response).  With sampling weights a
  contribution ``x`` of weight ``w`` counts as ``w`` copies of ``x`` (tau-Argus semantics): a
  record of 100 with weight 4 gives ``top1 = ... = top4 = 100``.  A fractional weight counts
  fractionally: ``top_j`` is the mass of the ``j``-th unit of weight when the contributions are
  laid out largest first (so ``top1 + ... + topn`` is the largest total that ``n`` units of
  weight can carry);
* ``cost``   - the (weighted) sum of a cost variable;
* ``extra``  - ``shadow`` (the shadow variable's cell total), ``weighted_freq`` (sum of
  weights), ``holding_freq`` and ``holding_top1..k`` (contributions summed per holding first:
  a holding is a group of contributors, e.g. an enterprise group, and it can span several
  cells), ``request_max`` (the largest contribution of a contributor who asked for
  protection), ``n_missing`` (records whose response was missing, see ``missing``).

Two engines give identical tables: ``pandas`` (in-memory frames and files that fit in
memory; numpy ``bincount``/``lexsort`` on factorized codes) and ``duckdb`` (CSV/Parquet files,
also larger than memory: one ``GROUP BY`` pass over the file).  Both first reduce the records
to leaf cells, then aggregate leaves to every level of every hierarchy; the largest
contributions of an aggregate are the largest of the union of its leaves' contributions.

Modules: ``spec`` (the validated arguments), ``engine`` (the engine interface: what an
engine receives and returns), ``engines`` (engines by name, ``auto``), ``memory_engine``,
``duckdb_engine`` (+ ``duckdb_checks``), ``checks`` (record checks shared by the engines),
``contributions`` (top-k and holding contributions), ``assemble`` (leaves -> Table),
``correspondence`` (hierarchies from correspondence tables), ``files``, ``api``
(``tabulate``).
"""
import importlib

from tabprotect.tabulate.spec import MICRODATA_KEYS, MISSING_POLICIES

__all__ = ["tabulate", "hierarchy_from_correspondence", "MISSING_POLICIES", "MICRODATA_KEYS",
           "read_table_file", "distinct_codes"]

#: public name -> its module, imported on first use: a job that reads a cells file loads
#: none of the engines
_LAZY = {"tabulate": "tabprotect.tabulate.api",
         "hierarchy_from_correspondence": "tabprotect.tabulate.correspondence",
         "distinct_codes": "tabprotect.tabulate.engines",
         "read_table_file": "tabprotect.tabulate.files"}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tabprotect.tabulate' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
