"""A run's drafts as a stored thread holds them: a chain's steps and a tree's told apart."""

from __future__ import annotations

import json
from typing import Any

from self_refine.drafts import Attempt, chain_of, drafts_of, in_tree
from self_refine.nodes.ranking import chosen_attempt
from self_refine.stopping import StopView, Unchanged
from self_refine.tree import answer_draft, steps_taken

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


def _judged(score: float) -> dict[str, Any]:
    return {"feedback": ["fix it"], "score": score, "done": False, "source": "llm"}


def _reply(index: int, node: int, parent: int | None, draft: str, score: float) -> dict[str, Any]:
    rejected = {"reason": "empty", "reply": "", "detail": "no text"} if not draft else None
    return {
        "index": index,
        "draft": draft,
        "critique": _judged(score) if draft else {},
        "usage": USAGE,
        "verified": None,
        "checked": None,
        **({"rejected": rejected} if rejected else {}),
        "node": node,
        "parent": parent,
    }


def _stored(attempts: list[dict[str, Any]]) -> list[Attempt]:
    """The attempts as a checkpoint gives them back: plain JSON values."""
    return json.loads(json.dumps(attempts))  # type: ignore[no-any-return]


# A search of three steps as an earlier version wrote it: its middle step's every reply
# was rejected, so the step kept no draft (no `node` of its own) and the previous stayed.
SEARCH = _stored(
    [
        {
            "iteration": 0,
            "draft": "a",
            "critique": _judged(0.4),
            "usage": USAGE,
            "candidate": 0,
            "checked": None,
            "node": 0,
            "parent": None,
            "candidates": [_reply(1, 1, None, "b", 0.2)],
        },
        {
            "iteration": 1,
            "draft": "a",
            "critique": _judged(0.4),
            "usage": USAGE,
            "candidates": [_reply(0, 2, 0, "", 0.0), _reply(1, 3, 0, "", 0.0)],
        },
        {
            "iteration": 2,
            "draft": "c",
            "critique": _judged(0.9),
            "usage": USAGE,
            "candidate": 1,
            "checked": None,
            "node": 5,
            "parent": 0,
            "candidates": [_reply(0, 4, None, "d", 0.3)],
        },
    ]
)


def test_a_step_that_kept_no_draft_is_still_a_step_of_the_tree() -> None:
    assert in_tree(SEARCH[1])
    assert steps_taken({"attempts": SEARCH}) == "3 steps (3 refinements, 3 fresh drafts)"
    # its draft is the one before, yet another branch may do better: the run goes on
    assert Unchanged()(StopView(SEARCH[:2], 1, USAGE)) is None  # type: ignore[arg-type]


def test_a_refine_run_whose_draft_came_back_unchanged_stops() -> None:
    chain = _stored(
        [{k: v for k, v in a.items() if k not in ("node", "parent", "candidates")} for a in SEARCH]
    )
    assert not in_tree(chain[1])
    assert Unchanged()(StopView(chain[:2], 1, USAGE)) == "unchanged"  # type: ignore[arg-type]


def test_the_answer_is_the_best_of_every_node_and_a_refinement_builds_on_its_ancestors() -> None:
    assert [draft["node"] for draft in drafts_of(SEARCH)] == [0, 1, 2, 3, 4, 5]
    best = chosen_attempt(SEARCH, "best")
    assert best is SEARCH[2]
    found = answer_draft({"attempts": SEARCH, "answer": "c", "best": best})
    assert found is not None
    assert found.words() == "step 2, candidate 1: node 5, a refinement of node 0"
    assert [a["draft"] for a in chain_of(5, SEARCH)] == ["a", "c"]
    assert chain_of(None, SEARCH) == []
