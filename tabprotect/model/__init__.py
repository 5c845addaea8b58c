"""The table model shared by every tabprotect module (knows nothing about methods)."""
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.linked import link_tables
from tabprotect.model.relations import product_relations, relations_from_triplets
from tabprotect.model.status import (EMPTY, LETTERS, PRIMARY, PROTECTED, SAFE, SECONDARY,
                                     SUPPRESSED, is_suppressed)
from tabprotect.model.table import Dimension, Table, aggregate_leaves, read_frame

__all__ = ["Hierarchy", "Table", "Dimension", "link_tables", "product_relations",
           "relations_from_triplets", "aggregate_leaves", "read_frame", "is_suppressed",
           "SAFE", "PRIMARY", "SECONDARY", "PROTECTED", "EMPTY", "LETTERS", "SUPPRESSED"]
