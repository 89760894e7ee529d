"""The command line when the model endpoint keeps failing: one line, exit 1, a resumable thread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from self_refine.cli.main import main
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

TASK = "Write one sentence using the words: dog, frisbee, park."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def _final(out: str) -> dict[str, object]:
    return dict(json.loads(out))


def test_exhausted_retries_end_the_run_in_one_line_and_resume_finishes_it(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = str(tmp_path / "c.sqlite")
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # --api-key would add its warning line
    common = ["--model", "openai:test-model", "--base-url", server.base_url, "--db", db]
    common += ["--strategy", "refine"]  # named: the run says nothing of its strategy
    assert main(["run", TASK, "--thread-id", "ref", "--json", *common]) == 0
    expected = _final(capsys.readouterr().out)["attempts"]
    server.requests.clear()

    server.fail_next("429", times=100, role="critic")
    code = main(["run", TASK, "--thread-id", "t", "--max-retries", "2", *common])

    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("self-refine: error: the critic model 'test-model' at ")
    assert server.base_url in err
    assert "failed after 2 retries" in err and "Error code: 429" in err
    assert f"continue with: self-refine resume t --db {db}" in err
    assert [r.fault for r in server.chat_requests("critic")] == ["429"] * 3

    server.clear_faults()
    assert main(["resume", "t", "--json", "--db", db]) == 0
    resumed = _final(capsys.readouterr().out)
    assert resumed["attempts"] == expected
    assert resumed["stop_reason"] == "critic_done"
    assert len(server.chat_requests("generator")) == 1  # the first draft was not redone


def test_resume_can_give_a_failing_endpoint_more_retries(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    common = ["--model", "openai:test-model", "--base-url", server.base_url, "--db", db]
    common += ["--strategy", "refine"]  # named: the run says nothing of its strategy
    server.fail_next("500", times=1, role="generator")
    code = main(["run", TASK, "--thread-id", "t", "--max-retries", "0", "--api-key", "k", *common])
    assert code == 1
    assert "Error code: 500" in capsys.readouterr().err

    server.fail_next("500", times=2, role="generator")
    assert main(["resume", "t", "--db", db, "--max-retries", "2", "--api-key", "k"]) == 0
    assert "Stopped: critic_done" in capsys.readouterr().out
    assert [r.fault for r in server.chat_requests("generator")] == ["500", "500", "500", None]
