"""CLI subcommands, one module per group; see :mod:`tabprotect.cli`."""
