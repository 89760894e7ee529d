"""Every Python example in examples/ runs as a user would run it, and prints what it says."""

from __future__ import annotations

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
}


def test_every_example_is_checked() -> None:
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    positions = [done.stdout.find(line) for line in EXPECTED[name]]
    assert -1 not in positions and positions == sorted(positions), done.stdout
