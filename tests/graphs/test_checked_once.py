"""A call is checked once: the door runs a call its caller checked already, and no other."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import self_refine.graphs.checked as door
from self_refine import create_self_refine_graph
from self_refine.cli.main import main
from self_refine.errors import ConfigError
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence that uses all of these words: train, river."


def _model() -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": ["A train crossed the river."],
            "critic": [critique([], score=1.0, done=True)],
        }
    )


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every input the door's check was asked about."""
    asked: list[Any] = []
    real = door.check

    def counted(parts: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(input)
        return real(parts, input, *args, **kwargs)

    monkeypatch.setattr(door, "check", counted)
    return asked


def test_the_command_line_checks_a_run_once(
    checks: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    assert main(["run", TASK, "--model", "offline", "--max-iterations", "1", "--db", db]) == 0
    assert "thread:" in capsys.readouterr().out
    assert len(checks) == 1


def test_the_door_checks_a_call_that_is_not_the_one_checked(checks: list[Any]) -> None:
    builder = create_self_refine_graph(_model())
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    checked = builder.check_call({"task": TASK}, {"max_iterations": 1}, saved=True)
    with pytest.raises(ConfigError, match="task"):
        graph.invoke({"task": ""}, config, context=checked)
    assert graph.get_state(config).values == {}, "nothing was written"
    assert len(checks) == 2


def test_a_call_checked_before_runs_with_the_settings_it_was_checked_with(
    checks: list[Any],
) -> None:
    builder = create_self_refine_graph(_model())
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    payload = {"task": TASK}
    checked = builder.check_call(payload, {"max_iterations": 1, "profile": "math"}, saved=True)
    graph.invoke(payload, config, context=checked)
    assert graph.get_state(config).values["run_context"]["profile"] == "math"
    assert len(checks) == 1


def test_the_old_settings_module_still_hands_its_names_on_with_a_warning() -> None:
    import self_refine.context as old

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        context_class = old.RefineContext
    assert context_class is create_self_refine_graph("offline").parts.settings.__class__
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "self_refine.settings.fields" in str(caught[0].message)


@pytest.mark.parametrize(
    "first", ["self_refine.state", "self_refine.settings", "self_refine.prompts.forms"]
)
def test_each_low_module_imports_first_on_its_own(first: str) -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", f"import {first}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
