"""critics="none": a vote over samples that no critic judges (self-consistency at a budget)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph, refine
from self_refine.errors import ConfigError
from self_refine.settings.call import from_kept
from tests.fakes import ByCandidate, FakeChatModel, critique

TASK = "A box holds 15 cookies. Ben buys 3 boxes and eats 5. How many cookies are left?"
ANSWERS = ["45", "40", "40", "35", "40", "41", "38", "40", "45", "39"]


def _model(critic: bool = False) -> FakeChatModel:
    """Drafts stating the answers of ANSWERS in turn (then 40); a critic only if asked for."""
    answers = iter(ANSWERS)

    def draft(messages: Sequence[BaseMessage]) -> str:
        return f"15 times 3, less the 5 eaten. The answer is {next(answers, '40')}."

    script: dict[str, Any] = {"generator": [draft]}
    if critic:
        script["critic"] = [critique(["Check the sum."], score=0.5)]
    return FakeChatModel(script=script)


def _model_by_candidate() -> FakeChatModel:
    """The drafts of `_model`, each candidate's its own whatever order the branches ask in."""
    drafts = [f"15 times 3, less the 5 eaten. The answer is {a}." for a in ANSWERS]
    return FakeChatModel(script={"generator": [ByCandidate(drafts, width=2)]})


def _vote(**more: Any) -> dict[str, Any]:
    return {"profile": "math", "strategy": "sample", "select": "vote", "critics": "none", **more}


def _drafts(result: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for attempt in result["attempts"]:
        found += [attempt, *attempt.get("candidates", [])]
    return sorted(found, key=lambda d: d["node"])


def test_samples_are_drawn_with_no_critic_call_and_the_most_stated_answer_answers() -> None:
    model = _model_by_candidate()  # each branch its own drafts, whichever asks first
    result = refine(TASK, model=model, **_vote(max_iterations=3, candidates=2))
    assert [sent.role for sent in model.requests] == ["generator"] * 8  # 4 steps of 2
    assert result["stop_reason"] == "max_iterations"
    assert result["answer"].endswith("The answer is 40.")
    assert result["attempts"][0]["draft"].endswith("The answer is 45.")
    drafts = _drafts(result)
    assert len(drafts) == 8 and all(d["parent"] is None for d in drafts)
    assert {d["critique"]["source"] for d in drafts} == {"none"}
    assert all(d["critique"]["score"] is None and not d["critique"]["feedback"] for d in drafts)
    # The tokens are the samples' alone: 8 replies, nothing else.
    one_reply = model.input_tokens + model.output_tokens
    assert result["usage"]["total_tokens"] == 8 * one_reply


def test_a_given_draft_is_recorded_uncritiqued_and_samples_follow() -> None:
    model = _model()
    given = "The boxes hold 45 and 5 are eaten. The answer is 40."
    result = refine(TASK, model=model, draft=given, **_vote(max_iterations=2))
    assert {sent.role for sent in model.requests} == {"generator"}
    assert result["attempts"][0]["draft"] == given
    assert result["attempts"][0]["critique"]["source"] == "none"
    assert result["answer"] == given  # 40: the given draft and the third sample


def test_at_a_token_budget_a_vote_without_a_critic_draws_more_samples_than_one_with() -> None:
    budget = 300
    model = _model()
    result = refine(
        TASK, model=model, **_vote(max_iterations=50, candidates=4, max_tokens_total=budget)
    )
    assert result["stop_reason"] == "token_budget"
    one_reply = model.input_tokens + model.output_tokens
    spent = result["usage"]["total_tokens"]
    # A step starts only when a reply fits: the run ends within one reply of its budget.
    assert budget - one_reply < spent <= budget
    assert {sent.role for sent in model.requests} == {"generator"}
    samples = len(_drafts(result))
    assert samples == spent // one_reply == budget // one_reply

    judged = _model(critic=True)
    critiqued = refine(
        TASK,
        model=judged,
        **_vote(critics="llm", max_iterations=50, candidates=4, max_tokens_total=budget),
    )
    assert critiqued["stop_reason"] == "token_budget"
    assert len(_drafts(critiqued)) == samples // 2, "each critique costs what a sample does"


def test_a_resumed_vote_draws_the_samples_an_uninterrupted_one_did_and_calls_no_critic() -> None:
    settings = RefineContext(**_vote(max_iterations=3, candidates=2))
    straight = create_self_refine_graph(_model_by_candidate(), settings=settings).compile()
    whole = straight.invoke({"task": TASK})

    model = _model_by_candidate()
    graph = create_self_refine_graph(model, settings=settings).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "vote"}}
    graph.invoke({"task": TASK}, config, interrupt_before=["pick"])
    paused = 0
    while graph.get_state(config).next:
        paused += 1
        # no context: the thread's kept settings resume it, a step at a time
        graph.invoke(None, config, interrupt_before=["pick"])
    resumed = graph.get_state(config).values
    assert paused >= 3
    assert [(d["node"], d["draft"]) for d in _drafts(resumed)] == [
        (d["node"], d["draft"]) for d in _drafts(whole)
    ]
    assert resumed["answer"] == whole["answer"] and resumed["stop_reason"] == "max_iterations"
    assert {sent.role for sent in model.requests} == {"generator"}


