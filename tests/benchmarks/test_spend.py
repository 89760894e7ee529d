"""The budget benchmark: answers read at each budget, intervals, the reply cache, its files."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality import strategies
from benchmarks.quality.anytime import answer_at, calls_at, output_tokens_at
from benchmarks.quality.intervals import PairedBootstrap, wilson
from benchmarks.quality.same_requests import scripted_reply
from benchmarks.quality.spend import arguments, run
from self_refine.settings.fields import MAX_ITERATIONS_LIMIT
from tests.fakes import FakeChatModel, critique


def _usage(tokens: int) -> dict[str, int]:
    return {"input_tokens": tokens - 10, "output_tokens": 10, "total_tokens": tokens}


def _attempt(iteration: int, draft: str, score: float, tokens: int, **extra: Any) -> dict[str, Any]:
    critique = {"feedback": [], "score": score, "verified": score == 1.0}
    return {
        "iteration": iteration,
        "draft": draft,
        "critique": critique,
        "usage": _usage(tokens),
        **extra,
    }


def _candidate(index: int, draft: str, score: float, tokens: int) -> dict[str, Any]:
    return {
        "index": index,
        "draft": draft,
        "critique": {"feedback": [], "score": score},
        "usage": _usage(tokens),
        "verified": score == 1.0,
        "checked": score,
    }


def test_the_reading_stops_where_the_library_would_and_skips_the_critiques_it_would() -> None:
    # Each step: its draft, then its critique (`critique_usage`), 40, 50 and 50 tokens.
    attempts = [
        {**_attempt(0, "first, wrong", 0.25, 100), "critique_usage": _usage(40)},
        {**_attempt(1, "second, right", 1.0, 150), "critique_usage": _usage(50)},
        {**_attempt(2, "third, a worse score", 0.5, 200), "critique_usage": _usage(50)},
    ]
    read = {budget: answer_at(attempts, budget) for budget in (80, 120, 200, 240, 10_000)}
    # 80: the first draft (60) is written whatever is left, and the 20 left cannot hold a
    # critique of about what the draft cost: it answers unjudged, at 60 tokens.
    assert read[80].answer["draft"] == "first, wrong"  # type: ignore[index]
    assert read[80].answer["critique"]["score"] is None  # type: ignore[index]
    assert read[80].tokens == 60
    # 120: critiqued (60 left holds about 60); the 20 left then holds no step of about 100.
    assert read[120].answer["critique"]["score"] == 0.25  # type: ignore[index]
    assert (read[120].tokens, read[120].attempts) == (100, 1)
    # 200: the second draft (100) fits the step, not its critique (about 40, 0 left): the
    # scored first draft answers, not the unjudged one after it.
    assert read[200].answer["draft"] == "first, wrong"  # type: ignore[index]
    assert (read[200].tokens, read[200].attempts) == (200, 2)
    assert read[240].answer["draft"] == "second, right"  # type: ignore[index]
    assert read[240].tokens == 250
    assert read[10_000].answer["draft"] == "second, right"  # a later, lower score never wins
    assert read[10_000].attempts == 3


def test_records_without_critique_costs_stop_as_the_budget_policy_does() -> None:
    attempts = [
        _attempt(0, "first, wrong", 0.25, 100),
        _attempt(1, "second, right", 1.0, 150),
        _attempt(2, "third, a worse score", 0.5, 200),
    ]
    read = {budget: answer_at(attempts, budget) for budget in (99, 199, 200, 399, 400)}
    assert read[99].answer["draft"] == "first, wrong"  # a run writes its first draft anyway
    assert read[99].tokens == 100
    assert read[199].tokens == 100  # 99 left does not pay for a reply of about 100
    assert read[200].answer["draft"] == "second, right"  # type: ignore[index]
    assert read[200].tokens == 250  # a step that started overshoots, as the run does
    assert read[399].attempts == 2 and read[400].attempts == 3


def test_a_refine_chain_that_votes_answers_its_vote_among_the_steps_read() -> None:
    attempts = [
        _attempt(0, "Worked. The answer is 7.", 0.25, 100),
        _attempt(1, "Reworked. The answer is 8.", 0.75, 100),
        _attempt(2, "Again. The answer is 8.", 0.5, 100),
    ]
    read = {budget: answer_at(attempts, budget, "vote").answer for budget in (200, 300)}
    assert read[200]["draft"] == "Worked. The answer is 7."  # type: ignore[index]  # a tie
    assert read[300]["draft"] == "Reworked. The answer is 8."  # type: ignore[index]
    best = answer_at(attempts, 200).answer
    assert best["draft"] == "Reworked. The answer is 8."  # type: ignore[index]


def test_a_step_of_candidates_is_as_wide_as_the_budget_left_holds_in_index_order() -> None:
    # After a first draft of 100, a step of 3 candidates of 100, 120 and 80 tokens (its
    # usage the whole step's); each later reply is expected to cost what the first did.
    first = _attempt(0, "first, wrong", 0.1, 100)
    step = _attempt(
        1,
        "candidate 2, right",
        1.0,
        300,
        candidate=2,
        candidates=[
            _candidate(0, "candidate 0, wrong", 0.2, 100),
            _candidate(1, "candidate 1, closer", 0.6, 120),
        ],
    )
    later = _attempt(2, "refined, wrong", 0.4, 500)
    attempts = [first, step, later]
    read = {budget: answer_at(attempts, budget) for budget in (199, 200, 300, 400, 800)}
    assert read[199].answer["draft"] == "first, wrong"  # type: ignore[index]
    assert read[200].answer["draft"] == "candidate 0, wrong"  # one reply fits: candidate 0
    assert read[300].answer["draft"] == "candidate 1, closer"  # two: the pick among them
    assert read[400].answer["draft"] == "candidate 2, right"  # type: ignore[index]
    assert read[800].answer["draft"] == "candidate 2, right"  # type: ignore[index]
    assert [read[b].tokens for b in (200, 300, 400, 800)] == [200, 320, 400, 900]


def test_a_searching_run_answers_with_the_best_of_every_draft_read() -> None:
    # A step's pick is its best, but a later step's other reply can beat every pick.
    first = {**_attempt(0, "root, half", 0.5, 100), "node": 0, "parent": None, "checked": 0.5}
    second = _attempt(
        1,
        "refined, still half",
        0.5,
        300,
        candidate=0,
        candidates=[{**_candidate(1, "fresh, right", 1.0, 150), "node": 2, "parent": None}],
    )
    second.update(node=1, parent=0, checked=0.5)
    read = {b: answer_at([first, second], b).answer for b in (100, 250, 400)}
    assert read[100]["draft"] == "root, half"  # type: ignore[index]
    assert read[250]["draft"] == "root, half"  # the refined draft ties: the earlier node
    assert read[400]["draft"] == "fresh, right"  # type: ignore[index]


def test_pass_at_t_counts_the_reply_tokens_of_the_replies_read_within_the_budget() -> None:
    attempts = [
        _attempt(0, "first", 0.25, 100),  # 10 reply tokens of 100
        {
            **_attempt(1, "picked", 0.5, 300, candidate=0),
            "usage": {"input_tokens": 240, "output_tokens": 60, "total_tokens": 300},
            "candidates": [_candidate(1, "other", 0.1, 150)],  # 10 reply tokens of 150
        },
    ]
    assert output_tokens_at(attempts, 99) == 10  # the first draft is written anyway
    assert output_tokens_at(attempts, 199) == 10  # 99 left: no reply of about 100 fits
    assert output_tokens_at(attempts, 200) == 60  # one: the pick (150 tokens, 50 of them reply)
    assert output_tokens_at(attempts, 300) == 70
    critiqued = [{**attempts[0], "critique_usage": {"output_tokens": 4, "total_tokens": 40}}]
    assert output_tokens_at(critiqued, 70) == 6  # its critique did not fit: the draft's own


def test_calls_count_each_reply_each_llm_critique_and_each_one_asked_again() -> None:
    llm = {"feedback": ["Shorter."], "score": 0.5, "source": "concepts+llm"}
    attempts = [
        {**_attempt(0, "first", 0.5, 100), "critique": llm},  # a reply and its critique: 2
        {  # a rejected reply asked again, then critiqued: 3
            **_attempt(1, "second", 0.5, 100),
            "critique": llm,
            "problems": ["the refiner's reply was rejected: unchanged; asked again"],
        },
        {  # both replies rejected, the draft kept: its critique is reused, no call: 2
            **_attempt(2, "second", 0.5, 100),
            "critique": llm,
            "problems": ["rejected: unchanged; asked again", "rejected: echo; the previous kept"],
        },
        {  # a step of two replies, one critique asked again in plain text: 2 + 3
            **_attempt(3, "picked", 0.5, 100, candidate=0),
            "critique": {**llm, "source": "llm"},
            "candidates": [
                {
                    **_candidate(1, "other", 0.1, 50),
                    "critique": {**llm, "source": "llm"},
                    "problems": [
                        "the critic's structured reply was unreadable; asked again in plain text"
                    ],
                }
            ],
        },
    ]
    assert calls_at(attempts) == 2 + 3 + 2 + 2 + 3
    assert calls_at(attempts, 99) == 2  # the first step is asked whatever it costs
    assert calls_at(attempts, 250) == 5  # 50 left: no reply of about 100 fits
    assert calls_at(attempts, 350) == 7
    assert calls_at(attempts, 400) == 7 + 2  # one reply fits: the pick (index 0) first
    verified = {"feedback": [], "score": 1.0, "source": "python_tests", "verified": True}
    assert calls_at([{**_attempt(0, "passes", 1.0, 100), "critique": verified}]) == 1


def test_a_step_whose_replies_were_all_rejected_adds_no_answer() -> None:
    rejected = {"index": 0, "draft": "", "critique": {}, "usage": _usage(50), "verified": None}
    attempts = [
        _attempt(0, "first", 0.3, 100),
        _attempt(1, "first", 0.3, 50, candidates=[rejected]),  # the previous draft stayed
    ]
    assert answer_at(attempts, 150).answer["draft"] == "first"  # type: ignore[index]
    assert answer_at(attempts, 150).answer["iteration"] == 0  # type: ignore[index]


def test_identical_strategies_differ_by_an_interval_around_zero() -> None:
    bootstrap = PairedBootstrap(30, resamples=2_000, seed=1)
    same = [float(i % 3 == 0) for i in range(30)]
    assert bootstrap.difference(same, same).as_dict() == {"value": 0.0, "low": 0.0, "high": 0.0}
    # Equally good, right on different items: the difference could go either way.
    a = [float(i < 10) for i in range(30)]
    b = [float(10 <= i < 20) for i in range(30)]
    gap = bootstrap.difference(a, b)
    assert gap.value == 0.0 and gap.low < 0 < gap.high and not gap.excludes_zero()


def test_a_sure_difference_excludes_zero_and_the_seed_repeats_it() -> None:
    better = [1.0] * 20 + [0.0] * 10
    worse = [0.0] * 20 + [0.0] * 10
    gap = PairedBootstrap(30, resamples=2_000, seed=1).difference(better, worse)
    assert gap.value == pytest.approx(2 / 3) and gap.low > 0.4 and gap.excludes_zero()
    again = PairedBootstrap(30, resamples=2_000, seed=1).difference(better, worse)
    assert again == gap


def test_accuracy_intervals_stay_inside_0_and_100_percent() -> None:
    none, all_ = wilson(0, 10), wilson(10, 10)
    assert none.low == 0.0 and 0.2 < none.high < 0.35
    assert all_.high == 1.0 and 0.65 < all_.low < 0.8


def test_sample_fills_the_budget_with_fresh_drafts_until_the_strategy_setting_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(strategies, "has_strategy_setting", lambda: False)
    ask = {"verifier": "concepts", "profile": "constrained_generation", "candidates": 3}
    sample = strategies.strategy_settings("sample", budget=800, first_tokens=100, **ask)
    assert sample["max_iterations"] == 0 and sample["critics"] == ("concepts",)
    assert sample["candidates"] == 10  # 8 drafts' worth, and a quarter more
    big = strategies.strategy_settings("sample", budget=8_000, first_tokens=100, **ask)
    assert big["candidates"] == 16  # the library's limit
    refine = strategies.strategy_settings("refine+candidates", budget=800, first_tokens=100, **ask)
    assert refine["candidates"] == 3 and refine["max_tokens_total"] == 800
    assert refine["max_iterations"] == MAX_ITERATIONS_LIMIT  # the budget ends the run
    with pytest.raises(strategies.Unavailable, match="strategy"):
        strategies.strategy_settings("search", budget=800, first_tokens=100, **ask)
    monkeypatch.setattr(strategies, "has_strategy_setting", lambda: True)
    assert (
        strategies.strategy_settings("search", budget=800, first_tokens=100, **ask)["strategy"]
        == "search"
    )
    assert (
        strategies.strategy_settings("sample", budget=800, first_tokens=100, **ask)["strategy"]
        == "sample"
    )


def test_refine_with_checks_is_refine_fed_the_verifier_alone_or_the_critic_without_one() -> None:
    ask = {"profile": "python_function", "budget": 800, "first_tokens": 100, "candidates": 3}
    explained = strategies.strategy_settings("refine", verifier="python_tests", **ask)
    assert explained["critics"] == ("python_tests", "llm")
    plain = strategies.strategy_settings("refine+checks", verifier="python_tests", **ask)
    assert plain["critics"] == ("python_tests",) and plain["strategy"] == "refine"
    assert plain["max_tokens_total"] == 800 and plain["max_iterations"] == MAX_ITERATIONS_LIMIT
    alone = strategies.strategy_settings("refine+checks", verifier=None, **ask)
    assert alone["critics"] == ("llm",)


class _ScriptedLlama:
    """Stands in for llama.cpp: a reply that is a function of the request, calls counted."""

    def __init__(self) -> None:
        self.calls = 0

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text) // 4 + 1))

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        text = scripted_reply(request)
        sent, written = len(json.dumps(request["messages"])) // 4, len(text) // 4 + 1
        usage = {
            "prompt_tokens": sent,
            "completion_tokens": written,
            "total_tokens": sent + written,
        }
        return {
            "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": usage,
        }


@pytest.fixture
def llama(monkeypatch: pytest.MonkeyPatch) -> _ScriptedLlama:
    from self_refine.models import local

    scripted = _ScriptedLlama()
    lock = threading.Lock()
    monkeypatch.setenv("SELF_REFINE_LOCAL_DECODE", "serial")  # the scripted model has no loop
    monkeypatch.setattr(local, "shared_llama", lambda path, n_ctx: (scripted, lock))
    monkeypatch.setattr(local, "_evaluated", lambda llama: 0)
    return scripted


def _local_model() -> Any:
    from self_refine.models.local import LocalChatModel

    return LocalChatModel(
        model_path="/nonexistent/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        model_name="local:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        max_tokens=64,
    )


def _without_timing(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records without their seconds and what the model was asked (cache misses)."""
    return [{k: v for k, v in r.items() if k not in ("seconds", "asked")} for r in records]


