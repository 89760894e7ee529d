"""The concepts verifier accepts sentences: not fragments strung with commas, not list items.

The answers here are ones a small model gave in the committed benchmark records and
that the checker once counted right.
"""

from __future__ import annotations

import pytest

from self_refine.critics.verifiers import resolve_verifier
from self_refine.critics.verifiers.shape import (
    definitions,
    equated_words,
    list_items,
    strung_fragments,
)


def _task(words: list[str]) -> str:
    return (
        "Write one or two natural sentences that use all of these words: " + ", ".join(words) + "."
    )


def _judge(text: str, words: list[str]) -> tuple[bool, list[str]]:
    critique = resolve_verifier("concepts").verify(_task(words), text, {"concepts": words})
    return critique.done, critique.feedback


def _appears(concept: str, text: str) -> bool:
    return concept in text.lower()


def test_fragments_strung_with_commas_fail_and_say_to_join_them() -> None:
    words = ["jacket", "fountain", "scarf", "island", "candle"]
    text = (
        "Jacket covers island, scarf covers fountain, island perfect for coffee shop, "
        "candle just as nice as fountain."
    )
    done, feedback = _judge(text, words)
    assert not done
    assert any("not fragments strung together with commas" in item for item in feedback)


def test_one_clause_per_word_after_an_article_fails_too() -> None:
    words = ["train", "shovel", "scarf", "paddle", "library"]
    text = (
        "A man trains with a shovel, shovel sags with a paddle, a paddle spins with a scarf, "
        "a scarf is pushed with a library."
    )
    done, feedback = _judge(text, words)
    assert not done and any("fragments" in item for item in feedback)


def test_sentences_laid_out_as_a_bulleted_list_fail_even_within_the_count() -> None:
    words = ["library", "shovel", "anchor", "helmet", "tower"]
    text = (
        "- The library was filled with books, and the shovel was used to remove the oldest "
        "books.\n- The anchor was tied around the tower, and the helmet was worn around the "
        "audience."
    )
    done, feedback = _judge(text, words)
    assert not done
    assert any("plain prose, not as a list" in item for item in feedback)
    assert not any("sentences, as the task asks" in item for item in feedback)  # two is allowed


def test_the_same_two_sentences_as_prose_pass() -> None:
    words = ["library", "shovel", "anchor", "helmet", "tower"]
    text = (
        "The library was filled with books, and the shovel was used to remove the oldest "
        "books. The anchor was tied around the tower, and the helmet was worn around the "
        "audience."
    )
    assert _judge(text, words) == (True, [])


@pytest.mark.parametrize(
    "text",
    [
        # parts joined by "and"
        "A beautiful, delicate jacket covers the delicate fountain, a delicate scarf stands on "
        "the island, and a delicate candle illuminates the delicate island.",
        # a sentence with asides: its parts do not each open with a word of the list
        "A rabbit, floating in the sandy beach, is playing with a drum, its feathers fluttering "
        "in the wind.",
    ],
)
def test_a_long_sentence_with_commas_is_not_fragments(text: str) -> None:
    words = ["jacket", "fountain", "scarf", "island", "candle", "rabbit", "beach", "drum"]
    assert strung_fragments(text, words, _appears) is None
    assert list_items(text) is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # Answers a SmolLM2-135M policy wrote after GRPO on the concepts reward.
        (
            "A tower is a building, a beach is a shore, and a fountain is a fountain.",
            ["tower", "beach", "fountain"],
        ),
        (
            "A guitar is a musical instrument, a candle is a type of candle, a island is a "
            "place, a rabbit is a rabbit, and a mirror is a mirror.",
            ["guitar", "candle", "island", "rabbit", "mirror"],
        ),
        (
            "An orchard is a type of fruit, a guitar is a musical instrument, and an apple "
            "is a fruit.",
            ["orchard", "guitar", "apple"],
        ),
    ],
)
def test_saying_what_each_word_is_fails_and_says_to_relate_them(
    text: str, words: list[str]
) -> None:
    done, feedback = _judge(text, words)
    assert not done
    assert any("do not say what each word is" in item for item in feedback)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # The parts relate the words to each other.
        (
            "A mirror reflects the tunnel, a tunnel is a mountain, and a mirror is an anchor.",
            ["mirror", "tunnel", "anchor", "mountain"],
        ),
        # Two of three words defined: one part does something else.
        (
            "The tower is tall, the beach is empty, and children splash in the fountain.",
            ["tower", "beach", "fountain"],
        ),
        (
            "The rabbit hopped, the drum sounded, and the candle flickered.",
            ["rabbit", "drum", "candle"],
        ),
    ],
)
def test_clauses_that_relate_or_act_are_not_definitions(text: str, words: list[str]) -> None:
    assert definitions(text, words, _appears) is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # Answers a SmolLM2-135M policy wrote after GRPO once saying what each word is failed.
        ("The compass is a river and the library is a library.", ["compass", "river", "library"]),
        ("A ladder is a tent, and a window is a window.", ["ladder", "tent", "window"]),
        ("The meadow is a type of meadow kite and a type of rocket anchor.", ["meadow", "kite"]),
    ],
)
def test_saying_one_word_is_another_fails(text: str, words: list[str]) -> None:
    done, feedback = _judge(text, words)
    assert not done
    assert any("do not say that one of them is another or itself" in item for item in feedback)


@pytest.mark.parametrize(
    "text",
    [
        "The anchor is anchored to the jacket while the guitar plays in the garden.",
        "The tower is a landmark near the beach, where a fountain sprays.",
    ],
)
def test_a_verb_or_another_noun_after_is_is_not_equating(text: str) -> None:
    words = ["anchor", "jacket", "guitar", "garden", "tower", "beach", "fountain"]
    assert equated_words(text, words, _appears) is None
