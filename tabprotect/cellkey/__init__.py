"""The cell key method (see docs/census.md).

Record keys travel with the microdata (:func:`add_record_keys`); every table tabulated from
them (:func:`tabulate_keys`) carries each cell's key sum, and :func:`perturb` adds the noise a
perturbation table (:func:`count_ptable`, tau-Argus files via :func:`read_ptable` /
:func:`write_ptable`) assigns to the cell's original count and cell key.  The same records
give the same cell key, hence the same published value, in every table.
"""
from .ptable import (PTable, PTableParams, count_ptable, ptable_text, read_ptable,
                     write_ptable)
from .keys import KEY_BITS, KEY_SCALE, add_record_keys, cell_keys, record_keys
from .perturb import CellKeyResult, CellKeySettings, MagnitudeNoise, perturb, tabulate_keys
from .disclosure import (Restored, disclosure_summary, non_additivity, posterior,
                         restore_additivity)

__all__ = ["PTable", "PTableParams", "count_ptable", "ptable_text", "read_ptable", "write_ptable",
           "KEY_BITS", "KEY_SCALE", "add_record_keys", "cell_keys", "record_keys",
           "CellKeyResult", "CellKeySettings", "MagnitudeNoise", "perturb", "tabulate_keys",
           "Restored", "disclosure_summary", "non_additivity", "posterior",
           "restore_additivity"]
