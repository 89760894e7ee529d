"""A run with no --model says on its result that the offline stand-in wrote the answer."""

from __future__ import annotations

import pytest

from self_refine.cli.main import main
from tests.openai_server import OpenAIServer


@pytest.mark.usefixtures("workdir")
def test_a_plain_run_says_on_stdout_that_the_offline_stand_in_answered(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SELF_REFINE_MODEL", raising=False)
    assert main(["run", "Write a haiku about rain."]) == 0
    result = capsys.readouterr().out.split("\nStopped: ")[1]
    said = " ".join(result.split())
    assert (
        "written by the offline stand-in, a demo that follows rules, not a language model" in said
    )
    assert "pass --model local, or set SELF_REFINE_MODEL=local, for a real one" in said


@pytest.mark.usefixtures("workdir")
def test_a_run_whose_drafts_a_named_model_writes_says_nothing_of_the_stand_in(
    capsys: pytest.CaptureFixture[str], server: OpenAIServer
) -> None:
    given = ["--model", "test-model", "--base-url", server.base_url, "--api-key", "k"]
    assert main(["run", "Write a haiku about rain.", *given]) == 0
    out = capsys.readouterr().out
    assert "\nStopped: " in out and "offline stand-in" not in out
