"""`self-refine batch` and `self-refine report` as a user runs them: a real process,
real ChatOpenAI over HTTP to the local test server, SQLite checkpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.batch_support import MathDataset, MathResponder, expected, math_dataset
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_KEYS = (
    "items",
    "accuracy_first",
    "accuracy_final",
    "transitions",
    "accuracy_by_iteration",
    "stop_reasons",
    "mean_iterations",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    env.update(PYTHONPATH=str(ROOT), LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    return env


def _command(server: OpenAIServer, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "self_refine.cli",
        "batch",
        *args,
        "--model",
        "test-model",
        "--base-url",
        server.base_url,
    ]


def _run(cwd: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=180)


def _report(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "self_refine.cli", "report", *args]
    return _run(cwd, command)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _want(dataset: MathDataset, summary: dict[str, Any], ids: set[str] | None = None) -> None:
    want = expected(dataset, ids)
    if not want["stop_reasons"]["max_iterations"]:
        del want["stop_reasons"]["max_iterations"]
    assert {k: summary[k] for k in SUMMARY_KEYS} == {k: want[k] for k in SUMMARY_KEYS}


@pytest.fixture
def dataset() -> MathDataset:
    return math_dataset(per_kind=2)


@pytest.fixture
def server(dataset: MathDataset) -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=MathResponder(dataset)) as running:
        yield running


def test_batch_gives_exact_accuracy_and_a_rerun_redoes_nothing(
    tmp_path: Path, dataset: MathDataset, server: OpenAIServer
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    command = _command(
        server, "in.jsonl", "-o", "out.jsonl", "--summary", "summary.json", "--concurrency", "4"
    )
    done = _run(tmp_path, command)
    assert done.returncode == 0, done.stderr
    assert "accuracy: first draft 40.0% -> final 60.0% (+20.0 points)" in done.stdout
    assert "0: 40.0%  1: 40.0%  2: 60.0%  3: 60.0%" in done.stdout
    assert "progress: 10/10 items (100%)" in done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    _want(dataset, summary)
    assert summary["failed"] == 0 and summary["input_problems"] == []

    records = _records(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in records) == sorted(i["id"] for i in dataset.items)
    by_id = {r["id"]: r for r in records}
    ci = by_id["q4"]  # right at first, talked out of it by the critic
    assert dataset.kinds["q4"] == "ci"
    assert (ci["correct_first"], ci["correct_final"]) == (True, False)
    assert ci["first"] == "The answer is 33." and ci["answer"] == "The answer is 34."
    assert ci["iterations"] == 1 and ci["stop_reason"] == "critic_done"
    assert ci["correct_at"] == [True, False] and ci["score"] == 0.9
    assert ci["usage"]["total_tokens"] == sum(a["usage"]["total_tokens"] for a in ci["attempts"])
    assert [a["correct"] for a in ci["attempts"]] == [True, False]

    requests = len(server.chat_requests())
    again = _run(tmp_path, command)
    assert again.returncode == 0, again.stderr
    assert len(server.chat_requests()) == requests  # nothing is asked again
    assert _records(tmp_path / "out.jsonl") == records
    assert json.loads((tmp_path / "summary.json").read_text()) == summary

    # a kill in the middle of writing the last line: the torn line is cut, and the item,
    # finished in its checkpointed thread, is written again without any model call
    text = (tmp_path / "out.jsonl").read_text()
    torn = records[-1]
    (tmp_path / "out.jsonl").write_text(text[: len(text) - len(json.dumps(torn)) // 2])
    requests = len(server.chat_requests())
    repaired = _run(tmp_path, command)
    assert repaired.returncode == 0, repaired.stderr
    assert "ended in a torn line" in repaired.stderr
    assert len(server.chat_requests()) == requests
    again_records = _records(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in again_records) == sorted(r["id"] for r in records)
    assert again_records[-1] == torn
    assert json.loads((tmp_path / "summary.json").read_text()) == summary

    report = _report(tmp_path, "out.jsonl", "--json", "--plot", "report.png")
    assert report.returncode == 0, report.stderr
    reported = json.loads(report.stdout)
    assert reported == {k: v for k, v in summary.items() if k in reported}
    png = (tmp_path / "report.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    from matplotlib.image import imread

    assert imread(tmp_path / "report.png").shape[:2] == (400, 1000)


def test_a_killed_batch_resumes_to_the_same_result_without_duplicates(tmp_path: Path) -> None:
    dataset = math_dataset(per_kind=3)
    dataset.write(tmp_path / "in.jsonl")
    with OpenAIServer(responder=MathResponder(dataset), latency=0.3) as server:
        reference = _run(
            tmp_path,
            _command(
                server,
                "in.jsonl",
                "-o",
                "ref.jsonl",
                "--db",
                "ref.sqlite",
                "--summary",
                "ref.json",
                "--concurrency",
                "4",
            ),
        )
        assert reference.returncode == 0, reference.stderr
        before_kill = len(server.chat_requests())
        command = _command(
            server,
            "in.jsonl",
            "-o",
            "out.jsonl",
            "--db",
            "db.sqlite",
            "--summary",
            "out.json",
            "--concurrency",
            "4",
        )
        process = subprocess.Popen(
            command, cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        output = tmp_path / "out.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (
            not output.exists() or len(output.read_text().splitlines()) < 3
        ):
            time.sleep(0.05)
        refines = len(server.chat_requests("refiner"))
        while time.monotonic() < deadline and len(server.chat_requests("refiner")) == refines:
            time.sleep(0.02)
        time.sleep(0.1)  # a refine request is in flight: its item is half done
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        finished_at_kill = {r["id"] for r in _records(output)}
        assert 3 <= len(finished_at_kill) < len(dataset.items)
        killed_requests = len(server.chat_requests())

        resumed = _run(tmp_path, command)
        assert resumed.returncode == 0, resumed.stderr
        resumed_requests = server.chat_requests()[killed_requests:]

    records = _records(output)
    ids = [r["id"] for r in records]
    assert sorted(ids) == sorted(i["id"] for i in dataset.items)  # every id exactly once
    assert json.loads((tmp_path / "out.json").read_text()) == json.loads(
        (tmp_path / "ref.json").read_text()
    )
    # finished items are not asked again; the half-done item continues from its checkpoint
    asked_again = {r.text for r in resumed_requests}
    for item in dataset.items:
        if item["id"] in finished_at_kill:
            assert not any(item["task"] in text for text in asked_again)
    generated = sum(1 for r in resumed_requests if r.role == "generator")
    unfinished = len(dataset.items) - len(finished_at_kill)
    assert generated < unfinished
    # only the calls in flight at the kill (at most one per concurrent item) are made twice
    total = killed_requests - before_kill + len(resumed_requests)
    assert before_kill <= total <= before_kill + 4


def test_ctrl_c_stops_cleanly_and_the_same_command_finishes_the_rest(
    tmp_path: Path, dataset: MathDataset
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    with OpenAIServer(responder=MathResponder(dataset), latency=0.2) as server:
        command = _command(server, "in.jsonl", "-o", "out.jsonl", "--concurrency", "2")
        process = subprocess.Popen(
            command, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        output = tmp_path / "out.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (
            not output.exists() or len(output.read_text().splitlines()) < 2
        ):
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130
        assert "run the same command to continue" in stderr
        assert "never retrieved" not in stderr and "Traceback" not in stderr, stderr
        assert 2 <= len(_records(output)) < len(dataset.items)
        again = _run(tmp_path, command)
        assert again.returncode == 0, again.stderr
    ids = [r["id"] for r in _records(output)]
    assert sorted(ids) == sorted(i["id"] for i in dataset.items)


def test_refine_only_incorrect_never_critiques_a_correct_first_draft(
    tmp_path: Path, dataset: MathDataset, server: OpenAIServer
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    done = _run(
        tmp_path,
        _command(
            server, "in.jsonl", "-o", "out.jsonl", "--refine-only-incorrect", "--summary", "s.json"
        ),
    )
    assert done.returncode == 0, done.stderr
    critiqued = "\n".join(r.text for r in server.chat_requests("critic"))
    refined = "\n".join(r.text for r in server.chat_requests("refiner"))
    for item in dataset.items:
        correct_first = dataset.kinds[item["id"]] in ("cc", "ci")
        assert (item["task"] in critiqued) == (not correct_first)
        assert (item["task"] in refined) == (dataset.kinds[item["id"]] not in ("cc", "ci"))
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["accuracy_first"] == 0.4 and summary["accuracy_final"] == 0.8
    assert summary["transitions"]["correct->incorrect"] == 0
    assert summary["stop_reasons"]["verified"] == 4


def test_malformed_lines_are_reported_and_the_rest_still_run(
    tmp_path: Path, dataset: MathDataset, server: OpenAIServer
) -> None:
    bad_reference = json.dumps({"task": "What is 1 + 1?", "reference": {"answer": {"n": 2}}})
    dataset.write(
        tmp_path / "in.jsonl",
        ('{"task": "unterminated', '{"id": "no-task"}', "[]", bad_reference),
    )
    done = _run(tmp_path, _command(server, "in.jsonl", "-o", "out.jsonl", "--summary", "s.json"))
    assert done.returncode == 0, done.stderr
    assert "in.jsonl line 11: not valid JSON" in done.stderr
    assert 'in.jsonl line 12: needs a "task"' in done.stderr
    assert "in.jsonl line 13: expected a JSON object" in done.stderr
    assert 'in.jsonl line 14: "reference": reference["answer"]' in done.stderr
    assert len(_records(tmp_path / "out.jsonl")) == len(dataset.items)
    assert json.loads((tmp_path / "s.json").read_text())["input_problems"] == [11, 12, 13, 14]
    assert "What is 1 + 1?" not in "\n".join(r.text for r in server.chat_requests())


def test_shards_split_the_dataset_exactly_once(
    tmp_path: Path, dataset: MathDataset, server: OpenAIServer
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    outputs = []
    for shard in ("1/3", "2/3", "3/3"):
        name = f"out{shard[0]}.jsonl"
        done = _run(tmp_path, _command(server, "in.jsonl", "-o", name, "--shard", shard))
        assert done.returncode == 0, done.stderr
        outputs.append(name)
    ids = [r["id"] for name in outputs for r in _records(tmp_path / name)]
    assert sorted(ids) == sorted(i["id"] for i in dataset.items)
    assert all(_records(tmp_path / name) for name in outputs)  # each shard got work
    generated = [r for r in server.chat_requests("generator")]
    assert len(generated) == len(dataset.items)  # no item was run twice
    report = _report(tmp_path, *outputs, "--json")
    assert report.returncode == 0, report.stderr
    _want(dataset, json.loads(report.stdout))


def test_bad_options_and_other_settings_fail_before_any_model_call(
    tmp_path: Path,
    dataset: MathDataset,
    server: OpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from self_refine.cli.main import main

    monkeypatch.chdir(tmp_path)
    dataset.write(tmp_path / "in.jsonl")
    earlier = {"id": "q0", "answer": "1", "stop_reason": "verified", "run_key": "other-settings"}
    (tmp_path / "out.jsonl").write_text(json.dumps(earlier) + "\n")
    cases = [
        (["in.jsonl", "-o", "x.jsonl", "--shard", "4/3"], "--shard must be I/N"),
        (["missing.jsonl", "-o", "x.jsonl"], "check the input path"),
        (["in.jsonl", "-o", "x.jsonl", "--concurrency", "0"], "--concurrency must be >= 1"),
        (["in.jsonl", "-o", "x.jsonl", "--max-iterations", "-1"], "--max-iterations must be"),
        (
            ["in.jsonl", "-o", "x.jsonl", "--timeout", "0"],
            "--timeout must be at least 0.001 seconds",
        ),
        (["in.jsonl", "-o", "x.jsonl", "--timeout", "inf"], "--timeout must be at most 86400"),
        (["in.jsonl", "-o", "x.jsonl", "--max-tokens-total", str(2**64)], "between 1 and 922"),
        (["in.jsonl", "-o", "x.jsonl", "--critics", "human,answer"], "human critic works alone"),
        (["in.jsonl", "-o", "x.jsonl", "--verifiers", "answer,oracle"], "unknown name(s) 'oracle'"),
        (["in.jsonl", "-o", "x.jsonl", "--critics", "psychic"], "--critics 'psychic'"),
        (["in.jsonl", "-o", "out.jsonl"], "other settings"),
    ]
    for args, message in cases:
        code = main(_command(server, *args)[3:])
        error = capsys.readouterr().err
        assert code == 2, (args, error)
        assert message in error, (args, error)
    assert not (tmp_path / "x.jsonl").exists()
    assert server.chat_requests() == []


def test_connection_settings_and_token_budget_reach_the_models(
    tmp_path: Path, dataset: MathDataset, server: OpenAIServer
) -> None:
    dataset.write(tmp_path / "in.jsonl")
    command = _command(
        server, "in.jsonl", "-o", "out.jsonl", "--api-key", "sk-batch-key",
        "--max-retries", "0", "--max-tokens-total", "1",
    )  # fmt: skip
    done = _run(tmp_path, command)
    assert done.returncode == 0, done.stderr
    records = _records(tmp_path / "out.jsonl")
    # A budget of one token ends every run at its first critique, unless an
    # earlier policy (the critic satisfied, the answer verified) ends it first.
    assert len(records) == len(dataset.items) and all(r["iterations"] == 0 for r in records)
    assert "token_budget" in {r["stop_reason"] for r in records}
    headers = {r.headers.get("authorization") for r in server.chat_requests()}
    assert headers == {"Bearer sk-batch-key"}
    assert "sk-batch-key" not in (tmp_path / "out.jsonl").read_text()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(b"sk-batch-key" not in p.read_bytes() for p in files)
