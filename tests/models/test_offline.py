"""The offline model: deterministic, honest about being a stand-in, and acting on feedback."""

from __future__ import annotations

import json

from langchain_core.messages import BaseMessage

from self_refine import refine
from self_refine.models import offline as offline_module
from self_refine.models.offline import OfflineModel
from self_refine.prompts import feedback_messages, generate_messages, get_profile, refine_messages
from self_refine.state import Attempt, Usage

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."
PROMPTS = get_profile("general")


def ask(messages: list[BaseMessage]) -> str:
    return OfflineModel().invoke(messages).text


def critique_of(draft: str, task: str = TASK) -> dict:
    return json.loads(ask(feedback_messages(PROMPTS, task, draft)))


def attempt(draft: str, feedback: list[str]) -> Attempt:
    usage: Usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    return {"iteration": 0, "draft": draft, "critique": {"feedback": feedback}, "usage": usage}


def test_critique_names_real_checkable_shortcomings() -> None:
    verdict = critique_of("the dog really likes the the park")
    assert verdict["feedback"] == [
        "Start the text with a capital letter.",
        "End the text with a full stop.",
        'Remove the filler word "really".',
        'Remove the repeated word "the".',
        'Mention "frisbee", which the task asks for.',
        'Mention "catch", which the task asks for.',
    ]
    assert 0 < verdict["score"] < 1
    assert verdict["done"] is False


def test_critique_of_a_draft_that_passes_every_check() -> None:
    verdict = critique_of("The dog leaps to catch a frisbee in the park.")
    assert verdict == {"feedback": [], "score": 1.0, "done": True}


def test_score_is_the_fraction_of_checks_passed() -> None:
    worse = critique_of("the dog")["score"]
    better = critique_of("The dog.")["score"]
    assert worse < better < 1


def test_refine_applies_only_the_feedback_it_is_given() -> None:
    draft = "the dog is very happy"
    messages = refine_messages(
        PROMPTS, TASK, [attempt(draft, ['Mention "frisbee", which the task asks for.'])], None, None
    )
    rewritten = ask(messages)
    assert "frisbee" in rewritten
    assert rewritten.startswith("the dog is very happy"), "capitalisation was not asked for"
    assert "very" in rewritten, "the filler word was not pointed out"


def test_refine_makes_at_most_two_edits_per_step() -> None:
    feedback = [
        "Start the text with a capital letter.",
        "End the text with a full stop.",
        'Remove the filler word "very".',
    ]
    rewritten = ask(refine_messages(PROMPTS, TASK, [attempt("a very good dog", feedback)], None, 0))
    assert rewritten == "A very good dog."


def test_refine_ignores_feedback_it_cannot_act_on() -> None:
    messages = refine_messages(
        PROMPTS, TASK, [attempt("The dog.", ["Make it more poetic."])], None, None
    )
    assert ask(messages) == "The dog."


def test_first_draft_is_rough_and_covers_only_part_of_the_task() -> None:
    draft = ask(generate_messages(PROMPTS, TASK))
    verdict = critique_of(draft)
    assert "dog" in draft and "frisbee" not in draft
    assert len(verdict["feedback"]) >= 3


def test_demo_run_shows_feedback_changing_the_draft_and_a_stop_reason() -> None:
    result = refine(TASK, model="offline")
    attempts = result["attempts"]
    assert result["stop_reason"] == "critic_done"
    assert [a["critique"]["source"] for a in attempts] == ["offline"] * len(attempts)
    scores = [a["critique"]["score"] for a in attempts]
    assert scores == sorted(scores) and scores[-1] == 1.0
    for before, after in zip(attempts, attempts[1:], strict=False):
        assert after["draft"] != before["draft"]
        assert len(after["critique"]["feedback"]) < len(before["critique"]["feedback"])
    for word in ("dog", "frisbee", "park", "catch"):
        assert word in result["answer"]


def test_offline_runs_are_deterministic() -> None:
    assert refine(TASK, model="offline") == refine(TASK, model="offline")


def test_offline_model_does_not_pass_itself_off_as_a_language_model() -> None:
    model = OfflineModel()
    assert model._llm_type == "self-refine-offline"
    assert "not a language model" in (offline_module.__doc__ or "")
    reply = model.invoke(generate_messages(PROMPTS, TASK))
    assert reply.response_metadata["model_name"] == "offline"


def test_both_refine_forms_give_the_offline_model_the_same_draft_and_feedback() -> None:
    runs = [refine(TASK, model="offline", refine_form=form) for form in ("single", "conversation")]
    assert [a["draft"] for a in runs[0]["attempts"]] == [a["draft"] for a in runs[1]["attempts"]]
    assert len(runs[0]["attempts"]) > 1


def test_in_the_fresh_form_the_offline_refiner_writes_its_first_draft_to_the_feedback() -> None:
    first = ask(generate_messages(PROMPTS, TASK))
    feedback = ['Mention "frisbee", which the task asks for.', "End the text with a full stop."]
    sent = refine_messages(PROMPTS, TASK, [attempt(first, feedback)], None, None, "fresh")
    assert first not in "\n".join(m.text for m in sent)  # the form shows no draft
    reply = ask(sent)
    assert reply.startswith(first) and "frisbee" in reply and reply.endswith(".")
