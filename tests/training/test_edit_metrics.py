"""How much turn 2 edits: the edit distance behind `self_refine/edited` and `edit_distance`."""

from __future__ import annotations

import random

import pytest

from self_refine.training.rewards import edit_distance, edit_metrics, normalised_edit_distance


def _table(a: str, b: str) -> int:
    """Levenshtein distance by the textbook table, to check the bit-parallel one against."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = row
    return previous[-1]


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("", "abc", 3),
        ("kitten", "sitting", 3),
        ("18 + 27 = 35.", "18 + 27 = 45.", 1),
        ("flaw", "lawn", 2),
        ("\u00e9t\u00e9", "ete", 2),
    ],
)
def test_known_distances(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == edit_distance(b, a) == distance


def test_the_distance_is_the_textbook_one_on_random_texts() -> None:
    rng = random.Random(5)
    for _ in range(500):
        a = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 80)))
        b = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 80)))
        assert edit_distance(a, b) == _table(a, b), (a, b)


def test_long_replies_are_measured_whole() -> None:
    draft, refinement = "x" * 900 + "The answer is 35.", "y" * 900 + "The answer is 45."
    assert edit_distance(draft, refinement) == 901
    assert normalised_edit_distance(draft, refinement) == pytest.approx(901 / 917)


def test_unchanged_refinements_count_as_no_edit() -> None:
    figures = edit_metrics([("12", None), ("The answer is 3.", " The answer is 3.\n"), ("ab", "")])
    assert figures == {"edited": pytest.approx(1 / 3), "edit_distance": pytest.approx(1 / 3)}
    assert edit_metrics([]) == {}
