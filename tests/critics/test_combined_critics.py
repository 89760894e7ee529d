"""Verifiers first; the LLM critic only when one fails, and then with their findings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from self_refine import ConfigError, Critique, arefine, refine
from self_refine.critics import CombinedCritic, CritiqueRequest, resolve_verifier
from self_refine.stopping import MaxIterations

TASK = "Write about a dog using the words: dog, frisbee, park."
CONCEPTS = {"concepts": ["dog", "frisbee", "park"]}


class RecordingModel(BaseChatModel):
    """A scripted chat model that records every request it gets."""

    replies: list[str]
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any
    ) -> ChatResult:
        self.calls.append(messages)
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


def _critic_reply(*feedback: str, score: float = 0.6, done: bool = False) -> str:
    return json.dumps({"feedback": list(feedback), "score": score, "done": done})


def _prompt(model: RecordingModel, call: int = 0) -> str:
    return "\n".join(str(m.content) for m in model.calls[call])


def test_llm_critic_is_not_called_when_every_verifier_passes() -> None:
    critic = RecordingModel(replies=[_critic_reply("should never be asked")])
    result = refine(
        TASK,
        model="offline",
        critic_model=critic,
        draft="A dog chases a frisbee in the park.",
        reference=CONCEPTS,
        critics=["concepts", "llm"],
        profile="constrained_generation",
    )
    assert critic.calls == []
    assert result["stop_reason"] == "verified"
    assert result["iterations"] == 0
    assert result["last"] is not None
    assert result["last"]["critique"]["source"] == "concepts"
    assert result["last"]["critique"]["verified"] is True


def test_a_word_list_that_passes_does_not_settle_a_task_that_asks_for_more() -> None:
    """Outside constrained generation, the words being there is not the task done."""
    task = 'Rewrite positively, keeping its subject: "The pasta was cold."'
    critic = RecordingModel(
        replies=[_critic_reply("The review is still negative.", score=0.2), _critic_reply()]
    )
    result = refine(
        task,
        model="offline",
        critic_model=critic,
        draft="The pasta was cold.",
        reference={"concepts": ["pasta"]},
        critics=["concepts", "llm"],
        max_iterations=1,
    )
    assert len(critic.calls) == 2, "the critic is asked although the word list passed"
    first = result["attempts"][0]["critique"]
    assert first["source"] == "concepts+llm"
    assert first["feedback"] == ["[llm] The review is still negative."]
    assert first["done"] is False and first["verified"] is None
    assert result["stop_reason"] == "max_iterations"


def test_llm_critic_receives_the_verifier_findings_when_one_fails() -> None:
    critic = RecordingModel(replies=[_critic_reply("The sentence is dull; add an action.")])
    result = refine(
        TASK,
        model="offline",
        critic_model=critic,
        draft="A dog sleeps.",
        reference=CONCEPTS,
        critics=["concepts", "llm"],
        profile="constrained_generation",
    )
    assert len(critic.calls) == 1  # the refined draft passes, so the critic is asked once
    prompt = _prompt(critic)
    assert "Automatic checks found these problems; explain and extend them" in prompt
    assert 'concepts: Use the word "frisbee".' in prompt
    assert 'concepts: Use the word "park".' in prompt
    assert "concepts: Keep the words already used: dog." in prompt
    first = result["attempts"][0]["critique"]
    assert first["source"] == "concepts+llm"
    assert first["feedback"] == [
        '[concepts] Use the word "frisbee".',
        '[concepts] Use the word "park".',
        "[concepts] Keep the words already used: dog.",
        "[llm] The sentence is dull; add an action.",
    ]
    assert first["verified"] is False and first["done"] is False
    assert first["score"] == pytest.approx(1 / 3, abs=0.001)  # the lowest of both scores
    assert result["stop_reason"] == "verified"
    assert "frisbee" in result["answer"] and "park" in result["answer"]


def test_a_failing_verifier_overrides_an_llm_that_says_done() -> None:
    critic = RecordingModel(replies=[_critic_reply(score=1.0, done=True)])
    result = refine(
        TASK,
        model="offline",
        critic_model=critic,
        draft="A dog sleeps.",
        reference=CONCEPTS,
        critics=["concepts", "llm"],
        profile="constrained_generation",
        max_iterations=1,
    )
    first = result["attempts"][0]["critique"]
    assert first["done"] is False and first["score"] == pytest.approx(1 / 3, abs=0.001)
    assert result["stop_reason"] != "critic_done"


def test_verifier_only_configuration_needs_no_llm() -> None:
    result = refine(TASK, model="offline", draft="a dog.", reference=CONCEPTS, critics=["concepts"])
    assert result["stop_reason"] == "verified"
    assert [a["critique"]["source"] for a in result["attempts"]] == ["concepts", "concepts"]
    assert result["attempts"][0]["critique"]["feedback"] == [
        'Use the word "frisbee".',
        'Use the word "park".',
        "Keep the words already used: dog.",
    ]


def test_verifier_that_does_not_apply_leaves_the_llm_alone() -> None:
    critic = RecordingModel(replies=[_critic_reply(score=1.0, done=True)])
    result = refine(
        "What is 6 * 7?", model="offline", critic_model=critic, draft="42", profile="math"
    )
    assert len(critic.calls) == 1
    assert "Automatic checks" not in _prompt(critic)
    critique = result["attempts"][0]["critique"]
    assert critique["source"] == "llm" and critique["verified"] is None
    assert result["stop_reason"] == "critic_done"


def test_math_profile_checks_the_answer_when_a_reference_answer_is_given() -> None:
    critic = RecordingModel(replies=[_critic_reply("Step 2 multiplies wrongly.")])
    result = refine(
        "What is 6 * 7?",
        model="offline",
        critic_model=critic,
        draft="6 * 7 = 41. The answer is 41.",
        reference={"answer": 42},
        profile="math",
        max_iterations=1,
    )
    first = result["attempts"][0]["critique"]
    assert first["source"] == "answer+llm"
    assert first["feedback"][0].startswith('[answer] The final answer "41"')
    assert 'answer: The final answer "41"' in _prompt(critic)


def test_no_applicable_critic_fails_before_any_model_call() -> None:
    generator = RecordingModel(replies=["a draft"])
    with pytest.raises(ConfigError, match=r'answer needs reference\["answer"\]'):
        refine("What is 6 * 7?", model=generator, critics=["answer"])
    assert generator.calls == []
    with pytest.raises(ConfigError, match=r"must be a list of strings"):
        refine(TASK, model=generator, critics=["concepts", "llm"], reference={"concepts": 3})
    assert generator.calls == []


def test_unknown_critic_names_fail_when_the_graph_is_built() -> None:
    with pytest.raises(ConfigError, match="unknown critic 'concept'"):
        refine(TASK, model="offline", critics=["concept"])


def test_custom_callable_verifier_with_the_offline_model() -> None:
    def ends_with_full_stop(task: str, draft: str, reference: Any) -> Critique:
        ok = draft.rstrip().endswith(".")
        return Critique(feedback=[] if ok else ["End the text with a full stop."], done=ok)

    result = refine(TASK, model="offline", draft="A dog", critics=[ends_with_full_stop])
    assert result["stop_reason"] == "verified"
    assert result["attempts"][0]["critique"]["source"] == "ends_with_full_stop"
    assert result["answer"] == "A dog."


def test_the_verified_draft_is_the_answer_even_when_the_verifier_gives_no_score() -> None:
    def ends_with_full_stop(task: str, draft: str, reference: Any) -> Critique:
        ok = draft.rstrip().endswith(".")
        return Critique(feedback=[] if ok else ["End the text with a full stop."], done=ok)

    critic = RecordingModel(replies=[_critic_reply("Fine otherwise.", score=0.9)])
    result = refine(
        TASK,
        model="offline",
        critic_model=critic,
        draft="A dog",
        critics=[ends_with_full_stop, "llm"],
    )
    assert result["stop_reason"] == "verified"
    assert [a["critique"]["score"] for a in result["attempts"]] == [0.0, 1.0]
    assert result["answer"] == "A dog."


def test_a_verifier_returning_the_wrong_type_is_a_clear_error() -> None:
    def sloppy(task: str, draft: str, reference: Any) -> Any:
        return True

    with pytest.raises(
        Exception, match="verifier 'sloppy' returned bool; a verifier must return a Critique"
    ):
        refine(TASK, model="offline", draft="x", critics=[sloppy])


def test_context_critics_override_the_profile() -> None:
    from self_refine import RefineContext

    critic = RecordingModel(replies=[_critic_reply("unused")])
    result = refine(
        TASK,
        model="offline",
        critic_model=critic,
        draft="A dog.",
        reference=CONCEPTS,
        profile="constrained_generation",
        context=RefineContext(critics=["concepts"]),
    )
    assert critic.calls == []
    assert result["stop_reason"] == "verified"


def test_verified_is_checked_before_the_factory_stop_policies() -> None:
    result = refine(
        TASK,
        model="offline",
        draft="A dog with a frisbee in a park.",
        reference=CONCEPTS,
        critics=["concepts"],
        stop=[MaxIterations(1)],
    )
    assert result["stop_reason"] == "verified"


async def test_async_run_skips_the_llm_when_verifiers_pass() -> None:
    critic = RecordingModel(replies=[_critic_reply("add an action")])
    result = await arefine(
        TASK,
        model="offline",
        critic_model=critic,
        draft="A dog sleeps.",
        reference=CONCEPTS,
        critics=["concepts", "llm"],
        profile="constrained_generation",
    )
    assert len(critic.calls) == 1
    assert result["stop_reason"] == "verified"


class NoteTaker:
    """An explaining critic that records the notes it is given."""

    name = "notes"

    def __init__(self) -> None:
        self.requests: list[CritiqueRequest] = []

    def critique(self, request: CritiqueRequest) -> Any:
        from self_refine.critics import CritiqueResult
        from self_refine.state import add_usage

        self.requests.append(request)
        return CritiqueResult(
            Critique(feedback=["explained"], score=0.9, source="notes"), add_usage()
        )

    async def acritique(self, request: CritiqueRequest) -> Any:
        return self.critique(request)


def test_combined_critic_with_several_verifiers() -> None:
    explainer = NoteTaker()
    critic = CombinedCritic([resolve_verifier("answer"), resolve_verifier("concepts")], explainer)
    reference = {"answer": 4, "concepts": ["four"]}
    passing = critic.critique(
        CritiqueRequest("t", "Four: the answer is 4.", 0, reference=reference)
    )
    assert explainer.requests == []
    assert passing.critique.verified is True and passing.critique.done
    assert passing.critique.source == "answer+concepts"

    failing = critic.critique(CritiqueRequest("t", "The answer is 5.", 0, reference=reference))
    assert [r.notes for r in explainer.requests] == [
        [
            'answer: The final answer "5" (read from "the answer is") is wrong; '
            "recheck the steps that lead to it.",
            'concepts: Use the word "four".',
        ]
    ]
    assert failing.critique.source == "answer+concepts+notes"
    assert failing.critique.feedback[-1] == "[notes] explained"
    assert failing.critique.score == 0.0


def test_combined_critic_needs_at_least_one_critic() -> None:
    with pytest.raises(ConfigError, match='add "llm" or a verifier'):
        CombinedCritic([], None)
