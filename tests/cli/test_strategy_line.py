"""`self-refine run` says which strategy ran and why when the user named none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from self_refine.cli.main import main
from tests.openai_server import OpenAIServer

TASK = "Write one sentence that uses all of these words: train, river."
CHECKED = ["--profile", "constrained_generation", "--reference", '{"concepts": ["train", "river"]}']
"""A task whose words the profile's concepts verifier checks."""


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def _run(server: OpenAIServer, tmp_path: Path, *more: str) -> list[str]:
    model = ["--model", "openai:m", "--base-url", server.base_url]
    return ["run", TASK, *model, "--db", str(tmp_path / "c.db"), "--max-iterations", "1", *more]


def test_a_run_with_a_verifier_says_it_samples_and_how_to_refine(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert main(_run(server, tmp_path, *CHECKED)) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "self-refine: strategy sample (the default when a verifier checks the drafts: fresh "
        "drafts until one passes; --strategy refine for the paper's loop)"
    )


def test_a_run_the_critic_alone_judges_says_it_refines(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert main(_run(server, tmp_path)) == 0
    err = capsys.readouterr().err
    assert err.startswith("self-refine: strategy refine (the default when no verifier checks")
    assert "--strategy sample" in err


def test_a_named_strategy_adds_no_line(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert main(_run(server, tmp_path, *CHECKED, "--strategy", "sample")) == 0
    assert "strategy" not in capsys.readouterr().err


def test_a_batch_says_which_strategy_its_items_take(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items = tmp_path / "items.jsonl"
    checked = {"id": "a", "task": TASK, "reference": {"concepts": ["train", "river"]}}
    items.write_text(json.dumps(checked) + "\n" + json.dumps({"id": "b", "task": TASK}) + "\n")
    model = ["--model", "openai:m", "--base-url", server.base_url]
    output = str(tmp_path / "out.jsonl")
    common = ["batch", str(items), "-o", output, *model, "--profile", "constrained_generation"]
    assert main([*common, "--db", str(tmp_path / "c.db"), "--max-iterations", "1"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "strategy" in line]
    assert lines == [
        "self-refine: strategy sample for 1 (the default when a verifier checks the drafts: "
        "fresh drafts until one passes); refine for 1 (the default when no verifier checks "
        "the drafts: the paper's loop of critique and rewrite); --strategy names one for "
        "every item"
    ]


def test_a_run_whose_drafts_state_a_final_answer_says_it_votes_without_a_critic(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert main(_run(server, tmp_path, "--profile", "math")) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "self-refine: strategy sample, vote, no critic (the default when drafts state a final "
        "answer and no verifier checks them: self-consistency; --critics llm for the paper's "
        "loop)"
    )
