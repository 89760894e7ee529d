"""`self-refine run` reads its thread's state no more often than it needs to."""

from __future__ import annotations

from typing import Any

import pytest

from self_refine.cli.main import main
from self_refine.graphs.checked import CheckedCompiledGraph

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."


@pytest.mark.usefixtures("workdir")
def test_a_run_reads_its_thread_once_after_its_steps(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a thread walks its checkpoints back to the run's start (a few ms at 50
    iterations): the report used to read again the state just read for a human critic."""
    reads: list[Any] = []
    real = CheckedCompiledGraph.get_state

    def counted(self: CheckedCompiledGraph, config: Any, **kwargs: Any) -> Any:
        reads.append(config)
        return real(self, config, **kwargs)

    monkeypatch.setattr(CheckedCompiledGraph, "get_state", counted)
    code = main(["run", TASK])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Stopped: critic_done after 3 refine step(s); score 1.00" in out
    # that the new thread is empty, the door's read as the run starts, and one after its
    # last step (the report read it again)
    assert len(reads) == 3


@pytest.mark.usefixtures("workdir")
def test_resuming_a_finished_thread_reads_it_once_and_reports_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["run", TASK, "--thread-id", "t1"]) == 0
    capsys.readouterr()
    reads: list[Any] = []
    real = CheckedCompiledGraph.get_state

    def counted(self: CheckedCompiledGraph, config: Any, **kwargs: Any) -> Any:
        reads.append(config)
        return real(self, config, **kwargs)

    monkeypatch.setattr(CheckedCompiledGraph, "get_state", counted)
    assert main(["resume", "t1"]) == 0
    out = capsys.readouterr().out
    assert "thread t1 is already finished: nothing to resume" in out
    assert "Stopped: critic_done after 3 refine step(s); score 1.00" in out
    # resume's own read (the thread was read again to see whether it is finished, and
    # again for the report)
    assert len(reads) == 1
