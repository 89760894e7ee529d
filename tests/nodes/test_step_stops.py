"""The stops a step of candidates shares are held while its branches run, not kept for
the life of the process."""

from __future__ import annotations

from typing import Any

import pytest

from self_refine.nodes import first_verified
from self_refine.nodes.first_verified import StepStops


def _running(monkeypatch: pytest.MonkeyPatch, thread: str | None, checkpoint: str) -> None:
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_map": {"": checkpoint}}}
    monkeypatch.setattr(first_verified, "get_config", lambda: config)


def test_the_branches_of_a_step_share_its_stop_until_the_last_one_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stops = StepStops()
    _running(monkeypatch, "t", "step-1")
    with stops.joined(3) as first:
        with stops.joined(3) as second:
            first.set()
            assert second is first and second.is_set()
        assert len(stops) == 1
    # A branch that starts after the others ended still finds the step's stop set ...
    with stops.joined(3) as third:
        assert third is first
    # ... and once the last of the three has ended, nothing of the step is kept.
    assert len(stops) == 0


def test_a_step_left_unfinished_is_let_go_when_its_thread_starts_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stops = StepStops()
    _running(monkeypatch, "t", "step-1")
    with stops.joined(3):
        pass  # two branches never ran: the run was stopped midway
    _running(monkeypatch, "other", "step-1")
    with stops.joined(2):
        assert len(stops) == 2  # another thread's step is its own
    _running(monkeypatch, "t", "step-2")
    with stops.joined(2) as stop:
        assert not stop.is_set()
        assert len(stops) == 2  # thread t's unfinished step is gone, "other"'s stays
