"""Which commit a benchmark run measures: the full commit checked out, and whether the
tree differs from it. Every results file records it; the reported part's ledger
(`benchmarks.quality.reported`) refuses a tree that differs. A run from a copy with no
git (a `git archive` of an older commit) names its commit in `BENCH_COMMIT`, and its
files say it was given; with neither, the run is refused: no file says "unknown"."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

__all__ = ["GIVEN", "ROOT", "commit_of", "given_commit", "recorded_commit", "tree_changes"]

GIVEN = "BENCH_COMMIT"
"""The environment variable that names the commit a copy with no git holds."""

ROOT = Path(__file__).resolve().parents[2]
"""The checkout the benchmarks run from."""


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(
            f"git {' '.join(args)} failed ({done.stderr.strip() or done.returncode}): a reported "
            "run is made from a git checkout of the project, so its commit can be named"
        )
    return done.stdout


def commit_of(cwd: Path = ROOT) -> str:
    """The full commit checked out at `cwd`."""
    return _git("rev-parse", "HEAD", cwd=cwd).strip()


def tree_changes(cwd: Path = ROOT) -> list[str]:
    """What differs from the commit: changed, staged and untracked files (not ignored ones)."""
    return [line for line in _git("status", "--porcelain", cwd=cwd).splitlines() if line]


def given_commit(why: object = "no git checkout") -> str:
    """The commit `BENCH_COMMIT` names, said to be given; refused (SystemExit) when it is
    not set or is no commit id, before any model is loaded."""
    given = os.environ.get(GIVEN, "").strip()
    if not re.fullmatch(r"[0-9a-f]{7,40}", given):
        said = f" ({GIVEN}={given!r} is no commit id)" if given else ""
        raise SystemExit(
            f"cannot name the commit this run measures ({why}){said}: run the benchmark from a "
            f"git checkout of the project, or set {GIVEN} to the commit the copy holds"
        )
    return f"{given} (given by {GIVEN}: the run's tree is no git checkout)"


def recorded_commit() -> str:
    """The commit a run's files record: the full commit checked out, with "(with
    uncommitted changes)" when the tree differs from it; in a copy with no git, the one
    `BENCH_COMMIT` gives (`given_commit`), else the run is refused."""
    try:
        commit, changed = commit_of(), tree_changes()
    except (OSError, SystemExit) as why:
        return given_commit(why)
    return commit + (" (with uncommitted changes)" if changed else "")
