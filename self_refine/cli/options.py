"""Command-line options for reaching models safely: retries, timeout, API key; masked errors.

Their ranges are RefineContext's, checked by building one (`check_settings`),
with the error naming the command-line flag. Light imports only: the
`self-refine` program imports this at start-up.
"""

from __future__ import annotations

import argparse
import stat
import sys
from typing import Any

from self_refine.context import RefineContext
from self_refine.errors import ConfigError
from self_refine.redact import redact, terminal_safe

__all__ = [
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "add_connection_options",
    "check_connection",
    "check_settings",
    "print_error",
    "read_key_file",
    "trace_metadata",
    "warn_key_on_command_line",
]

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
        help="most tokens one model reply may have (default: 1024)",
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


def check_settings(settings: dict[str, Any]) -> RefineContext:
    """The settings as a RefineContext; ConfigError, naming the flag, for those it refuses."""
    try:
        return RefineContext(**settings)
    except ConfigError as error:
        name, _, rest = str(error).partition(" ")
        if name not in settings:
            raise
        raise ConfigError(f"--{name.replace('_', '-')} {rest}") from None


_KEY_FILE_LIMIT = 4096  # bytes: far more than any API key, far less than a wrong file


def check_connection(args: argparse.Namespace) -> None:
    """Raise ConfigError for out-of-range retry or timeout options, or an unusable API key.

    A key from --api-key-file is read here into `args.api_key`.
    """
    check_settings(
        {"max_retries": args.max_retries, "timeout": args.timeout, "max_tokens": args.max_tokens}
    )
    if args.api_key is not None and not args.api_key.strip():
        raise ConfigError("--api-key is empty: give the key, or leave --api-key out")
    if args.api_key is None and getattr(args, "api_key_file", None) is not None:
        args.api_key = read_key_file(args.api_key_file)


def warn_key_on_command_line(args: argparse.Namespace) -> None:
    """Warn, once the command is about to work, that --api-key is visible to other users."""
    if getattr(args, "api_key", None) is not None and getattr(args, "api_key_file", None) is None:
        print(
            "self-refine: warning: a key given with --api-key is visible to other users of "
            "this machine (ps, /proc/PID/cmdline) while the command runs; set OPENAI_API_KEY "
            "or use --api-key-file PATH instead",
            file=sys.stderr,
        )


def read_key_file(path: str) -> str:
    """The API key held in a file (or a pipe, e.g. `--api-key-file <(pass show openai)`)."""
    from self_refine.cli.paths import read_capped

    flag = f"--api-key-file {path}"
    data, mode = read_capped(
        path,
        flag,
        _KEY_FILE_LIMIT,
        kind="the file holding the key",
        too_big="too long for a key: check the path",
    )
    try:
        lines = [line.strip() for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        raise ConfigError(f"{flag} is not UTF-8 text: put the key alone in the file") from None
    if len(lines) != 1:
        held = "nothing" if not lines else f"{len(lines)} lines"
        raise ConfigError(f"{flag} holds {held}: put the key alone on one line")
    if stat.S_ISREG(mode) and mode & (stat.S_IRGRP | stat.S_IROTH):
        print(
            f"self-refine: warning: {path} can be read by other users; chmod 600 {path}",
            file=sys.stderr,
        )
    return lines[0]


def trace_metadata(context: RefineContext) -> dict[str, Any]:
    """What a trace of this run is labelled with: its profile and model names."""
    model = context.model
    return {
        "profile": context.profile,
        "generator_model": context.generator_model or model,
        "critic_model": context.critic_model or model,
        "refiner_model": context.refiner_model or model,
    }


def print_error(error: BaseException, args: argparse.Namespace) -> None:
    """Print the error on one line, secrets masked and control characters shown as escapes.

    An error can quote a server's reply or the input; an escape sequence in
    either must not act on the terminal.
    """
    text = redact(" ".join(str(error).split()), [getattr(args, "api_key", None)])
    text = terminal_safe(text) or f"{type(error).__name__}, with no message"
    print(f"self-refine: error: {text}", file=sys.stderr)
