"""What a quality results document says besides the figures: how it was made, examples.

The command (an API key never written), the commit, the machine, the model and its
file's sha256, the settings, and a few items whose answer refinement changed.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from self_refine.prompts.render import DEFAULT_REFINE_FORM

__all__ = [
    "add_model_options",
    "document",
    "examples_of",
    "model_meta",
    "shown_arguments",
]


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The options that name the model a quality command measures, and reach it."""
    parser.add_argument("--model", default="local", help="model string (default: local)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server's base URL")
    parser.add_argument(
        "--api-key",
        default=os.environ.get("OPENAI_API_KEY"),
        help="the server's API key (default: OPENAI_API_KEY; never written)",
    )


def model_meta(model: Any, spec: str) -> dict[str, Any]:
    """The model as the document names it: its string, name, and file with its sha256."""
    from self_refine.models.fetch import KNOWN_MODELS

    path = getattr(model, "model_path", None)
    meta: dict[str, Any] = {"model": spec, "name": getattr(model, "model_name", spec)}
    if path:
        name = Path(path).name
        known = [m for m in KNOWN_MODELS.values() if m.filename == name]
        meta["file"] = name
        meta["sha256"] = known[0].sha256 if known else _sha256(Path(path))
    return meta


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while block := data.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def document(
    args: argparse.Namespace,
    model: Any,
    results: dict[str, Any],
    examples: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    """The results document: how the run was made, its figures per set, its examples."""
    return {
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["python -m benchmarks.quality.run", *shown_arguments(sys.argv[1:])]),
        "commit": _recorded_commit(),
        "machine": {"cores": os.cpu_count(), "python": sys.version.split()[0]},
        "model": model_meta(model, args.model),
        "items_per_set": args.n,
        "part": args.part,
        "items": {name: f["first"]["items"] for name, f in results.items() if "first" in f},
        "cost_includes_first_draft": True,
        "k": args.k,
        "candidates": args.candidates,
        "max_tokens": args.max_tokens,
        "refine_form": args.refine_form or DEFAULT_REFINE_FORM,
        "results": results,
        "examples": examples,
    }


def _change_order(record: dict[str, Any]) -> int:
    """Made wrong first, then made right, then other changes."""
    before, after = bool(record.get("correct_first")), bool(record.get("correct_final"))
    return 0 if before and not after else 1 if after and not before else 2


def shown_arguments(argv: list[str]) -> list[str]:
    """The command's arguments without the value of --api-key (a key is never written)."""
    shown: list[str] = []
    hide_next = False
    for argument in argv:
        if hide_next:
            shown.append("***")
            hide_next = False
        elif argument.startswith("--api-key="):
            shown.append("--api-key=***")
        else:
            hide_next = argument == "--api-key"
            shown.append(argument)
    return shown


def examples_of(
    runs: dict[str, list[dict[str, Any]]], per_condition: int = 2
) -> list[dict[str, Any]]:
    """A few items whose answer changed under refinement (verifier-guided, intrinsic).

    Per condition, the items it made wrong come first, then those it made right.
    """
    chosen: list[dict[str, Any]] = []
    for condition in ("verifier", "candidates", "intrinsic"):
        changed = [r for r in runs.get(condition) or [] if r.get("answer") != r.get("first")]
        picked = sorted(changed, key=_change_order)[:per_condition]
        chosen += [{**r, "condition": condition} for r in picked]
    return [
        {
            "id": r["id"],
            "condition": r["condition"],
            "task": r.get("task", ""),
            "first": r.get("first", ""),
            "final": r.get("answer", ""),
            "correct_first": r.get("correct_first"),
            "correct_final": r.get("correct_final"),
        }
        for r in chosen
    ]


def _recorded_commit() -> str:
    from benchmarks.quality.provenance import recorded_commit

    return recorded_commit()
