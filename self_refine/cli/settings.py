"""What the settings flags of `run`, `resume` and `batch` mean: one `RefineContext`.

The flags are read into the run's settings (`settings_from_flags`), checked as RefineContext
checks them, the error naming the flag; `resume` reads only the flags given
(`given_settings`), which the graph's door lays over the settings the thread keeps.
The connection options (retries, timeout, API key) are checked here too. Every check
runs before any model call and before the program writes anything. Heavy imports
happen inside the functions.
"""

from __future__ import annotations

import argparse
import os
import socket
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlparse

from self_refine.errors import ConfigError
from self_refine.redact import redact_url
from self_refine.settings.fields import (
    DEFAULT_STRATEGY,
    FIELD_NAMES,
    ROLE_MODEL_FIELDS,
    RefineContext,
    StrategyRow,
)

__all__ = [
    "build_graph",
    "check_connection",
    "check_reachable",
    "check_settings",
    "critic_list",
    "flagged",
    "given_settings",
    "read_key_file",
    "say_auto",
    "settings_from_flags",
    "warn_key_on_command_line",
]


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags give, by their names in RefineContext, checked.

    The base URL is the flag, else OPENAI_BASE_URL; the API key is the flag's (or its
    file's), else the environment's at call time.
    """
    check_connection(args)
    given = {
        name: value for name in FIELD_NAMES if (value := getattr(args, name, None)) is not None
    }
    base_url = getattr(args, "base_url", None) or os.environ.get("OPENAI_BASE_URL")
    if base_url:
        given["base_url"] = base_url
    _refuse_blank_models(given)
    if "critics" in given:
        given["critics"] = critic_list(given["critics"])
    check_settings(given)
    return given


def settings_from_flags(args: argparse.Namespace) -> RefineContext:
    """The run's settings: the settings flags given, over the defaults."""
    return check_settings(given_settings(args))


def check_settings(settings: dict[str, Any]) -> RefineContext:
    """The settings as a RefineContext; ConfigError, naming the flag, for those it refuses."""
    try:
        return RefineContext(**settings)
    except ConfigError as error:
        raise flagged(error, settings) from None


def flagged(error: ConfigError, given: Mapping[str, Any]) -> ConfigError:
    """The error as the command line says it: the setting it names first by its flag, when
    a flag gave that setting (`given`: the flags' settings, `given_settings`)."""
    name, _, rest = str(error).partition(" ")
    if name not in given:
        return error
    return ConfigError(f"--{name.replace('_', '-')} {rest}")


def _refuse_blank_models(settings: dict[str, Any]) -> None:
    """Refuse an empty or blank model name, which would otherwise reach the graph."""
    for key in ("model", *ROLE_MODEL_FIELDS):
        value = settings.get(key)
        if value is not None and not str(value).strip():
            flag = "--" + key.replace("_", "-")
            raise ConfigError(
                f"{flag} is empty: name a model (e.g. {flag} offline, {flag} gpt-4o-mini), "
                "or leave the flag out"
            )


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


def warn_key_on_command_line(args: argparse.Namespace) -> None:
    """Warn, once the command is about to work, that --api-key is visible to other users."""
    if getattr(args, "api_key", None) is not None and getattr(args, "api_key_file", None) is None:
        print(
            "self-refine: warning: a key given with --api-key is visible to other users of "
            "this machine (ps, /proc/PID/cmdline) while the command runs; set OPENAI_API_KEY "
            "or use --api-key-file PATH instead",
            file=sys.stderr,
        )


def warn_unchecked(critics: list[Any], judge: tuple[str, ...], reference: Any) -> None:
    """Say, in one line, which verifiers of the run have nothing to check and how to fix it.

    The run still starts, judged by its other critics: a run whose critics could judge
    nothing is refused before this (`CriticPlan.check`).
    """
    from self_refine.critics import unchecked_verifiers

    idle = unchecked_verifiers([*critics, *judge], reference)
    if not idle:
        return
    judging = " and ".join(str(c) for c in critics if c not in idle)
    print(
        f"self-refine: note: {'; '.join(idle.values())}: without it the "
        f"{' and '.join(idle)} verifier checks nothing, and the {judging} critic alone "
        "judges the drafts; give --reference to check them",
        file=sys.stderr,
    )


