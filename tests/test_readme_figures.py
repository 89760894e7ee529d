"""Every figure of the README's performance paragraph comes from the committed results.

The paragraph is held against `benchmarks/results/latest.json` (what `make bench` last
wrote): each claim below is rebuilt from the results file and must appear in the
paragraph as written, and no number may stand in the paragraph outside those claims.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_NUMBER = re.compile(r"(?<![\w.])\d[\d,.]*\d(?![\w])|(?<![\w.,])\d(?![\w.,]?\d)")


def _paragraph() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("- **Performance**")
    return " ".join(text[start : text.index("\n\n", start)].split())


def _results() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text())
    return data


def _row(rows: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    exact = [row for row in rows if row["measure"] == prefix]
    found = exact or [row for row in rows if row["measure"].startswith(prefix)]
    assert len(found) == 1, f"{len(found)} rows start with {prefix!r}"
    return found[0]


def _claims() -> list[str]:
    results = _results()
    rows = results["rows"]

    def row(prefix: str) -> dict[str, Any]:
        return _row(rows, prefix)

    def over(prefix: str) -> str:
        found = row(prefix)
        return f"{found['value'] - found['baseline']:.2f}"

    def value(prefix: str) -> str:
        return f"{row(prefix)['value']:.2f}"

    def ratio(prefix: str) -> str:
        return f"{row(prefix)['ratio']:.2f}x"

    def share(prefix: str) -> str:
        return f"{row(prefix)['ratio']:.0%}"

    def side(n: int) -> str:
        """Whether the graph at `n` iterations is below both peers, above both or between."""
        ours = row(f"ms per refine iteration at {n} iterations, no checkpointer")["value"]
        peers = [
            row(f"the same, langgraph-reflection (create_reflection_graph), {n}")["value"],
            row(f"the same, DSPy Refine (N = {n + 1}")["value"],
        ]
        if ours < min(peers):
            return "below both peers"
        return "above both peers" if ours > max(peers) else "between the peers"

    graph10 = "ms per refine iteration at 10 iterations, no checkpointer"
    graph50 = "ms per refine iteration at 50 iterations, no checkpointer"
    sqlite50 = "ms per refine iteration at 50 iterations, SQLite"
    warm = "prompt tokens evaluated / sent, warm: after one earlier item"
    cold = "prompt tokens evaluated / sent, cold: the same prompts, nothing read before"
    return [
        f"at commit {results['commit']}, load {results['load_before']} before and "
        f"{results['load_after']} after",
        f"adds {over(graph10)} ms per iteration over a plain loop at 10 iterations and "
        f"{over(graph50)} ms at 50",
        f"at 50 iterations it is {side(50)} ({value(graph50)} ms against "
        f"{value('the same, langgraph-reflection (create_reflection_graph), 50')} and "
        f"{value('the same, DSPy Refine (N = 51')} ms), at 10 {side(10)} ({value(graph10)} "
        f"ms against {value('the same, langgraph-reflection (create_reflection_graph), 10')} "
        f"and {value('the same, DSPy Refine (N = 11')} ms)",
        f"With SQLite it adds {over('ms per refine iteration at 10 iterations, SQLite')} ms at "
        f"10 iterations and {over(sqlite50)} ms at 50 ({ratio(sqlite50)} the plain loop)",
        f"A batch of 200 items took {ratio('batch of 200 items')} the time",
        f"(the plain asyncio loop {ratio('the same batch, plain asyncio loop: every item')}, "
        f"DSPy {ratio('the same batch, DSPy Refine')}, "
        f"langgraph-reflection {ratio('the same batch, langgraph-reflection')})",
        f"spending {ratio('orchestrator CPU per model call, `self-refine batch`')} the CPU per "
        "model call of DSPy",
        f"the `ChatOpenAI` client alone spends "
        f"{ratio('orchestrator CPU per model call, plain asyncio loop')}",
        f"20,000 offline items take {value('offline batch of 20,000 tiny items')} ms each, in "
        f"{ratio('peak memory (RSS) of the 20,000-item batch')} the memory of 2,000",
        f"takes {ratio('SQLite get_state after 50')} a plain checkpoint read on SQLite and "
        f"{ratio('PostgreSQL get_state after 50')} on PostgreSQL",
        f"(100 iterations take {ratio('SQLite growth, 100 vs 50 iterations')} the file of 50)",
        f"reads {share(warm + ' (conversation form')} of the prompt tokens a refinement sends "
        f"it when its cache is warm ({share(warm + ' (single form')} in the single form) and "
        f"{share(cold + ' (conversation)')} from a cold cache",
    ]


def test_each_performance_claim_is_the_committed_results_figure() -> None:
    paragraph = _paragraph()
    missing = [claim for claim in _claims() if claim not in paragraph]
    assert missing == []


def test_no_figure_of_the_performance_paragraph_stands_outside_the_claims() -> None:
    rest = _paragraph()
    for claim in _claims():
        rest = rest.replace(claim, " ")
    assert _NUMBER.findall(rest) == []
