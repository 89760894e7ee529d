"""The quality benchmark: figures computed right, echoes counted wrong, task sets sound."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality.document import shown_arguments
from benchmarks.quality.figures import PLAIN_TEXT_FALLBACK, condition_figures, correct_at
from benchmarks.quality.report import markdown, readings
from benchmarks.quality.run import _condition, run
from benchmarks.quality.sets import CANARY, SETS, make_set
from self_refine.batch.judge import VerifierJudge
from self_refine.critics import judge_draft
from tests.fakes import FakeChatModel, critique

ROOT = Path(__file__).resolve().parents[2]


def _record(steps: list[bool | None], **extra: Any) -> dict[str, Any]:
    return {"correct_first": steps[0], "correct_at": steps, **extra}


def test_accuracy_at_k_and_transitions_from_known_outcomes() -> None:
    records = [
        _record([False, True, True, True]),  # wrong -> right at step 1
        _record([True, True, False, False]),  # right -> wrong at step 2
        _record([False, False]),  # stopped after 1 step, still wrong
        _record([True]),  # right at once, never refined
        _record([None, True, True, True]),  # unjudged first counts as wrong
    ]
    figures = condition_figures(records, 3, seconds=10.0, calls=20)
    assert figures["accuracy_at"] == [0.4, 0.8, 0.6, 0.6]
    assert figures["wrong_to_right"] == 2 and figures["right_to_wrong"] == 1
    assert figures["seconds_per_item"] == 2.0 and figures["calls_per_item"] == 4.0


def test_a_run_that_stopped_keeps_its_answer_for_later_steps() -> None:
    assert correct_at(_record([False, True]), 3) == [False, True, True, True]


def test_hygiene_rates_per_draft_and_per_answer() -> None:
    attempts = [
        {"rejected": [{"reason": "echo"}, {"reason": "echo"}], "problems": []},  # 2 replies
        {"rejected": [{"reason": "refusal"}], "problems": [PLAIN_TEXT_FALLBACK]},  # 2 replies
        {"problems": []},  # 1 reply
        {},  # 1 reply
    ]
    records = [
        _record([False], attempts=attempts[:2], echo_final=True),
        _record([True], attempts=attempts[2:], echo_final=False),
    ]
    figures = condition_figures(records, 0, seconds=1.0, calls=4)
    assert figures["rejected_share_of_replies"] == {"echo": 2 / 6, "refusal": 1 / 6}
    assert figures["draft_replies_per_item"] == 3.0
    assert figures["parse_fallbacks_per_critique"] == 0.25
    assert figures["echo_in_final_answers"] == 0.5


def test_a_given_first_draft_is_no_reply_of_the_model() -> None:
    attempts = [
        {"iteration": 0, "rejected": [{"reason": "echo"}]},  # given: not counted
        {"iteration": 1, "rejected": [{"reason": "echo"}]},
        {"iteration": 2},
    ]
    figures = condition_figures([_record([False], attempts=attempts)], 0, 1.0, 1, written_from=1)
    assert figures["rejected_share_of_replies"] == {"echo": 1 / 3}


def test_an_answer_that_echoes_the_task_is_wrong_though_it_holds_every_word() -> None:
    item = make_set("constrained", 1, seed=1)[0]
    echo = f"{item['task']} " + " ".join(item["grade"]["concepts"])
    assert VerifierJudge(["concepts"])(item["task"], echo, item["reference"]) is False
    scaffolding = f"<draft>{_sentence(item)}</draft>"
    assert judge_draft(item["task"], scaffolding, item["reference"], ["concepts"]) is True
    assert VerifierJudge(["concepts"])(item["task"], scaffolding, item["reference"]) is False


def _sentence(item: dict[str, Any]) -> str:
    """A sentence that uses every required word of a constrained item."""
    return "We saw " + " by ".join(f"a {word}" for word in item["reference"]["concepts"]) + "."


@pytest.mark.parametrize("name", list(SETS))
def test_sets_are_the_same_for_a_seed_and_differ_across_seeds(name: str) -> None:
    assert make_set(name, 6, seed=3) == make_set(name, 6, seed=3)
    if name != "code":  # the code set cycles through a fixed list of functions
        assert make_set(name, 6, seed=3) != make_set(name, 6, seed=4)


def test_every_arithmetic_answer_is_checked_by_the_answer_verifier() -> None:
    for item in make_set("arithmetic", 10, seed=2026):
        key = item["grade"]
        right = f"Step by step.\nThe answer is {key['answer']}."
        wrong = f"The answer is {int(key['answer']) + 1}."
        assert judge_draft(item["task"], right, key, ["answer"]) is True
        assert judge_draft(item["task"], wrong, key, ["answer"]) is False
        assert int(key["answer"]) >= 0
        assert item["reference"] == {}, "a run on arithmetic holds no answer key"


def test_every_constrained_item_is_satisfiable() -> None:
    for item in make_set("constrained", 10, seed=2026):
        words = item["reference"]["concepts"]
        assert 4 <= len(words) <= 8 and len(set(words)) == len(words)
        assert all(word in item["task"] for word in words), "the run's words are the task's"
        assert item["grade"]["concepts"] == words
        assert judge_draft(item["task"], _sentence(item), item["grade"], ["concepts"]) is True


def test_a_code_task_shows_exactly_the_tests_its_run_may_check() -> None:
    for item in make_set("code", None, seed=2026):
        shown = item["reference"]["tests"]
        assert 1 <= len(shown) <= 3 and all(test in item["task"] for test in shown)
        graded = item["grade"]["tests"]
        hidden = graded[len(shown) :]
        assert graded[: len(shown)] == shown and len(hidden) >= 3
        assert all(CANARY in test and test not in item["task"] for test in hidden)
        assert CANARY not in json.dumps(item["reference"])


def test_every_reference_solution_passes_all_its_tests_and_a_stub_fails() -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    items = make_set("code", None, seed=2026)
    assert len({item["solution"].split("(")[0] for item in items}) == len(items)
    for item in items:
        solution = f"```python\n{item['solution']}\n```"
        for reference in (item["reference"], item["grade"]):
            assert judge_draft(item["task"], solution, reference, ["python_tests"]) is True
        name = item["solution"].split("(")[0].removeprefix("def ")
        stub = f"```python\ndef {name}(*args):\n    return None\n```"
        assert judge_draft(item["task"], stub, item["grade"], ["python_tests"]) is False


def test_the_committed_sets_match_the_generator_and_are_split() -> None:
    for name in SETS:
        path = ROOT / "benchmarks" / "quality" / "sets" / f"{name}.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert lines == make_set(name, None, seed=2026)
        parts = [item["split"] for item in lines]
        assert parts == sorted(parts, key=("tune", "report").index), "the tuning part first"
        assert parts.count("report") >= (40 if name == "code" else 60)
        assert parts.count("tune") >= 15
        assert all(item["grade"]["canary"] == CANARY for item in lines)
        assert all(CANARY not in item["task"] + json.dumps(item["reference"]) for item in lines)


def test_a_part_is_loaded_alone() -> None:
    from benchmarks.quality.run import load_items

    for name in SETS:
        report, tune = load_items(name, None), load_items(name, None, "tune")
        assert {item["split"] for item in report} == {"report"}
        assert {item["split"] for item in tune} == {"tune"}
        assert not {item["id"] for item in report} & {item["id"] for item in tune}
    assert len(load_items("code", 3, "tune")) == 3


def test_the_runner_writes_its_tables_with_the_offline_model(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.quality.run", "--model", "offline", "--n", "2"]
        + ["--k", "1", "--sets", "constrained,arithmetic", "--out", str(tmp_path), "--latest"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(next(tmp_path.glob("quality-offline-*.json")).read_text())
    assert set(document["results"]) == {"constrained", "arithmetic"}
    for conditions in document["results"].values():
        assert set(conditions) == {
            "first",
            "intrinsic",
            "verifier",
            "trainer",
            "candidates",
            "bestofn",
        }
        assert conditions["first"]["items"] == 2
    page = (tmp_path / "quality-latest.md").read_text()
    assert "| constrained | verifier-guided" in page


def test_random_is_only_used_through_seeded_generators() -> None:
    state = random.getstate()
    make_set("constrained", 3, seed=9)
    assert random.getstate() == state


def test_mean_score_tokens_and_the_too_long_rate_from_known_outcomes() -> None:
    long_reply = {"rejected": [{"reason": "too_long"}], "problems": []}
    records = [
        _record(
            [False, True],
            score=0.9,
            usage={"input_tokens": 300, "output_tokens": 40},
            attempts=[{}, long_reply, {}],
        ),
        _record(
            [True, True],
            score=0.5,
            usage={"input_tokens": 100, "output_tokens": 20},
            attempts=[{}],
        ),
        _record([False, False], score=None, usage={}, attempts=[{}, long_reply, {}, {}]),
    ]
    figures = condition_figures(records, 1, seconds=6.0, calls=9)
    assert figures["mean_score"] == pytest.approx(0.7)  # an item with no score is left out
    assert figures["input_tokens_per_item"] == pytest.approx(400 / 3)
    assert figures["output_tokens_per_item"] == pytest.approx(20.0)
    assert figures["rejected_share_of_replies"] == {"too_long": 2 / 10}  # 8 drafts, 10 replies
    assert figures["accuracy_at"] == [pytest.approx(1 / 3), pytest.approx(2 / 3)]


def _args(**given: Any) -> argparse.Namespace:
    values: dict[str, Any] = {
        "model": "scripted",
        "base_url": None,
        "api_key": None,
        "n": 2,
        "part": "report",
        "k": 2,
        "max_tokens": 64,
        "refine_form": None,
        "sets": ["constrained"],
        "conditions": ["first", "intrinsic", "verifier", "trainer"],
        "candidates": 2,
        "best_of": None,
        "best_of_given": False,
        "name": None,
        "overwrite": False,
        "latest": False,
    }
    return argparse.Namespace(**{**values, **given})


async def test_an_echoed_final_answer_is_counted_wrong_through_the_runner() -> None:
    item = make_set("constrained", 1, seed=2026)[0]
    echo = f"<draft>{_sentence(item)}</draft>"
    assert judge_draft(item["task"], echo, item["reference"], ["concepts"]) is True
    model = FakeChatModel(
        script={
            "critic": [critique(["Write sentences, not the task."], score=0.3)],
            "refiner": [echo],  # echoes again: rejected, so the echoed draft stays
        }
    )
    for condition in ("intrinsic", "verifier"):
        records = await _condition(model, "constrained", condition, [item], [echo], _args())
        assert records[0]["answer"] == echo
        figures = condition_figures(records, 2, seconds=1.0, calls=1)
        assert figures["accuracy_at"] == [0.0, 0.0, 0.0], condition
        assert figures["echo_in_final_answers"] == 1.0


async def test_a_model_that_only_echoes_gets_nothing_right_in_the_whole_run(
    tmp_path: Path,
) -> None:
    def echo(messages: list[Any]) -> str:
        task = messages[1].text.split("<task>\n", 1)[1].split("\n</task>", 1)[0]
        return f"Sure! {task}"

    model = FakeChatModel(
        script={"generator": [echo], "critic": [critique(["Use every word."])], "refiner": [echo]}
    )
    document, records = await run(_args(out=tmp_path), chat_model=model)
    for condition, figures in document["results"]["constrained"].items():
        assert figures["accuracy_at"][-1] == 0.0, condition
        assert figures["echo_in_final_answers"] == 0.0, "an echo is never an answer"
    assert document["results"]["constrained"]["first"]["rejected_share_of_replies"]["echo"] == 1.0
    answers = [r["answer"] for runs in records.values() for done in runs.values() for r in done]
    assert answers and all(answer == "" for answer in answers)


def _document(
    first: float, final: float, right_to_wrong: int, wrong_to_right: int = 0
) -> dict[str, Any]:
    figures = {
        "items": 10,
        "accuracy_at": [first, final],
        "wrong_to_right": wrong_to_right,
        "right_to_wrong": right_to_wrong,
    }
    return {
        "date": "2026-01-01",
        "command": "python -m benchmarks.quality.run",
        "machine": {"cores": 2, "python": "3.11"},
        "model": {"model": "m", "name": "m"},
        "items_per_set": 10,
        "k": 1,
        "max_tokens": 64,
        "results": {"arithmetic": {"first": {"accuracy_at": [first]}, "intrinsic": figures}},
        "examples": {},
    }


def test_the_report_says_in_words_when_a_condition_ended_below_the_first_draft() -> None:
    worse = _document(0.6, 0.4, right_to_wrong=2)
    assert readings(worse) == [
        "arithmetic, intrinsic self-refine (model critiques itself): **ended below the first "
        "draft**: 60% -> 40%; it points below the first draft, not significant (n = 10, "
        "0 gained / 2 lost, exact McNemar p = 0.500)."
    ]
    assert "**ended below the first draft**" in markdown(worse)
    assert "below" not in " ".join(readings(_document(0.4, 0.6, right_to_wrong=0)))


def test_the_report_says_beats_only_where_the_exact_mcnemar_p_is_below_5_percent() -> None:
    (two,) = readings(_document(0.2, 0.4, right_to_wrong=0, wrong_to_right=2))
    assert "it points above the first draft, not significant" in two and "beats" not in two
    (six,) = readings(_document(0.2, 0.8, right_to_wrong=0, wrong_to_right=6))
    assert six.endswith(
        "it beats the first draft (n = 10, 6 gained / 0 lost, exact McNemar p = 0.031)."
    )


def test_the_command_written_to_the_results_never_holds_the_key() -> None:
    shown = shown_arguments(["--api-key", "sk-secret", "--n", "3", "--api-key=sk-other"])
    assert shown == ["--api-key", "***", "--n", "3", "--api-key=***"]


def test_a_draft_that_takes_over_feedback_wording_counts_wrong_at_its_step() -> None:
    from benchmarks.quality.honesty import rejudge

    said = "Mention the compass the travellers carry beside the river."
    attempts = [
        {
            "iteration": 0,
            "draft": "The train runs.",
            "critique": {"feedback": [said], "score": 0.5},
            "correct": False,
        },
        {
            "iteration": 1,
            "draft": "The train runs. Mention the compass the travellers carry.",
            "critique": {"score": 1.0},
            "correct": True,
        },
    ]
    record = {
        "task": "t",
        "answer": attempts[1]["draft"],
        "correct_final": True,
        "attempts": attempts,
    }
    judged = rejudge(record)
    assert judged["correct_at"] == [False, False]
    assert judged["correct_final"] is False and judged["feedback_wording_final"] is True


def test_a_critic_quoting_the_draft_is_no_feedback_wording() -> None:
    from benchmarks.quality.honesty import feedback_wording

    draft = "The old train runs along the quiet river at dawn."
    quoted = [(f'"{draft}" needs a compass.', draft)]
    assert not feedback_wording(draft + " A compass glints.", quoted, "task")


def test_final_answers_are_named_by_their_gamed_forms() -> None:
    from benchmarks.quality.honesty import answer_forms

    item = make_set("constrained", 2, seed=2026)[1]
    words = item["reference"]["concepts"]
    listed = answer_forms(item["task"], ", ".join(words) + ".", item["reference"])
    assert listed[0] == "word list" and "no verb" in listed  # the sentence checker's too
    instruction = f"Add {words[0]} to the scene."
    assert "instruction" in answer_forms(item["task"], instruction, item["reference"])
    assert answer_forms("What is 2 + 2?", "The answer is 4.", {"answer": "4"}) == []


def test_candidate_replies_and_their_rejections_count_in_the_rates() -> None:
    step = {
        "iteration": 1,
        "candidate": 0,
        "candidates": [
            {"index": 1, "rejected": {"reason": "unchanged"}},
            {"index": 2, "rejected": {"reason": "echo"}},
        ],
    }
    figures = condition_figures(
        [_record([False], attempts=[{"iteration": 0}, step])], 0, 1.0, 1, written_from=1
    )
    assert figures["draft_replies_per_item"] == 3.0
    assert figures["rejected_share_of_replies"] == {"unchanged": 1 / 3, "echo": 1 / 3}


def test_best_of_n_spends_at_least_the_refining_conditions_tokens() -> None:
    from benchmarks.quality.run import best_of_n

    first = {"input_tokens_per_item": 100, "output_tokens_per_item": 20}
    refined = {"input_tokens_per_item": 900, "output_tokens_per_item": 250}
    assert best_of_n(first, refined) == 10  # 1,150 tokens / 120 per draft, rounded up
    assert best_of_n(first, {"input_tokens_per_item": 10_000, "output_tokens_per_item": 0}) == 16


def test_the_gamed_answers_share_counts_an_answer_of_two_forms_once() -> None:
    records = [
        _record([False], forms=["too many sentences", "feedback wording"]),
        _record([False], forms=["word list"]),
        _record([True], forms=[]),
        _record([True]),
    ]
    figures = condition_figures(records, 0, seconds=1.0, calls=4)
    assert figures["gamed_share"] == 0.5
    assert figures["gamed_final_answers"]["too many sentences"] == 0.25


async def test_the_runner_refuses_to_write_over_results_unless_asked(tmp_path: Path) -> None:
    model = FakeChatModel(script={"*": ["The train left the river."]})
    args = _args(out=tmp_path, name="mine", conditions=["first"], n=1)
    await run(args, chat_model=model)
    page = (tmp_path / "mine.md").read_text()
    asked = len(model.requests)
    with pytest.raises(SystemExit, match="--overwrite"):
        await run(args, chat_model=model)
    assert len(model.requests) == asked and (tmp_path / "mine.md").read_text() == page
    assert not (tmp_path / "quality-latest.md").exists()
    args.overwrite = True
    await run(args, chat_model=model)
    assert len(model.requests) > asked


def test_no_reported_arithmetic_item_is_a_tuning_item_renamed() -> None:
    from benchmarks.quality.sets import NAMES

    def template(task: str) -> str:
        for name in NAMES:
            task = task.replace(name, "NAME")
        return " ".join("N" if word.isdigit() else word for word in task.split())

    items = make_set("arithmetic", None, seed=2026)
    tuning = {template(i["task"]) for i in items if i["split"] == "tune"}
    reported = [template(i["task"]) for i in items if i["split"] == "report"]
    assert not tuning & set(reported), "a reported item comes from a tuning template"
    tasks = [i["task"] for i in items]
    assert len(set(tasks)) == len(tasks)


def test_candidates_against_best_of_n_are_read_with_their_paired_test() -> None:
    document = _document(0.2, 0.4, right_to_wrong=0, wrong_to_right=2)
    tokens = {"input_tokens_per_item": 900, "output_tokens_per_item": 100}
    document["results"]["arithmetic"]["candidates"] = {
        "accuracy_at": [0.2, 0.5],
        "n": 3,
        **tokens,
        "against_bestofn": {"items": 10, "gained": 3, "lost": 0, "mcnemar_p": 0.25},
    }
    document["results"]["arithmetic"]["bestofn"] = {"accuracy_at": [0.2], "n": 8, **tokens}
    said = readings(document)[-1]
    assert said == (
        "arithmetic: refining with 3 candidates per step points above best-of-8 first drafts, "
        "not significant (n = 10, 3 gained / 0 lost, exact McNemar p = 0.250), at no more "
        "tokens: 50% at 1,000 tokens per item against 20% at 1,000."
    )
