"""What the settings flags of `run` and `batch` mean: their checks, --reference, the graph.

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
from self_refine.redact import redact_url

__all__ = [
    "SETTING_KEYS",
    "UsageError",
    "build_graph",
    "check_critics",
    "check_reachable",
    "critic_list",
    "read_reference",
    "run_settings",
]

SETTING_KEYS = (
    "model",
    "critic_model",
    "refiner_model",
    "base_url",
    "max_iterations",
    "score_threshold",
    "patience",
    "history_window",
    "select",
    "profile",
    "critics",
    "max_retries",
    "timeout",
    "max_tokens",
    "max_tokens_total",
)
"""The settings a thread runs with, saved beside its checkpoints for `resume`."""


class UsageError(Exception):
    """A command-line mistake; exit code 2."""


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings flags as a checked dict, with the effective base URL (flag, else env)."""
    settings = {key: getattr(args, key) for key in SETTING_KEYS}
    settings["base_url"] = args.base_url or os.environ.get("OPENAI_BASE_URL") or None
    check_connection(args)
    _refuse_blank_models(settings)
    if settings["critics"] is not None:
        settings["critics"] = critic_list(settings["critics"])
    check_settings(settings)
    return settings


def _refuse_blank_models(settings: dict[str, Any]) -> None:
    """Refuse an empty or blank model name, which would otherwise reach the graph."""
    for key in ("model", "critic_model", "refiner_model"):
        value = settings.get(key)
        if value is not None and not str(value).strip():
            flag = "--" + key.replace("_", "-")
            raise UsageError(
                f"{flag} is empty: name a model (e.g. {flag} offline, {flag} gpt-4o-mini), "
                "or leave the flag out"
            )


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


def _read_reference_file(path: str, source: str) -> str:
    """The text of a --reference file: a regular file (or a pipe) of UTF-8 text, 1 MB at most."""
    from self_refine.cli.paths import read_capped

    data, _ = read_capped(
        path,
        source,
        MAX_REFERENCE_BYTES,
        kind="a JSON file",
        too_big="a reference is stored with the thread: keep it to what the verifiers need",
    )
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


def check_critics(settings: dict[str, Any], reference: Any) -> None:
    """Fail before any model call when the critics cannot judge drafts for this reference."""
    from self_refine.critics import resolve_critics
    from self_refine.prompts import get_profile

    names = settings.get("critics") or get_profile(settings["profile"]).critics
    resolve_critics(names).check(reference)


def check_reachable(settings: dict[str, Any]) -> None:
    """Fail fast, before any model call, when the server at the base URL cannot be reached.

    The base URL is the settings', else OPENAI_BASE_URL; runs that use only
    the offline model have their URL's form checked, but never connect.
    """
    base_url = settings.get("base_url") or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        return
    shown = redact_url(base_url)
    source = "OPENAI_BASE_URL" if base_url == os.environ.get("OPENAI_BASE_URL") else "--base-url"
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UsageError(f"{source} must look like http://HOST:PORT/v1, got {shown!r}")
    models = [settings.get(role) for role in ("model", "critic_model", "refiner_model")]
    if all(model in (None, "offline") for model in models):
        return
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=5).close()
    except OSError as error:
        raise RuntimeError(
            f"cannot reach {shown} ({error.strerror or error}): start the server or fix {source}"
        ) from None


def build_graph(settings: dict[str, Any], api_key: str | None = None) -> Any:
    """The uncompiled graph for these settings; bad models, profiles, missing keys fail here."""
    from self_refine.context import RefineContext
    from self_refine.graphs import Roles, create_self_refine_graph
    from self_refine.models.resolve import resolve_model

    def model(name: str | None) -> Any:
        if not name:
            return None
        return resolve_model(
            name,
            base_url=settings["base_url"],
            timeout=settings.get("timeout"),
            max_retries=settings.get("max_retries"),
            api_key=api_key,
            max_tokens=settings.get("max_tokens"),
        )

    return create_self_refine_graph(
        model(settings["model"]),
        roles=Roles(
            critic=model(settings["critic_model"]), refiner=model(settings["refiner_model"])
        ),
        critics=settings.get("critics") or (),
        settings=RefineContext(
            max_iterations=settings["max_iterations"],
            score_threshold=settings["score_threshold"],
            patience=settings["patience"],
            history_window=settings["history_window"],
            select=settings["select"],
            profile=settings["profile"],
            max_tokens_total=settings.get("max_tokens_total"),
        ),
    )
