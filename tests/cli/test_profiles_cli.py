"""Task profiles, and the command line's --profile, --critics, --reference and `profiles`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from self_refine import ConfigError
from self_refine.cli.main import main
from self_refine.critics import VERIFIERS
from self_refine.prompts import PROFILES, get_profile
from self_refine.stopping import NoImprovement, ScoreThreshold

PAPER_TASKS = {
    "dialogue",
    "code_optimization",
    "code_readability",
    "math",
    "sentiment_reversal",
    "acronym",
    "constrained_generation",
}
TASK = "Write about a dog in a park using the words: dog, frisbee, park, catch."
REFERENCE = '{"concepts": ["dog", "frisbee", "park", "catch"]}'


def test_the_seven_paper_tasks_general_and_python_functions_are_profiles() -> None:
    assert set(PROFILES) == PAPER_TASKS | {"general", "math_program", "python_function"}
    for profile in PROFILES.values():
        assert profile.generate and profile.feedback and profile.refine and profile.summary
        assert profile.critics and all(c == "llm" or c in VERIFIERS for c in profile.critics)
        assert profile.stop
    assert len({p.feedback for p in PROFILES.values()}) == len(PROFILES)


def test_profiles_name_their_verifiers_and_stop_policies() -> None:
    assert get_profile("math").critics == ("answer", "llm")
    assert get_profile("math_program").critics == ("program", "llm")
    assert get_profile("constrained_generation").critics == ("concepts", "llm")
    assert get_profile("general").critics == ("llm",)
    assert get_profile("python_function").critics == ("python_tests", "llm")
    assert ScoreThreshold(0.9) in get_profile("dialogue").stop
    assert NoImprovement(2) in get_profile("code_optimization").stop


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown profile 'maths'; choose one of: acronym"):
        get_profile("maths")


def test_profile_prompts_reach_the_model() -> None:
    from self_refine.prompts import feedback_messages

    messages = feedback_messages(get_profile("math"), "What is 2 + 2?", "The answer is 4.")
    assert "worked solution to a math problem" in str(messages[0].content)


def test_profiles_command_prints_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(PROFILES)
    by_name = {line.split()[0]: line for line in lines}
    assert set(by_name) == set(PROFILES)
    assert by_name["constrained_generation"].split()[1] == "concepts,llm"
    assert by_name["math"].split()[1] == "answer,llm"


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    code = main(["run", *args, "--db", str(tmp_path / "db.sqlite")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_demo_run_is_driven_to_verified_by_the_concepts_verifier(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(
        capsys,
        tmp_path,
        TASK,
        "--model",
        "offline",
        "--profile",
        "constrained_generation",
        "--reference",
        REFERENCE,
    )
    assert code == 0, err
    assert '[concepts] Use the word "frisbee".' in out
    assert "(concepts+offline)" in out
    assert "-> stop: verified" in out
    assert "Stopped: verified" in out
    assert "(every verifier passed)" in out


def test_reference_from_a_file_and_json_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ref = tmp_path / "ref.json"
    ref.write_text(REFERENCE)
    code, out, err = _run(
        capsys, tmp_path, TASK, "--critics", "concepts", "--reference", f"@{ref}", "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["stop_reason"] == "verified"
    assert {a["critique"]["source"] for a in result["attempts"]} == {"concepts"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--critics", "concept"],
            "--critics 'concept': unknown critic 'concept'; known: 'llm'",
        ),
        (["--critics", " , "], "--critics ' , ': no critic configured"),
        (["--reference", "{oops"], "--reference is not valid JSON"),
        (["--reference", "[1, 2]"], "--reference must be a JSON object"),
        (["--reference", "@/no/such/file.json"], "--reference file '/no/such/file.json'"),
        (["--critics", "answer"], 'answer needs reference["answer"]'),
        (["--critics", "concepts", "--reference", '{"concepts": 5}'], "must be a list of strings"),
    ],
)
def test_bad_critics_and_references_fail_before_any_model_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    code, out, err = _run(capsys, tmp_path, TASK, *args)
    assert code == 2
    assert message in err
    assert "[generate]" not in out and "thread:" not in out
