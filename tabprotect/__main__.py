"""``python -m tabprotect``: the command line (:mod:`tabprotect.cli`)."""
import sys

from tabprotect.cli import main

if __name__ == "__main__":
    sys.exit(main())
