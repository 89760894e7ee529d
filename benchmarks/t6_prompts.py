"""Target 6 (reference rows, round one's target 4): prompt tokens and reusable prefixes.

How many prompt tokens an item sends, and how much of each request a provider's cache can reuse.

Three items run 5 refine iterations each through the real `ChatOpenAI` client
against the stand-in server (2 KB drafts, 2 KB critiques), once with the full
history in the refine prompt and once with `history_window=2`. The server
records every request body as the client sent it. For each request, the
cacheable fraction is the longest byte-identical prefix it shares with the
thread's previous request of the same role (its messages, serialized as JSON),
over its own length: what provider prompt caching can reuse.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from statistics import mean
from typing import Any

from benchmarks.openai_stub import serve
from benchmarks.report import Row, suite_main

ITERATIONS = 5
TASKS = (
    "Write a two-kilobyte essay on why cities plant trees along streets.",
    "Write a two-kilobyte product description for a folding bicycle.",
    "Write a two-kilobyte summary of how vaccines train the immune system.",
)
_ROLE = re.compile(r"^Role: (\w+)")


def _serialized(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


def _role(messages: list[dict[str, Any]]) -> str:
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    found = _ROLE.search(system)
    return found.group(1) if found else "unknown"


def _shared_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _tokens(messages: list[dict[str, Any]]) -> float:
    """Prompt tokens, estimated at 4 bytes of message text per token (no tokenizer offline)."""
    return sum(len(str(m.get("content") or "").encode()) for m in messages) / 4


def _thread_figures(requests: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Tokens of one thread, and the cacheable fraction of each request after its role's first."""
    previous: dict[str, str] = {}
    fractions: dict[str, list[float]] = {}
    for messages in requests:
        role, text = _role(messages), _serialized(messages)
        if role in previous:
            shared = _shared_prefix(previous[role], text)
            fractions.setdefault(role, []).append(shared / len(text))
        previous[role] = text
    return {"tokens": sum(_tokens(m) for m in requests), "fractions": fractions}


def _run_item(url: str, record: Path, task: str, window: int | None) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    from self_refine import refine

    model = ChatOpenAI(model="stub", base_url=url, api_key=SecretStr("-"), max_retries=0)
    result = refine(task, model=model, max_iterations=ITERATIONS, history_window=window)
    if result["iterations"] != ITERATIONS:
        raise RuntimeError(f"expected {ITERATIONS} iterations, got {result['iterations']}")
    bodies = [json.loads(line)["body"] for line in record.read_text().splitlines()]
    return _thread_figures([body["messages"] for body in bodies])


def _measure(window: int | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="self-refine-bench-") as folder:
        figures = []
        for n, task in enumerate(TASKS):
            record = Path(folder) / f"requests-{n}.jsonl"
            with serve(record=record) as url:
                figures.append(_run_item(url, record, task, window))
    return {
        "tokens": mean(f["tokens"] for f in figures),
        "refine": mean(x for f in figures for x in f["fractions"]["refiner"]),
        "critic": mean(x for f in figures for x in f["fractions"]["critic"]),
    }


def run(quick: bool) -> list[Row]:
    """Compare the full history with a window of two earlier attempts."""
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    full, windowed = _measure(None), _measure(2)
    return [
        Row(
            6,
            f"prompt tokens per item over {ITERATIONS} iterations, history_window=2",
            "tokens",
            windowed["tokens"],
            full["tokens"],
            "full history",
            "reference",
            note="tokens estimated as bytes / 4",
        ),
        Row(
            6,
            "cacheable prefix of each refine request after the first, full history (mean)",
            "fraction",
            full["refine"],
            windowed["refine"],
            "history_window=2",
            ">= 0.6 (round one)",
            full["refine"] >= 0.6,
        ),
        Row(
            6,
            "cacheable prefix of each critique request after the first, full history (mean)",
            "fraction",
            full["critic"],
            windowed["critic"],
            "history_window=2",
            "reference",
            note="a critique carries only the task and the newest draft",
        ),
    ]


if __name__ == "__main__":
    sys.exit(suite_main(run))
