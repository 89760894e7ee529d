"""Command-line options for reaching models safely: retries, timeout, API key; masked errors.

Light imports only: the `self-refine` program imports this at start-up.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from self_refine.errors import ConfigError
from self_refine.redact import redact

__all__ = ["add_connection_options", "check_connection", "print_error", "trace_metadata"]


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """Add --max-retries, --timeout and --api-key."""
    parser.add_argument(
        "--max-retries",
        type=int,
        help="retries of a failed model call, with exponential backoff and jitter (client: 2)",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds a model request may take (client default: 600)"
    )
    parser.add_argument(
        "--api-key",
        help="API key for the model endpoint (default: env OPENAI_API_KEY); used for the "
        "calls only, never stored",
    )


def check_connection(args: argparse.Namespace) -> None:
    """Raise ConfigError for out-of-range retry, timeout or key options."""
    if args.max_retries is not None and not 0 <= args.max_retries <= 100:
        raise ConfigError(f"--max-retries must be between 0 and 100, got {args.max_retries}")
    if args.timeout is not None and not args.timeout > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.api_key is not None and not args.api_key.strip():
        raise ConfigError("--api-key is empty: give the key, or leave --api-key out")
    budget = getattr(args, "max_tokens_total", None)
    if budget is not None and budget < 1:
        raise ConfigError(f"--max-tokens-total must be >= 1, got {budget}")


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
