"""select="vote": self-consistency over a sampling run's final answers."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from self_refine import RefineContext, create_self_refine_graph, refine
from self_refine.errors import ConfigError
from self_refine.nodes.ranking import chosen_attempt
from self_refine.pages.thread import thread_view
from self_refine.prompts.profiles import MATH
from self_refine.state import Attempt, Critique
from self_refine.voting import tally
from tests.fakes import FakeChatModel, critique

TASK = "A box holds 15 cookies. Ben buys 3 boxes and eats 5. How many cookies are left?"


def _drafts(*answers: str) -> FakeChatModel:
    """A generator whose k-th draft ends with the k-th answer ("" for a draft with none)."""
    replies = iter(answers)

    def draft(messages: Sequence[BaseMessage]) -> str:
        answer = next(replies)
        steps = "15 times 3 boxes, then the cookies eaten come off."
        return f"{steps} The answer is {answer}." if answer else "I could not work it out."

    return FakeChatModel(script={"generator": [draft], "critic": [critique(score=0.5)]})


def _vote(model: FakeChatModel, **settings: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "profile": "math",
        "strategy": "sample",
        "select": "vote",
        "max_iterations": 3,
        **settings,
    }
    return dict(refine(TASK, model=model, **options))


def test_the_answer_most_drafts_state_wins_over_the_first_and_the_best() -> None:
    result = _vote(_drafts("45", "40", "40", "35"))
    assert result["answer"].endswith("The answer is 40.")
    assert result["attempts"][0]["draft"].endswith("The answer is 45.")
    best = _vote(_drafts("45", "40", "40", "35"), select="best")
    assert best["answer"].endswith("The answer is 45."), "every score ties: best keeps the first"


def test_one_answer_in_many_notations_is_one_vote() -> None:
    result = _vote(_drafts("1000", "$1,000", "999", "1000.0"))
    assert result["answer"].endswith("The answer is 1000.")


def test_a_tie_goes_to_the_answer_reached_first_when_no_score_differs() -> None:
    result = _vote(_drafts("35", "40", "40", "35"))
    assert result["answer"].endswith("The answer is 35.")


def test_a_tie_goes_to_the_answer_reached_first_whatever_the_critic_scored() -> None:
    model = _drafts("35", "40", "40", "35")
    model.script["critic"] = [critique(score=0.3), critique(score=0.9), critique(score=0.3)]
    result = _vote(model)
    assert result["answer"].endswith("The answer is 35.")


def test_the_draft_that_first_stated_the_winning_answer_answers_not_the_best_scored() -> None:
    replies = iter(enumerate(["40", "45", "40"]))

    def draft(messages: Sequence[BaseMessage]) -> str:
        step, answer = next(replies)
        return f"Worked out in try {step}. The answer is {answer}."

    scores = [critique(score=0.2), critique(score=0.5), critique(score=0.9)]
    model = FakeChatModel(script={"generator": [draft], "critic": scores})
    result = _vote(model, max_iterations=2)
    drafts = [d for a in result["attempts"] for d in (a, *a.get("candidates", []))]
    first_forty = next(d for d in drafts if d["draft"].endswith("is 40."))
    assert result["answer"] == first_forty["draft"] == "Worked out in try 0. The answer is 40."


def test_a_profile_whose_drafts_state_a_final_answer_votes_unless_told_otherwise() -> None:
    def run(**settings: Any) -> str:
        options = {"profile": "math", "strategy": "sample", "max_iterations": 3, **settings}
        model = _drafts("45", "40", "40", "35")
        model.script["critic"] = [critique(score=0.9), critique(score=0.2)]
        return str(refine(TASK, model=model, **options)["answer"])

    assert run().endswith("The answer is 40."), "two drafts of four say 40"
    assert run(select="best").endswith("The answer is 45."), "the critic scored 45 highest"
    general = _drafts("45", "40", "40", "35")
    general.script["critic"] = [critique(score=0.9), critique(score=0.2)]
    answer = refine(TASK, model=general, strategy="sample", max_iterations=3)["answer"]
    assert answer.endswith("The answer is 45."), "prose states no answer: the best draft"


def _chain(*answers: str, scores: Sequence[float]) -> FakeChatModel:
    """A refine chain: the first draft and each rewrite (worded anew) end with the next
    answer; the critic scores them in turn and never calls one done."""
    replies = iter(enumerate(answers))

    def draft(messages: Sequence[BaseMessage]) -> str:
        step, answer = next(replies)
        return f"Try {step}: 15 boxes of 3, less the 5 eaten. The answer is {answer}."

    critiques = [critique(["Check the sum."], score=s) for s in scores]
    return FakeChatModel(script={"generator": [draft], "refiner": [draft], "critic": critiques})


def test_a_refine_chain_votes_over_its_drafts_a_tie_to_the_first_draft() -> None:
    settings = {"profile": "math", "strategy": "refine"}
    tied = refine(TASK, model=_chain("40", "45", scores=[0.2, 0.9]), max_iterations=1, **settings)
    assert [a["draft"][-3:-1] for a in tied["attempts"]] == ["40", "45"]
    assert tied["answer"].endswith("The answer is 40."), "one vote each: the first reached"
    best = refine(
        TASK,
        model=_chain("40", "45", scores=[0.2, 0.9]),
        max_iterations=1,
        select="best",
        **settings,
    )
    assert best["answer"].endswith("The answer is 45."), "select best: the critic's choice"
    two = refine(
        TASK, model=_chain("40", "45", "45", scores=[0.2, 0.9, 0.3]), max_iterations=2, **settings
    )
    assert two["answer"].endswith("The answer is 45."), "two rewrites agree"


def test_an_answer_printed_by_the_draft_s_program_is_no_vote() -> None:
    program = '```python\nprint("The answer is", 15 * 3 - 5)\n```'
    votes = tally([f"So 40 are left. The answer is 40.\n{program}", "The answer is 35."] * 2)
    assert votes is not None and votes.leaders == ("40", "35") and votes.counted == 4


def test_drafts_with_no_final_answer_cast_no_vote() -> None:
    result = _vote(_drafts("", "", "40", ""))
    assert result["answer"].endswith("The answer is 40.")


def test_with_no_final_answer_anywhere_the_best_draft_answers() -> None:
    model = _drafts("", "", "", "")
    model.script["critic"] = [critique(score=0.2), critique(score=0.8), critique(score=0.2)]
    result = _vote(model)
    assert result["answer"] == "I could not work it out."
    assert result["score"] == 0.8


def test_a_draft_the_verifiers_passed_outvotes_the_drafts_they_rejected() -> None:
    def passes_forty(task: str, draft: str, reference: Any) -> Critique:
        return Critique(done="is 40." in draft)

    result = _vote(_drafts("35", "35", "40", "35"), critics=[passes_forty])
    assert result["stop_reason"] == "verified"
    assert result["answer"].endswith("The answer is 40.")


def test_the_answer_message_records_the_vote() -> None:
    model = _drafts("45", "40", "40", "35")
    settings = RefineContext(profile="math", strategy="sample", select="vote", max_iterations=3)
    graph = create_self_refine_graph(model, settings=settings).compile()
    events = list(graph.stream({"task": TASK}, stream_mode="messages"))
    message = events[-1][0]
    assert message.name == "answer" and message.text.endswith("The answer is 40.")
    recorded = message.response_metadata["self_refine"]["vote"]
    assert recorded == {
        "answers": ["40"],
        "votes": 2,
        "of": 4,
        "tally": [["40", 2], ["45", 1], ["35", 1]],
    }


def test_the_thread_page_says_the_answer_was_voted_not_ranked() -> None:
    settings = RefineContext(profile="math", strategy="sample", select="vote", max_iterations=3)
    graph = create_self_refine_graph(_drafts("45", "40", "40", "35"), settings=settings)
    compiled = graph.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "v"}}
    compiled.invoke({"task": TASK}, config)
    view = thread_view(dict(compiled.get_state(config).values), title="v")
    assert view["answer"].endswith("The answer is 40.")
    assert "the final answer most of the run's drafts state (2 of 4; tally 40: 2" in view["why"]
    assert "the best of the run's drafts" not in view["why"]


def test_the_tally_counts_answers_and_names_the_drafts_holding_the_leaders() -> None:
    votes = tally(["The answer is 42.", "no number", "The answer is 41.", "#### 42.0", ""])
    assert votes is not None
    assert (votes.leaders, votes.votes, votes.counted, votes.drafts) == (("42",), 2, 3, (0, 3))
    tied = tally(["The answer is 7.", "The answer is 8."])
    assert tied is not None and tied.leaders == ("7", "8") and tied.drafts == (0,)
    assert tally(["no answer", ""]) is None


def _attempt(iteration: int, answer: str, score: float) -> Attempt:
    draft = f"The answer is {answer}."
    return {"iteration": iteration, "draft": draft, "critique": {"score": score}, "usage": {}}


def test_a_batch_s_per_step_pick_follows_the_vote() -> None:
    attempts = [_attempt(0, "7", 0.9), _attempt(1, "8", 0.1), _attempt(2, "8", 0.2)]
    assert chosen_attempt(attempts[:1], "vote") is attempts[0]
    assert chosen_attempt(attempts, "vote") is attempts[1], (
        "the 8 first stated, not the better-scored"
    )
    assert chosen_attempt(attempts, "best") is attempts[0]
    attempts[0]["critique"]["verified"] = True
    assert chosen_attempt(attempts, "vote") is attempts[0], "a verified draft outvotes the rest"


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"profile": "general", "strategy": "sample"}, '("math", "math_program")'),
        ({"profile": "python_function", "strategy": "search"}, "state none"),
    ],
)
def test_a_vote_that_makes_no_sense_is_refused_before_any_model_call(
    settings: dict[str, Any], says: str
) -> None:
    model = FakeChatModel(script={"*": ["never asked"]})
    with pytest.raises(ConfigError, match=r"select=\"vote\"") as refused:
        refine(TASK, model=model, select="vote", **settings)
    assert says in str(refused.value)
    assert model.requests == []


def test_a_graph_s_own_prompts_say_whether_its_drafts_state_a_final_answer() -> None:
    stating = dataclasses.replace(MATH, name="my_math")
    graph = create_self_refine_graph(_drafts("45", "40", "40", "35"), prompts=stating).compile()
    voted = {"strategy": "sample", "select": "vote", "max_iterations": 3}
    result = graph.invoke({"task": TASK}, context=voted)
    assert result["answer"].endswith("The answer is 40."), "the graph's prompts state answers"

    silent = dataclasses.replace(MATH, name="my_prose", final_answer=False)
    model = FakeChatModel(script={"*": ["never asked"]})
    graph = create_self_refine_graph(model, prompts=silent).compile()
    with pytest.raises(ConfigError, match="'my_prose' state none"):
        graph.invoke({"task": TASK}, context={**voted, "profile": "math"})
    assert model.requests == []


def test_an_unknown_select_names_the_three_choices() -> None:
    with pytest.raises(ConfigError, match=r'"best", "last" or "vote", got \'most\''):
        RefineContext(select="most")  # type: ignore[arg-type]


def test_the_thread_page_of_a_refine_chain_says_the_vote_chose_and_where() -> None:
    settings = RefineContext(profile="math", strategy="refine", max_iterations=2)
    model = _chain("40", "45", "45", scores=[0.9, 0.2, 0.3])
    compiled = create_self_refine_graph(model, settings=settings).compile(
        checkpointer=InMemorySaver()
    )
    config: RunnableConfig = {"configurable": {"thread_id": "chain"}}
    compiled.invoke({"task": TASK}, config)
    view = thread_view(dict(compiled.get_state(config).values), title="chain")
    assert view["answer"].startswith("Try 1:"), "45 twice outvotes the best-scored 40"
    said = (
        "the final answer most of the run's drafts state (2 of 3; tally 45: 2, 40: 1), "
        "the first draft to state it"
    )
    assert view["why"] == f"{said}, at iteration 1"
    tied = create_self_refine_graph(
        _chain("40", "45", scores=[0.2, 0.9]),
        settings=dataclasses.replace(settings, max_iterations=1),
    ).compile(checkpointer=InMemorySaver())
    tied.invoke({"task": TASK}, config)
    why = thread_view(dict(tied.get_state(config).values), title="t")["why"]
    assert "(1 of 2, tied with 45, reached first; tally 40: 1, 45: 1)" in why
    assert why.endswith("iteration 0")


@pytest.mark.parametrize(
    "order",
    [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)],
)
def test_answers_within_the_tolerance_are_one_vote_in_any_order(order: tuple[int, ...]) -> None:
    answers = ["0.333333", "1/3", "0.3333334"]
    drafts = [f"The answer is {answers[i]}." for i in order]
    counted = tally(drafts)
    assert counted is not None
    assert (counted.votes, counted.counted, counted.drafts) == (3, 3, (0, 1, 2))
    assert counted.leaders == (answers[order[0]],)


def test_grouped_thousands_and_their_plain_digits_are_one_vote() -> None:
    counted = tally(["The answer is 12 345.", "The answer is 12,345.", "The answer is 345."])
    assert counted is not None and (counted.votes, counted.leaders) == (2, ("12 345",))


@pytest.mark.timeout(5)
@pytest.mark.parametrize("fence", ["```", "```py"])
def test_counting_the_votes_of_a_long_draft_of_fences_is_linear(fence: str) -> None:
    # A line of 600 kB of fences took minutes when each fence read the line to its end.
    assert tally([fence * (600_000 // len(fence)), "The answer is 3."]) is not None
