"""The `self-refine` program with the offline model: run, show, resume, and bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from self_refine.cli.main import main
from self_refine.persistence.storage import DEFAULT_DB as DB
from self_refine.prompts.render import FEEDBACK_TURN
from tests.cli.conftest import Calls
from tests.conftest import kept_settings, run_cli
from tests.openai_server import OpenAIServer

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def thread_of(out: str) -> str:
    match = re.search(r"^thread: (\S+)", out, flags=re.M)
    assert match, out
    return match.group(1)


def shown(capsys: pytest.CaptureFixture[str], thread: str, *db: str) -> dict[str, Any]:
    code, out, _ = cli(capsys, "show", thread, "--json", *db)
    assert code == 0
    return json.loads(out)


@pytest.mark.usefixtures("workdir")
def test_run_prints_each_step_then_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "run", TASK)
    assert code == 0, err
    assert "(db: .self-refine/checkpoints.sqlite)" in out
    steps = re.findall(r"^\[(\w+)\]", out, flags=re.M)
    assert steps == ["generate", "critique"] + ["refine", "critique"] * 3 + ["finalize"]
    assert "[critique] iteration 0  score 0.40  done false  (offline)" in out
    assert '    - Mention "frisbee", which the task asks for.' in out
    assert "[refine] draft 1:\n    This is a very rough draft about dog." in out
    assert "    -> stop: critic_done" in out
    assert "Stopped: critic_done after 3 refine step(s); score 1.00" in out
    answer = out.split("Answer (refine step 3):\n", 1)[1]
    assert all(word in answer for word in ("dog", "frisbee", "park", "catch"))
    assert Path(".self-refine/checkpoints.sqlite").is_file()


@pytest.mark.usefixtures("workdir")
def test_run_json_prints_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "run", TASK, "--json", "--thread-id", "j1")
    assert code == 0
    assert "thread: j1  (db: .self-refine/checkpoints.sqlite)" in err
    result = json.loads(out)  # the whole of stdout is the result
    assert result["thread_id"] == "j1"
    assert result["next"] == []
    assert result["stop_reason"] == "critic_done"
    assert result["iterations"] == 3 == len(result["attempts"]) - 1


@pytest.mark.usefixtures("workdir")
def test_draft_option_skips_generation(capsys: pytest.CaptureFixture[str], calls: Calls) -> None:
    code, out, _ = cli(capsys, "run", TASK, "--draft", "The dog and I play catch")
    assert code == 0
    assert "[generate]" not in out
    assert re.findall(r"^\[(\w+)\]", out, flags=re.M)[0] == "critique"
    assert "generator" not in calls.roles
    assert "End the text with a full stop." in out


# The offline model never gets a wrong answer right, so the score stays at 0.
MATH = [
    "What is 6 times 7? Answer with the number.",
    "--profile",
    "math",
    "--reference",
    '{"answer": "42"}',
]


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("options", "stop", "iterations"),
    [
        ([TASK, "--max-iterations", "1"], "max_iterations", 1),
        ([TASK, "--score-threshold", "0.6"], "score_threshold", 1),
        ([*MATH], "max_iterations", 3),
        ([*MATH, "--patience", "1"], "no_improvement", 1),
        ([*MATH, "--patience", "2"], "no_improvement", 2),
    ],
)
def test_settings_change_when_the_run_stops(
    capsys: pytest.CaptureFixture[str], options: list[str], stop: str, iterations: int
) -> None:
    code, out, _ = cli(capsys, "run", *options)
    assert code == 0
    assert f"Stopped: {stop} after {iterations} refine step(s)" in out


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("window", "carried"),
    [
        ([], [1, 2, 3]),
        (["--history-window", "0"], [1, 1, 1]),
        (["--history-window", "1"], [1, 2, 2]),
    ],
)
def test_history_window_limits_the_attempts_the_refiner_is_sent(
    capsys: pytest.CaptureFixture[str], calls: Calls, window: list[str], carried: list[int]
) -> None:
    code, _, _ = cli(capsys, "run", TASK, *window)
    assert code == 0
    # The default refine request is a conversation: one feedback turn per attempt carried.
    assert [text.count(FEEDBACK_TURN) for text in calls.sent_to("refiner")] == carried


@pytest.mark.usefixtures("workdir")
def test_show_prints_the_attempts_as_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "run", TASK, "--thread-id", "table")
    assert code == 0
    code, out, _ = cli(capsys, "show", "table")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "thread table"
    assert lines[1] == f"task: {TASK}"
    header = next(line for line in lines if line.lstrip().startswith("it"))
    assert header.split() == ["it", "score", "draft", "feedback"]
    rows = [line for line in lines if re.match(r"^\s+\d+\s+\d\.\d\d\s", line)]
    assert [row.split()[:2] for row in rows] == [
        ["0", "0.40"],
        ["1", "0.60"],
        ["2", "0.80"],
        ["3", "1.00"],
    ]
    assert rows[0].split("  ")[-1].strip() == "- Start the text with a capital letter."
    assert "this is a very rough draft about dog" in rows[0]
    assert '- Mention "catch", which the task' in out, "long feedback items wrap"
    assert "- (none)" in rows[-1]
    assert "stop reason: critic_done after 3 refine step(s)\nanswer (refine step 3):" in out


@pytest.mark.usefixtures("workdir")
def test_show_json_has_the_whole_state(capsys: pytest.CaptureFixture[str]) -> None:
    cli(capsys, "run", TASK, "--thread-id", "sj")
    state = shown(capsys, "sj")
    assert state["task"] == TASK
    assert [a["iteration"] for a in state["attempts"]] == [0, 1, 2, 3]
    assert state["answer"] == state["attempts"][-1]["draft"]


@pytest.mark.usefixtures("workdir")
def test_interrupted_run_resumes_to_the_same_attempts(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    cli(capsys, "run", TASK, "--thread-id", "whole")
    whole = shown(capsys, "whole")

    calls.fail["refiner"] = KeyboardInterrupt()
    code, out, err = cli(capsys, "run", TASK, "--thread-id", "cut")
    assert code == 130
    assert "[refine]" not in out
    assert "continue with: self-refine resume cut" in err
    code, out, _ = cli(capsys, "show", "cut")
    assert "not finished; continue with: self-refine resume cut" in out

    code, out, err = cli(capsys, "resume", "cut")
    assert code == 0, err
    assert "[generate]" not in out and "[refine] draft 1:" in out
    assert "Stopped: critic_done after 3 refine step(s)" in out
    resumed = shown(capsys, "cut")
    assert resumed["attempts"] == whole["attempts"]
    assert resumed["answer"] == whole["answer"]


@pytest.mark.usefixtures("workdir")
def test_model_failure_mid_run_exits_1_and_leaves_the_thread_resumable(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    calls.fail["refiner"] = RuntimeError("connection reset by peer")
    code, out, err = cli(capsys, "run", TASK, "--thread-id", "f", "--strategy", "refine")
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("self-refine: error: model 'offline'")
    assert "connection reset by peer" in err
    assert "continue with: self-refine resume f --db .self-refine/checkpoints.sqlite" in err
    code, out, _ = cli(capsys, "resume", "f")
    assert code == 0
    assert shown(capsys, "f")["stop_reason"] == "critic_done"


@pytest.mark.usefixtures("workdir")
def test_resuming_a_finished_thread_prints_its_result_without_model_calls(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    cli(capsys, "run", TASK, "--thread-id", "done")
    calls.roles.clear()
    code, out, _ = cli(capsys, "resume", "done")
    assert code == 0
    assert "thread done is already finished: nothing to resume" in out
    assert "Stopped: critic_done after 3 refine step(s)" in out
    assert calls.roles == []


@pytest.mark.usefixtures("workdir")
def test_thread_id_reuse_is_refused(capsys: pytest.CaptureFixture[str], calls: Calls) -> None:
    cli(capsys, "run", TASK, "--thread-id", "same")
    calls.roles.clear()
    code, _, err = cli(
        capsys, "run", "Another task", "--thread-id", "same", "--max-iterations", "1"
    )
    assert code == 2
    assert err.count("\n") == 1
    assert "thread 'same' already exists" in err
    assert "self-refine resume same" in err and "another --thread-id" in err
    assert calls.roles == []
    assert shown(capsys, "same")["task"] == TASK
    assert (kept_settings(DB, "same") or {})["max_iterations"] == 3


@pytest.mark.usefixtures("workdir")
def test_an_interrupted_run_resumes_with_the_settings_it_began_with(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code, _, err = cli(capsys, "run", TASK, "--thread-id", "first", "--max-iterations", "1")
    assert code == 0, err
    code, _, err = cli(capsys, "resume", "t")
    assert code == 2 and "no thread 't'" in err
    assert calls.roles.count("generator") == 1

    calls.fail["refiner"] = KeyboardInterrupt()
    code, _, _ = cli(capsys, "run", TASK, "--thread-id", "t", "--max-iterations", "3")
    assert code == 130
    code, out, _ = cli(capsys, "resume", "t")
    assert code == 0
    assert "Stopped: critic_done after 3 refine step(s)" in out


def test_base_url_from_the_environment_is_kept_for_resume(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.fail_next("500", times=1, role="critic")
    code, _, err = cli(
        capsys, "run", TASK, "--model", "test-model", "--max-retries", "0", "--thread-id", "e"
    )
    assert code == 1, err
    assert (kept_settings(DB, "e") or {})["base_url"] == server.base_url

    monkeypatch.delenv("OPENAI_BASE_URL")  # another shell: resume uses the thread's server
    code, out, err = cli(capsys, "resume", "e")
    assert code == 0, err
    assert "Stopped: critic_done" in out
    assert len(server.chat_requests("generator")) == 1


def test_unreachable_base_url_from_the_environment_exits_1_before_any_call(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    closed_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    code, out, err = cli(capsys, "run", TASK, "--model", "llama3", "--thread-id", "u")
    assert code == 1
    assert f"cannot reach {url}" in err and "fix OPENAI_BASE_URL" in err
    assert out == ""
    assert not Path(DB).exists()
    # The offline model never calls the server, so it does not need to reach it.
    code, out, err = cli(capsys, "run", TASK, "--max-iterations", "1")
    assert code == 0, err


def test_db_option_chooses_the_file(
    capsys: pytest.CaptureFixture[str], workdir: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "elsewhere" / "runs.sqlite")
    code, out, _ = cli(capsys, "run", TASK, "--db", db)
    assert code == 0
    assert Path(db).is_file()
    assert not (workdir / ".self-refine").exists()
    assert shown(capsys, thread_of(out), "--db", db)["stop_reason"] == "critic_done"


def test_unwritable_db_path_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], workdir: Path, calls: Calls
) -> None:
    (workdir / "a-file").write_text("not a directory")
    code, _, err = cli(capsys, "run", TASK, "--db", "a-file/runs.sqlite")
    assert code == 2
    assert err.count("\n") == 1
    assert "cannot open the database" in err and "choose a writable path with --db" in err
    assert calls.roles == []


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize("command", ["show", "resume"])
def test_unknown_thread_is_a_usage_error(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, _, err = cli(capsys, command, "no-such-thread")
    assert code == 2
    assert "no thread 'no-such-thread'" in err and "check the id and --db" in err


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["   "], "the task is empty"),
        ([TASK, "--max-iterations", "-1"], "--max-iterations must be between 0 and 50"),
        ([TASK, "--max-iterations", "51"], "--max-iterations must be between 0 and 50"),
        ([TASK, "--candidates", "0"], "--candidates must be between 1 and 16"),
        ([TASK, "--score-threshold", "1.5"], "--score-threshold must be between 0 and 1"),
        ([TASK, "--score-threshold", "-0.1"], "--score-threshold must be between 0 and 1"),
        ([TASK, "--patience", "0"], "--patience must be >= 1"),
        ([TASK, "--history-window", "-1"], "--history-window must be >= 0"),
        ([TASK, "--max-tokens-total", "0"], "--max-tokens-total must be >= 1"),
        ([TASK, "--max-retries", "101"], "--max-retries must be between 0 and 100"),
        ([TASK, "--timeout", "0"], "--timeout must be at least 0.001 seconds"),
        ([TASK, "--draft", " "], "--draft is empty"),
        ([TASK, "--model", "not a model!"], "unknown model string 'not a model!'"),
        ([TASK, "--critic-model", "a:b:c"], "unknown model string 'a:b:c'"),
        ([TASK, "--model", "gpt-4o-mini"], "set OPENAI_API_KEY"),
        ([TASK, "--profile", "poetry"], "unknown profile 'poetry'"),
        ([TASK, "--base-url", "ftp://example"], "--base-url must look like http://HOST:PORT/v1"),
    ],
)
def test_usage_errors_exit_2_before_any_model_call(
    capsys: pytest.CaptureFixture[str], calls: Calls, args: list[str], says: str
) -> None:
    code, out, err = cli(capsys, "run", *args)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("self-refine: error: ")
    assert says in err
    assert calls.roles == []
    assert "thread:" not in out


@pytest.mark.usefixtures("workdir")
def test_unreachable_base_url_exits_1_before_any_call(
    capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    code, out, err = cli(capsys, "run", TASK, "--model", "llama3", "--base-url", url)
    assert code == 1
    assert err.count("\n") == 1
    assert f"cannot reach {url}" in err and "start the server or fix --base-url" in err
    assert out == ""


def test_installed_program_runs_and_reports_exit_codes(workdir: Path) -> None:
    done = run_cli("run", TASK, "--max-iterations", "1", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "Stopped: max_iterations after 1 refine step(s)" in done.stdout
    empty = run_cli("run", "", cwd=workdir)
    assert empty.returncode == 2
    assert empty.stderr.strip() == (
        "self-refine: error: the task is empty: give the text of the task in quotes"
    )
    missing = run_cli("run", cwd=workdir)
    assert missing.returncode == 2 and "the following arguments are required: task" in (
        missing.stderr
    )


def test_resume_takes_the_base_url_from_the_flag_or_the_environment(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    server: OpenAIServer,
    closed_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server.fail_next("500", times=1, role="critic")
    run = ["run", TASK, "--model", "test-model", "--max-retries", "0", "--thread-id", "m"]
    code, _, err = cli(capsys, *run, "--base-url", server.base_url)
    assert code == 1, err
    moved = f"http://127.0.0.1:{closed_port}/v1"

    code, _, err = cli(capsys, "resume", "m", "--base-url", moved)
    assert code == 1 and f"cannot reach {moved}" in err
    monkeypatch.setenv("OPENAI_BASE_URL", moved)
    code, _, err = cli(capsys, "resume", "m")
    assert code == 1 and f"cannot reach {moved}" in err and "OPENAI_BASE_URL" in err

    code, out, err = cli(capsys, "resume", "m", "--base-url", server.base_url)
    assert code == 0, err
    assert "Stopped: critic_done" in out


@pytest.mark.usefixtures("workdir")
def test_run_and_show_print_no_terminal_control_sequences_from_the_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\x9b31m" + TASK + "\x1b]8;;http://x\x1b\\link\x7f\r"
    code, run_out, err = cli(capsys, "run", hostile, "--thread-id", "esc")
    assert code == 0, err
    code, show_out, _ = cli(capsys, "show", "esc")
    assert code == 0
    for out in (run_out, show_out):
        assert not any(char in out for char in "\x1b\x07\x9b\x7f\r"), out
    assert "task: \\x1b]0;owned\\x07\\x1b[2J\\x9b31m" in show_out
    assert shown(capsys, "esc")["task"] == hostile  # JSON keeps the text exact


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize("flag", ["--model", "--critic-model", "--refiner-model"])
def test_an_empty_model_name_is_refused_before_a_thread_exists(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    code, _, err = cli(capsys, "run", TASK, flag, "")
    assert code == 2
    assert f"{flag} is empty" in err
    assert not Path(".self-refine/checkpoints.sqlite").exists()


def test_show_into_a_closed_pipe_exits_quietly(workdir: Path) -> None:
    assert run_cli("run", TASK, "--thread-id", "pipe", cwd=workdir).returncode == 0
    reader = subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", "show", "pipe", "--json"],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # the reader stops at once, as `| head -0` does
    err = reader.stderr.read()
    assert reader.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "error" not in err


def test_run_into_a_pipe_closed_after_one_line_finishes_the_thread(workdir: Path) -> None:
    runner = subprocess.Popen(
        [sys.executable, "-m", "self_refine.cli", "run", TASK, "--thread-id", "head"],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert runner.stdout is not None and runner.stderr is not None
    assert runner.stdout.readline().startswith("thread: head")
    runner.stdout.close()  # as `| head -1` does
    err = runner.stderr.read()
    assert runner.wait(timeout=120) == 0, err
    assert "failed" not in err and "Traceback" not in err
    assert err.count("stdout was closed") <= 1
    shown = run_cli("show", "head", "--json", cwd=workdir)
    assert json.loads(shown.stdout)["stop_reason"] == "critic_done"
