"""Held-out evaluation of a policy: a tiny Qwen2 model saved as a model directory, on the CPU.

Drafts are cut at 4 tokens (characters, with the tiny tokenizer), so the items asking
for 8 or more characters are wrong at turn 1, while a refinement may write 16.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from self_refine.errors import ConfigError
from self_refine.training import evaluate_policy, evaluation_callback
from self_refine.training.evaluate import main
from tests.training.test_grpo import long_enough
from tests.training.tiny import tiny_policy

ITEMS = [
    {"prompt": [{"role": "user", "content": "Write 8 characters."}], "reference": {"min_chars": 8}},
    {"prompt": [{"role": "user", "content": "Write 9 characters."}], "reference": {"min_chars": 9}},
    {"prompt": [{"role": "user", "content": "Write anything."}], "reference": {"min_chars": 1}},
    {"prompt": "Write something.", "reference": {"min_chars": 1}},
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny policy saved as a trainer checkpoint would be (with its trainer state)."""
    folder = tmp_path_factory.mktemp("policy") / "checkpoint-5"
    model, tokenizer = tiny_policy()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    return folder


def test_a_policy_is_scored_before_and_after_one_refinement(model_dir: Path) -> None:
    seen: list[tuple[int, int]] = []
    options: dict[str, Any] = {"verifiers": [long_enough], "max_new_tokens": 16, "draft_tokens": 4}
    result = evaluate_policy(
        model_dir, ITEMS, batch_size=3, progress=lambda d, t, s: seen.append((d, t)), **options
    )
    assert seen == [(3, 4), (4, 4)]
    assert (result.model, result.step, result.items) == ("checkpoint-5", 5, 4)
    outcomes = result.outcomes
    references = {o["task"]: r["reference"] for o, r in zip(outcomes, ITEMS, strict=True)}
    for outcome in outcomes:
        reference = references[outcome["task"]]
        assert outcome["correct_before"] == long_enough("", outcome["draft"], reference).done
        answer = outcome["refinement"] or outcome["draft"]
        assert outcome["correct_after"] == long_enough("", answer, reference).done
        if outcome["correct_before"]:
            assert outcome["refinement"] is None  # a right draft is not refined
    assert not outcomes[0]["correct_before"] and not outcomes[1]["correct_before"]
    assert result.acc_t1 == sum(o["correct_before"] for o in outcomes) / 4
    assert result.acc_t2 == sum(o["correct_after"] for o in outcomes) / 4
    assert result.acc_t2 == result.acc_t1 + result.wrong_to_right - result.right_to_wrong
    assert result.refined == sum(o["refinement"] is not None for o in outcomes) / 4 > 0
    again = evaluate_policy(model_dir, ITEMS, **options)  # greedy: the same answers
    assert again.outcomes == outcomes


def test_items_trained_on_or_no_model_directory_are_refused_before_loading(
    model_dir: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"1 held-out item\(s\) were trained on"):
        evaluate_policy(model_dir, ITEMS, verifiers=[long_enough], trained_on=ITEMS[2:3])
    with pytest.raises(ConfigError, match="not a transformers model directory"):
        evaluate_policy(tmp_path, ITEMS, verifiers=[long_enough])
    with pytest.raises(ConfigError, match="items must be the held-out rows"):
        evaluate_policy(model_dir, None, verifiers=[long_enough])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="evaluation_callback does not take tokenizer: its"):
        evaluation_callback(ITEMS, tmp_path, every=1, verifiers=[long_enough], tokenizer=None)
    with pytest.raises(ConfigError, match="every must be a whole number of steps >= 1, got 0"):
        evaluation_callback(ITEMS, tmp_path, every=0, verifiers=[long_enough])


