"""Checks a model cannot pass without doing the task: the shape of a written answer.

Each gamed form seen from small models fails its verifier with a feedback item that
says what to fix; a plain sentence that uses the words still passes.
"""

from __future__ import annotations

import pytest

from self_refine.critics.verifiers import resolve_verifier
from self_refine.critics.verifiers.shape import sentence_limit, sentences

WORDS = ["train", "pencil", "compass", "river"]
TASK = (
    "Write one or two natural sentences that use all of these words: train, pencil, compass, river."
)


def _concepts(text: str, words: list[str] = WORDS, task: str = TASK) -> tuple[bool, list[str]]:
    critique = resolve_verifier("concepts").verify(task, text, {"concepts": words})
    return critique.done, critique.feedback


@pytest.mark.parametrize(
    "text",
    [
        "Use a compass to follow the river by train, and mark the map with a pencil.",
        "Train the compass on the river with the pencil.",
        "She packed a pencil, a compass and a scarf for the train ride along the river.",
        "The train follows the river. I mark its bends with a pencil and a compass.",
    ],
)
def test_sentences_that_use_the_words_pass(text: str) -> None:
    assert _concepts(text) == (True, [])


@pytest.mark.parametrize(
    "text",
    [
        "Train, pencil, compass, river.",
        "train pencil compass river",
        "- train\n- pencil\n- compass\n- river",
        "A train, a pencil, a compass, a river.",
    ],
)
def test_a_list_of_the_words_fails_and_says_to_write_sentences(text: str) -> None:
    done, feedback = _concepts(text)
    assert not done
    assert any("do not list them" in item for item in feedback)


def test_each_word_in_a_clause_of_its_own_fails() -> None:
    words = ["pillow", "mountain", "ladder", "dolphin", "rocket"]
    text = (
        "Pillow stands tall, mountain is high, ladder is long, dolphin is large, rocket is heavy."
    )
    done, feedback = _concepts(text, words, "Write one sentence that uses: " + ", ".join(words))
    assert not done
    assert any("clause of its own" in item for item in feedback)


def test_a_word_defined_by_itself_counts_as_listed() -> None:
    words = ["castle", "umbrella", "fountain"]
    done, feedback = _concepts(
        "Castle is a castle, umbrella is an umbrella, fountain is a fountain.", words
    )
    assert not done and any("do not list them" in item for item in feedback)


def test_a_numbered_list_beyond_the_sentences_asked_for_fails() -> None:
    text = "1. The train runs by the river.\n2. A pencil lies there.\n3. A compass points north."
    done, feedback = _concepts(text)
    assert not done
    assert any("at most two sentences" in item and "the text has 3" in item for item in feedback)
    assert any("one sentence per item" in item for item in feedback)


def test_more_sentences_than_asked_for_fail() -> None:
    text = "The train runs. It follows the river. A pencil and a compass lie on the seat."
    done, feedback = _concepts(text)
    assert not done and any("at most two sentences" in item for item in feedback)


@pytest.mark.parametrize(
    "text",
    [
        "Add compass to train the pencil on the river.",
        'Use the word "compass": the train passes the river and a pencil.',
        "Include compass in the train, pencil and river sentence.",
    ],
)
def test_an_instruction_about_the_text_fails(text: str) -> None:
    done, feedback = _concepts(text)
    assert not done
    assert any(
        "not an instruction about them" in item or "about the text" in item for item in feedback
    )


def test_feedback_wording_in_the_answer_fails() -> None:
    text = (
        "The train follows the river with a pencil and a compass. "
        "The text is fluent because it uses all the words provided."
    )
    done, feedback = _concepts(text)
    assert not done
    assert any("without remarks about them" in item for item in feedback)


def test_a_gamed_text_scores_below_a_sentence_that_misses_one_word() -> None:
    verify = resolve_verifier("concepts").verify
    listed = verify(TASK, "Train, pencil, compass, river.", {"concepts": WORDS})
    missing = verify(TASK, "The train follows the river past a pencil.", {"concepts": WORDS})
    assert (listed.score or 0) < (missing.score or 0)


@pytest.mark.parametrize(
    ("task", "limit"),
    [
        (TASK, 2),
        ("Write a sentence about a dog.", 1),
        ("Write three sentences about a dog.", 3),
        ("In 2-3 sentences, describe a dog.", 3),
        ("Describe a dog.", None),
    ],
)
def test_the_sentence_count_a_task_asks_for(task: str, limit: int | None) -> None:
    assert sentence_limit(task) == limit


def test_sentences_split_at_ends_and_list_items() -> None:
    assert sentences("One. Two!\n3. Three\n- Four") == ["One.", "Two!", "Three", "Four"]
    assert sentences("It costs 3.5 dollars.") == ["It costs 3.5 dollars."]


@pytest.mark.parametrize(
    ("draft", "expected"),
    [
        ("Step 1: 6 x 7 = 42. The answer is 42.", (True, None)),
        (
            'The final answer "40" (read from the last number) is wrong; recheck the steps. '
            "The answer is 42.",
            (False, "without remarks"),
        ),
        ("Recheck the second step: 6 x 7 = 42. The answer is 42.", (False, "not an instruction")),
    ],
)
def test_the_answer_verifier_fails_remarks_and_instructions_whatever_the_number(
    draft: str, expected: tuple[bool, str | None]
) -> None:
    critique = resolve_verifier("answer").verify("What is 6 x 7?", draft, {"answer": "42"})
    done, said = expected
    assert critique.done is done
    if said:
        assert said in critique.feedback[0]
