"""What the settings flags of `run` and `batch` mean: the run's context, --reference, the graph.

Every check here runs before any model call and before the program writes
anything. Heavy imports happen inside the functions.
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any
from urllib.parse import urlparse

from self_refine.cli.options import check_connection, check_settings
from self_refine.context import FIELD_NAMES, ROLE_MODEL_FIELDS, RefineContext
from self_refine.redact import redact_url, url_has_password

__all__ = [
    "RESPONSE_FORMAT_KEY",
    "UsageError",
    "build_graph",
    "check_reachable",
    "check_start",
    "critic_list",
    "read_reference",
    "read_response_format",
    "run_context",
    "uses_local_model",
]


class UsageError(Exception):
    """A command-line mistake; exit code 2."""


def run_context(args: argparse.Namespace, kept: dict[str, Any] | None = None) -> RefineContext:
    """The run's settings: the settings flags given, over `kept` (a thread's) or the defaults.

    The base URL is the flag, else OPENAI_BASE_URL, else the kept one; the API key
    is the flag's (or its file's), else the environment's at call time. Checked as
    RefineContext checks them, the error naming the flag.
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
    if kept and "base_url" not in given and url_has_password(kept.get("base_url") or ""):
        raise UsageError(
            "the thread's base URL carries a password, which is never stored: give it "
            "again with --base-url (or OPENAI_BASE_URL)"
        )
    return check_settings({**(kept or {}), **given})


def _refuse_blank_models(settings: dict[str, Any]) -> None:
    """Refuse an empty or blank model name, which would otherwise reach the graph."""
    for key in ("model", *ROLE_MODEL_FIELDS):
        value = settings.get(key)
        if value is not None and not str(value).strip():
            flag = "--" + key.replace("_", "-")
            raise UsageError(
                f"{flag} is empty: name a model (e.g. {flag} offline, {flag} gpt-4o-mini), "
                "or leave the flag out"
            )


def uses_local_model(context: RefineContext) -> bool:
    """True when a role runs the embedded local model (one call at a time, slow on a CPU)."""
    models = [getattr(context, name) or "" for name in ("model", *ROLE_MODEL_FIELDS)]
    return any(m == "local" or m.startswith("local:") for m in models)


def critic_list(text: str) -> list[str]:
    """The names given to --critics, checked as the graph checks them."""
    from self_refine.critics import critic_names, resolve_critics
    from self_refine.errors import ConfigError

    names = critic_names(text)
    try:
        resolve_critics(names)
    except ConfigError as error:
        raise UsageError(f"--critics {text!r}: {error}") from None
    return names


MAX_REFERENCE_BYTES = 1_000_000
"""Largest --reference @file read: a reference is stored in the thread's checkpoints."""


def _read_reference_file(
    path: str,
    source: str,
    too_big: str = "a reference is stored with the thread: keep it to what the verifiers need",
) -> str:
    """The text of a --reference file: a regular file (or a pipe) of UTF-8 text, 1 MB at most."""
    from self_refine.cli.paths import read_capped

    data, _ = read_capped(path, source, MAX_REFERENCE_BYTES, kind="a JSON file", too_big=too_big)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{source} is not UTF-8 text (byte {error.start}): save it as UTF-8 JSON"
        ) from None


def read_reference(text: str | None) -> dict[str, Any] | None:
    """Read --reference: a JSON object, or @path to a file holding one."""
    import json

    if text is None:
        return None
    source = "--reference"
    if text.startswith("@"):
        source = f"--reference file {text[1:]!r}"
        text = _read_reference_file(text[1:], source)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"{source} is not valid JSON: {error.msg} (column {error.colno})"
        ) from None
    except RecursionError:
        raise UsageError(f"{source} is JSON nested too deeply: flatten it") from None
    if not isinstance(value, dict):
        raise UsageError(f'{source} must be a JSON object such as \'{{"answer": "42"}}\'')
    return value


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
        raise UsageError(f"{source} must look like http://HOST:PORT/v1, got {shown!r}")
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


RESPONSE_FORMAT_KEY = "response_format"
"""Where a thread's settings row keeps the JSON schema its answer was typed with."""


def read_response_format(path: str | None) -> dict[str, Any] | None:
    """Read --response-format: a file holding a JSON schema (an object), checked as one."""
    import json

    from self_refine.critics.typed import ResponseFormat
    from self_refine.errors import ConfigError

    if path is None:
        return None
    source = f"--response-format file {path!r}"
    text = _read_reference_file(path, source, "a schema goes with every request: keep it small")
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{source} is not valid JSON: {error.msg} (line {error.lineno})") from None
    except RecursionError:
        raise UsageError(f"{source} is JSON nested too deeply: flatten it") from None
    if not isinstance(schema, dict):
        raise UsageError(f'{source} must hold a JSON schema object, e.g. {{"type": "object"}}')
    try:
        ResponseFormat(schema)
    except ConfigError as error:
        raise UsageError(f"{source}: {error}") from None
    return schema


def check_start(graph: Any, context: RefineContext, payload: dict[str, Any]) -> None:
    """Fail before any model call or write when a run of `context` cannot start on `payload`.

    Unknown profiles, critics that cannot judge the reference, model strings of no
    known form and missing keys are found here.
    """
    graph.loop.check_start(payload, context, saved=True)
