"""The `self-refine` program: its commands, and the exit code of each way it can end.

Heavy imports (LangGraph, LangChain) happen inside the commands, so that
`self-refine --help` answers at once. The arguments are in `cli/parser.py`, what
the settings flags mean in `cli/settings.py`, the thread commands (run, resume,
show) in `cli/threads.py` and `cli/show.py`, batch and report in `cli/batch.py`.
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys

from self_refine.cli.failures import database_failure
from self_refine.cli.options import EXIT_FAILURE, EXIT_USAGE, print_error
from self_refine.cli.parser import build_parser
from self_refine.cli.settings import check_reachable, settings_from_flags, warn_key_on_command_line
from self_refine.cli.show import cmd_show
from self_refine.cli.threads import cmd_resume, cmd_run
from self_refine.errors import ThreadBusyError
from self_refine.redact import terminal_safe

__all__ = ["main"]

EXIT_BUSY = 75  # sysexits.h EX_TEMPFAIL: another process runs the thread; try again later


def cmd_studio(args: argparse.Namespace) -> int:
    """Serve the graphs with `langgraph dev` on a free port and print the Studio URL."""
    from self_refine.cli.devserver import run_studio

    return run_studio(
        args.config, port=args.port, model=args.model, reload=not args.no_reload, out=sys.stdout
    )


def cmd_profiles(args: argparse.Namespace) -> int:
    """List the prompt profiles with their default critics, one line each."""
    from self_refine.prompts import PROFILES

    for profile in PROFILES.values():
        critics = ",".join(profile.critics)
        print(f"{profile.name:<24} {critics:<16} {profile.summary}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    """Refine a JSONL file of items."""
    from self_refine.cli.batch import batch_command

    context = settings_from_flags(args)
    if not args.server:
        check_reachable(context)
    warn_key_on_command_line(args)
    return batch_command(args, context)


def cmd_report(args: argparse.Namespace) -> int:
    """Summarize batch outputs."""
    from self_refine.cli.batch import report_command

    return report_command(args)


COMMANDS = {
    "run": cmd_run,
    "resume": cmd_resume,
    "show": cmd_show,
    "studio": cmd_studio,
    "profiles": cmd_profiles,
    "batch": cmd_batch,
    "report": cmd_report,
}


def _busy_message(error: ThreadBusyError, args: argparse.Namespace) -> str:
    from self_refine.redact import redact_url, shell_command

    thread = error.thread_id
    show = shell_command("self-refine", "show", thread, "--db", redact_url(args.db))
    return (
        f"thread {thread!r} is being run by another self-refine process ({error.holder}): "
        f"wait for it to finish, then try again; see how far it got with: {show}"
    )


class _Warnings(logging.Handler):
    """The library's warnings (a wait on another process, say) as the program's own lines."""

    def emit(self, record: logging.LogRecord) -> None:
        text = terminal_safe(" ".join(record.getMessage().split()))
        print(f"self-refine: {text}", file=sys.stderr, flush=True)  # standard error as it is now


def _say_warnings() -> None:
    logger = logging.getLogger("self_refine")
    if not any(isinstance(handler, _Warnings) for handler in logger.handlers):
        logger.addHandler(_Warnings(logging.WARNING))
        logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    """Run the program; return its exit code.

    SIGINT and SIGTERM give one line and 128 + the signal from its first instruction to
    its last (`cli/interrupt.py`); `argv` None: this is the program, and the guard holds
    on through the interpreter's teardown.
    """
    from self_refine.cli.interrupt import guarded

    with guarded(program=argv is None) as guard:
        try:
            return _main(argv)
        except BaseException as error:
            if not guard.signum or isinstance(error, SystemExit):
                raise
            # The signal, or what it left on its way out (a model call's CallCancelled).
            guard.say(guard.signum)
            return 128 + guard.signum


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    _say_warnings()
    try:
        return COMMANDS[args.command](args)
    except ThreadBusyError as error:
        print_error(RuntimeError(_busy_message(error, args)), args)
        return EXIT_BUSY
    except sqlite3.Error as error:
        failure = database_failure(error, getattr(args, "db", ""))
        print_error(failure, args)
        return EXIT_FAILURE if isinstance(failure, RuntimeError) else EXIT_USAGE
    except BrokenPipeError:
        from self_refine.cli.closed_stdout import drop_closed_stdout

        drop_closed_stdout()  # the reader has all it wanted: not an error
        return 0
    except Exception as error:
        from self_refine.errors import ConfigError

        print_error(error, args)
        return EXIT_USAGE if isinstance(error, ConfigError) else EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
