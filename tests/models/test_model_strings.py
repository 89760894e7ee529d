"""Model strings: known forms pass; a typo fails early, naming the forms and the closest."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from self_refine import ConfigError, create_self_refine_graph
from self_refine.models.resolve import check_model
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("name", "closest"), [("ofline", "offline"), ("lcoal", "local"), ("gpt4o-mini", "gpt-4o-mini")]
)
def test_a_typo_names_the_closest_known_model(name: str, closest: str) -> None:
    with pytest.raises(ConfigError, match=f"did you mean '{closest}'") as error:
        check_model(name)
    assert "'local:PATH.gguf'" in str(error.value)


@pytest.mark.parametrize(
    "name", ["offline", "local", "local:smollm2", "gpt-4o-mini", "o3-mini", "openai:gpt-4o-mini"]
)
def test_known_forms_pass_the_check(name: str) -> None:
    check_model(name)


def test_any_served_name_is_accepted_with_a_base_url() -> None:
    check_model("qwen2.5-coder", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="unknown model string 'qwen2.5-coder'"):
        check_model("qwen2.5-coder")


def test_the_factory_refuses_a_typo_before_any_model_call() -> None:
    with pytest.raises(ConfigError, match="did you mean 'offline'"):
        create_self_refine_graph("ofline")


def test_the_cli_refuses_a_typo_with_exit_2_and_writes_no_thread(workdir: Path) -> None:
    done = run_cli("run", "Write a note.", "--model", "ofline", cwd=workdir)
    assert done.returncode == 2, done.stderr
    assert "did you mean 'offline'" in done.stderr
    db = workdir / ".self-refine" / "checkpoints.sqlite"
    if db.exists():
        with sqlite3.connect(db) as conn:
            tables = {row[0] for row in conn.execute("select name from sqlite_master")}
            if "checkpoints" in tables:
                assert conn.execute("select count(*) from checkpoints").fetchone() == (0,)
