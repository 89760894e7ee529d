"""`self-refine studio`: the command line it runs, its checks, and the configs it serves."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_cli.config import validate_config_file

import self_refine
from self_refine import RefineContext
from self_refine.cli.devserver import (
    HOST,
    dev_command,
    dev_env,
    free_port,
    packaged_config,
    studio_url,
    watch_dirs,
)
from self_refine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _load(spec: str, base: Path) -> Any:
    """Import a langgraph.json graph spec ("./file.py:var" or "module:var")."""
    target, variable = spec.rsplit(":", 1)
    if "/" in target:
        module_spec = importlib.util.spec_from_file_location("studio_graphs", base / target)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, variable)


def test_studio_json_serves_the_refine_graph_and_the_chat_agent() -> None:
    config = validate_config_file(ROOT / "studio.json")
    assert config["dependencies"] == ["."]
    graphs = {name: _load(spec, ROOT) for name, spec in config["graphs"].items()}
    assert set(graphs) == {"self_refine", "chat"}
    assert graphs["self_refine"].name == "self_refine"
    assert graphs["self_refine"].checkpointer is None  # the server persists
    assert graphs["chat"].checkpointer is None
    assert graphs["chat"].context_schema is RefineContext
    assert {"draft_reply", "refine_reply"} <= set(graphs["chat"].nodes)


def test_packaged_config_serves_the_same_graphs_without_the_repository(tmp_path: Path) -> None:
    path = packaged_config(tmp_path)
    config = validate_config_file(path)
    repo = json.loads((ROOT / "studio.json").read_text())
    assert set(config["graphs"]) == set(repo["graphs"])
    for name, spec in config["graphs"].items():
        assert _load(spec, tmp_path).name == name


def test_dev_command_serves_on_loopback_without_a_browser() -> None:
    command = dev_command(Path("/x/studio.json"), 4321, reload=False, watch=[Path("/x/pkg")])
    assert command[1:3] == ["-m", "self_refine.cli.devserver_child"]
    assert command[command.index("--parent") + 1] == str(os.getpid())
    dev = command[command.index("--") + 1 :]
    assert dev[0] == "dev"
    assert dev[dev.index("--config") + 1] == "/x/studio.json"
    assert dev[dev.index("--host") + 1] == "127.0.0.1"
    assert dev[dev.index("--port") + 1] == "4321"
    assert "--no-browser" in dev and "--no-reload" in dev
    assert "--watch" not in command, "nothing to watch without reloading"
    reloading = dev_command(Path("studio.json"), 4321, reload=True, watch=[Path("/x/pkg")])
    assert "--no-reload" not in reloading
    assert reloading[reloading.index("--watch") + 1] == "/x/pkg"


def test_the_reload_watcher_sees_the_graphs_code_only(tmp_path: Path) -> None:
    # The repository's config: its graphs live in the self_refine package, not the whole clone
    # (which holds .venv, .self-refine/ databases and the server's own .langgraph_api store).
    assert watch_dirs(ROOT / "studio.json") == [ROOT / "self_refine"]
    # The packaged config names modules: the installed package is watched.
    packaged = watch_dirs(packaged_config(tmp_path))
    assert packaged == [Path(self_refine.__file__).parent.resolve()]
    # A graph file outside any package: only its own folder can be watched.
    (tmp_path / "lone").mkdir()
    (tmp_path / "lone" / "graph.py").write_text("graph = None\n")
    config = tmp_path / "lone.json"
    config.write_text(json.dumps({"graphs": {"g": "./lone/graph.py:graph"}}))
    assert watch_dirs(config) == [tmp_path / "lone"]


def test_dev_env_turns_analytics_off_and_defaults_to_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SELF_REFINE_MODEL", raising=False)
    env = dev_env(None)
    assert env["LANGGRAPH_CLI_NO_ANALYTICS"] == "1"
    assert env["LANGGRAPH_NO_VERSION_CHECK"] == "true"
    assert env["SELF_REFINE_MODEL"] == "offline"
    monkeypatch.setenv("SELF_REFINE_MODEL", "gpt-4o-mini")
    assert dev_env(None)["SELF_REFINE_MODEL"] == "gpt-4o-mini"
    assert dev_env("openai:gpt-4.1")["SELF_REFINE_MODEL"] == "openai:gpt-4.1"


def test_free_port_avoids_a_busy_one(busy_port: int) -> None:
    other = free_port(busy_port)
    assert other != busy_port
    with socket.socket() as sock:
        sock.bind((HOST, other))  # really free
    assert free_port(other) == other
    assert studio_url(other) == f"https://smith.langchain.com/studio/?baseUrl=http://{HOST}:{other}"


def test_missing_dev_server_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "langgraph_api" else real(name),
    )
    assert main(["studio"]) == 2
    err = capsys.readouterr().err
    assert 'pip install "langgraph-self-refine[studio]"' in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["studio", "--port", "0"], "--port must be between 1 and 65535, got 0"),
        (["studio", "--config", "nowhere/studio.json"], "no studio config at nowhere/studio.json"),
    ],
)
def test_bad_options_fail_before_starting(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_busy_port_is_refused(busy_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studio", "--port", str(busy_port)]) == 2
    assert f"port {busy_port} is in use" in capsys.readouterr().err


def test_a_server_that_cannot_start_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "studio.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"x": "./missing.py:graph"}}))
    assert main(["studio", "--config", str(config), "--no-reload"]) == 1
    assert "langgraph dev stopped before it was ready" in capsys.readouterr().err