async def test_a_second_run_asks_the_model_nothing_and_gives_the_same_records(
    tmp_path: Path, llama: _ScriptedLlama
) -> None:
    given = ["--n", "2", "--sets", "constrained", "--resamples", "200"]
    given += ["--strategies", "sample,refine,refine+candidates", "--cache", str(tmp_path / "cache")]
    first, records, _ = await run(arguments([*given, "--out", str(tmp_path / "a")]), _local_model())
    asked = llama.calls
    assert asked > 0 and first["cache"]["misses"] == asked
    assert first["cache"]["hits"] > 0  # the first drafts every strategy starts from
    second, again, _ = await run(arguments([*given, "--out", str(tmp_path / "b")]), _local_model())
    assert llama.calls == asked, "the second run called the model"
    assert second["cache"]["misses"] == 0 and second["cache"]["hits"] > 0
    assert all(r["asked"]["calls"] == 0 for r in again)
    assert _without_timing(again) == _without_timing(records)


def _one_reply_model() -> FakeChatModel:
    """A model whose every draft misses a word: nothing is ever right."""
    return FakeChatModel(
        script={
            "generator": ["The train left."],
            "critic": [critique(["Use every word."], score=0.3)],
            "refiner": ["The train left the river."],
        }
    )


async def test_every_strategy_is_read_at_every_budget_and_compared_with_sample(
    tmp_path: Path,
) -> None:
    model = _one_reply_model()
    given = ["--n", "2", "--sets", "constrained", "--no-cache", "--resamples", "200"]
    document, records, paths = await run(arguments([*given, "--out", str(tmp_path)]), model)
    result = document["results"]["constrained"]
    # Every strategy but the vote (constrained drafts state no final answer).
    assert set(result["strategies"]) == set(strategies.STRATEGIES) - {"vote"}
    assert {"sample", "refine", "refine+checks", "search"} <= set(result["strategies"])
    for figures in result["strategies"].values():
        assert [b["multiple"] for b in figures["budgets"]] == [1, 2, 4, 8]
        assert all(b["accuracy"]["value"] == 0.0 for b in figures["budgets"])  # nothing right
    assert set(result["differences"]) == set(result["strategies"]) - {"sample"}
    runs = [r for r in records if r["strategy"] == "refine"]
    assert all(r["budgets"][-1]["tokens"] <= 8 * r["first_tokens"] for r in runs)
    assert paths["md"].exists() and paths["records"].exists()
    assert "| 8x |" in paths["md"].read_text()
    assert "(0/0, p = 1.000)" in paths["md"].read_text()  # no item gained or lost
    assert "pass@t" in paths["md"].read_text()
    read = [b for r in runs for b in r["budgets"] if b["answer"] is not None]
    assert read and all(0 < b["output_tokens"] < b["tokens"] for b in read)


