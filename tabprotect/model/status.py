"""Cell status letters (tau-Argus): S safe, U primary unsafe, M secondary, P protected, Z empty."""
from __future__ import annotations

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import row_place, text_values

SAFE = "S"        # published
PRIMARY = "U"     # unsafe by a primary rule: suppressed
SECONDARY = "M"   # suppressed to protect primaries
PROTECTED = "P"   # must be published (never suppressed)
EMPTY = "Z"       # empty/zero cell, published
LETTERS = (SAFE, PRIMARY, SECONDARY, PROTECTED, EMPTY)
SUPPRESSED = (PRIMARY, SECONDARY)
#: the status of a suppressed cell in every view that is not explicitly confidential: one
#: letter for primary and secondary cells, since telling them apart narrows what an
#: intruder can derive (a primary of the threshold rule in a frequency table holds 1 to
#: n-1), which the audit does not model
SUPPRESSED_LETTER = "X"


def check_status(status, n: int, source: str = "status") -> np.ndarray:
    """Validate and normalise a status array (upper-case single letters)."""
    arr = np.asarray(status).astype(str)
    if arr.shape != (n,):
        raise InputError(f"{source}: expected {n} status letters, got {arr.shape}")
    arr = np.char.upper(np.char.strip(arr)).astype("<U1")
    bad = ~np.isin(arr, LETTERS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{source}: cell #{i} has unknown status '{arr[i]}' "
                         f"(expected one of {', '.join(LETTERS)})")
    return arr


def is_suppressed(status: np.ndarray) -> np.ndarray:
    """Mask of cells whose value is not published."""
    return np.isin(status, SUPPRESSED)


#: status words accepted in a status column besides the letters S U M P Z
STATUS_WORDS = {"safe": "S", "unsafe": "U", "primary": "U", "secondary": "M",
                "protected": "P", "empty": "Z"}


def parse_status(column, source: str, name: str = "status", rows=None) -> np.ndarray:
    """A status column as letters: S U M P Z (any case), the words of
    :data:`STATUS_WORDS`, or blank (not given); anything else names its row (a file's
    line; with ``rows``, the frame the column is of, as :func:`row_place` names it)."""
    text = text_values(np.asarray(column, dtype=object)).tolist()
    letter = {t: _status_letter(t) for t in dict.fromkeys(text)}    # each distinct once
    letters = np.fromiter(map(letter.__getitem__, text), dtype=object, count=len(text))
    bad = ~np.isin(letters.astype(str), ("", "S", "U", "M", "P", "Z"))
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        # X is a published table's letter for any suppressed cell: it does not say which
        hint = ("; X, published.csv's letter for every suppressed cell, does not say "
                "primary or secondary" if letters[r] == SUPPRESSED_LETTER else "")
        raise InputError(f"{row_place(source, rows, r)}, column '{name}': not a status "
                         f"(give one of S U M P Z, or {', '.join(STATUS_WORDS)}{hint})")
    return letters.astype("<U1")


def _status_letter(text: str | None) -> str:
    if not text:
        return ""
    lower = text.lower()
    return STATUS_WORDS.get(lower, lower.upper() if len(lower) == 1 else "?")
