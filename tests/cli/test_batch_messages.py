"""What `batch` and `report` tell a user about what they did and did not do."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from self_refine.cli.main import main

ITEMS = (
    '{"id": "a", "task": "Write about a dog.", "reference": {"concepts": ["dog", "park"]}}\n'
    '{"id": "b", "task": "Write about a cat.", "reference": {"concepts": ["cat"]}}\n'
)
BATCH = ["batch", "in.jsonl", "-o", "out.jsonl", "--model", "offline", "--critics", "concepts"]


@pytest.fixture
def items(workdir: Path) -> Path:
    (workdir / "in.jsonl").write_text(ITEMS)
    return workdir


@pytest.mark.usefixtures("items")
def test_a_resumed_batch_says_what_was_done_before_and_prints_its_last_line_once(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    assert main(BATCH) == 0
    capsys.readouterr()
    with (workdir / "in.jsonl").open("a") as more:
        more.write(
            '{"id": "c", "task": "Write about a cow.", "reference": {"concepts": ["cow"]}}\n'
        )
    assert main(BATCH) == 0
    err = capsys.readouterr().err
    assert "2 of 3 items were done by an earlier run" in err and "1 left to run" in err
    progress = [line for line in err.splitlines() if line.startswith("progress: 3/3")]
    assert len(progress) == 1, err


@pytest.mark.usefixtures("items")
def test_report_says_it_drew_no_plot_when_matplotlib_is_missing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> None:
    assert main(BATCH) == 0
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert main(["report", "out.jsonl"]) == 0
    err = capsys.readouterr().err
    assert "no plot drawn: it needs matplotlib" in err and 'pip install -e ".[plot]"' in err
    assert not (workdir / "out.png").exists()
    assert main(["report", "out.jsonl", "--no-plot"]) == 0
    assert "no plot" not in capsys.readouterr().err
