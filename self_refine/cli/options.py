"""Command-line options shared by the commands, and how the program ends: exit codes, errors.

Light imports only: the `self-refine` program imports this at start-up.
"""

from __future__ import annotations

import argparse
import re
import sys

from self_refine.redact import redact, terminal_safe

__all__ = ["EXIT_FAILURE", "EXIT_USAGE", "add_connection_options", "as_flags", "print_error"]

EXIT_FAILURE = 1
EXIT_USAGE = 2


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """Add --max-retries, --timeout, --max-tokens, and --api-key or --api-key-file."""
    parser.add_argument(
        "--max-retries",
        type=int,
        help="retries of a failed model call, with exponential backoff and jitter (client: 2)",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds a model request may take (client default: 600)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        help="most tokens one model reply may have (default: the profile's cap for each "
        "role, e.g. 160 for a constrained_generation draft, 384 for its critique)",
    )
    key = parser.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key",
        help="API key for the model endpoint (default: env OPENAI_API_KEY); used for the "
        "calls only, never stored. Other users of this machine can read a command line "
        "(ps, /proc): prefer OPENAI_API_KEY or --api-key-file",
    )
    key.add_argument(
        "--api-key-file",
        metavar="PATH",
        help="read the API key from this file (one line; e.g. --api-key-file "
        "~/.config/openai.key, chmod 600), keeping it off the command line",
    )


_SETTING = re.compile(r"\b([a-z][a-z_]*)=(\"[^\"]*\"|'[^']*'|\.\.\.|[\w.:/-]+)")
"""A setting named as Python gives it (`candidates=1`, `model="offline"`, `base_url=...`)."""


def as_flags(text: str) -> str:
    """The text with each setting named as the command line gives it (`--candidates 1`).

    The library's messages name settings as Python does; a name that is no setting
    (`checkpointer=...`) stays as it is.
    """
    from self_refine.settings.fields import FIELD_NAMES

    def flag(match: re.Match[str]) -> str:
        name, value = match.groups()
        if name not in FIELD_NAMES:
            return match.group(0)
        return f"--{name.replace('_', '-')} {value.strip(chr(34) + chr(39))}"

    return _SETTING.sub(flag, text)


def print_error(error: BaseException, args: argparse.Namespace) -> None:
    """Print the error on one line, secrets masked and control characters shown as escapes,
    its settings named as the command line's flags (`as_flags`).

    An error can quote a server's reply or the input; an escape sequence in
    either must not act on the terminal.
    """
    text = redact(as_flags(" ".join(str(error).split())), [getattr(args, "api_key", None)])
    text = terminal_safe(text) or f"{type(error).__name__}, with no message"
    print(f"self-refine: error: {text}", file=sys.stderr)
