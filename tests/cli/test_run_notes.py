"""What `self-refine run` notes on stderr before a run whose result could mislead.

A verifier the run names but cannot use (no reference for it), and the offline
stand-in asked for several drafts it cannot vary: the run goes on, and one line
says so and what to give instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from self_refine.cli.main import main

TASK = "Write one sentence using the words: dog, frisbee, park."


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str]:
    code = main(["run", TASK, "--db", str(tmp_path / "c.sqlite"), "--max-iterations", "1", *args])
    return code, capsys.readouterr().err


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("self-refine: note:")]


@pytest.mark.parametrize(
    ("profile", "verifier", "needs"),
    [
        ("constrained_generation", "concepts", 'reference["concepts"]'),
        ("math", "answer", 'reference["answer"]'),
        ("python_function", "python_tests", 'reference["tests"]'),
    ],
)
def test_a_profile_verifier_without_its_reference_says_it_checks_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profile: str, verifier: str, needs: str
) -> None:
    code, err = _run(capsys, tmp_path, "--profile", profile)
    assert code == 0
    [note] = _notes(err)
    assert f"the {verifier} verifier checks nothing" in note
    assert needs in note and "--reference" in note and "llm critic alone" in note


def test_a_reference_the_verifier_reads_brings_no_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reference = json.dumps({"concepts": ["dog", "frisbee", "park"]})
    code, err = _run(
        capsys, tmp_path, "--profile", "constrained_generation", "--reference", reference
    )
    assert code == 0 and _notes(err) == []


def test_a_verifier_alone_without_its_reference_is_still_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _run(capsys, tmp_path, "--critics", "concepts")
    assert code == 2 and "no critic can judge this task" in err
    assert not (tmp_path / "c.sqlite").exists()


@pytest.mark.parametrize(
    ("flags", "said"),
    [(["--strategy", "sample"], "--strategy sample"), (["--candidates", "3"], "--candidates 3")],
)
def test_the_offline_stand_in_says_it_does_not_sample(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], said: str
) -> None:
    code, err = _run(capsys, tmp_path, "--model", "offline", *flags)
    assert code == 0
    [note] = _notes(err)
    assert "writes the same draft every time" in note and said in note


def test_one_draft_at_a_time_from_the_stand_in_brings_no_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _run(capsys, tmp_path, "--model", "offline")
    assert code == 0 and _notes(err) == []