async def test_an_existing_result_is_never_overwritten_unless_asked(tmp_path: Path) -> None:
    model = FakeChatModel(script={"*": ["The train left."]})
    kept = tmp_path / "budget-mine.md"
    kept.write_text("committed results")
    given = ["--n", "1", "--sets", "constrained", "--no-cache", "--strategies", "sample"]
    given += ["--out", str(tmp_path), "--name", "budget-mine", "--resamples", "100"]
    with pytest.raises(SystemExit, match="--overwrite"):
        await run(arguments(given), model)
    assert kept.read_text() == "committed results" and not model.requests
    await run(arguments([*given, "--overwrite"]), model)
    assert kept.read_text() != "committed results"


async def test_a_missing_matplotlib_is_said_loudly_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    model = FakeChatModel(script={"*": ["The train left."]})
    given = ["--n", "1", "--sets", "constrained", "--no-cache", "--strategies", "sample"]
    _, _, paths = await run(
        arguments([*given, "--out", str(tmp_path), "--resamples", "100"]), model
    )
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not paths["png"].exists() and "no plot" in paths["md"].read_text()


async def test_the_feedback_setting_and_the_part_are_recorded_and_labelled(
    tmp_path: Path,
) -> None:
    from benchmarks.quality.feedback import LABELS
    from benchmarks.quality.run import load_items

    model = FakeChatModel(script={"*": ["The train left."]})
    given = ["--n", "2", "--sets", "constrained", "--no-cache", "--strategies", "sample"]
    given += ["--resamples", "100", "--out", str(tmp_path)]
    for feedback, part in (("key", "tune"), ("critic", "report")):
        document, records, paths = await run(
            arguments([*given, "--feedback", feedback, "--part", part]), model
        )
        assert document["feedback"] == feedback and document["part"] == part
        assert {r["feedback"] for r in records} == {feedback}
        assert {r["id"] for r in records} == {i["id"] for i in load_items("constrained", 2, part)}
        page = paths["md"].read_text()
        named = {"tune": "the tuning part", "report": "the reported part"}[part]
        assert LABELS[feedback] in page and named in page
        assert "picked the answer" in page
        # the constrained grader reads form only: every page says its figures are upper bounds
        assert "That checks form, not meaning" in page and "benchmarks.quality.byhand" in page
    assert paths["md"].name.startswith("budget-critic-")  # the last run's files
    key_page = next(tmp_path.glob("budget-key-tune-*.md")).read_text()
    assert "(upper bound)" in key_page.splitlines()[0] and "UPPER BOUND" in key_page


