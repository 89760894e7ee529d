"""`make run` runs what the README's Set-up section shows, and a TASK of your own runs plain."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from self_refine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _make_run(*overrides: str) -> list[str]:
    """The arguments `make run` gives `self-refine` (read with `make -n`, nothing is run)."""
    # Not the variables of a `make test` this may run under: only the overrides given.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "TASK")}
    done = subprocess.run(
        ["make", "-n", "run", *overrides],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    line = next(line for line in done.stdout.splitlines() if "bin/self-refine run " in line)
    return shlex.split(line)[1:]


def _readme_transcript() -> list[str]:
    """The lines of the output the Set-up section shows for `make run`."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Set-up\n") : text.index("\n## With a real model\n")]
    match = re.search(r"```text\n(.*?)```", section, re.S)
    assert match, "the Set-up section shows the output of make run"
    return match.group(1).splitlines()


def test_a_task_of_your_own_runs_plain() -> None:
    argv = _make_run("TASK=Write a haiku about rain.")
    assert argv == ["run", "Write a haiku about rain.", "--model", "offline"]


def test_the_readme_shows_what_make_run_prints(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _make_run()
    assert "--reference" in argv
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = _readme_transcript()
    thread = re.compile(r"thread: \S+  \(db: \.self-refine/checkpoints\.sqlite\)")
    assert thread.fullmatch(shown[0]) and thread.fullmatch(printed[0])
    # Every line the README shows is printed, in order; "..." stands for lines left out.
    remaining = iter(printed[1:])
    for line in shown[1:]:
        if line.strip() != "...":
            assert line in remaining, f"the README shows {line!r}, which make run does not print"
