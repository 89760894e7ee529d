"""Every suite `make bench` finds takes the two options the runner gives it.

Before: `t6_candidates.py` had its own command line, and the full run recorded it
as a failed suite ("unrecognized arguments: --json ...").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.run import suites

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(suites()))
def test_each_suite_takes_the_runners_options(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--json" in done.stdout and "--quick" in done.stdout