def test_the_command_writes_json_markdown_and_a_plot_with_progress(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "held-out.jsonl"
    rows = [
        {"prompt": f"Write a sentence with the word {w}.", "reference": {"concepts": [w]}}
        for w in ("sun", "tree", "boat\u2028")  # a line separator inside a JSON string is text
    ]
    items.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "eval"
    code = main(
        [str(model_dir), "--items", str(items), "--verifiers", "concepts", "--draft-tokens", "4"]
        + ["--max-new-tokens", "8", "--batch-size", "2", "--out", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert "checkpoint-5: 2/3 items" in printed.err and "s left" in printed.err
    (result,) = json.loads((out / "evaluation.json").read_text())
    assert (result["items"], result["step"]) == (3, 5)
    assert result["outcomes"][2]["task"] == rows[2]["prompt"]
    row = (
        f"| checkpoint-5 | 5 | 3 | {result['acc_t1']:.2f} | {result['acc_t2']:.2f} | "
        f"{result['wrong_to_right']:.2f} | {result['right_to_wrong']:.2f} |"
    )
    assert row in (out / "evaluation.md").read_text()
    assert (out / "evaluation.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--items", "missing.jsonl"], "cannot read the --items file 'missing.jsonl'"),
        (["--items", "ITEMS", "--verifiers", "nonsense"], "unknown"),
    ],
)
def test_the_command_refuses_bad_input_with_one_line(
    argv: list[str],
    message: str,
    model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"prompt": "Say hi.", "reference": {"concepts": ["hi"]}}) + "\n")
    argv = [str(items) if a == "ITEMS" else a for a in argv]
    given = ["--verifiers", "concepts", *argv] if "--verifiers" not in argv else argv
    assert main([str(model_dir), *given, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _items(folder: Path) -> Path:
    items = folder / "items.jsonl"
    items.write_text(json.dumps({"prompt": "Say hi.", "reference": {"concepts": ["hi"]}}) + "\n")
    return items


def test_an_out_folder_holding_files_is_refused_before_any_model_is_evaluated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    out.mkdir()
    (out / "evaluation.md").write_text("my notes")
    no_model = str(tmp_path / "no-model")  # refused later, were --out not checked first
    argv = [no_model, "--items", str(_items(tmp_path)), "--verifiers", "concepts"]
    assert main([*argv, "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "already holds evaluation.md" in line and "--replace" in line
    assert (out / "evaluation.md").read_text() == "my notes"
    mine = tmp_path / "results"
    mine.write_text("mine")
    assert main([*argv, "--out", str(mine), "--replace"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert mine.read_text() == "mine"


def test_replace_writes_the_evaluation_and_leaves_other_files(
    model_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    out.mkdir()
    (out / "evaluation.md").write_text("an old evaluation")
    (out / "notes.txt").write_text("mine")
    argv = [str(model_dir), "--items", str(_items(tmp_path)), "--verifiers", "concepts"]
    assert main([*argv, "--max-new-tokens", "4", "--out", str(out), "--replace"]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert "| checkpoint-5 | 5 | 1 |" in (out / "evaluation.md").read_text()


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ("items", "items.jsonl:2 is not UTF-8 text (byte 0xff): save the --items file as UTF-8"),
        ("trained-on", "trained.jsonl:1 is a JSON str, not an object: each line is one item"),
        ("state", "trainer_state.json is not valid JSON (Expecting property name"),
        ("step", "trainer_state.json records no whole global_step"),
    ],
)
def test_broken_input_files_get_one_line_each(
    broken: str,
    message: str,
    model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import shutil

    model = tmp_path / "checkpoint-9"
    shutil.copytree(model_dir, model)
    items = _items(tmp_path)
    trained = tmp_path / "trained.jsonl"
    trained.write_text('"a row as a string"\n')
    if broken == "items":
        items.write_bytes(items.read_bytes() + b'{"prompt": "caf\xff"}\n')
    if broken == "state":
        (model / "trainer_state.json").write_text("{global_step: 9")
    if broken == "step":
        (model / "trainer_state.json").write_text('{"global_step": "nine"}')
    argv = [str(model), "--items", str(items), "--verifiers", "concepts"]
    argv += ["--trained-on", str(trained)] if broken == "trained-on" else []
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert message in line
    assert not (tmp_path / "out").exists()


def test_trained_on_rows_that_are_not_rows_are_refused(model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="trained_on row 0 is a str, not a row"):
        evaluate_policy(model_dir, ITEMS, verifiers=[long_enough], trained_on=["x"])  # type: ignore[list-item]


def test_a_callback_refuses_an_evaluation_file_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "evaluation.json").write_text("[{")
    with pytest.raises(ConfigError, match="is not an evaluation this package wrote"):
        evaluation_callback(ITEMS, tmp_path, every=1, verifiers=[long_enough])
