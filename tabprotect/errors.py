"""Errors raised for bad user input.

Every message names the file, line (a DataFrame's row), cell or code at fault and never prints a
confidential cell value, so it can be shown to a table's user as it is.
"""
from __future__ import annotations


class InputError(ValueError):
    """Bad input (file, table, hierarchy, rule or job spec).

    The CLI turns it into a one-line message and exit code 2.

    Examples
    --------
    >>> raise InputError("cells.csv line 7: code 'X9' is not in hierarchy 'region'")
    Traceback (most recent call last):
    ...
    tabprotect.errors.InputError: cells.csv line 7: code 'X9' is not in hierarchy 'region'
    """


class InfeasibleRulesError(InputError):
    """The rules or a-priori statuses cannot be met (e.g. a primary cell that can only be
    protected by suppressing a cell marked ``P``)."""


class TooLargeError(InputError):
    """A job beyond a configured size limit (e.g. the service's ``max_cells``), refused
    before the memory for it is taken; the message names the limit and the job's key."""


def read_input_text(path, what: str = "file") -> str:
    """The text of the input file ``path`` (UTF-8, a byte-order mark dropped); a file that
    is not UTF-8 or cannot be read (``what`` it is) is one :class:`InputError` naming it,
    never quoting a byte of it."""
    from pathlib import Path
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror})") from None


def column_names(columns) -> str:
    """The header of an input file for a message: its column names, or -- when one of
    them reads as a number, so the first line is likely a data row (a file without a
    header, or another delimiter) -- only how many there are, never quoting a field.

    Examples
    --------
    >>> column_names(["region", "size", "value"])
    'columns: region, size, value'
    >>> column_names(["N1", "small", "120.5"])
    '3 columns; the first line holds a number: is the header line missing?'
    >>> column_names(["region;size;value"])
    "columns: region;size;value; its fields are separated by ';' (tabprotect reads ',')"
    """
    import re
    names = [str(c) for c in columns]
    # one name holding another dialect's separator: the file is not comma-separated
    other = [sep for sep in (";", "\t", "|") if len(names) == 1 and sep in names[0]]
    hint = f"; its fields are separated by {other[0]!r} (tabprotect reads ',')" \
        if other else ""
    number = re.compile(r"[+-]?(\d+([.,]\d*)?|[.,]\d+)([eE][+-]?\d+)?")
    if any(number.fullmatch(field) for name in names for field in re.split(r"[;\t| ]+", name)):
        return (f"{len(names)} column{'s' if len(names) != 1 else ''}; the first line "
                f"holds a number: is the header line missing?{hint}")
    return "columns: " + ", ".join(names) + hint
