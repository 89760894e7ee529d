"""References are bounded up front, and an error says whose it is and what was saved.

A reference nested too deeply (checkpoints cannot hold ~250 levels) or too large is
refused by the input checks, before any thread is written, by `run`, `batch` and
the library alike. A failure that is not a model call's never names the model, and
"progress is saved" is said only when a thread was saved. Hints to continue are
quoted for the shell. A reference listing 100,000 concepts is refused at once, and
a critique's feedback shown on the terminal is capped.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import ConfigError, refine
from self_refine.cli.main import main
from self_refine.critics.verifiers.base import BuiltinVerifier
from self_refine.models.offline import OfflineModel

MAX_REFERENCE_CHARS = 1_000_000  # the input checks' bound (self_refine.input_checks)


def _nested(levels: int) -> dict[str, Any]:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return {"answer": "42", "notes": value}


@pytest.mark.parametrize(
    ("reference", "said"),
    [
        (_nested(253), "nested more than 32 levels"),
        ({"answer": "42", "notes": "n" * (MAX_REFERENCE_CHARS + 1)}, "characters of text"),
    ],
)
def test_an_unusable_reference_is_refused_before_any_thread_is_written(
    workdir: Path, capsys: pytest.CaptureFixture[str], reference: dict[str, Any], said: str
) -> None:
    Path("ref.json").write_text(json.dumps(reference))
    argv = ["run", "What is 6 * 7?", "--model", "offline", "--profile", "math"]
    assert main([*argv, "--reference", "@ref.json", "--db", "c.sqlite"]) == 2
    error = capsys.readouterr().err
    assert said in error or "is over 1 MB" in error  # the command line's cap on the file
    assert error.count("\n") == 1
    assert "offline" not in error and "Progress is saved" not in error
    assert not Path("c.sqlite").exists()

    item = {"id": "a", "task": "What is 6 * 7?", "reference": reference}
    Path("in.jsonl").write_text(json.dumps(item) + "\n")
    assert main(["batch", "in.jsonl", "-o", "r.jsonl", "--model", "offline"]) == 2
    error = capsys.readouterr().err
    assert "line 1: " + said.split()[0] in error or said in error
    assert "no usable items" in error

    with pytest.raises(ConfigError, match=said):
        refine("What is 6 * 7?", model="offline", reference=reference)


def test_a_failure_before_any_thread_neither_names_the_model_nor_promises_progress(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unserializable(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("Recursion limit reached")

    monkeypatch.setattr(SqliteSaver, "put", unserializable)
    # The strategy named: the run's line about its default would name the offline model.
    argv = ["run", "a task about dogs", "--model", "offline", "--strategy", "refine"]
    code = main([*argv, "--thread-id", "t"])
    error = capsys.readouterr().err
    assert code == 1 and error.count("\n") == 1, error
    assert "the run failed: TypeError: Recursion limit reached" in error
    assert "No thread was saved" in error
    assert "offline" not in error and "endpoint" not in error and "resume" not in error


def test_a_failure_in_a_verifier_does_not_blame_the_model(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the verifier broke")

    monkeypatch.setattr(BuiltinVerifier, "__call__", broken)
    argv = ["run", "Use the words dog, park.", "--model", "offline", "--thread-id", "t"]
    argv += ["--strategy", "refine"]  # named: the line about a default would name the model
    code = main([*argv, "--critics", "concepts", "--reference", '{"concepts": ["dog", "park"]}'])
    error = capsys.readouterr().err
    assert code == 1, error
    assert "the run failed: SelfRefineError: verifier 'concepts' failed: RuntimeError" in error
    assert "offline" not in error
    assert "Progress is saved; continue with: self-refine resume t --db" in error


def test_hints_to_continue_are_quoted_for_the_shell(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(OfflineModel, "_generate", interrupted)
    thread, db = "x; touch PWNED #", "my dir/q.sqlite"
    argv = ["run", "a task", "--model", "offline", "--thread-id", thread, "--db", db]
    assert main(argv) == 130
    hint = capsys.readouterr().err.strip().split("continue with: ")[-1]
    assert shlex.split(hint) == ["self-refine", "resume", thread, "--db", db]
    assert main(["show", thread, "--db", db]) == 0
    hint = capsys.readouterr().out.strip().split("continue with: ")[-1]
    assert shlex.split(hint) == ["self-refine", "resume", thread, "--db", db]
    assert not Path("PWNED").exists()


def test_a_reference_of_100000_concepts_is_refused_at_once(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    concepts = {"concepts": [f"w{i}" for i in range(100_000)]}
    Path("ref.json").write_text(json.dumps(concepts))
    argv = ["run", "Write a sentence.", "--model", "offline", "--critics", "concepts"]
    assert main([*argv, "--reference", "@ref.json", "--db", "c.sqlite"]) == 2
    error = capsys.readouterr().err
    assert "lists 100,000 concepts, over 200" in error and error.count("\n") == 1
    assert not Path("c.sqlite").exists()


def test_the_feedback_shown_per_critique_is_capped(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    concepts = json.dumps({"concepts": [f"w{i}" for i in range(150)]})
    argv = ["run", "Write a sentence.", "--model", "offline", "--critics", "concepts"]
    assert main([*argv, "--reference", concepts, "--max-iterations", "1"]) == 0
    out = capsys.readouterr().out
    blocks = out.split("[critique]")[1:]
    assert blocks
    for block in blocks:
        items = [line for line in block.splitlines() if line.startswith("    - ")]
        assert len(items) <= 13, len(items)
    assert "more (show --json lists them all)" in out
    assert len(out) < 20_000


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity"])
def test_a_reference_number_that_is_not_finite_is_refused_before_any_thread_is_written(
    workdir: Path, capsys: pytest.CaptureFixture[str], number: str
) -> None:
    Path("ref.json").write_text(f'{{"answer": {number}}}')
    argv = ["run", "What is 6 * 7?", "--model", "offline", "--profile", "math"]
    assert main([*argv, "--reference", "@ref.json", "--db", "c.sqlite"]) == 2
    error = capsys.readouterr().err
    assert "no finite number" in error and "as a string" in error and error.count("\n") == 1
    assert not Path("c.sqlite").exists()

    Path("in.jsonl").write_text(
        f'{{"id": "a", "task": "What is 6 * 7?", "reference": {{"answer": {number}}}}}\n'
    )
    assert main(["batch", "in.jsonl", "-o", "r.jsonl", "--model", "offline"]) == 2
    assert "no finite number" in capsys.readouterr().err

    with pytest.raises(ConfigError, match="no finite number"):
        refine("What is 6 * 7?", model="offline", reference=json.loads(f'{{"answer": {number}}}'))