async def test_a_draft_the_examples_pass_is_graded_by_the_hidden_tests(tmp_path: Path) -> None:
    pytest.importorskip("self_refine.critics.sandbox.host")
    from benchmarks.quality.run import load_items

    assert "mean(numbers)" in load_items("code", 1)[0]["task"]
    # Right on the examples the task shows; wrong on an empty list, as the spec says.
    draft = "```python\ndef mean(numbers):\n    return sum(numbers) / len(numbers)\n```"
    given = ["--n", "1", "--sets", "code", "--no-cache", "--strategies", "sample"]
    given += ["--resamples", "100", "--budgets", "1", "--out", str(tmp_path)]
    verdicts = {}
    for feedback in ("task", "key"):
        model = FakeChatModel(script={"generator": [draft]})
        _, records, _ = await run(arguments([*given, "--feedback", feedback]), model)
        first, sample = records
        assert first["correct_first"] is False  # the grader runs the hidden tests
        assert sample["budgets"][0]["correct"] is False
        verdicts[feedback] = sample["attempts"][0]["critique"].get("verified")
    assert verdicts == {"task": True, "key": False}  # the run's own check passed it


def test_without_a_verifier_every_strategy_but_the_vote_has_the_critic_alone() -> None:
    ask = {"profile": "math", "budget": 800, "first_tokens": 100, "candidates": 3}
    for strategy in strategies.STRATEGIES:
        settings = strategies.strategy_settings(strategy, verifier=None, **ask)
        assert settings["critics"] == ("none",) if strategy == "vote" else ("llm",), strategy


