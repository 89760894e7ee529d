"""examples/train_grpo.py before any model loads: its rows, its --out, its token-matched plain arm.

Each refusal here names a model that cannot load (a GGUF file that does not exist): a
refusal that came after loading would say so instead.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.training.example import train_grpo

NO_MODEL = "local:/nonexistent/model.gguf"


@pytest.fixture(scope="module")
def example() -> Any:
    return train_grpo()


def _run(example: Any, monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", ["train_grpo.py", "--model", NO_MODEL, *argv])
    with pytest.raises(SystemExit) as stopped:
        example.main()
    return int(stopped.value.code)


def _tasks(rows: list[dict[str, Any]]) -> list[str]:
    return [row["prompt"][0]["content"] for row in rows]


@pytest.mark.parametrize("task", ["arithmetic", "concepts"])
def test_every_seed_is_scored_on_the_same_held_out_items_it_never_trains_on(
    example: Any, task: str
) -> None:
    train_0, held_0 = example.split_rows(task, 256, 48, seed=0)
    train_1, held_1 = example.split_rows(task, 256, 48, seed=1)
    assert held_0 == held_1 and len(set(_tasks(held_0))) == 48
    assert _tasks(train_0) != _tasks(train_1)  # the seed changes what is trained on
    for train in (train_0, train_1):
        assert len(set(_tasks(train))) == 256
        assert not set(_tasks(train)) & set(_tasks(held_0))
    _, fewer = example.split_rows(task, 16, 16, seed=7)
    assert fewer == held_0[:16]  # a smaller held-out set is the start of the larger


def test_a_folder_holding_a_users_files_is_refused_before_the_model_loads(
    example: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "train.jsonl").write_text("my own rows\n")
    assert _run(example, monkeypatch, "--out", str(tmp_path)) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: --out ") and "already holds train.jsonl" in line
    assert "--replace" in line
    assert [p.name for p in tmp_path.iterdir()] == ["train.jsonl"]
    assert (tmp_path / "train.jsonl").read_text() == "my own rows\n"


def test_a_regular_file_as_out_is_refused_and_left_alone(
    example: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mine = tmp_path / "notes"
    mine.write_text("mine")
    assert _run(example, monkeypatch, "--out", str(mine), "--replace") == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert mine.read_text() == "mine"


def test_resume_needs_a_run_of_this_script_with_the_same_settings(
    example: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _run(example, monkeypatch, "--out", str(tmp_path), "--resume") == 2
    assert "holds no run.json" in capsys.readouterr().err
    recorded: dict[str, Any] = {"model": NO_MODEL, "task": "concepts", "seed": 0}
    recorded.update(prompts=16, held_out=16, plain=False)
    recorded.update(generations=4, prompts_per_step=2, train_on="exchange", failed="draft")
    (tmp_path / "run.json").write_text(json.dumps(recorded))
    assert _run(example, monkeypatch, "--out", str(tmp_path), "--resume", "--seed", "1") == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "has seed 0, this command 1" in line
    assert _run(example, monkeypatch, "--out", str(tmp_path)) == 2  # neither resumed nor replaced
    assert "holds a run of this script (its run.json): pass --resume" in capsys.readouterr().err


def test_a_model_path_that_is_no_model_is_refused_before_anything_is_written(
    example: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "empty-model").mkdir()
    monkeypatch.setattr(
        sys,
        "argv",
        ["train_grpo.py", "--model", str(tmp_path / "empty-model"), "--out", str(tmp_path / "run")],
    )
    with pytest.raises(SystemExit):
        example.main()
    assert "not a transformers model directory" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def _refine_run(folder: Path, plain: bool = False) -> Path:
    folder.mkdir()
    settings = {"plain": plain, "generations": 4, "prompts_per_step": 2}
    (folder / "run.json").write_text(json.dumps(settings))
    steps = [
        {"step": 1, "self_refine/sampled_tokens": 500.0, "self_refine/draft_tokens": 320.0},
        {"step": 2, "self_refine/sampled_tokens": 460.0, "self_refine/draft_tokens": 320.0},
    ]
    (folder / "log_history.json").write_text(json.dumps(steps))
    return folder


def test_a_plain_arm_gets_the_completions_that_sample_a_refine_steps_tokens(
    example: Any, tmp_path: Path
) -> None:
    run = _refine_run(tmp_path / "refine")
    # 480 tokens a step, 40 a draft: 12 drafts, 6 for each of 2 prompts (3 for each of 4)
    assert example.matched_generations(run, 2)[0] == 6
    assert example.matched_generations(run, 4)[0] == 3
    assert "480 tokens a step, 40.0 a draft" in example.matched_generations(run, 2)[1]


def test_token_matching_needs_a_plain_run_and_a_refine_run_to_match(
    example: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _refine_run(tmp_path / "refine")
    out = str(tmp_path / "out")
    assert _run(example, monkeypatch, "--match-tokens", str(run), "--out", out) == 2
    assert "add --plain" in capsys.readouterr().err
    plain = _refine_run(tmp_path / "plain", plain=True)
    assert _run(example, monkeypatch, "--plain", "--match-tokens", str(plain), "--out", out) == 2
    assert "is no refine run with logged tokens" in capsys.readouterr().err
    (run / "run.json").write_text("[]")  # no settings in it
    assert _run(example, monkeypatch, "--plain", "--match-tokens", str(run), "--out", out) == 2
    assert "is no refine run with logged tokens" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
