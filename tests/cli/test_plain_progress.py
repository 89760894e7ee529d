"""`run` with the local model and its output not on a terminal: a progress line every so
often during a model call (tokens so far, their rate), as the live line on a terminal.

The local model is a slow stand-in (a scripted model that streams a word at a time),
given where the local model string resolves, and the interval is made short.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk

import self_refine.cli.progress as progress
import self_refine.models.resolve as resolve
from self_refine.cli.main import main
from tests.fakes import FakeChatModel, critique

TASK = "Write one sentence using the words: dog, frisbee, park."
STORY = " ".join(["The dog ran across the park after the red frisbee."] * 4)


class SlowStreamingModel(FakeChatModel):
    """A scripted model that streams its reply a word at a time, slowly."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        text = self._generate(messages, stop, None, **kwargs).generations[0].message.text
        for word in re.findall(r"\S+\s*", text):
            time.sleep(0.01)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk


@pytest.fixture
def slow_local(monkeypatch: pytest.MonkeyPatch) -> SlowStreamingModel:
    model = SlowStreamingModel(
        script={
            "generator": [STORY],
            "critic": [critique(["Say what colour the dog is."], score=0.5), critique(done=True)],
            "refiner": [STORY.replace("The dog", "The brown dog")],
        }
    )
    real = resolve._resolve

    def resolved(spec: resolve.ModelSpec) -> Any:
        return model if spec.name.startswith("local") else real(spec)

    monkeypatch.setattr(resolve, "_resolve", resolved)
    monkeypatch.setattr(progress, "PLAIN_LINE_SECONDS", 0.02, raising=False)
    return model


def test_progress_lines_with_token_counts_when_output_is_not_a_terminal(
    slow_local: SlowStreamingModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.db")
    args = ["run", TASK, "--model", "local:stand-in.gguf", "--max-iterations", "1", "--db", db]
    assert main(args) == 0
    err = capsys.readouterr().err
    lines = re.findall(r"^  \[(\w+)\] writing: (\d+) tokens, [\d.]+ tokens/s$", err, re.M)
    assert {node for node, _ in lines} >= {"generate", "refine"}, err
    assert any(int(tokens) > 1 for _, tokens in lines), err
    assert "\r" not in err and "\x1b[" not in err, "no terminal codes in a file"


def test_no_progress_lines_for_a_run_that_prints_json(
    slow_local: SlowStreamingModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.db")
    args = ["run", TASK, "--model", "local:stand-in.gguf", "--max-iterations", "1", "--db", db]
    assert main([*args, "--json"]) == 0
    assert "writing:" not in capsys.readouterr().err
