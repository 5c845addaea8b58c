"""``python -m tabprotect``: the command line (:mod:`tabprotect.cli`)."""
from tabprotect.cli import console

if __name__ == "__main__":
    console()