def test_the_vote_samples_with_no_critic_and_needs_drafts_that_state_a_final_answer() -> None:
    ask = {"budget": 800, "first_tokens": 100, "candidates": 3}
    vote = strategies.strategy_settings("vote", verifier=None, profile="math", **ask)
    assert vote["strategy"] == "sample" and vote["select"] == "vote"
    assert vote["critics"] == ("none",) and vote["max_tokens_total"] == 800
    keyed = strategies.strategy_settings("vote", verifier="answer", profile="math", **ask)
    assert keyed["critics"] == ("answer",), "a verifier the feedback setting gives still judges"
    with pytest.raises(strategies.Unavailable, match="'constrained_generation' state none"):
        strategies.strategy_settings("vote", verifier=None, profile="constrained_generation", **ask)


def _answers(*answers: str) -> Any:
    """Drafts stating the given answers in turn, the last repeated."""
    said = list(answers)

    def draft(messages: Any) -> str:
        answer = said.pop(0) if len(said) > 1 else said[0]
        return f"Working through the costs step by step. The answer is {answer}."

    return draft


async def test_the_vote_spends_the_budget_on_samples_alone_and_is_read_as_a_vote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.quality.run import load_items

    key = int(load_items("arithmetic", 1)[0]["grade"]["answer"])
    said = (str(key + 1), str(key + 1), str(key), str(key), str(key - 1), str(key))
    # The first draft (the first phase's), then the vote's samples: wrong, right, right, ...
    model = FakeChatModel(script={"generator": [_answers(*said)]})
    given = ["--n", "1", "--sets", "arithmetic,constrained", "--no-cache", "--resamples", "100"]
    given += ["--strategies", "vote", "--out", str(tmp_path)]
    document, records, paths = await run(arguments(given), model)
    assert {s.role for s in model.requests} == {"generator"}, "no critic was asked"
    assert set(document["results"]["arithmetic"]["strategies"]) == {"vote"}
    assert document["results"]["constrained"]["strategies"] == {}
    assert "on constrained: vote is skipped" in document["skipped"]["vote"]
    assert "NOTE: constrained: vote is skipped" in capsys.readouterr().err
    assert "vote not run" in paths["md"].read_text()
    (voted,) = [r for r in records if r["strategy"] == "vote"]
    assert voted["set"] == "arithmetic" and voted["stop_reason"] == "token_budget"
    assert voted["settings"]["critics"] == ("none",)
    samples = [d for a in voted["attempts"] for d in [a, *a.get("candidates", [])]]
    one = voted["first_tokens"]
    assert len(samples) == 8 and voted["run_tokens"] == 8 * one  # 8x: eight samples
    assert {d["critique"]["source"] for d in samples} == {"none"}
    # 1x: the first sample (key + 1); 2x: a tie of key + 1 and key goes to the earlier;
    # 4x, 8x: the key.
    assert [b["correct"] for b in voted["budgets"]] == [False, False, True, True]

    judged = FakeChatModel(
        script={
            "generator": [_answers(*said)],
            "critic": [critique(["Check the change."], score=0.5)],
        }
    )
    sampled = ["--n", "1", "--sets", "arithmetic", "--no-cache", "--resamples", "100"]
    sampled += ["--strategies", "sample", "--out", str(tmp_path / "sample")]
    _, records, _ = await run(arguments(sampled), judged)
    (critiqued,) = [r for r in records if r["strategy"] == "sample"]
    drawn = sum(1 + len(a.get("candidates", [])) for a in critiqued["attempts"])
    assert drawn == 4, "a critique costs what a sample does: half the samples at 8x"
    # Every score ties, so the best is the first draft (key + 1); the math profile's default
    # select is the vote, and the reading takes it: the key at 8x.
    assert "select" not in critiqued["settings"]
    assert critiqued["budgets"][-1]["answer"].endswith(f"The answer is {key}.")
    assert critiqued["budgets"][-1]["correct"] is True


