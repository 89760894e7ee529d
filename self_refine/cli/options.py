"""Command-line options for reaching models safely: retries, timeout, API key; masked errors.

Their ranges are RefineContext's, checked by building one (`check_settings`),
with the error naming the command-line flag. Light imports only: the
`self-refine` program imports this at start-up.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from self_refine.context import RefineContext
from self_refine.errors import ConfigError
from self_refine.redact import redact

__all__ = [
    "add_connection_options",
    "check_connection",
    "check_settings",
    "print_error",
    "trace_metadata",
]


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """Add --max-retries, --timeout, --max-tokens and --api-key."""
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
    parser.add_argument(
        "--api-key",
        help="API key for the model endpoint (default: env OPENAI_API_KEY); used for the "
        "calls only, never stored",
    )


def check_settings(settings: dict[str, Any]) -> None:
    """Raise ConfigError, naming the flag, for settings that RefineContext refuses."""
    try:
        RefineContext(**settings)
    except ConfigError as error:
        name, _, rest = str(error).partition(" ")
        if name not in settings:
            raise
        raise ConfigError(f"--{name.replace('_', '-')} {rest}") from None


def check_connection(args: argparse.Namespace) -> None:
    """Raise ConfigError for out-of-range retry or timeout options, or an empty API key."""
    check_settings(
        {"max_retries": args.max_retries, "timeout": args.timeout, "max_tokens": args.max_tokens}
    )
    if args.api_key is not None and not args.api_key.strip():
        raise ConfigError("--api-key is empty: give the key, or leave --api-key out")


def trace_metadata(settings: dict[str, Any]) -> dict[str, Any]:
    """What a trace of this run is labelled with: its profile and model names."""
    model = settings.get("model")
    return {
        "profile": settings.get("profile"),
        "generator_model": model,
        "critic_model": settings.get("critic_model") or model,
        "refiner_model": settings.get("refiner_model") or model,
    }


def print_error(error: BaseException, args: argparse.Namespace) -> None:
    """Print the error on one line, with any secret in it masked."""
    text = redact(" ".join(str(error).split()), [getattr(args, "api_key", None)])
    print(f"self-refine: error: {text}", file=sys.stderr)
