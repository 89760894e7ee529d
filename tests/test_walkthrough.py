"""The guides' commands, run in order on a fresh copy of the repository, as a new user would.

A walkthrough step is a ```console block right after an `<!-- walkthrough -->` line in a
guide: each `$ ` line is a command (a trailing backslash continues it), and the lines
after it are output the command must print (every one of them, in any order, on stdout
or stderr; `...` stands for lines not shown). The pages are read in the site's order
(mkdocs.yml), so later steps use what earlier ones made: the `dog-park` thread of the
command-line guide, the `results.jsonl` of the batch guide.

The other `self-refine` commands in the README's and the guides' shell blocks are not
run here; each is listed in NOT_RUN with the reason (most need a network endpoint), so
that a new command in the docs is either part of the walkthrough or explained.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from self_refine.prompts import PROFILES

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = Path(sys.executable).with_name("self-refine")
_MARKER = re.compile(r"<!-- walkthrough -->\n```console\n(.*?)```", re.S)

NOT_RUN: dict[str, str] = {
    "--model gpt-4o-mini": "needs OpenAI (an API key and the network)",
    "--base-url http": "needs a model server at that URL",
    "--db postgresql://": "needs a PostgreSQL server",
    "--model local": "fetches the 491 MB model from the package index (tests/models runs it)",
    "self-refine studio": "serves until stopped (tests/integration/test_studio_server.py)",
    "--critic human": "asks a person at the terminal (tests/cli/test_cli_human.py)",
    "self-refine resume THREAD_ID": "a placeholder for a thread that stopped unfinished",
    "report part1.jsonl part2.jsonl": "reads the shards of the PostgreSQL batch above it",
    "--ray": "starts or joins a Ray cluster (tests/batch/test_batch_ray.py runs a batch on one)",
}
"""Commands shown in the docs but not run by the walkthrough, by a part of their text."""


@dataclass
class Step:
    where: str
    command: str
    shown: list[str]


def _pages() -> list[Path]:
    """The README, then the pages in the order of the site's navigation."""
    nav = re.findall(
        r"^\s*-\s+(?:[^:\n]+:\s+)?(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M
    )
    written = [ROOT / "docs" / page for page in nav]  # some pages are made by the build
    return [ROOT / "README.md", *(page for page in written if page.exists())]


def _steps() -> list[Step]:
    steps: list[Step] = []
    for page in _pages():
        for block in _MARKER.findall(page.read_text()):
            lines = block.splitlines()
            index = 0
            while index < len(lines):
                if not lines[index].startswith("$ "):
                    raise AssertionError(f"{page.name}: a walkthrough block starts with a command")
                command = lines[index][2:]
                while command.endswith("\\"):
                    index += 1
                    command += "\n" + lines[index]
                index += 1
                shown = []
                while index < len(lines) and not lines[index].startswith("$ "):
                    shown.append(lines[index])
                    index += 1
                steps.append(Step(page.relative_to(ROOT).as_posix(), command, shown))
    return steps


def _shell_commands() -> list[tuple[str, str]]:
    """(page, command) of every `self-refine` line in a shell block outside the walkthrough."""
    found = []
    for page in _pages():
        text = _MARKER.sub("", page.read_text())
        for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                command = re.sub(r"^[\w-]*\$ ", "", line.strip())
                if command.startswith("self-refine "):
                    found.append((page.relative_to(ROOT).as_posix(), command))
    return found


def _copy_of_the_repository(into: Path) -> Path:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs a git checkout of the repository")
    clone = into / "clone"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    return clone


def _environment() -> dict[str, str]:
    """A new user's shell: the project's program on PATH, no model endpoint configured."""
    unset = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELF_REFINE_MODEL", "SELF_REFINE_DB")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["PATH"] = os.pathsep.join([str(PROGRAM.parent), env.get("PATH", "")])
    env.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    return env


STEPS = _steps()


def test_the_walkthrough_covers_what_a_new_user_does() -> None:
    commands = [step.command.split()[1] for step in STEPS]
    assert {"run", "show", "resume", "profiles", "batch", "report"} <= set(commands)
    assert any("--html" in step.command for step in STEPS if "show" in step.command)
    assert any("examples/items.jsonl" in step.command for step in STEPS)


def test_every_other_command_in_the_docs_says_why_it_is_not_run() -> None:
    unexplained = [
        f"{page}: {command}"
        for page, command in _shell_commands()
        if not any(part in command for part in NOT_RUN)
    ]
    assert not unexplained, "run these in the walkthrough or add them to NOT_RUN"


UNJUDGEABLE = {"dialogue", "code_readability", "sentiment_reversal", "acronym"}
"""Example items no verifier can judge (a friendly reply, code that reads better, a
positive review, an acronym): they carry no reference, so the LLM critic judges them and
the batch counts them as not judged (docs/guides/batch.md, "What a verifier can know")."""


def test_the_example_items_are_one_per_profile_with_a_reference_where_one_can_judge() -> None:
    lines = (ROOT / "examples" / "items.jsonl").read_text().splitlines()
    items = [json.loads(line) for line in lines]
    assert [item["id"] for item in items] == list(PROFILES)
    assert {item["id"] for item in items if "reference" not in item} == UNJUDGEABLE
    shapes = {key for item in items for key in item.get("reference", {})}
    assert shapes == {"answer", "tests", "concepts", "schema"}


@pytest.mark.skipif(not PROGRAM.exists(), reason="the self-refine program is not installed")
def test_the_guides_commands_run_in_order_on_a_fresh_copy(tmp_path: Path) -> None:
    clone = _copy_of_the_repository(tmp_path)
    env = _environment()
    for step in STEPS:
        done = subprocess.run(
            ["bash", "-c", step.command],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        printed = done.stdout + done.stderr
        assert done.returncode == 0, f"{step.where}: {step.command}\n{printed}"
        lines = {line.rstrip() for line in printed.splitlines()}
        for expected in step.shown:
            if expected.strip() and expected.strip() != "...":
                assert expected.rstrip() in lines, (
                    f"{step.where}: `{step.command}` did not print {expected!r}:\n{printed}"
                )
    results = [json.loads(line) for line in (clone / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in results) == sorted(PROFILES)
    for page in ("thread.html", "report.html"):
        assert (clone / page).read_text().lstrip().lower().startswith("<!doctype html")
    assert not (ROOT / "results.jsonl").exists(), "the walkthrough ran in the copy"


def test_what_the_guides_commands_write_in_the_clone_is_ignored_by_git() -> None:
    """A reader who follows the guides in their clone is left no untracked files."""
    written = set()
    for step in STEPS:
        if "exit $?" in step.command:  # a refusal: it writes nothing
            continue
        for name in re.findall(r"(?:-o|--summary|--html|>)\s+([\w./-]+)", step.command):
            if name != "-":
                written.add(name)
        written.update(
            f"{name[: -len('.jsonl')]}.png"  # report's default plot, beside its input
            for name in re.findall(r"report\s+(\S+\.jsonl)", step.command)
        )
    assert {"results.jsonl", "summary.json", "thread.html", "report.html"} <= written
    try:
        ignored = subprocess.run(
            ["git", "check-ignore", "--no-index", "--stdin"],
            cwd=ROOT,
            input="\n".join(sorted(written)),
            capture_output=True,
            text=True,
        ).stdout.split()
    except OSError:
        pytest.skip("needs git")
    assert sorted(written - set(ignored)) == [], "add them to .gitignore"