def test_bad_options_are_refused_before_any_model_is_loaded() -> None:
    for wrong in (
        ["--strategies", "sample,guess"],
        ["--budgets", "0,2"],
        ["--candidates", "1"],
        ["--feedback", "answer"],
        ["--part", "all"],
    ):
        with pytest.raises(SystemExit):
            arguments(wrong)


@pytest.mark.integration
async def test_a_served_model_is_asked_each_request_once_across_runs(tmp_path: Path) -> None:
    from benchmarks.openai_stub import serve

    sent = tmp_path / "requests.jsonl"
    given = ["--model", "stub", "--n", "1", "--sets", "constrained", "--resamples", "100"]
    given += ["--strategies", "sample,refine", "--cache", str(tmp_path / "cache")]
    with serve(record=sent) as url:
        given += ["--base-url", url, "--api-key", "not-needed"]
        first, records, _ = await run(arguments([*given, "--out", str(tmp_path / "a")]))
        asked = len(sent.read_text().splitlines())
        second, again, _ = await run(arguments([*given, "--out", str(tmp_path / "b")]))
    assert asked > 0 and first["cache"]["misses"] == asked
    assert len(sent.read_text().splitlines()) == asked, "the second run called the server"
    assert second["cache"]["misses"] == 0
    assert _without_timing(again) == _without_timing(records)
    # Each fresh draft is a draw of its own: the sample run's drafts all differ.
    steps = next(r for r in records if r["strategy"] == "sample")["attempts"]
    drafts = [
        d for a in steps for d in [a["draft"], *(c["draft"] for c in a.get("candidates", []))]
    ]
    assert len(drafts) > 2 and len(set(drafts)) == len(drafts)


