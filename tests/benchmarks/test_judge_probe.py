"""The judge probe's arithmetic: AUC, disagreements at a cut, the cut with fewest."""

from __future__ import annotations

import math

from benchmarks.quality.judge_probe import auc, errors, threshold


def test_a_judge_that_ranks_every_right_answer_first_has_auc_one_and_a_clean_cut() -> None:
    scored = [(0.9, True), (0.8, True), (0.3, False), (0.1, False)]

    assert auc(scored) == 1.0
    assert threshold(scored) == 0.8
    assert errors(scored, 0.8) == 0


def test_a_judge_at_chance_leaves_disagreements_whatever_the_cut() -> None:
    scored = [(0.5, True), (0.5, False), (0.4, True), (0.4, False)]

    assert auc(scored) == 0.5
    assert errors(scored, threshold(scored)) == 2
    assert errors(scored, -math.inf) == 2  # passing all: the grader alone


def test_with_one_kind_of_answer_auc_is_undefined() -> None:
    assert math.isnan(auc([(0.2, True), (0.4, True)]))
