"""Commands refuse, before any work, what would lose data or fail every item."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from self_refine.cli.main import main

DATASET = '{"id": "a", "task": "What is 6 * 7?"}\n'


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["-o", "res.jsonl", "--summary", "res.jsonl"], ("--output", "--summary")),
        (["-o", "res.jsonl", "--summary", "in.jsonl"], ("input file", "--summary")),
        (["-o", "in.jsonl"], ("input file", "--output")),
        (["-o", "link.jsonl"], ("input file", "--output")),
    ],
)
def test_batch_refuses_paths_that_are_one_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    named: tuple[str, str],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text(DATASET)
    Path("res.jsonl").write_text("")
    os.symlink("in.jsonl", "link.jsonl")
    code = main(["batch", "in.jsonl", *flags, "--model", "offline", "--db", "c.sqlite"])
    assert code == 2
    error = capsys.readouterr().err
    assert named[0] in error and named[1] in error
    assert Path("in.jsonl").read_text() == DATASET
    assert Path("res.jsonl").read_text() == ""
    assert not Path("c.sqlite").exists()


def test_report_refuses_a_plot_over_an_output_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("res.jsonl").write_text('{"id": "a"}\n')
    assert main(["report", "res.jsonl", "--plot", "./res.jsonl"]) == 2
    assert "--plot" in capsys.readouterr().err
    assert Path("res.jsonl").read_text() == '{"id": "a"}\n'


def test_batch_refuses_the_human_critic_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text(DATASET)
    argv = ["batch", "in.jsonl", "-o", "res.jsonl", "--critics", "human", "--model", "offline"]
    assert main([*argv, "--db", "c.sqlite"]) == 2
    assert "--critics human" in capsys.readouterr().err
    assert not Path("res.jsonl").exists() and not Path("c.sqlite").exists()
