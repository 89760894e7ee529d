"""What refines into a right answer: the calibration table counts each reply by its parent."""

from __future__ import annotations

from typing import Any

from benchmarks.quality.calibration import replies, table

TASK = "Write one or two natural sentences that use all of these words: dog, park, frisbee."
REFERENCE = {"concepts": ["dog", "park", "frisbee"]}


def _draft(node: int, parent: int | None, text: str, h: float, verified: bool) -> dict[str, Any]:
    return {
        "index": node,
        "node": node,
        "parent": parent,
        "draft": text,
        "critique": {"score": h, "verified": verified},
        "checked": h,
        "verified": verified,
        "usage": {"total_tokens": 10},
    }


def test_search_replies_are_counted_by_their_parent_s_score_and_form() -> None:
    root = {**_draft(0, None, "dog, park, frisbee", 0.5, False), "iteration": 0}
    listed_child = _draft(2, 0, "A dog ran in the park with a frisbee.", 1.0, True)
    step = {
        **_draft(1, None, "A dog ran.", 0.33, False),
        "iteration": 1,
        "candidates": [listed_child],
    }
    record = {
        "set": "constrained",
        "strategy": "search",
        "task": TASK,
        "reference": REFERENCE,
        "attempts": [root, step],
    }
    found = sorted(replies([record]), key=lambda r: (r["kind"], r["parent_h"] or 0))
    assert [(r["kind"], r["parent_form"], r["verified"]) for r in found] == [
        ("fresh", None, False),
        ("fresh", None, False),
        ("refine", "word list", True),  # the word list was refined into a right answer
    ]
    shown = table(found)
    assert "| constrained | search | refine | 0.50 | word list | 1 | 1 (100%" in shown


def test_a_refine_run_s_replies_refine_the_step_before() -> None:
    attempts = [
        {"iteration": 0, "draft": "A dog ran.", "critique": {"score": 0.33}, "usage": {}},
        {"iteration": 1, "draft": "A dog ran in the park.", "critique": {"score": 0.67},
         "usage": {}, "candidates": [{"index": 1, "draft": "", "critique": {}, "usage": {},
                                      "rejected": {"reason": "unchanged"}}]},
    ]  # fmt: skip
    record = {"set": "constrained", "strategy": "refine", "task": TASK,
              "reference": REFERENCE, "attempts": attempts}  # fmt: skip
    found = list(replies([record]))
    assert [r["kind"] for r in found] == ["fresh", "refine", "refine"]
    assert [r["rejected"] for r in found] == [None, None, "unchanged"]
    assert "1 unchanged" in table(found)


def test_a_search_counts_as_refine_replies_only_its_drafts_with_a_parent() -> None:
    from benchmarks.quality.curves import strategy_figures

    unchanged = {"reason": "unchanged", "reply": "x", "detail": ""}
    fresh = {"index": 1, "node": 1, "parent": None, "draft": "b", "rejected": unchanged}
    refined = {"index": 2, "node": 2, "parent": 0, "draft": "", "rejected": unchanged}
    search = {
        "settings": {"strategy": "search"},
        "budgets": [{"tokens": 1, "answer": "a", "correct": False}],
        "attempts": [
            {"iteration": 0, "draft": "a", "critique": {}, "node": 0, "parent": None},
            {"iteration": 1, "draft": "c", "critique": {}, "node": 3, "parent": None,
             "candidates": [fresh, refined]},
            # a step whose every reply was rejected keeps no node of its own
            {"iteration": 2, "draft": "c", "critique": {}, "candidates": [{**fresh, "node": 4}]},
        ],
    }  # fmt: skip
    figures = strategy_figures([search], [False], [1])
    assert figures["refine_replies"] == 1
    assert figures["unchanged_share_of_refine_replies"] == 1.0
    refine = {
        "settings": {"strategy": "refine"},
        "budgets": [{"tokens": 1, "answer": "a", "correct": False}],
        "attempts": [
            {"iteration": 0, "draft": "a", "critique": {}},
            {"iteration": 1, "draft": "a", "critique": {}, "rejected": [unchanged]},
        ],
    }
    figures = strategy_figures([refine], [False], [1])
    assert figures["refine_replies"] == 2 and figures["unchanged_share_of_refine_replies"] == 0.5
