"""Which commit a benchmark run measures: the full commit checked out, and whether the
tree differs from it. Every results file records it; the reported part's ledger
(`benchmarks.quality.reported`) refuses a tree that differs."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["ROOT", "commit_of", "recorded_commit", "tree_changes"]

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


def recorded_commit() -> str:
    """The commit a run's files record: the full commit checked out, with "(with
    uncommitted changes)" when the tree differs from it. Refused, before any model is
    loaded, where no commit can be named (no git checkout)."""
    try:
        commit, changed = commit_of(), tree_changes()
    except (OSError, SystemExit) as why:
        raise SystemExit(
            f"cannot name the commit this run measures ({why}): run the benchmark from a git "
            "checkout of the project"
        ) from None
    return commit + (" (with uncommitted changes)" if changed else "")