def test_the_graph_s_critics_none_samples_and_votes_when_the_call_asks_for_a_vote() -> None:
    model = _model()
    graph = create_self_refine_graph(model, critics=["none"]).compile()
    context = {"profile": "math", "strategy": "sample", "select": "vote", "max_iterations": 3}
    result = graph.invoke({"task": TASK}, context=context)
    assert result["answer"].endswith("The answer is 40.")
    assert {sent.role for sent in model.requests} == {"generator"}


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"strategy": "refine"}, 'strategy "refine" refines: use strategy "sample"'),
        ({"strategy": "search"}, 'strategy "search" refines: use strategy "sample"'),
        ({"select": "best"}, 'select "best" has nothing to rank by: use select "vote"'),
        ({"select": "last"}, 'select "last" has nothing to rank by: use select "vote"'),
        ({"score_threshold": 0.9}, "leave score_threshold out"),
        ({"patience": 2}, "leave patience out"),
        ({"critics": "none,llm"}, "name it alone"),
        ({"critics": ["answer", "none"]}, "name it alone"),
    ],
)
def test_a_run_without_a_critic_that_makes_no_sense_is_refused_before_any_model_call(
    settings: dict[str, Any], says: str
) -> None:
    model = _model(critic=True)
    with pytest.raises(ConfigError, match='critics "none"') as refused:
        refine(TASK, model=model, context=RefineContext(**_vote(**settings)))
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)
    assert model.requests == []


def test_the_graph_s_critics_none_is_refused_with_settings_that_do_not_vote() -> None:
    model = _model()
    graph = create_self_refine_graph(model, critics=["none"]).compile()
    with pytest.raises(ConfigError, match='select "best" has nothing to rank by'):
        graph.invoke({"task": TASK}, context={"strategy": "sample"})  # prose: no answer
    with pytest.raises(ConfigError, match='strategy "search" refines'):
        refine(TASK, model=model, critics="none", profile="math", strategy="search")
    assert model.requests == []


def test_the_critics_field_keeps_none_for_the_thread() -> None:
    settings = RefineContext(**_vote())
    assert settings.critics == ("none",)
    assert from_kept(settings.kept()) == settings


def test_naming_no_critic_alone_on_a_profile_that_states_answers_takes_the_vote() -> None:
    model = _model()
    result = refine(TASK, model=model, profile="math", critics="none", max_iterations=3)
    assert [sent.role for sent in model.requests] == ["generator"] * 4
    assert result["answer"].endswith("The answer is 40."), "two of the four drafts say 40"
