"""Replies are cleaned before they become drafts; echoes, refusals and overlong replies never do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from self_refine import Critique, RefineContext, create_self_refine_graph
from self_refine.critics.parse import read_critique
from self_refine.critics.verifiers.answer import extract_answer
from self_refine.models.calls import RESAMPLE_TEMPERATURE, _judge
from self_refine.models.hygiene import DraftGuard, clean_reply, draft_limit, feedback_of
from self_refine.prompts.render import FRESH_INTRO
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."
REAL = json.loads((Path(__file__).parents[1] / "fixtures" / "real_replies.json").read_text())


@pytest.mark.parametrize(
    ("reply", "draft"),
    [
        ("Draft: The dog runs.", "The dog runs."),
        ("Here is the revised text:\nThe dog runs.", "The dog runs."),
        ("Sure! Here's the improved draft: The dog runs.", "The dog runs."),
        ("<draft>\nThe dog runs.\n</draft>", "The dog runs."),
        ("<draft>\nThe dog runs to the", "The dog runs to the"),  # cut off at the reply cap
        ("<reference> The dog runs.", "The dog runs."),
        ('"The dog runs."', "The dog runs."),
        ("```text\nThe dog runs.\n```", "The dog runs."),
        ('He said "run" to the dog.', 'He said "run" to the dog.'),
        ("Answer: 42", "42"),
        ("Here are two sentences using the words:\nThe dog runs.", "The dog runs."),
        ("Here is how: the dog runs.", "Here is how: the dog runs."),
        ("A kite flies over the river." + " kite" * 40, "A kite flies over the river. kite"),
        ("The dog runs. " * 12, "The dog runs."),
    ],
)
def test_wrappers_that_are_not_the_answer_are_removed(reply: str, draft: str) -> None:
    assert clean_reply(reply) == draft


def test_code_fences_stay_for_code_profiles() -> None:
    code = "```python\ndef f():\n    return 1\n```"
    assert clean_reply(code, keep_code_fences=True) == code


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("<task>\nWrite one sentence\n</task> The dog.", "echo"),
        ("The dog &lt;draft> runs.", "echo"),
        ("<draft>The dog.</draft>\n<feedback>\n- Use the word", "echo"),
        ("<draft>\nThe dog runs.\n<feedback>", "echo"),
        ("<feedback>\n- Use the word frisbee", "echo"),
        (f"{TASK} The dog catches a frisbee in the park.", "echo"),
        ("Rewrite the latest draft so that it addresses every feedback item. Dog.", "echo"),
        ("Feedback on your draft:\n- [concepts] missing: catch\n\nThe dog runs.", "echo"),
        ("The dog. Rewrite your draft so that it addresses every feedback item above.", "echo"),
        ('The dog. Mention "frisbee" (a required concept) somewhere in the text.', "echo"),
        ("", "empty"),
        (" ".join(f"word{i}" for i in range(1000)), "too_long"),
    ],
)
def test_replies_that_are_no_draft_are_named(reply: str, reason: str) -> None:
    guard = DraftGuard(
        task=TASK,
        feedback=['Mention "frisbee" (a required concept) somewhere in the text.'],
        limit=draft_limit(TASK, None),
    )
    verdict = guard.check(clean_reply(reply), None)
    assert verdict is not None and verdict[0] == reason


def test_a_refusal_is_no_draft() -> None:
    verdict = DraftGuard(task=TASK).check("I'm sorry, I can't help.", "I'm sorry, I can't help.")
    assert verdict is not None and verdict[0] == "refusal"


DRAFTS = [c for c in REAL if c["role"] != "critic"]
CRITIQUES = [c for c in REAL if c["role"] == "critic"]


@pytest.mark.parametrize("case", DRAFTS, ids=[f"{c['model'][:20]}-{c['role']}" for c in DRAFTS])
def test_recorded_real_replies(case: dict[str, Any]) -> None:
    cleaned = clean_reply(case["reply"])
    guard = DraftGuard(task=case["task"], feedback=feedback_of(case.get("attempts", [])))
    verdict = guard.check(cleaned, None)
    if "reason" in case["expect"]:
        assert verdict is not None and verdict[0] == case["expect"]["reason"]
    else:
        assert verdict is None and cleaned == case["expect"]["draft"]
    if "answer" in case["expect"]:
        found = extract_answer(cleaned)
        assert found is not None and found[0] == case["expect"]["answer"]


@pytest.mark.parametrize(
    "case", CRITIQUES, ids=[f"{c['model'][:20]}-critic-{n}" for n, c in enumerate(CRITIQUES)]
)
def test_recorded_real_critiques(case: dict[str, Any]) -> None:
    critique, problems = read_critique(case["reply"])
    assert critique.feedback == case["expect"]["feedback"]
    assert problems[0] == case["expect"]["problem"]
    if "score" in case["expect"]:
        assert critique.score == case["expect"]["score"]


def _run(*drafts: str, critiques: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    script: dict[str, list[Any]] = {"generator": [drafts[0]], "critic": critiques}
    if drafts[1:]:
        script["refiner"] = list(drafts[1:])
    model = FakeChatModel(script=script)
    graph = create_self_refine_graph(
        model, settings=RefineContext(max_iterations=2, **settings)
    ).compile()
    return graph.invoke({"task": TASK})


def test_an_echoed_refine_is_rejected_asked_again_and_never_the_answer() -> None:
    echo = f'<attempt n="0">\n{TASK}\n</attempt>'
    result = _run(
        "A dog in a park.",
        echo,
        echo,
        critiques=[critique(["Add frisbee."], score=0.2)],
    )
    first, second = result["attempts"][:2]
    assert second["draft"] == first["draft"], "the previous draft was kept"
    assert [r["reason"] for r in second["rejected"]] == ["echo", "echo"]
    assert all(TASK not in a["draft"] for a in result["attempts"])
    assert TASK not in result["answer"] and "<attempt" not in result["answer"]
    assert result["stop_reason"] == "unchanged"


def test_a_rejected_first_draft_is_asked_again_and_the_better_reply_is_kept() -> None:
    result = _run(
        "I'm sorry, but I cannot help with that request.",
        critiques=[critique([], score=1.0, done=True)],
    )
    assert result["attempts"][0]["draft"] == ""
    assert [r["reason"] for r in result["attempts"][0]["rejected"]][0] == "refusal"
    assert "sorry" not in result["answer"].lower()


def test_verifiers_never_see_a_rejected_reply() -> None:
    seen: list[str] = []

    def spy(task: str, draft: str, reference: Any) -> Critique:
        seen.append(draft)
        return Critique(feedback=["Add frisbee."], score=0.0)

    model = FakeChatModel(
        script={"generator": ["A dog."], "refiner": [f"{TASK} with frisbee"], "critic": []}
    )
    graph = create_self_refine_graph(
        model, critics=[spy], settings=RefineContext(max_iterations=1)
    ).compile()
    graph.invoke({"task": TASK})
    assert all(TASK not in draft for draft in seen)


def test_answer_extraction_reads_the_final_statement_only() -> None:
    from self_refine.critics.verifiers import extract_answer

    assert extract_answer("So, the answer is: The answer is 38.") == ("38", '"the answer is"')
    assert extract_answer("Step: 3 + 4 = 7. The answer is x = 3 + 4 = 7.")[0] == "7"  # type: ignore[index]
    assert extract_answer("The answer is 12 apples.")[0] == "12 apples"  # type: ignore[index]
    assert extract_answer("#### 17")[0] == "17"  # type: ignore[index]
    assert extract_answer("so \\boxed{17} it is")[0] == "17"  # type: ignore[index]


def test_ties_go_to_the_earlier_shorter_draft() -> None:
    from self_refine.nodes.ranking import best_attempt as pick_best

    attempts: list[Any] = [
        {"iteration": 0, "draft": "short", "critique": {"score": 0.5}, "usage": {}},
        {"iteration": 1, "draft": "much longer " * 20, "critique": {"score": 0.5}, "usage": {}},
        {"iteration": 2, "draft": "", "critique": {"score": 0.9}, "usage": {}},
    ]
    best = pick_best(attempts)
    assert best is not None and best["iteration"] == 0, "an empty draft is never preferred"


def test_a_done_with_a_low_score_does_not_stop_the_run() -> None:
    result = _run(
        "A dog in a park.",
        "A dog catches a frisbee in the park.",
        critiques=[
            critique(["Add frisbee."], score=0.5, done=True),
            critique([], score=1.0, done=True),
        ],
    )
    assert result["stop_reason"] == "critic_done"
    assert len(result["attempts"]) == 2, (
        "the contradictory done at 0.5 did not stop the first round"
    )


def test_an_echo_of_any_earlier_feedback_item_is_found_among_many() -> None:
    from self_refine.models.hygiene import DraftGuard

    items = [
        f"Item {n}: mention the harbour lantern number {n} in the second line." for n in range(300)
    ]
    items.append("Supercalifragilisticexpialidocious twowordsonlyhere")  # no inner word
    guard = DraftGuard(task="Write about a harbour.", feedback=tuple(items))
    assert guard.check("A harbour at dawn, quiet and grey.", None) is None
    for echoed in (items[217], items[-1]):
        reply = f"The boats rest.  {echoed.upper()}   The gulls call."
        verdict = guard.check(reply, None)
        assert verdict is not None and verdict[0] == "echo", echoed


def test_feedback_that_quotes_a_draft_is_not_feedback_a_reply_may_not_repeat() -> None:
    draft = "The dog runs in the park all day long with a red frisbee."
    attempts = [
        {"draft": draft, "critique": {"feedback": [f"[llm] {draft}", "[concepts] Use catch."]}}
    ]
    assert feedback_of(attempts, ["Mention the word catch somewhere in the sentence."]) == [
        "Mention the word catch somewhere in the sentence.",
        "[concepts] Use catch.",
    ]


def test_feedback_to_hold_against_is_each_item_once_the_current_first_then_oldest_first() -> None:
    attempts = [
        {"draft": "A cat.", "critique": {"feedback": ["Name the park.", "Add a frisbee."]}},
        {"draft": "A dog.", "critique": "not a critique"},
        {"draft": "A dog runs.", "critique": {"feedback": ["Add a frisbee.", "Say catch."]}},
    ]
    assert feedback_of(attempts, ["Say catch.", "Be brief."]) == [
        "Say catch.",
        "Be brief.",
        "Name the park.",
        "Add a frisbee.",
    ]
    assert feedback_of([]) == []


@pytest.mark.parametrize(
    ("item", "echo"),
    [
        ("Add a frisbee.", False),  # short feedback recurs by chance: kept
        ("Mention frisbee.", False),  # two words
        ("Mention the frisbee somewhere in it.", True),
        ("Mention the frisbee, near the end.", True),
    ],
)
def test_only_feedback_of_thirty_characters_or_more_is_an_echo(item: str, echo: bool) -> None:
    reply = f"The dog runs to the park. {item} It catches it."
    verdict = DraftGuard(task=TASK, feedback=[item]).check(reply, None)
    assert (verdict is not None and verdict[0] == "echo") is echo


def test_a_tagged_feedback_item_is_an_echo_without_its_tag_too() -> None:
    item = "[llm] Mention the river somewhere in the text, please."
    guard = DraftGuard(task=TASK, feedback=[item])
    verdict = guard.check("The dog. Mention the river somewhere in the text, please.", None)
    assert verdict is not None and verdict[0] == "echo"


class _ColdModel(FakeChatModel):
    """A scripted model set to sample coldly, noting the temperature of each call."""

    temperature: float = 0.2
    seed: int = 7
    temperatures: list[float] = []
    seeds: list[int] = []

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.temperatures.append(kw.get("temperature", self.temperature))
        self.seeds.append(kw.get("seed", self.seed))
        return super()._generate(messages, stop, run_manager, **kw)


def test_a_refine_reply_that_is_the_same_draft_is_asked_again_afresh_and_warmer() -> None:
    model = _ColdModel(
        script={
            "generator": ["A dog in a park."],
            "critic": [critique(["Add frisbee."], score=0.2), critique([], score=1.0, done=True)],
            "refiner": ["A dog  in a park.", "A dog catches a frisbee in a park."],
        },
        temperatures=[],
        seeds=[],
    )
    graph = create_self_refine_graph(model, settings=RefineContext(max_iterations=2)).compile()
    result = graph.invoke({"task": TASK})
    second = result["attempts"][1]
    assert second["draft"] == "A dog catches a frisbee in a park."
    assert [r["reason"] for r in second["rejected"]] == ["unchanged"]
    first_ask, again = model.requests_for("refiner")
    assert "A dog in a park." in [m.text for m in first_ask.messages]
    assert FRESH_INTRO in again.prompt and "A dog in a park." not in again.prompt, (
        "asked afresh: the task and the feedback, no draft to copy"
    )
    assert "Add frisbee." in again.prompt
    assert model.temperatures == [0.2, 0.2, 0.2, RESAMPLE_TEMPERATURE, 0.2]
    assert model.seeds == [7, 7, 7, 7 + 1 + 1, 7], "a draw of its own: seed + 1 + iteration"


def test_a_draft_changed_only_in_case_is_a_new_draft() -> None:
    guard = DraftGuard(task=TASK, feedback=["Capitalise it."], previous="a dog.")
    assert guard.check("A dog.", None) is None
    assert guard.check(" a  dog. ", None) == (
        "unchanged",
        "the reply is the draft it was asked to change, unchanged",
    )
    assert DraftGuard(task=TASK, previous="a dog.").check("a dog.", None) is None  # no feedback


@pytest.mark.parametrize(
    ("reply", "unchanged"),
    [
        ("a dog ran.", False),  # the first word the same, the rest not
        ("the dog.", False),
        ("a\n\tdog.", True),
        ("a dog. a dog.", False),
        ("a dog", False),
    ],
)
def test_a_reply_is_the_draft_unchanged_only_when_every_word_is(
    reply: str, unchanged: bool
) -> None:
    guard = DraftGuard(task=TASK, feedback=["Capitalise it."], previous="a dog.")
    verdict = guard.check(reply, None)
    assert (verdict is not None and verdict[0] == "unchanged") is unchanged


def test_a_refiner_that_keeps_repeating_leaves_the_draft_and_the_run_stops_unchanged() -> None:
    result = _run(
        "A dog in a park.",
        "A dog in a park.",
        "A dog in a park.",
        critiques=[critique(["Add frisbee."], score=0.2)],
    )
    second = result["attempts"][1]
    assert second["draft"] == "A dog in a park."
    assert [r["reason"] for r in second["rejected"]] == ["unchanged", "unchanged"]
    assert result["stop_reason"] == "unchanged"


def test_asking_again_is_a_step_of_its_own_that_studio_shows() -> None:
    echo = f'<attempt n="0">\n{TASK}\n</attempt>'
    model = FakeChatModel(
        script={
            "generator": ["A dog in a park."],
            "critic": [critique(["Add frisbee."], score=0.2), critique(score=1.0, done=True)],
            "refiner": [echo, "A dog catches a frisbee in a park."],
        }
    )
    graph = create_self_refine_graph(model, settings=RefineContext(max_iterations=2)).compile()
    steps = [next(iter(chunk.items())) for chunk in graph.stream({"task": TASK})]
    nodes = [node for node, _ in steps]
    assert nodes == ["begin", "generate", "critique", "refine", "refine", "critique", "finalize"]
    rejected_step, kept_step = steps[3][1], steps[4][1]
    assert rejected_step["ask_again"] is True
    assert [r["reason"] for r in rejected_step["draft_rejected"]] == ["echo"]
    assert kept_step["ask_again"] is False
    assert kept_step["draft"] == "A dog catches a frisbee in a park."
    # The second request told the model what was wrong with its reply.
    second = model.requests_for("refiner")[1].messages
    assert second[-2].text == echo and "cannot be used" in second[-1].text
    # Both asks are one refine step: the iteration counts the draft, not the calls.
    assert kept_step["iteration"] == rejected_step["iteration"] == 1


def _sent(*texts: str) -> tuple[HumanMessage, ...]:
    return tuple(HumanMessage(text) for text in texts)


OWN = "The dog leaps for the frisbee and makes the catch in the park."


@pytest.mark.parametrize(
    "reply",
    [
        f"<draft>\n{OWN}\n</draft>\n<feedback>\n- Use the word frisbee.\n</feedback>",
        f"<draft>\n{OWN}\n<reference>\n- dog: an animal.\n</reference>",
        f"<task>\n{TASK}\n</task>\n\n<draft>{OWN}</draft>",
        f"<feedback>\n- Use the word frisbee.\n</feedback>\n\nA new response is:\n\n{OWN}",
    ],
)
def test_the_model_s_own_draft_is_read_out_of_a_reply_that_copies_the_scaffolding(
    reply: str,
) -> None:
    request = _sent(f"<task>\n{TASK}\n</task>", "<feedback>\n- Use the word frisbee.\n</feedback>")
    guard = DraftGuard(task=TASK, sent=request)
    verdict = guard.check(clean_reply(reply), None)
    assert verdict is not None and verdict[0] == "echo"
    assert guard.salvage(reply) == OWN
    judged = _judge("refiner", AIMessage(reply), guard)
    assert (judged.text, judged.rejected) == (OWN, None)


@pytest.mark.parametrize(
    "reply",
    [
        # A block the request showed, copied back: a draft, or an older one of the run.
        f'<attempt n="1">\n{OWN}\n</attempt>\n\nRewrite the latest attempt to address it.',
        f"<draft>\n{OWN}\n</draft>\n<feedback>\n- Use the word frisbee.\n</feedback>",
        # Nothing of its own after the copied blocks, or only the request's instructions.
        f"<task>\n{TASK}\n</task>\n<feedback>\n- Use the word frisbee.\n</feedback>",
        "<feedback>\n- Use the word frisbee.\n</feedback>\nWrite a new response to the task.",
        # A reference block is no draft fence.
        "<feedback>\n- Use the word frisbee.\n</feedback>\n<reference>\n- dog = dog\n</reference>",
    ],
)
def test_no_draft_is_read_out_of_a_reply_with_nothing_of_its_own(reply: str) -> None:
    request = _sent(
        f"<task>\n{TASK}\n</task>",
        f'<attempt n="1">\n{OWN}\n</attempt>',
        "Rewrite the latest attempt to address it. Write a new response to the task.",
    )
    guard = DraftGuard(task=TASK, feedback=("Use the word frisbee.",), sent=request)
    assert guard.salvage(reply) is None
    judged = _judge("refiner", AIMessage(reply), guard)
    assert judged.text == "" and judged.rejected is not None
    assert judged.rejected["reason"] == "echo"


def test_a_copy_of_the_draft_it_was_asked_to_change_is_no_draft_even_unseen() -> None:
    reply = f"<draft>\n{OWN}\n</draft>\n<feedback>\n- Use the word frisbee.\n</feedback>"
    guard = DraftGuard(task=TASK, feedback=("Add a frisbee.",), previous=OWN, sent=_sent(TASK))
    assert guard.salvage(reply) is None  # the fresh form hid the draft; the reply is it again


def test_code_after_the_copied_blocks_keeps_its_first_line() -> None:
    code = "def double(x):\n    return 2 * x"
    reply = f"<task>\nWrite double(x).\n</task>\n{code}"
    guard = DraftGuard(
        task="Write double(x).", keep_code_fences=True, sent=_sent("Write double(x).")
    )
    assert guard.salvage(reply) == code


@pytest.mark.parametrize(
    "copied",
    [
        TASK.replace("park", "pork", 1),
        TASK.replace("dog", "dot", 1),
        TASK.replace("one", "One", 1),
        TASK.rstrip(".") + "!",
    ],
)
@pytest.mark.parametrize("opening", ["</task>\n", "<task>\nx\n</task>\n", "</task><draft>"])
def test_the_task_copied_back_with_a_letter_changed_is_no_draft(opening: str, copied: str) -> None:
    reply = f"{opening}{copied}"
    guard = DraftGuard(task=TASK, sent=_sent(f"<task>\n{TASK}\n</task>"))
    assert guard.salvage(reply) is None
    judged = _judge("generator", AIMessage(reply), guard)
    assert judged.rejected is not None and judged.rejected["reason"] == "echo"


def test_a_draft_close_to_a_short_task_is_still_salvaged() -> None:
    task = "Improve: The quick brown fox jump over the lazy dog."
    own = "The quick brown fox jumps over the lazy dog."
    guard = DraftGuard(task=task, sent=_sent(f"<task>\n{task}\n</task>"))
    assert guard.salvage(f"<task>\n{task}\n</task>\n{own}") == own
