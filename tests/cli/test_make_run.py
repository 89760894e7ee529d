"""`make run` runs what the getting-started guide shows, and a TASK of your own runs plain."""

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
GUIDE = ROOT / "docs" / "guides" / "getting-started.md"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _make_run(*overrides: str) -> list[str]:
    """The arguments `make run` gives `self-refine` (read with `make -n`, nothing is run)."""
    # Not the variables of a `make test` this may run under: only the overrides given.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "TASK")}
    printed = _make_dry_run(["run", *overrides], env)
    line = next(line for line in printed.splitlines() if "bin/self-refine run " in line)
    return shlex.split(line)[1:]


def _readme_transcript() -> list[str]:
    """The lines of the output the Set-up section shows for `make run`."""
    text = GUIDE.read_text()
    section = text[text.index("\n## Set-up\n") : text.index("\n## With a real model\n")]
    match = re.search(r"```text\n(.*?)```", section, re.S)
    assert match, "the Set-up section shows the output of make run"
    return match.group(1).splitlines()


def test_a_task_of_your_own_runs_plain() -> None:
    argv = _make_run("TASK=Write a haiku about rain.")
    assert argv == ["run", "Write a haiku about rain.", "--model", "local", "--candidates", "4"]
    argv = _make_run("TASK=Write a haiku about rain.", "MODEL=offline", "CANDIDATES=1")
    assert argv == ["run", "Write a haiku about rain.", "--model", "offline", "--candidates", "1"]


_STEP_LINES = (
    re.compile(r"thread: \S+  \(db: \.self-refine/checkpoints\.sqlite\)"),
    re.compile(
        r"\[candidate \d\] node \d+, fresh: verified (yes|no|-), lowest (\d\.\d\d|-), "
        r"critic (\d\.\d\d|-):"
    ),
    re.compile(
        r"\[pick\] step 0 \(4 fresh drafts\)  candidate \d of 4  score \d\.\d\d  "
        r"done (true|false)  \(\S+\)"
    ),
    re.compile(r"\[finalize\] answer chosen.*"),
    re.compile(r"Stopped: \w+ after \d+ steps? \(\d+ fresh drafts?\); score \d\.\d\d; tokens \d+"),
    re.compile(r"Answer \(step \d+, candidate \d: node \d+, a fresh draft\):"),
)


def _steps(lines: list[str]) -> list[str]:
    """The program's own step lines, as patterns matched in order (not the model's words)."""
    found = []
    for line in lines:
        for pattern in _STEP_LINES:
            if pattern.fullmatch(line):
                found.append(pattern.pattern)
    return found


def test_make_run_uses_the_local_model_on_the_readme_task() -> None:
    argv = _make_run()
    assert argv[argv.index("--model") + 1] == "local"
    assert "--reference" in argv and "constrained_generation" in argv


def test_the_readme_shows_a_real_local_model_run_in_the_program_s_format(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp", reason='needs the local extra: pip install -e ".[local]"')
    shown = _readme_transcript()
    text = GUIDE.read_text()
    assert "Qwen2.5-Coder-0.5B-Instruct" in text[: text.index("\n## With a real model\n")]
    # The same command, with the fast small model in place of the 491 MB default.
    monkeypatch.setenv("SELF_REFINE_MODELS", str(workdir / "models"))
    argv = _make_run()
    argv[argv.index("--model") + 1] = "local:smollm2"
    argv += ["--max-tokens", "48", "--max-iterations", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert set(_steps(printed)) == _STEP_LINES_TEXT, "the program prints every kind of step"
    assert set(_steps(shown)) == _STEP_LINES_TEXT, "the README shows every kind of step"


_STEP_LINES_TEXT = {pattern.pattern for pattern in _STEP_LINES}


def _make_studio(**env_overrides: str) -> str:
    """What `make studio` would run (`make -n`, nothing is run), as one text."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    env.pop("SELF_REFINE_MODEL", None)
    env.update(env_overrides)
    return _make_dry_run(["-W", "pyproject.toml", "studio"], env)


def _make_dry_run(arguments: list[str], env: dict[str, str]) -> str:
    """What `make -n ARGUMENTS` prints: the commands make would run, none of them run."""
    done = subprocess.run(
        ["make", "-n", *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_make_studio_with_the_local_model_installs_its_extra_and_fetches_it_first() -> None:
    planned = _make_studio(SELF_REFINE_MODEL="local")
    assert '-e ".[local,' in planned, "the local extra is installed"
    fetch, serve = planned.index("local_model_path"), planned.index("bin/self-refine studio")
    assert fetch < serve and "'local'" in planned[fetch:serve]
    plain = _make_studio()
    assert '-e ".[local,' not in plain and "local_model_path" not in plain