async def test_the_refine_form_is_given_to_the_strategies_that_refine_and_recorded(
    tmp_path: Path,
) -> None:
    model = FakeChatModel(script={"*": ["The train left."]})
    given = ["--n", "1", "--sets", "constrained", "--no-cache", "--budgets", "2"]
    given += ["--strategies", "sample,search", "--resamples", "100", "--out", str(tmp_path)]
    document, records, _ = await run(arguments([*given, "--refine-form", "fresh"]), model)
    assert document["refine_form"] == "fresh"
    forms = {r["strategy"]: r["settings"].get("refine_form") for r in records if "settings" in r}
    assert forms == {"sample": None, "search": "fresh"}
    document, records, _ = await run(arguments([*given, "--name", "default"]), model)
    assert document["refine_form"] is None
    assert all("refine_form" not in r["settings"] for r in records if "settings" in r)


_SCORES = {"Draft 0.": 0.4, "Draft 1.": 0.7, "Draft 2.": 0.5, "Draft 3.": 0.9, "Draft 4.": 0.6}


def _budget_run(strategy: str, budget: int) -> dict[str, Any]:
    """A run of the library at `budget` whose replies do not depend on the budget: drafts
    "Draft 0.", "Draft 1.", ... in order (200 tokens a first draft or a sample, 325 a
    refinement), each critique (248 tokens) scoring its draft by `_SCORES`."""
    from self_refine import RefineContext, Roles, create_self_refine_graph

    made = iter(range(100))

    def draft(messages: Any) -> str:
        return f"Draft {next(made)}."

    def judge(messages: Any) -> dict[str, Any]:
        text = messages[-1].text
        seen = [d for d in _SCORES if d in text]
        return critique(["Make it better."], score=_SCORES[seen[-1]] if seen else 0.1)

    writer = FakeChatModel(script={"generator": [draft]}, input_tokens=180, output_tokens=20)
    critic = FakeChatModel(script={"critic": [judge]}, input_tokens=200, output_tokens=48)
    refiner = FakeChatModel(script={"refiner": [draft]}, input_tokens=300, output_tokens=25)
    graph = create_self_refine_graph(writer, roles=Roles(critic=critic, refiner=refiner))
    settings = RefineContext(
        max_tokens_total=budget, critics=("llm",), strategy=strategy, max_iterations=4
    )
    return graph.compile().invoke({"task": "Write a line."}, context=settings)


