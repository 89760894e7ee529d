"""A token budget through an OpenAI-compatible server: with 8 candidates, a run stays
within one reply of its budget, whatever its strategy."""

from __future__ import annotations

from typing import Any

import pytest

from self_refine import RefineContext, create_self_refine_graph
from self_refine.graphs.checked import recursion_limit
from self_refine.stopping import reply_cost, unasked
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = (
    "Write a short paragraph about a lighthouse keeper who finds a message in a bottle, "
    "using the words: lamp, storm, gull, rope."
)


def _replies(result: dict[str, Any]) -> list[int]:
    """What each reply of the run cost (its draft and its critique)."""
    costs = []
    for attempt in result["attempts"]:
        others = attempt.get("candidates", [])
        spent = attempt["usage"]["total_tokens"]
        costs += [c["usage"]["total_tokens"] for c in others]
        costs.append(spent - sum(c["usage"]["total_tokens"] for c in others))
    return costs


@pytest.mark.parametrize(
    ("strategy", "budget"),
    [
        ("refine", 400),
        ("refine", 600),
        ("sample", 600),
        ("search", 600),
        ("sample", 2000),
        ("search", 2000),
        ("refine", 2000),
    ],
)
def test_a_budget_run_with_eight_candidates_stays_within_one_reply_of_it(
    server: OpenAIServer, strategy: str, budget: int
) -> None:
    graph = create_self_refine_graph(None).compile()
    settings = RefineContext(
        model="openai:test-model",
        base_url=server.base_url,
        api_key="sk-test",
        candidates=8,
        max_tokens_total=budget,
        strategy=strategy,  # type: ignore[arg-type]
        max_iterations=10,
    )
    config: Any = {"recursion_limit": recursion_limit(10)}
    result = graph.invoke({"task": TASK}, config, context=settings)

    assert result["stop_reason"] == "token_budget"
    spent = result["usage"]["total_tokens"]
    assert spent == sum(_replies(result))  # every token the server counted is in the usage
    assert spent <= budget + max(_replies(result))
    attempts = result["attempts"]
    for k in range(1, len(attempts)):  # each later step's expected cost fit what was left
        before = sum(a["usage"]["total_tokens"] for a in attempts[:k])
        width = 1 + len(attempts[k].get("candidates", []))
        assert before + width * (reply_cost(attempts[:k]) or 0) <= budget
    # ... and the run stopped when not even one more reply would have fit, or when what was
    # left after its last draft could not hold the draft's critique (not asked, and said so).
    last = [attempts[-1], *attempts[-1].get("candidates", [])]
    short = any(unasked(reply["critique"]) for reply in last)
    assert short or spent + (reply_cost(attempts) or 0) > budget


def test_a_wide_budget_asks_for_several_candidates_at_once(server: OpenAIServer) -> None:
    settings = RefineContext(
        model="openai:test-model",
        base_url=server.base_url,
        api_key="sk-test",
        candidates=8,
        max_tokens_total=2000,
        strategy="sample",
        max_iterations=10,
    )
    result = create_self_refine_graph(None).compile().invoke({"task": TASK}, context=settings)
    widths = [1 + len(a.get("candidates", [])) for a in result["attempts"]]
    assert widths[0] == 1 and max(widths) > 1
