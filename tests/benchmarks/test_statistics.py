"""Paired comparisons state their exact McNemar test: the items gained and lost, and p."""

from __future__ import annotations

import pytest

from benchmarks.quality.budget_page import _set_tables
from benchmarks.quality.curves import differences, matched_spend
from benchmarks.quality.intervals import PairedBootstrap, compared, mcnemar, paired_counts


@pytest.mark.parametrize(
    ("gained", "lost", "p"),
    [
        (4, 0, 0.125),  # 2 / 2**4
        (9, 2, 0.0654296875),  # 2 * (1 + 11 + 55) / 2**11
        (7, 2, 0.1796875),  # 2 * (1 + 9 + 36) / 2**9
        (11, 0, 0.0009765625),  # 2 / 2**11
        (0, 0, 1.0),
        (3, 3, 1.0),  # the tail doubled passes 1: capped
        (1, 0, 1.0),
    ],
)
def test_the_exact_mcnemar_p_matches_the_binomial_tail(gained: int, lost: int, p: float) -> None:
    assert mcnemar(gained, lost) == pytest.approx(p, rel=1e-12)
    assert mcnemar(lost, gained) == pytest.approx(p, rel=1e-12)  # two-sided


def test_the_smallest_difference_that_reaches_5_percent() -> None:
    assert mcnemar(6, 0) < 0.05 < mcnemar(5, 0)
    assert mcnemar(13, 4) < 0.05 < mcnemar(12, 4)
    assert mcnemar(10, 2) < 0.05 < mcnemar(9, 2)  # the vote's 9 / 2 of the issue


def test_paired_counts_are_the_discordant_items() -> None:
    assert paired_counts([True, True, False, False], [False, True, True, False]) == (1, 1)
    with pytest.raises(ValueError, match="same items"):
        paired_counts([True], [True, False])
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar(-1, 2)


_FIRST = {"items": 6, "accuracy": {"value": 0.3, "low": 0.1, "high": 0.7}, "tokens_per_item": 10}


def _record(*right: bool) -> dict[str, object]:
    return {"budgets": [{"correct": r} for r in right]}


def test_every_difference_against_sample_carries_its_test_on_the_page() -> None:
    sample = [_record(False, False)] * 4 + [_record(True, True)] * 2
    refine = [_record(True, True)] * 4 + [_record(True, False)] * 2
    found = differences({"sample": sample, "refine": refine}, [1, 2], PairedBootstrap(6))
    one, two = found["refine"]
    assert (one["gained"], one["lost"], one["mcnemar_p"]) == (4, 0, 0.125)
    assert (two["gained"], two["lost"]) == (4, 2)
    page = "\n".join(
        _set_tables("code", {"first": _FIRST, "strategies": {}, "differences": found}, [1, 2], None)
    )
    assert "(4/0, p = 0.125)" in page and "(4/2, p = 0.688)" in page


def test_a_page_says_beats_only_where_the_exact_p_is_below_5_percent() -> None:
    assert compared("search", "sample", 11, 0, 124) == (
        "search beats sample (n = 124, 11 gained / 0 lost, exact McNemar p = 9.8e-04)"
    )
    assert compared("refine", "sample", 0, 6, 60).startswith("refine falls below sample")
    assert compared("vote", "sample", 7, 2, 60) == (
        "vote points above sample, not significant "
        "(n = 60, 7 gained / 2 lost, exact McNemar p = 0.180)"
    )
    assert compared("refine", "sample", 2, 3, 60).startswith("refine points below sample, not")
    assert compared("search", "sample", 2, 2, 60).startswith("search ties with sample")


def _spending(outputs: list[int], *right: bool) -> dict[str, object]:
    return {
        "budgets": [
            {"correct": r, "output_tokens": o, "calls": 1}
            for r, o in zip(right, outputs, strict=True)
        ]
    }


def test_a_strategy_is_set_against_sample_at_the_same_reply_tokens_per_item() -> None:
    # sample reads 100 reply tokens an item at 1x (25% right), 200 at 2x (75% right)
    sample = [_spending([100, 200], False, True)] * 2 + [_spending([100, 200], True, True)]
    sample += [_spending([100, 200], False, False)]
    # refine spends 150 at 1x (half right), 400 at 2x: beyond sample's reads
    refine = [_spending([150, 400], True, True)] * 2 + [_spending([150, 400], False, False)] * 2
    one, two = matched_spend({"sample": sample, "refine": refine}, [1, 2])["refine"]
    assert one["output_tokens_per_item"] == 150 and one["accuracy"] == 0.5
    assert one["interpolated"] == pytest.approx(0.5)  # halfway between 25% and 75%
    assert one["nearest"]["multiple"] == 1  # 100 and 200 are as near: the smaller read
    assert (one["gained"], one["lost"]) == (2, 1)  # against sample's 1x answers
    assert two["interpolated"] is None and two["beyond"] == "above"
    assert two["nearest"] == {"multiple": 2, "output_tokens_per_item": 200, "accuracy": 0.75}
    assert (two["gained"], two["lost"], two["mcnemar_p"]) == (0, 1, 1.0)