@pytest.mark.parametrize("strategy", ["refine", "sample"])
def test_the_reading_at_a_budget_is_what_a_run_given_that_budget_answers(strategy: str) -> None:
    """A run given 5,000 tokens, read at each smaller budget, answers, spends and writes
    what a run given that budget does, its critiques skipped where the library skips them."""
    big = _budget_run(strategy, 5_000)["attempts"]
    skipped = 0
    for budget in range(100, 2_700, 47):
        run = _budget_run(strategy, budget)
        read = answer_at(big, budget)
        assert read.answer is not None and read.answer["draft"] == run["answer"], budget
        assert read.tokens == run["usage"]["total_tokens"], budget
        assert read.attempts == len(run["attempts"]), budget
        assert output_tokens_at(big, budget) == run["usage"]["output_tokens"], budget
        skipped += run["attempts"][-1]["critique"].get("source") == "budget"
    assert skipped > 5  # the budgets where the last critique did not fit were read too


async def test_a_page_rebuilt_from_the_records_alone_tells_the_runs_figures(
    tmp_path: Path,
) -> None:
    from benchmarks.quality.rebuild import main as rebuild

    model = _one_reply_model()
    given = ["--n", "2", "--sets", "constrained", "--no-cache", "--resamples", "200"]
    given += ["--strategies", "sample,refine", "--out", str(tmp_path / "run"), "--name", "budget-x"]
    document, records, paths = await run(arguments(given), model)
    page = paths["md"].read_text()
    assert " calls | " in page  # spend told in the pass@t cells
    assert "At matched spend" in page and "Reading (" in page
    sample = document["results"]["constrained"]["strategies"]["sample"]["budgets"]
    assert all(b["calls_per_item"] >= 1 for b in sample)  # a draft is a request
    assert all(
        b["calls"] == calls_at(r["attempts"], b["budget"])
        for r in records
        if "budgets" in r
        for b in r["budgets"]
    )

    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "budget-x.records.jsonl").write_bytes(paths["records"].read_bytes())
    rebuild([str(alone / "budget-x.records.jsonl")])
    rebuilt = json.loads((alone / "budget-x.json").read_text())
    assert rebuilt["results"] == json.loads(json.dumps(document["results"]))
    assert "rebuilt from the records alone" in (alone / "budget-x.md").read_text()
    # beside the run's own description, the page keeps its command and commit
    rebuild([str(paths["records"])])
    again = json.loads(paths["json"].read_text())
    assert again["results"] == rebuilt["results"]
    assert again["commit"] == document["commit"] and again["command"] == document["command"]
    assert again["rebuilt"]["records"] == "budget-x.records.jsonl"
