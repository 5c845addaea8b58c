"""Errors raised for bad user input.

Every message names the file, row, cell or code at fault and never prints a
confidential cell value, so it can be shown to a table's user as it is.
"""
from __future__ import annotations


class InputError(ValueError):
    """Bad input (file, table, hierarchy, rule or job spec).

    The CLI turns it into a one-line message and exit code 2.

    Examples
    --------
    >>> raise InputError("cells.csv row 7: code 'X9' is not in hierarchy 'region'")
    Traceback (most recent call last):
    ...
    tabprotect.errors.InputError: cells.csv row 7: code 'X9' is not in hierarchy 'region'
    """


class InfeasibleRulesError(InputError):
    """The rules or a-priori statuses cannot be met (e.g. a primary cell that can only be
    protected by suppressing a cell marked ``P``)."""
