"""Every Python example in examples/ runs as a user would run it, and prints what it says.

The training example runs on a tiny Qwen2 model written here as a GGUF file (its 0.5B
model takes minutes a step on a CPU: the training benchmark runs it with that one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {
    "agent_as_generator.py": ["generate > tool: multiply -> 36", "answer: The answer is 42."],
    "typed_answer.py": ["At $.age: Input should be a valid integer", "Cat(name='Tom', age=3)"],
    "image_task.py": ["offline: the task has images", "Role: refiner (1 image)", "A red dot."],
    "stream_answer.py": ["progress (generator):", "reply: This is a rough draft about dog."],
    "train_grpo.py": [
        "step 1 of 1 started (sampling",
        "rollouts: refine (exchange, failed: draft)",
        "   1 ",
        "peak memory:",
    ],
}


def _arguments(name: str, folder: Path) -> list[str]:
    if name != "train_grpo.py":
        return []
    from tests.training.tiny import write_tiny_gguf

    write_tiny_gguf(folder / "tiny.gguf")
    # a folder holding a user's file and a stale run's log: --replace keeps the one only
    (folder / "run").mkdir()
    (folder / "run" / "notes.txt").write_text("mine")
    (folder / "run" / "refined.jsonl").write_text('{"stale": true}\n')
    run = ["--out", str(folder / "run"), "--replace"]
    return ["--model", f"local:{folder / 'tiny.gguf'}", "--steps", "1", *run]


def test_every_example_is_checked() -> None:
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *_arguments(name, tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300 if name == "train_grpo.py" else 120,
    )
    assert done.returncode == 0, done.stderr
    assert "FutureWarning" not in done.stderr, done.stderr
    positions = [done.stdout.find(line) for line in EXPECTED[name]]
    assert -1 not in positions and positions == sorted(positions), done.stdout
    if name == "train_grpo.py":
        run = tmp_path / "run"
        assert (run / "notes.txt").read_text() == "mine"
        assert "stale" not in (run / "refined.jsonl").read_text()
        assert json.loads((run / "run.json").read_text())["written_by"] == "examples/train_grpo.py"


def test_the_training_examples_arithmetic_rows_carry_their_own_answers() -> None:
    import re

    from tests.training.example import train_grpo

    example = train_grpo()
    rows = example.arithmetic_rows(200, seed=3)
    signs = set()
    for row in rows:
        task = row["prompt"][0]["content"]
        found = re.fullmatch(r"What is (\d+) ([+-]) (\d+)\? End your reply with: .*", task)
        assert found, task
        a, sign, b = int(found[1]), found[2], int(found[3])
        assert row["reference"] == {"answer": a + b if sign == "+" else a - b}
        signs.add(sign)
    assert signs == {"+", "-"}
    assert example.arithmetic_rows(5, seed=3) == rows[:5]
