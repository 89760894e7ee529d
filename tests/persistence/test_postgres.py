"""The command line on PostgreSQL: the official checkpointer, tables made on first use."""

from __future__ import annotations

import io
import json
import shlex
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langchain_core.messages import BaseMessage

from self_refine.cli.main import main
from self_refine.errors import ConfigError
from self_refine.models.offline import OfflineModel
from self_refine.persistence.postgres import postgres_checkpointer
from tests.conftest import kept_settings
from tests.fakes import role_of
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row[0] for row in rows}


def test_a_run_on_postgres_creates_the_tables_and_can_be_shown(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tables(postgres_url) == set()

    assert main(["run", TASK, "--thread-id", "pg", "--json", "--db", postgres_url]) == 0
    result = json.loads(capsys.readouterr().out)
    assert main(["show", "pg", "--json", "--db", postgres_url]) == 0
    shown = json.loads(capsys.readouterr().out)

    assert {"checkpoints", "checkpoint_writes"} <= _tables(postgres_url)
    assert result["stop_reason"] == "critic_done"
    assert shown["attempts"] == result["attempts"]
    stored = kept_settings(postgres_url, "pg") or {}
    assert stored["model"] == "offline" and stored["max_iterations"] == 3
    assert "api_key" not in stored


def test_a_failed_run_on_postgres_resumes_with_its_settings(
    postgres_url: str, server: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--model", "openai:test-model", "--base-url", server.base_url, "--api-key", "k"]
    server.fail_next("500", times=1, role="critic")

    code = main(
        ["run", TASK, "--thread-id", "t", "--max-retries", "0", *common, "--db", postgres_url]
    )
    assert code == 1
    assert f"self-refine resume t --db {postgres_url}" in capsys.readouterr().err

    assert main(["resume", "t", "--json", "--db", postgres_url, "--api-key", "k"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["stop_reason"] == "critic_done"
    assert len(server.chat_requests("generator")) == 1
    assert [a["iteration"] for a in result["attempts"]] == list(range(len(result["attempts"])))


def test_an_unreachable_server_is_a_clear_error_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql://app:s3cret-pw@127.0.0.1:9/refine"

    code = main(["run", TASK, "--db", url])

    err = capsys.readouterr().err
    assert code == 2
    assert "--db: cannot open the database postgresql://app:***@127.0.0.1:9/refine" in err
    assert "start PostgreSQL or fix the database URL" in err
    assert "s3cret-pw" not in err


def test_a_missing_postgres_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)

    code = main(["run", TASK, "--db", "postgresql://app@127.0.0.1:9/refine"])

    assert code == 2
    err = capsys.readouterr().err
    assert "--db: a postgresql:// database needs the PostgreSQL extra" in err
    assert 'pip install -e ".[postgres]" in a clone of the project' in err


def test_python_callers_are_not_told_about_a_command_line_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError) as raised:
        with postgres_checkpointer("postgresql://app@127.0.0.1:9/refine"):
            pass
    assert "--" not in str(raised.value)
    assert 'pip install -e ".[postgres]"' in str(raised.value)


def _with_password(url: str) -> str:
    """The URL with a password (the test cluster trusts local connections, so any will do)."""
    return url.replace("postgresql://postgres@", "postgresql://postgres:s3cret-pw@", 1)


def test_ctrl_c_and_waiting_messages_mask_the_password(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _with_password(postgres_url)
    masked = url.replace("s3cret-pw", "***")
    original = OfflineModel._generate

    def interrupted(self: OfflineModel, messages: list[BaseMessage], *a: Any, **k: Any) -> Any:
        if role_of(messages) == "refiner":
            raise KeyboardInterrupt
        return original(self, messages, *a, **k)

    monkeypatch.setattr(OfflineModel, "_generate", interrupted)
    assert main(["run", TASK, "--thread-id", "cut", "--db", url]) == 130
    out, err = capsys.readouterr()
    assert f"continue with: self-refine resume cut --db {shlex.quote(masked)}" in err
    assert "s3cret-pw" not in out + err

    # Standard input ends while the human critic waits: not success (exit 1), thread kept.
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["run", TASK, "--critics", "human", "--thread-id", "ask", "--db", url]) == 1
    out, err = capsys.readouterr()
    assert f"answer it with: self-refine resume ask --db {shlex.quote(masked)}" in out
    assert "s3cret-pw" not in out + err
