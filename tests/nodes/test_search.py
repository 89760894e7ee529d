"""Sample and search: the tree of drafts, the bandit's choices, the budget, resumes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import create_self_refine_graph
from self_refine.nodes.search import initial_search, plan_step, record_step
from tests.fakes import ByCandidate, FakeChatModel, critique

WORDS = ["train", "pencil", "compass", "river"]
TASK = f"Write one or two natural sentences that use all of these words: {', '.join(WORDS)}."
REFERENCE = {"concepts": WORDS}
FINDING = {"feedback": ['Use the word "compass".'], "verified": False, "source": "concepts"}
"""What the concepts verifier says of a draft it failed: which word is missing."""
FRESH = ["A train crossed the river.", "The pencil fell in the river.", "A train stopped."]


def _fresh(messages: Sequence[BaseMessage]) -> str:
    """Fresh drafts: each uses two words at most, so none is right."""
    _fresh.calls += 1  # type: ignore[attr-defined]
    return FRESH[_fresh.calls % len(FRESH)]  # type: ignore[attr-defined]


def _refine(messages: Sequence[BaseMessage]) -> str:
    """A refinement adds the words the feedback names to the draft it was given, or (asked
    in the fresh form, no draft given) to a sentence of the words the feedback says to keep."""
    text = "\n".join(m.text for m in messages)
    drafts = [m.text for m in messages if m.type == "ai"]
    missing = re.findall(r'Use the word "(\w+)"', text)
    if not drafts:
        kept = re.findall(r"Keep the words already used: ([\w, ]+)\.", text)
        words = [*(kept[-1].split(", ") if kept else []), *missing]
        links = ["met the", "near the", "beside the", "by the", "and the"]
        return (
            "The "
            + " ".join(f"{w} {links[i]}" for i, w in enumerate(words[:-1]))
            + (f" {words[-1]}." if words else ".")
        )
    base = drafts[-1]
    return f"{base.rstrip('.')} with the {' and the '.join(missing)}." if missing else base


def _model() -> FakeChatModel:
    _fresh.calls = -1  # type: ignore[attr-defined]
    return FakeChatModel(script={"generator": [_fresh], "refiner": [_refine]})


def _settings(strategy: str, **more: Any) -> dict[str, Any]:
    return {
        "strategy": strategy,
        "candidates": 2,
        "max_iterations": 6,
        "critics": ["concepts"],
        "profile": "constrained_generation",
        **more,
    }


def _drafts(result: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for attempt in result["attempts"]:
        found.append(attempt)
        found += attempt.get("candidates", [])
    return sorted(found, key=lambda d: d["node"])


def test_search_refines_a_partial_draft_into_a_verified_answer_and_records_the_tree() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "s"}}
    result = graph.invoke(
        {"task": TASK, "reference": REFERENCE}, config, context=_settings("search")
    )
    assert result["stop_reason"] == "verified"
    drafts = _drafts(result)
    answer = next(d for d in drafts if d["draft"] == result["answer"])
    assert answer["parent"] is not None  # found by refining, not by sampling
    assert [d["node"] for d in drafts] == list(range(len(drafts)))
    assert all(d["parent"] is None or d["parent"] < d["node"] for d in drafts)
    search = graph.get_state(config).values["search"]
    assert search["nodes"] == len(drafts)
    assert {arm["node"] for arm in search["arms"]} <= {d["node"] for d in drafts}


def test_sample_writes_only_fresh_drafts_until_the_steps_run_out() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile()
    result = graph.invoke({"task": TASK, "reference": REFERENCE}, context=_settings("sample"))
    assert result["stop_reason"] == "max_iterations"
    assert all(d["parent"] is None for d in _drafts(result))
    assert {s.role for s in model.requests} == {"generator"}


def _model_by_candidate() -> FakeChatModel:
    """`_model`, whose fresh drafts go to each candidate whatever order the branches ask in."""
    return FakeChatModel(script={"generator": [ByCandidate(FRESH, width=2)], "refiner": [_refine]})


def test_a_resumed_search_plans_what_an_uninterrupted_one_did() -> None:
    # Every candidate finishes (no sibling stopped by the first verified one, which is a
    # race between the branches), so the two runs' trees can be compared draft for draft.
    settings = _settings("search", first_verified=False)
    straight = create_self_refine_graph(_model_by_candidate()).compile()
    whole = straight.invoke({"task": TASK, "reference": REFERENCE}, context=settings)

    graph = create_self_refine_graph(_model_by_candidate()).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "r"}}
    graph.invoke(
        {"task": TASK, "reference": REFERENCE},
        config,
        context=settings,
        interrupt_before=["pick"],
    )
    while graph.get_state(config).next:
        graph.invoke(None, config)
    resumed = graph.get_state(config).values
    assert [(d["node"], d["parent"], d["draft"]) for d in _drafts(resumed)] == [
        (d["node"], d["parent"], d["draft"]) for d in _drafts(whole)
    ]


def test_a_token_budget_holds_within_about_one_reply_with_many_candidates() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile()
    budget = 100
    result = graph.invoke(
        {"task": TASK, "reference": REFERENCE},
        context=_settings("sample", candidates=16, max_iterations=20, max_tokens_total=budget),
    )
    assert result["stop_reason"] == "token_budget"
    one_reply = model.input_tokens + model.output_tokens
    # It stops once what is left would not pay for one more reply, one reply over at most.
    assert budget - one_reply < result["usage"]["total_tokens"] <= budget + one_reply
    first, *later = result["attempts"]
    assert "candidates" not in first or not first["candidates"]  # one reply: its cost unknown


def test_the_bandit_prefers_the_fuller_draft_and_never_plans_the_same_step_twice() -> None:
    search = record_step(
        initial_search(),
        [
            {
                "index": 0,
                "node": 0,
                "parent": None,
                "draft": "a",
                "critique": FINDING,
                "usage": {},
                "verified": False,
                "checked": 0.25,
            },
            {
                "index": 1,
                "node": 1,
                "parent": None,
                "draft": "b",
                "critique": FINDING,
                "usage": {},
                "verified": False,
                "checked": 0.75,
            },
            {
                "index": 2,
                "node": 2,
                "parent": None,
                "draft": "b",
                "critique": FINDING,
                "usage": {},
                "verified": False,
                "checked": 0.75,
            },
        ],  # type: ignore[list-item]
    )
    assert [arm["node"] for arm in search["arms"]] == [0, 1]  # node 2 repeats node 1
    assert search["fresh"] == {"right": 0, "wrong": 3}
    plans = [plan_step(search, 4, may_refine=True, task=TASK, step=s) for s in range(40)]
    chosen = [branch["parent"] for plan in plans for branch in plan]
    assert chosen.count(1) > chosen.count(0)
    assert plan_step(search, 4, may_refine=True, task=TASK, step=7) == plans[7]
    assert all(
        b["parent"] is None for b in plan_step(search, 4, may_refine=False, task=TASK, step=1)
    )
    assert [b["node"] for b in plans[0]] == [3, 4, 5, 6]


def test_failed_refinements_count_against_refining_any_draft() -> None:
    arms = [{"node": n, "h": 0.75, "refined": 1} for n in range(12)]
    spent = {"fresh_tokens": 1200, "fresh": 12, "refine_tokens": 1200, "refine": 12}

    def refining(fresh_wrong: int, refine_wrong: int) -> float:
        search = {
            "arms": arms,
            "fresh": {"right": 0, "wrong": fresh_wrong},
            "refines": {"right": 0, "wrong": refine_wrong},
            "spent": spent,
            "nodes": 24,
        }
        plans = [plan_step(search, 1, may_refine=True, task=TASK, step=s) for s in range(200)]  # type: ignore[arg-type]
        return sum(plan[0]["parent"] is not None for plan in plans) / len(plans)

    # Twelve drafts to refine are one choice, not twelve lottery tickets: after fresh
    # drafts did as badly as refinements, refining is taken about as often as not ...
    assert 0.2 < refining(fresh_wrong=12, refine_wrong=12) < 0.8
    # ... and once refinements keep failing while fresh drafts have not been tried as
    # much, the search writes fresh drafts, as sampling does.
    assert refining(fresh_wrong=2, refine_wrong=40) < 0.15
    assert refining(fresh_wrong=40, refine_wrong=0) > 0.5


def test_a_search_judged_by_the_llm_critic_alone_never_refines() -> None:
    # The critic scores every draft 0.5 and asks for more: a score, no finding.
    model = FakeChatModel(
        script={
            "generator": [_fresh],
            "refiner": [_refine],
            "critic": [critique("Make it better.", score=0.5)],
        }
    )
    _fresh.calls = -1  # type: ignore[attr-defined]
    graph = create_self_refine_graph(model).compile()
    result = graph.invoke(
        {"task": TASK}, context={**_settings("search"), "critics": ["llm"], "max_iterations": 4}
    )
    drafts = _drafts(result)
    assert len(drafts) > 4  # every step was taken, each of fresh drafts
    assert all(d["parent"] is None for d in drafts)
    assert "refiner" not in {s.role for s in model.requests}


def test_a_search_refines_a_draft_a_verifier_failed_saying_what_failed() -> None:
    model = _model()
    graph = create_self_refine_graph(model).compile()
    result = graph.invoke({"task": TASK, "reference": REFERENCE}, context=_settings("search"))
    drafts = {d["node"]: d for d in _drafts(result)}
    parents = [drafts[d["parent"]] for d in drafts.values() if d["parent"] is not None]
    assert parents
    for parent in parents:
        assert parent["critique"]["source"] == "concepts"
        assert parent["critique"]["verified"] is False
        assert parent["critique"]["feedback"]  # the words it missed
