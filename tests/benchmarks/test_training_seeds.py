"""benchmarks.training.seeds: paired runs over seeds, per seed and pooled, with an exact test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.training.seeds import compare, main

TASKS = [f"What is {n} + 1? End your reply with: The answer is <number>." for n in range(4)]
RIGHT = [f"The answer is {n + 1}." for n in range(4)]
WRONG = "The task is to add one."  # ends with no stated answer: wrong by today's check


def _run(folder: Path, right: list[bool], tokens: float, held_out: list[str] = TASKS) -> Path:
    (folder / "evaluation").mkdir(parents=True)
    rows = [
        {"prompt": [{"role": "user", "content": t}], "reference": {"answer": n + 1}}
        for n, t in enumerate(held_out)
    ]
    (folder / "held-out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    entries = []
    for step, verdicts in ((0, [False] * len(held_out)), (4, right)):
        outcomes = [
            {
                "task": t,
                "draft": RIGHT[n] if ok else WRONG,
                "refinement": None,
                "correct_before": ok,
                "correct_after": ok,
            }
            for n, (t, ok) in enumerate(zip(held_out, verdicts, strict=True))
        ]
        share = sum(verdicts) / len(verdicts)
        entries.append({"step": step, "acc_t1": share, "acc_t2": share, "outcomes": outcomes})
    (folder / "evaluation" / "evaluation.json").write_text(json.dumps(entries))
    steps = [{"step": 1, "step_time": 2.0, "reward": 0.5, "self_refine/sampled_tokens": tokens}]
    (folder / "summary.json").write_text(json.dumps({"rollouts": "x", "steps": steps}))
    (folder / "log_history.json").write_text(json.dumps(steps))
    return folder


def test_seeds_are_compared_per_seed_and_pooled_over_their_items(tmp_path: Path) -> None:
    refine = [
        _run(tmp_path / "r0", [True, True, True, False], 600.0),
        _run(tmp_path / "r1", [True, True, False, False], 500.0),
    ]
    plain = [
        _run(tmp_path / "p0", [False, False, True, False], 300.0),
        _run(tmp_path / "p1", [False, True, False, True], 280.0),
    ]
    figures = compare({"refine": refine, "plain": plain})
    first, second = figures["seeds"]
    assert (first["step"], first["refine_t2"], first["plain_t2"]) == (4, 0.75, 0.25)
    assert first["versus"]["plain"] == {"difference": 0.5, "gained": 2, "lost": 0, "p": 0.5}
    assert second["versus"]["plain"]["difference"] == 0.0
    assert first["tokens_per_step"] == {"refine": 600.0, "plain": 300.0}
    pooled = figures["pooled"]["versus"]["plain"]
    assert (pooled["gained"], pooled["lost"]) == (3, 1)  # 8 pairs over two seeds
    assert pooled["p"] == pytest.approx(0.625)
    assert pooled["mean_difference"] == 0.25
    out = tmp_path / "result" / "seeds"
    main(["--refine", *map(str, refine), "--plain", *map(str, plain), "--out", str(out)])
    text = out.with_suffix(".md").read_text()
    assert "| 0 | 4 | 4 | 0.75 | 0.75 | 0.25 | 0.25 | +0.50, 2 / 0, 0.5 | 600 | 300 |" in text
    assert "Refine against plain: +0.25, 3 gained, 1 lost, exact McNemar p = 0.625" in text


def test_runs_of_a_seed_on_different_held_out_items_are_refused(tmp_path: Path) -> None:
    refine = _run(tmp_path / "r0", [True] * 4, 1.0)
    other = _run(tmp_path / "p0", [True] * 3, 1.0, held_out=TASKS[:3])
    with pytest.raises(SystemExit):
        main(["--refine", str(refine), "--plain", str(other), "--out", str(tmp_path / "x")])
    with pytest.raises(ValueError, match="hold different held-out items"):
        compare({"refine": [refine], "plain": [other]})
