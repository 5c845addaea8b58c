"""The ``tabprotect`` command line.

Subcommands live in ``tabprotect/commands/<module>.py``; each module defines
``COMMANDS = {"name": (add_arguments, run, "one-line help", "examples")}`` where
``add_arguments(parser)`` adds its arguments and ``run(args) -> int`` does the work.
Bad input raises :class:`tabprotect.errors.InputError`: printed as one line, exit code 2
(``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import pkgutil
import sys
import traceback

from tabprotect.errors import InputError

EPILOG = """examples:
  tabprotect demo                          run the bundled demo job
  tabprotect audit job.toml                audit a suppressed table
  tabprotect primary job.toml              apply the sensitivity rules
  tabprotect protect job.toml --time-limit 60
  tabprotect round job.toml
  tabprotect COMMAND --help                help and examples for one command
"""


#: command -> the module of ``tabprotect/commands`` that defines it: a run of one command
#: imports that module alone (its parser), the help and an unknown command import them all
COMMAND_MODULES = {"audit": "audit", "cellkey": "census", "swap": "census", "demo": "demo",
                   "primary": "primary", "protect": "protect", "report": "report",
                   "compare": "report", "serve": "report", "risk": "risk",
                   "perturb": "risk", "round": "rounding", "audit-rounded": "rounding"}


def _discover(command: str | None = None) -> dict[str, tuple]:
    """The commands' entries by name: of ``command``'s module only when ``command`` is
    one of :data:`COMMAND_MODULES`, else of every module in ``tabprotect/commands``."""
    import tabprotect.commands as pkg
    if command in COMMAND_MODULES:
        names = [COMMAND_MODULES[command]]
    else:
        names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__))
    found: dict[str, tuple] = {}
    for name in names:
        module = importlib.import_module(f"tabprotect.commands.{name}")
        for command_name, entry in getattr(module, "COMMANDS", {}).items():
            found[command_name] = entry
    return found


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the options
    before a command take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with every command, or with ``command``'s module's
    commands alone (all that parsing a run of ``command`` needs)."""
    parser = argparse.ArgumentParser(
        prog="tabprotect", description="Protect statistical tables before publication: "
        "sensitivity rules, secondary suppression, rounding, LP audit, microdata risk.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from tabprotect import __version__
    parser.add_argument("--version", action="version", version=f"tabprotect {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, entry in _discover(command).items():
        add_arguments, run, help_text = entry[0], entry[1], entry[2]
        examples = entry[3] if len(entry) > 3 else None
        p = sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text,
                           epilog=("examples:\n" + examples) if examples else None,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks on errors")
        add_arguments(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    from tabprotect.io.profile import RunProfile
    profile = RunProfile()          # the start-up ends here (a few microseconds' cost)
    argv = sys.argv[1:] if argv is None else list(argv)
    with profile.stage("parser"):
        parser = build_parser(_named_command(argv))
        args = parser.parse_args(argv)
    if getattr(args, "profile", None):
        args.run_profile = profile  # the job commands add their stages and write it
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    try:
        return int(args._run(args) or 0)
    except InputError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"tabprotect {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:
        # numpy names the array's size and shape, never its content
        if args.debug:
            traceback.print_exc()
        print(f"tabprotect {args.command}: error: not enough memory for this job "
              f"({str(exc) or 'MemoryError'}); check its dimensions and hierarchies",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


#: objects allocated (less those freed) between two collections of the command's
#: youngest generation (Python's default: 700).  A one-job process keeps nearly every
#: object it makes -- modules, classes, numba's target after a kernel load -- until it
#: ends, so each default collection walks some 10^4-10^5 survivors and frees little;
#: the cyclic garbage the larger threshold lets wait is a few megabytes at most
CONSOLE_GC_THRESHOLD = 50_000


def console() -> None:
    """The ``tabprotect`` command: :func:`main`, then the process ends as soon as its
    output is flushed and its exit handlers have run.  The interpreter's own teardown
    (every module's objects freed, the compiled kernels' machine code and numba's
    compiler released) costs 0.1-0.3 s CPU after a run and writes nothing, so a process
    with no other thread left skips it; one with threads still running (a worker pool's)
    exits the usual way, which waits for them.  The collector runs less often
    (:data:`CONSOLE_GC_THRESHOLD`): about 100 collections of a cold run become a few."""
    gc.set_threshold(CONSOLE_GC_THRESHOLD, *gc.get_threshold()[1:])
    _one_blas_thread()
    code = main()
    threading = sys.modules.get("threading")
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if (threading is not None and threading.active_count() > 1) \
            or run_exit_handlers is None or not _flushed():
        sys.exit(code)
    run_exit_handlers()         # temporary folders removed, logs flushed, as at any exit
    if not _flushed():
        sys.exit(code)
    os._exit(code)


def _one_blas_thread() -> None:
    """numpy's and scipy's OpenBLAS run on one thread in the command's process (and in
    the worker processes it starts), unless ``OPENBLAS_NUM_THREADS`` is set.  A job's
    dense products are small (its LPs go to HiGHS, its sparse products to scipy), while
    a pool of one thread per core, started when numpy is imported, costs 0.03-0.05 s CPU
    of every run in its start and its threads' waiting; on one thread a dense sum's
    rounding also does not depend on the machine's number of cores.  Set before numpy
    is imported: OpenBLAS reads it once, when it loads."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _flushed() -> bool:
    """stdout and stderr flushed (False when one cannot be: a closed pipe, reported by
    the usual exit)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return False
    return True


if __name__ == "__main__":
    console()
