"""The core tests against the newest and the lowest dependency releases the project declares.

    python .ci/dependency_check.py newest lowest

Each check makes a fresh virtual environment, runs `pip install ".[verifiers]"` of the project
there (for `lowest`, under a constraints file that pins each of those requirements to the lower
bound pyproject.toml declares for it; pip has no lowest resolution of its own), adds the test
tools the core tests import, and runs the core tests from a copy of tests/ and docs/, so that
the package imported is the one pip installed, not the source tree. Nothing but the package
index is needed; pip's cache makes a second run quick. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_TESTS = (
    "tests/graphs",
    "tests/nodes",
    "tests/persistence/test_step_saver.py",
    "tests/test_stopping.py",
)
"""The tests that exercise LangGraph and LangChain through the graph, its nodes and its saver."""
EXTRA = "verifiers"
"""The extra the core tests need besides the core dependencies (a typed answer's jsonschema)."""
TEST_TOOLS = ("pytest", "pytest-asyncio", "pytest-timeout")
"""What the core tests import besides the project: their specifiers come from the dev extra."""
COPIED = ("tests", "docs", "pyproject.toml")
"""What the tests read from the source tree (the loop guide, pytest's settings)."""
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*$")


def _name(requirement: str) -> str:
    match = REQUIREMENT.match(requirement)
    if match is None:
        raise SystemExit(f"cannot read the requirement {requirement!r} in pyproject.toml")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def lower_bounds(dependencies: list[str]) -> dict[str, str]:
    """Each requirement's name and the version of its `>=` bound; refuse one without."""
    bounds = {}
    for requirement in dependencies:
        specifiers = REQUIREMENT.match(requirement)
        lower = re.search(r">=\s*([0-9][^,;\s]*)", specifiers.group(3) if specifiers else "")
        if lower is None:
            raise SystemExit(
                f"{requirement!r} in pyproject.toml has no lower bound (>=): give it the "
                "oldest release the code works with, so that the lowest check can test it"
            )
        bounds[_name(requirement)] = lower.group(1)
    return bounds


def _project() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]


def _run(command: list[str], **kwargs: object) -> None:
    done = subprocess.run(command, **kwargs)  # type: ignore[call-overload]
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}")


def check(kind: str, work: Path) -> dict[str, str]:
    """Install the project for `kind` in a fresh venv, run the core tests; the versions used."""
    project = _project()
    core = project["dependencies"]
    needed = [*core, *project["optional-dependencies"][EXTRA]]
    tools = [r for r in project["optional-dependencies"]["dev"] if _name(r) in TEST_TOOLS]
    env_dir = work / f"venv-{kind}"
    venv.create(env_dir, with_pip=True, clear=True)
    python = str(env_dir / "bin" / "python")
    # -qq: errors only (a conflict still shows, pip's warnings about its find-links do not).
    pip = [python, "-m", "pip", "install", "-qq", "--disable-pip-version-check"]
    if kind == "lowest":
        constraints = work / "lowest-constraints.txt"
        constraints.write_text(
            "".join(f"{name}=={version}\n" for name, version in lower_bounds(needed).items())
        )
        pip += ["--constraint", str(constraints)]
    _run([*pip, f"{ROOT}[{EXTRA}]", *tools])

    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    installed = dict(line.split("==", 1) for line in listed.splitlines() if "==" in line)
    versions = {_name(n): v for n, v in installed.items()}
    shown = [*map(_name, needed), "langgraph-checkpoint", "openai"]
    print(f"[{kind}] " + ", ".join(f"{n} {versions.get(n, '-')}" for n in shown), flush=True)

    home = work / f"tests-{kind}"
    home.mkdir()
    for part in COPIED:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, home / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, home / part)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    _run(
        # Each core test takes under a second: one that hangs on a release fails in a minute.
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=60", *CORE_TESTS],
        cwd=home,
        env=env,
    )
    return versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kinds", nargs="+", choices=("newest", "lowest"))
    parser.add_argument("--keep", type=Path, help="leave the venvs in this folder")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="self-refine-deps-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for kind in args.kinds:
            started = time.monotonic()
            check(kind, work)
            print(f"[{kind}] passed in {time.monotonic() - started:.0f} s", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
