"""Bad input from Python: a one-line error that says what to do, before any model call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from self_refine import ConfigError, RefineContext, Roles, create_self_refine_graph, refine
from tests.fakes import FakeChatModel, critique


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel(
        script={"generator": ["d"], "critic": [critique(score=1, done=True)], "refiner": ["d"]}
    )


def assert_one_line(error: pytest.ExceptionInfo[BaseException], *words: str) -> None:
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("task", ["", "   \n\t"])
def test_empty_or_blank_task(model: FakeChatModel, task: str) -> None:
    with pytest.raises(ConfigError) as error:
        refine(task, model=model)
    assert_one_line(error, "task is empty")
    with pytest.raises(ConfigError):
        create_self_refine_graph(model).compile().invoke({"task": task})
    assert model.requests == []


def test_task_of_the_wrong_type(model: FakeChatModel) -> None:
    graph = create_self_refine_graph(model).compile()
    not_a_string_task: Any = {"task": 42}
    with pytest.raises(ConfigError) as error:
        graph.invoke(not_a_string_task)
    assert_one_line(error, "task must be a string")
    assert model.requests == []


def test_task_over_the_size_limit(model: FakeChatModel) -> None:
    with pytest.raises(ConfigError) as error:
        refine("x" * 100_001, model=model)
    assert_one_line(error, "over the limit", "shorten it")
    assert model.requests == []


@pytest.mark.parametrize("value", [-1, 51])
def test_max_iterations_out_of_range(model: FakeChatModel, value: int) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=model, max_iterations=value)
    assert_one_line(error, "max_iterations must be between 0 and 50", str(value))
    with pytest.raises(ConfigError):
        RefineContext(max_iterations=value)
    assert model.requests == []


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_score_threshold_outside_zero_to_one(model: FakeChatModel, value: float) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=model, score_threshold=value)
    assert_one_line(error, "score_threshold must be between 0 and 1")
    assert model.requests == []


@pytest.mark.parametrize(
    "settings",
    [{"patience": 0}, {"history_window": -1}, {"select": "first"}],
)
def test_other_settings_out_of_range(model: FakeChatModel, settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=model, **settings)
    assert_one_line(error, next(iter(settings)))
    assert model.requests == []


@pytest.mark.parametrize("name", ["not a model!", "openai:", ":gpt-4o", "gpt 4o"])
def test_unknown_model_string_form(name: str) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=name)
    assert_one_line(error, "unknown model string", "'offline'", "provider:model")


def test_missing_api_key_for_a_real_openai_model(model: FakeChatModel) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model="gpt-4o-mini")
    assert_one_line(error, "OPENAI_API_KEY", "base_url=...", "offline")
    # The key may still come with a run's context, so building succeeds and the
    # run fails before the generator (a working model) is asked anything.
    graph = create_self_refine_graph(model, roles=Roles(critic="openai:gpt-4o-mini")).compile()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        graph.invoke({"task": "t"})
    assert model.requests == []


def test_model_of_the_wrong_type() -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=42)  # type: ignore[arg-type]
    assert_one_line(error, "model must be a model string or a LangChain chat model")


def test_unknown_profile(model: FakeChatModel) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=model, profile="poetry")
    assert_one_line(error, "unknown profile 'poetry'", "general")


def test_bad_model_string_in_the_run_context_fails_before_any_call(model: FakeChatModel) -> None:
    graph = create_self_refine_graph(model).compile()
    with pytest.raises(ConfigError) as error:
        graph.invoke({"task": "t"}, context=RefineContext(model="bad model!"))
    assert_one_line(error, "unknown model string")
    assert model.requests == []


def test_no_model_anywhere() -> None:
    graph = create_self_refine_graph(None).compile()
    with pytest.raises(ConfigError) as error:
        graph.invoke({"task": "t"})
    assert_one_line(error, "no model for the", "model=")


def test_config_errors_are_value_errors() -> None:
    assert issubclass(ConfigError, ValueError)


def test_a_thread_id_without_a_checkpointer_is_refused(model: FakeChatModel) -> None:
    with pytest.raises(ConfigError) as error:
        refine("t", model=model, thread_id="kept")
    assert_one_line(error, "thread_id='kept' needs a checkpointer", "checkpointer=")
    assert model.requests == []


def test_a_context_typo_names_the_field_and_the_closest_valid_name() -> None:
    graph = create_self_refine_graph("offline").compile()
    with pytest.raises(ConfigError) as refused:
        graph.invoke({"task": "Write a haiku."}, context={"max_iteratons": 3})
    message = str(refused.value)
    assert "unknown context field 'max_iteratons' (did you mean 'max_iterations'?)" in message
    assert "--" not in message, "Python errors do not name CLI flags"
    with pytest.raises(ConfigError, match="did you mean 'score_threshold'"):
        asyncio.run(graph.ainvoke({"task": "Write a haiku."}, context={"score_treshold": 0.5}))


def test_an_error_names_settings_as_python_and_the_command_line_as_flags(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from self_refine.cli.main import main

    with pytest.raises(ConfigError) as raised:
        refine("x", model="gpt-4o-mini")
    assert "api_key=..., or base_url=..." in str(raised.value)
    assert 'model="offline"' in str(raised.value) and "--" not in str(raised.value)
    with pytest.raises(ConfigError, match="use candidates=1 with it"):
        refine("x", model="offline", critics=["human"], candidates=2)

    assert main(["run", "x", "--model", "gpt-4o-mini"]) == 2
    said = capsys.readouterr().err
    assert "give --api-key ..., or --base-url ... for" in said and "--model offline" in said
    assert main(["run", "x", "--critics", "human", "--candidates", "2"]) == 2
    assert "use --candidates 1 with it" in capsys.readouterr().err
