"""A reply that ends in a loop is cut after the loop's first copy; other text is left alone."""

from __future__ import annotations

import pytest

from self_refine.models.repetition import cut_loop, loop_start


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Create a scene where a kite" + " kite" * 20, "Create a scene where a kite"),
        ("The dog runs. " * 5, "The dog runs."),
        (
            '{"feedback": ["' + "The text uses the word sandwich twice. " * 4,
            '{"feedback": ["The text uses the word sandwich twice.',
        ),
    ],
)
def test_a_loop_is_cut_after_its_first_copy(text: str, kept: str) -> None:
    assert loop_start(text) is not None
    assert cut_loop(text) == kept


@pytest.mark.parametrize(
    "text",
    [
        "It was a very, very long day by the river.",
        "The dog runs. The dog runs.",  # two copies can be meant
        "Results\n" + "-" * 70,  # a rule is no loop
        "def f():\n    return [0, 0, 0]\n",
        "",
    ],
)
def test_text_that_does_not_loop_is_left_alone(text: str) -> None:
    assert loop_start(text) is None
    assert cut_loop(text) == text