_OTHER_STRATEGY: dict[StrategyRow, str] = {
    "verifier": "--strategy refine for the paper's loop",
    "critic": "--strategy sample for fresh drafts, best-of-N",
    "answer": "--critics llm for the paper's loop",
}
"""What the line that names a run's default strategy offers instead, by the row that took it."""


def say_auto(rows: Iterable[StrategyRow | None]) -> None:
    """Say, in one line, which strategy the door took for runs whose settings said "auto",
    and why: `rows`, the row of `DEFAULT_STRATEGY` each run's door took (None: the run
    named its strategy)."""
    taken = Counter(row for row in rows if row is not None)
    if len(taken) == 1:
        (row,) = taken
        strategy, why = DEFAULT_STRATEGY[row]
        other = _OTHER_STRATEGY.get(row)
        shown = f"{strategy}, vote, no critic" if row == "answer" else strategy
        said = f"{shown} ({why}{'; ' + other if other else ''})"
    elif taken:
        said = "; ".join(
            f"{DEFAULT_STRATEGY[row][0]} for {count} ({DEFAULT_STRATEGY[row][1]})"
            for row, count in taken.items()
        )
        said += "; --strategy names one for every item"
    else:
        return
    print(f"self-refine: strategy {said}", file=sys.stderr, flush=True)


def offline_writes(context: RefineContext) -> bool:
    """Whether the offline stand-in writes a run's drafts (as generator or refiner)."""
    writers = (context.generator_model or context.model, context.refiner_model or context.model)
    return any((name or "").partition(":")[0].strip() == "offline" for name in writers)


def warn_offline_sampling(context: RefineContext) -> None:
    """Say that the offline stand-in cannot sample, when the run asks it for several drafts."""
    if context.strategy == "refine" and context.candidates == 1:
        return
    if not offline_writes(context):
        return
    asked = f"--strategy {context.strategy}" if context.strategy != "refine" else ""
    asked = asked or f"--candidates {context.candidates}"
    print(
        f"self-refine: note: the offline stand-in writes the same draft every time, so {asked} "
        "gets no new drafts from it: read this run as a demo of the steps, not as advice on "
        "strategies; use --model local or a served model to compare them",
        file=sys.stderr,
    )


def critic_list(text: str) -> list[str]:
    """The names given to --critics, checked as the graph checks them."""
    from self_refine.critics import critic_names, resolve_critics
    from self_refine.errors import ConfigError

    names = critic_names(text)
    try:
        resolve_critics(names)
    except ConfigError as error:
        raise ConfigError(f"--critics {text!r}: {error}") from None
    return names


def check_reachable(context: RefineContext) -> None:
    """Fail fast, before any model call, when the server at the base URL cannot be reached.

    The base URL is the context's, else OPENAI_BASE_URL; runs that use only
    the offline model have their URL's form checked, but never connect.
    """
    base_url = context.base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        return
    shown = redact_url(base_url)
    source = "OPENAI_BASE_URL" if base_url == os.environ.get("OPENAI_BASE_URL") else "--base-url"
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"{source} must look like http://HOST:PORT/v1, got {shown!r}")
    models = [getattr(context, name) for name in ("model", *ROLE_MODEL_FIELDS)]
    if all(model in (None, "offline") for model in models):
        return
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=5).close()
    except OSError as error:
        raise RuntimeError(
            f"cannot reach {shown} ({error.strerror or error}): start the server or fix {source}"
        ) from None


def build_graph(response_format: dict[str, Any] | None = None) -> Any:
    """The uncompiled graph of the command line: its models and settings come with the context.

    `response_format` is the JSON schema of a typed answer (`--response-format`).
    """
    from self_refine.graphs import create_self_refine_graph

    return create_self_refine_graph(None, response_format=response_format)
