"""benchmarks.training.curves: GRPO runs' held-out curves, every answer judged by today's check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.training.curves import main

TASK = "Write one natural sentence that uses all of these words: tower, beach, fountain."
GAMED = "A tower is a building, a beach is a shore, and a fountain is a fountain."
SENTENCE = "Children run from the tower to the beach and splash in the fountain."


def _run(
    folder: Path,
    drafts: list[str],
    then: float,
    *,
    summary: bool,
    task: str = TASK,
    reference: dict[str, object] | None = None,
) -> None:
    (folder / "evaluation").mkdir(parents=True)
    row = {"prompt": [{"role": "user", "content": task}]}
    held_out = [{**row, "reference": reference or {"concepts": ["tower", "beach", "fountain"]}}]
    (folder / "held-out.jsonl").write_text(json.dumps(held_out[0]) + "\n")
    outcomes = [
        {
            "task": task,
            "draft": d,
            "refinement": None,
            "correct_before": True,
            "correct_after": True,
        }
        for d in drafts
    ]
    entry = {
        "model": "step 4",
        "step": 4,
        "items": len(drafts),
        "acc_t1": then,
        "acc_t2": then,
        "outcomes": outcomes,
    }
    (folder / "evaluation" / "evaluation.json").write_text(json.dumps([entry]))
    steps = [{"step": 1, "step_time": 2.0, "reward": 1.0}]
    if summary:
        (folder / "summary.json").write_text(
            json.dumps({"rollouts": "plain", "steps": steps, "peak_rss_gb": 1.5})
        )
    else:  # stopped before its summary: the last checkpoint's log stands in
        saved = folder / "checkpoints" / "checkpoint-1"
        saved.mkdir(parents=True)
        (saved / "trainer_state.json").write_text(json.dumps({"log_history": steps}))
        (folder / "refined.jsonl").write_text("")


def test_answers_are_judged_again_and_a_stopped_run_is_read_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    _run(tmp_path / "plain", [GAMED, SENTENCE], 1.0, summary=True)
    _run(tmp_path / "refine", [SENTENCE, SENTENCE], 1.0, summary=False)

    main([str(tmp_path / "plain"), str(tmp_path / "refine"), "--out", str(tmp_path / "c")])
    gamed = json.loads((tmp_path / "c.json").read_text())[0]["evaluations"][0]["outcomes"][0]
    assert (gamed["correct_before"], gamed["right_t1"]) == (True, False)

    runs = json.loads((tmp_path / "c.json").read_text())
    assert [e["acc_t1"] for r in runs for e in r["evaluations"]] == [0.5, 1.0]
    assert runs[1]["rollouts"] == "refine (stopped)" and runs[1]["steps"] == 1
    page = (tmp_path / "c.md").read_text()
    assert "| plain | plain | 4 | 0.50 [" in page and "(1.00)" in page  # the verdict then
    assert "| refine | refine (stopped) | 4 | 1.00 [" in page


def test_a_run_without_evaluations_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    with pytest.raises(SystemExit):
        main([str(tmp_path / "run"), "--out", str(tmp_path / "c")])


def test_names_name_the_runs_one_each(tmp_path: Path) -> None:
    _run(tmp_path / "a", [SENTENCE], 1.0, summary=True)
    main([str(tmp_path / "a"), "--names", "plain GRPO", "--out", str(tmp_path / "c")])
    assert "| plain GRPO | plain | 4 |" in (tmp_path / "c.md").read_text()
    with pytest.raises(SystemExit):
        main([str(tmp_path / "a"), "--names", "x,y", "--out", str(tmp_path / "c")])


def test_a_row_with_a_key_is_judged_by_the_stated_answer_check(tmp_path: Path) -> None:
    task = "What is 12 + 30? End your reply with: The answer is <number>."
    drafts = ["12 + 30 = 42. The answer is 42.", "The answer is 41.", "12 + 30 = 42"]
    _run(tmp_path / "a", drafts, 1.0, summary=True, task=task, reference={"answer": 42})
    main([str(tmp_path / "a"), "--out", str(tmp_path / "c")])
    evaluation = json.loads((tmp_path / "c.json").read_text())[0]["evaluations"][0]
    assert [o["right_t1"] for o in evaluation["outcomes"]] == [True, False, False]
