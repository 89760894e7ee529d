"""The graph from Python: schemas, streaming, draft input, roles, context, sync/async parity."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from langgraph.graph import StateGraph

from self_refine import ConfigError, RefineContext, Roles, arefine, create_self_refine_graph, refine
from self_refine.models.offline import OfflineModel
from self_refine.models.resolve import resolve_model
from tests.fakes import FakeChatModel, critique

SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.mmd"
LOOP_GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "loop.md"
DOG_TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."


def two_round_model() -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": ["draft 0"],
            "critic": [critique(["Add a verb."], score=0.5), critique(score=1.0, done=True)],
            "refiner": ["draft 1"],
        }
    )


def test_factory_returns_an_uncompiled_graph_with_input_and_output_schemas() -> None:
    builder = create_self_refine_graph(two_round_model())
    assert isinstance(builder, StateGraph)
    graph = builder.compile()
    assert set(graph.get_input_jsonschema()["properties"]) == {"task", "draft", "reference", "id"}
    assert graph.get_input_jsonschema()["required"] == ["task"]
    assert set(graph.get_output_jsonschema()["properties"]) == {
        "answer",
        "best",
        "last",
        "attempts",
        "iterations",
        "stop_reason",
        "score",
        "usage",
        "id",
        "structured_response",
        "structured_error",
    }
    context = graph.get_context_jsonschema()
    assert context is not None
    for name in (
        "model",
        "max_iterations",
        "score_threshold",
        "patience",
        "history_window",
        "select",
        "profile",
    ):
        assert context["properties"][name].get("description"), name


def test_invoke_returns_only_the_output_schema() -> None:
    result = create_self_refine_graph(two_round_model()).compile().invoke({"task": "t"})
    assert "draft" not in result and "critique" not in result and "task" not in result
    assert result["answer"] == "draft 1"


def test_stream_updates_gives_one_update_per_node_in_order() -> None:
    graph = create_self_refine_graph(two_round_model()).compile()
    chunks = list(graph.stream({"task": "t"}, stream_mode="updates"))
    assert all(len(chunk) == 1 for chunk in chunks)
    nodes = [next(iter(chunk)) for chunk in chunks]
    assert nodes == ["begin", "generate", "critique", "refine", "critique", "finalize"]
    assert chunks[1]["generate"]["draft"] == "draft 0"
    assert chunks[2]["critique"]["critique"]["feedback"] == ["Add a verb."]
    assert "stop_reason" not in chunks[2]["critique"]  # unchanged: the run goes on
    assert chunks[3]["refine"] == {**chunks[3]["refine"], "draft": "draft 1", "iteration": 1}
    assert chunks[4]["critique"]["stop_reason"] == "critic_done"
    assert chunks[5]["finalize"]["answer"] == "draft 1"


def test_a_given_draft_skips_generation() -> None:
    model = two_round_model()
    graph = create_self_refine_graph(model).compile()
    chunks = list(graph.stream({"task": "t", "draft": "my text"}, stream_mode="updates"))
    assert [next(iter(c)) for c in chunks] == [
        "begin",
        "critique",
        "refine",
        "critique",
        "finalize",
    ]
    assert model.requests_for("generator") == []
    assert "<draft>\nmy text\n</draft>" in model.requests_for("critic")[0].prompt
    result = refine("t", model=two_round_model(), draft="my text")
    assert result["attempts"][0]["draft"] == "my text"
    assert result["attempts"][0]["iteration"] == 0
    assert result["iterations"] == 1


def test_a_given_draft_that_needs_nothing_is_returned_without_any_rewrite() -> None:
    model = FakeChatModel(script={"critic": [critique(score=1.0, done=True)]})
    result = refine("t", model=model, draft="already fine")
    assert (result["answer"], result["iterations"], result["stop_reason"]) == (
        "already fine",
        0,
        "critic_done",
    )
    assert [sent.role for sent in model.requests] == ["critic"]


def test_each_role_model_receives_only_its_own_requests() -> None:
    generator = FakeChatModel(script={"generator": ["draft 0"]})
    critic = FakeChatModel(
        script={"critic": [critique(["more"], score=0.3), critique(score=1.0, done=True)]}
    )
    refiner = FakeChatModel(script={"refiner": ["draft 1"]})
    result = refine(
        "t", model=generator, critic_model=critic, refiner_model=refiner, max_iterations=3
    )
    assert result["answer"] == "draft 1"
    assert [s.role for s in generator.requests] == ["generator"]
    assert [s.role for s in critic.requests] == ["critic", "critic"]
    assert [s.role for s in refiner.requests] == ["refiner"]


def test_one_model_serves_the_roles_that_have_none_of_their_own() -> None:
    shared = FakeChatModel(script={"generator": ["draft 0"], "refiner": ["draft 1"]})
    critic = FakeChatModel(
        script={"critic": [critique(["more"], score=0.3), critique(score=1.0, done=True)]}
    )
    refine("t", model=shared, critic_model=critic)
    assert [s.role for s in shared.requests] == ["generator", "refiner"]
    assert [s.role for s in critic.requests] == ["critic", "critic"]


def test_context_overrides_the_factory_defaults_per_run() -> None:
    never_done = FakeChatModel(
        script={"generator": ["d0"], "critic": [critique(["x"], score=0.2)], "refiner": ["d1"]}
    )
    never_done.script["refiner"] = [f"d{n}" for n in range(1, 12)]
    graph = create_self_refine_graph(never_done, settings=RefineContext(max_iterations=3)).compile()
    assert graph.invoke({"task": "t"})["iterations"] == 3
    short = graph.invoke({"task": "t"}, context=RefineContext(max_iterations=1))
    assert (short["iterations"], short["stop_reason"]) == (1, "max_iterations")
    scored = graph.invoke({"task": "t"}, context=RefineContext(score_threshold=0.2))
    assert (scored["iterations"], scored["stop_reason"]) == (0, "score_threshold")


def test_context_model_string_replaces_the_factory_model() -> None:
    unused = FakeChatModel(script={})
    graph = create_self_refine_graph(unused).compile()
    result = graph.invoke({"task": DOG_TASK}, context=RefineContext(model="offline"))
    assert unused.requests == []
    assert result["stop_reason"] == "critic_done"
    assert result["attempts"][0]["critique"]["source"] == "offline"


def test_context_role_model_replaces_one_role_only() -> None:
    factory = FakeChatModel(script={"generator": ["a dog"], "refiner": ["A dog."]})
    graph = create_self_refine_graph(factory).compile()
    graph.invoke({"task": "Write about: dog"}, context=RefineContext(critic_model="offline"))
    assert {s.role for s in factory.requests} == {"generator", "refiner"}


def test_context_as_a_plain_dict_is_accepted() -> None:
    def worse_later() -> FakeChatModel:
        return FakeChatModel(
            script={
                "generator": ["draft 0"],
                "critic": [critique(["x"], score=0.8), critique(["y"], score=0.3)],
                "refiner": ["draft 1"],
            }
        )

    context: Any = {"select": "last"}
    graph = create_self_refine_graph(
        worse_later(), settings=RefineContext(max_iterations=1)
    ).compile()
    assert graph.invoke({"task": "t"}, context=context)["answer"] == "draft 1"
    graph = create_self_refine_graph(
        worse_later(), settings=RefineContext(max_iterations=1)
    ).compile()
    assert graph.invoke({"task": "t"})["answer"] == "draft 0"


def test_refine_honours_a_context_that_raises_the_iteration_cap() -> None:
    model = FakeChatModel(
        script={
            "generator": ["d0"],
            "critic": [critique(["x"], score=0.2)],
            "refiner": [f"d{n}" for n in range(1, 20)],
        }
    )
    result = refine("t", model=model, context=RefineContext(max_iterations=12))
    assert (result["iterations"], result["stop_reason"]) == (12, "max_iterations")


async def test_arefine_matches_refine() -> None:
    sync = refine(DOG_TASK, model="offline")
    async_ = await arefine(DOG_TASK, model="offline")
    assert async_ == sync
    fake_sync = refine("t", model=two_round_model())
    fake_async = await arefine("t", model=two_round_model())
    assert fake_async == fake_sync


async def test_astream_gives_the_same_updates_as_stream() -> None:
    graph = create_self_refine_graph("offline").compile()
    sync = list(graph.stream({"task": DOG_TASK}, stream_mode="updates"))
    async_ = [c async for c in graph.astream({"task": DOG_TASK}, stream_mode="updates")]
    assert async_ == sync


def test_model_strings_resolve_to_the_right_chat_models(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(resolve_model("offline"), OfflineModel)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    bare = resolve_model("gpt-4o-mini")
    prefixed = resolve_model("openai:gpt-4o-mini")
    assert isinstance(bare, ChatOpenAI) and isinstance(prefixed, ChatOpenAI)
    assert bare.model_name == prefixed.model_name == "gpt-4o-mini"
    local = resolve_model("my-model", base_url="http://127.0.0.1:9/v1")
    assert isinstance(local, ChatOpenAI) and local.openai_api_base == "http://127.0.0.1:9/v1"
    instance = FakeChatModel()
    assert resolve_model(instance) is instance


def test_base_url_alone_needs_no_api_key() -> None:
    model = resolve_model("llama3", base_url="http://127.0.0.1:9/v1")
    assert isinstance(model, ChatOpenAI)


@pytest.mark.parametrize(
    ("name", "served"),
    [
        ("llama3.1:8b", "llama3.1:8b"),
        ("qwen2.5:7b-instruct", "qwen2.5:7b-instruct"),
        ("openai:gpt-4o", "gpt-4o"),
    ],
)
def test_with_a_base_url_the_string_is_the_servers_model_id(name: str, served: str) -> None:
    model = resolve_model(name, base_url="http://127.0.0.1:9/v1")
    assert isinstance(model, ChatOpenAI) and model.model_name == served


def test_environment_is_read_at_each_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first")
    assert isinstance(resolve_model("gpt-4o-mini"), ChatOpenAI)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_model("gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from_env = resolve_model("llama3.1:8b")
    assert isinstance(from_env, ChatOpenAI)
    assert from_env.openai_api_base == "http://127.0.0.1:9/v1"


def test_graph_shape_matches_the_snapshot() -> None:
    drawn = create_self_refine_graph("offline").compile().get_graph().draw_mermaid()
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(drawn)
    assert drawn == SNAPSHOT.read_text(), (
        "the graph's shape changed. If that is intended, regenerate the snapshot with "
        "`UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_graph.py -k snapshot` "
        "and update the mermaid block in docs/guides/loop.md to match"
    )


def test_the_loop_guide_shows_the_snapshot() -> None:
    block = f"```mermaid\n{SNAPSHOT.read_text()}```"
    hint = "paste tests/graphs/snapshots/graph.mmd into the loop guide"
    assert block in LOOP_GUIDE.read_text(), hint


def test_flat_factory_keywords_still_work_and_warn() -> None:
    with pytest.warns(DeprecationWarning, match="settings=RefineContext"):
        builder = create_self_refine_graph("offline", max_iterations=1, critic_model="offline")
    result = builder.compile().invoke({"task": "Write a note using the words: rain, roof"})
    assert result["iterations"] <= 1


def test_grouped_settings_reach_the_run() -> None:
    builder = create_self_refine_graph(
        "offline", roles=Roles(critic="offline"), settings=RefineContext(max_iterations=1)
    )
    result = builder.compile().invoke({"task": "Write a note using the words: rain, roof, sun"})
    assert result["iterations"] <= 1


def test_unknown_factory_keyword_names_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'max_iterations'"):
        create_self_refine_graph("offline", max_iteratons=3)


def test_model_strings_in_the_factory_s_settings_still_work_and_warn() -> None:
    settings = RefineContext(model="offline", critic_model="offline", max_iterations=1)
    with pytest.warns(DeprecationWarning, match="roles=Roles"):
        builder = create_self_refine_graph(None, settings=settings)
    assert builder.parts.roles["critic"] == "offline"
    assert builder.parts.settings.model is None and builder.parts.settings.max_iterations == 1
    result = builder.compile().invoke({"task": "Write one sentence about a dog."})
    assert result["iterations"] == 1


def test_two_different_models_given_for_the_factory_are_refused() -> None:
    settings = RefineContext(model="gpt-4o-mini")
    with pytest.raises(ConfigError, match="pass the model once"), pytest.warns(DeprecationWarning):
        create_self_refine_graph("offline", settings=settings)
