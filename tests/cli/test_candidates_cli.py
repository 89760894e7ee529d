"""`--candidates` on the command line: a run's steps of candidates, and the values refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from self_refine.cli.main import main
from tests.cli.conftest import Calls

TASK = "Write one sentence about a dog in a park using the words: dog, frisbee, park, catch."


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("workdir")
def test_run_with_candidates_prints_each_candidate_and_keeps_the_others(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code, out, err = _cli(
        capsys, "run", TASK, "--candidates", "3", "--max-iterations", "1", "--thread-id", "c"
    )
    assert code == 0, err
    steps = re.findall(r"^\[(\w+)[] ]", out, flags=re.M)
    assert steps.count("candidate") == 6 and steps.count("pick") == 2
    shown = re.findall(r"^\[candidate (\d)\]", out, flags=re.M)  # in the order they finished
    assert sorted(shown[:3]) == sorted(shown[3:]) == ["0", "1", "2"]
    assert "generate" not in steps and "refine" not in steps
    assert calls.roles.count("generator") == 3 and calls.roles.count("refiner") == 3
    code, shown, _ = _cli(capsys, "show", "c", "--json")
    attempts = json.loads(shown)["attempts"]
    assert [len(a["candidates"]) for a in attempts] == [2, 2]
    code, table, _ = _cli(capsys, "show", "c")
    assert re.findall(r"kept candidate (\d) of 3: ", table) == [
        str(a["candidate"]) for a in attempts
    ]
    for attempt in attempts:
        for other in attempt["candidates"]:
            assert f"candidate {other['index']}  " in table
            assert other["draft"].split()[0] in table


@pytest.mark.usefixtures("workdir")
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--candidates", "0"], "--candidates must be between 1 and 16, got 0"),
        (["--candidates", "17"], "--candidates must be between 1 and 16, got 17"),
        (["--candidates", "2", "--critics", "human"], "human critic answers one draft at a time"),
    ],
)
def test_bad_candidates_exit_2_before_any_model_call(
    capsys: pytest.CaptureFixture[str], calls: Calls, args: list[str], says: str
) -> None:
    code, out, err = _cli(capsys, "run", TASK, *args)
    assert code == 2
    assert err.count("\n") == 1 and says in err
    assert calls.roles == [] and "thread:" not in out
    assert not Path(".self-refine").exists()


@pytest.mark.usefixtures("workdir")
def test_a_candidates_value_that_is_no_number_is_an_argument_error(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["run", TASK, "--candidates", "two"])
    assert stop.value.code == 2
    assert "argument --candidates: invalid int value: 'two'" in capsys.readouterr().err
    assert calls.roles == []


def test_batch_refuses_bad_candidates_before_any_model_call(
    workdir: Path, capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    (workdir / "in.jsonl").write_text(json.dumps({"id": "a", "task": TASK}) + "\n")
    code, _, err = _cli(capsys, "batch", "in.jsonl", "-o", "out.jsonl", "--candidates", "17")
    assert code == 2 and "--candidates must be between 1 and 16, got 17" in err
    assert calls.roles == [] and not (workdir / "out.jsonl").exists()


@pytest.mark.usefixtures("workdir")
def test_resume_takes_no_flag_that_reshapes_the_run_and_goes_on_as_it_began(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    calls.fail["refiner"] = KeyboardInterrupt()  # the second step's first refinement
    # The concepts verifier fails the drafts saying which words they miss: only such a
    # draft is refined in a search.
    checked = ["--critics", "concepts,llm", "--reference", '{"concepts": ["frisbee", "catch"]}']
    code, _, _ = _cli(
        capsys,
        "run",
        TASK,
        "--strategy",
        "search",
        "--candidates",
        "3",
        "--thread-id",
        "s",
        *checked,
    )
    assert code == 130
    _, before, _ = _cli(capsys, "show", "s", "--json")
    asked = len(calls.roles)

    for flags in (["--candidates", "1"], ["--strategy", "refine"]):
        with pytest.raises(SystemExit) as refused:
            main(["resume", "s", *flags])
        err = capsys.readouterr().err
        assert refused.value.code == 2 and f"unrecognized arguments: {flags[0]}" in err
    assert len(calls.roles) == asked
    assert _cli(capsys, "show", "s", "--json")[1] == before

    code, out, err = _cli(capsys, "resume", "s")
    assert code == 0, err
    attempts = json.loads(_cli(capsys, "show", "s", "--json")[1])["attempts"]
    assert all(len(a.get("candidates", [])) == 2 for a in attempts[1:])
    assert "Stopped: max_iterations" in out
