"""refine_rollout in a real GRPOTrainer: one train() step of a tiny Qwen2 policy on the CPU.

The prompts ask for replies of at least some characters, checked by a verifier: the
trainer's completions are cut at 4 tokens (characters, with the tiny tokenizer), so
every sample of the prompt asking for 8 is wrong at turn 1, while a refinement may
write 16; the prompt asking for 1 is right unless the draft is blank.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from self_refine import Critique
from self_refine.training import METRICS, RefineStepError, refine_rollout, verifier_reward
from tests.training.tiny import tiny_policy

ROWS = [
    {"prompt": [{"role": "user", "content": "Write anything."}], "reference": {"min_chars": 1}},
    {"prompt": [{"role": "user", "content": "Write 8 characters."}], "reference": {"min_chars": 8}},
]

REFERENCE = {row["prompt"][0]["content"]: row["reference"] for row in ROWS}


def long_enough(task: str, draft: str, reference: Any) -> Critique:
    """Pass a draft of at least reference["min_chars"] characters (blanks at the ends aside)."""
    wanted = int(reference["min_chars"])
    passed = len(draft.strip()) >= wanted
    feedback = [] if passed else [f"Write at least {wanted} characters."]
    return Critique(feedback=feedback, done=passed, source="length")


def _train_one_step(rollout: Any, tmp_path: Path, model: Any = None) -> tuple[Any, dict[str, Any]]:
    """Run one GRPO step; return the trainer and what the rollout gave it."""
    given: dict[str, Any] = {}

    def recorded(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        given.update(rollout(prompts, trainer))
        return given

    trainer = tiny_trainer(recorded if rollout is not None else None, tmp_path, model=model)
    trainer.train()
    return trainer, given


def tiny_trainer(
    rollout: Any, tmp_path: Path, model: Any = None, callbacks: Any = (), **config: Any
) -> Any:
    """A GRPOTrainer of the tiny policy (or `model`) on ROWS: one CPU step unless `config` says."""
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    policy, tokenizer = tiny_policy()
    options: dict[str, Any] = {
        "output_dir": str(tmp_path / "out"),
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 4,
        "max_steps": 1,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "use_cpu": True,
        "bf16": False,
        "disable_tqdm": True,
        "seed": 7,
        **config,
    }
    return GRPOTrainer(
        model=model or policy,
        processing_class=tokenizer,
        reward_funcs=[verifier_reward(long_enough)],
        args=GRPOConfig(**options),
        train_dataset=Dataset.from_list(ROWS),
        rollout_func=rollout,
        callbacks=list(callbacks),
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _trained_text(tokenizer: Any, ids: list[int], mask: list[int]) -> str:
    kept = [t for t, m in zip(ids, mask, strict=True) if m]
    return str(tokenizer.decode(kept, skip_special_tokens=True))


def test_a_step_refines_only_the_wrong_samples_and_trains_on_the_exchange(tmp_path: Path) -> None:
    log = tmp_path / "refined.jsonl"
    rollout = refine_rollout(
        ROWS, verifiers=[long_enough], max_new_tokens=16, log=log, failed="refinement"
    )
    trainer, given = _train_one_step(rollout, tmp_path)
    tokenizer = trainer.processing_class
    outcomes = rollout.last
    assert outcomes is not None and len(outcomes) == 8

    wrong = [o for o in outcomes if not o.right_before]
    assert [o.right_before for o in outcomes] == [
        long_enough(o.task, o.draft, REFERENCE[o.task]).done for o in outcomes
    ]
    assert len(wrong) >= 4  # the 8-character prompt's four samples, at least
    lines = _lines(log)
    assert [line["draft"] for line in lines] == [o.draft for o in wrong]
    assert all(line["correct_before"] is False and line["step"] == 0 for line in lines)
    for line in lines:
        wanted = REFERENCE[line["prompt"][0]["content"]]["min_chars"]
        assert line["critique"] == [f"Write at least {wanted} characters."]
        assert line["correct_after"] == (len((line["refinement"] or "").strip()) >= wanted)

    logged = trainer.state.log_history[0]
    assert {f"self_refine/{name}" for name in METRICS} <= set(logged)
    size = len(outcomes)
    assert logged["self_refine/acc_t1"] == pytest.approx(1 - len(wrong) / size)
    assert logged["self_refine/wrong_to_right"] == pytest.approx(
        sum(line["correct_after"] for line in lines) / size
    )
    assert logged["self_refine/right_to_wrong"] == 0
    assert logged["self_refine/refined"] == pytest.approx(len(wrong) / size)
    assert logged["self_refine/refine_tokens"] == sum(line["refine_tokens"] for line in lines) > 0
    assert logged["self_refine/draft_tokens"] == sum(len(o.draft_ids) for o in outcomes)
    assert logged["self_refine/sampled_tokens"] == (
        logged["self_refine/draft_tokens"] + logged["self_refine/refine_tokens"]
    )
    changed = [o.refinement is not None and o.refinement.strip() != o.draft.strip() for o in wrong]
    assert logged["self_refine/edited"] == pytest.approx(sum(changed) / len(wrong))
    assert 0 < logged["self_refine/edit_distance"] <= logged["self_refine/edited"]
    assert logged["rewards/verifier_long_enough/mean"] == pytest.approx(
        logged["self_refine/acc_t2"]
    )
    assert logged["self_refine/reward_t1/verifier_long_enough"] == pytest.approx(
        logged["self_refine/acc_t1"]
    )

    for index, outcome in enumerate(outcomes):
        ids, mask = given["completion_ids"][index], given["env_mask"][index]
        if outcome.refinement is None:
            assert ids == outcome.draft_ids and all(mask)
            continue
        assert _trained_text(tokenizer, ids, mask).strip() == outcome.refinement
        masked = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        assert outcome.draft.strip() in masked
        assert "Write at least 8 characters." in masked
        assert given["self_refine"][index]["answer"] == outcome.refinement


def test_a_wrong_draft_whose_refinement_fails_trains_as_sampled(tmp_path: Path) -> None:
    # 6-token (6-character) refinements cannot pass the 8-character prompt's check.
    rollout = refine_rollout(ROWS, verifiers=[long_enough], max_new_tokens=6)
    trainer, given = _train_one_step(rollout, tmp_path)
    outcomes = rollout.last or []
    failed = [i for i, o in enumerate(outcomes) if o.refinement and not o.right_after]
    fixed = [i for i, o in enumerate(outcomes) if o.refinement and o.right_after]
    assert len(failed) >= 4
    tokenizer = trainer.processing_class
    for index in failed:
        outcome = outcomes[index]
        assert given["completion_ids"][index] == outcome.draft_ids
        assert given["prompt_ids"][index] == outcome.prompt_ids
        assert all(given["env_mask"][index])
        assert given["self_refine"][index]["answer"] == outcome.draft
        assert given["self_refine"][index]["refined"] is True
    for index in fixed:
        ids, mask = given["completion_ids"][index], given["env_mask"][index]
        assert _trained_text(tokenizer, ids, mask).strip() == outcomes[index].refinement
        assert given["self_refine"][index]["answer"] == outcomes[index].refinement
    logged = trainer.state.log_history[0]
    assert logged["rewards/verifier_long_enough/mean"] == pytest.approx(
        logged["self_refine/acc_t2"]
    )


def test_a_refine_run_samples_the_drafts_a_plain_run_of_its_seed_samples(tmp_path: Path) -> None:
    # No refinement can pass (6 characters for the prompt asking for 8), so each step
    # trains on the drafts alone: the two runs match only if turn 2's sampling left the
    # random state to the next step's drafts.
    rollout = refine_rollout(ROWS, verifiers=[long_enough], max_new_tokens=6)
    refine_run = tiny_trainer(rollout, tmp_path / "refine", max_steps=3)
    refine_run.train()
    plain_run = tiny_trainer(None, tmp_path / "plain", max_steps=3)
    plain_run.train()
    refine_log, plain_log = refine_run.state.log_history[:3], plain_run.state.log_history[:3]
    assert [row["self_refine/refined"] > 0 for row in refine_log] == [True] * 3
    assert [row["self_refine/wrong_to_right"] for row in refine_log] == [0.0] * 3
    for refined, plain in zip(refine_log, plain_log, strict=True):
        for key in ("loss", "grad_norm", "completions/mean_length", "reward"):
            assert refined[key] == pytest.approx(plain[key]), (refined["step"], key)
        # the same drafts: the plain step sampled the refine step's turn-1 tokens
        assert refined["self_refine/draft_tokens"] == plain["self_refine/sampled_tokens"]
        assert refined["self_refine/sampled_tokens"] > plain["self_refine/sampled_tokens"]


def test_the_refinement_form_trains_the_refinement_after_the_trainer_prompt(
    tmp_path: Path,
) -> None:
    rollout = refine_rollout(
        ROWS, verifiers=[long_enough], max_new_tokens=16, train_on="refinement", failed="refinement"
    )
    trainer, given = _train_one_step(rollout, tmp_path)
    tokenizer = trainer.processing_class
    assert "env_mask" not in given
    outcomes = rollout.last or []
    refined = [i for i, o in enumerate(outcomes) if o.refinement is not None]
    assert refined
    cut = 0
    for index in refined:
        ids, call = given["completion_ids"][index], outcomes[index].call
        assert call is not None
        assert tokenizer.decode(ids, skip_special_tokens=True) == outcomes[index].refinement
        wrote_end = call.completion_ids[-1] == tokenizer.eos_token_id
        assert (ids[-1] == tokenizer.eos_token_id) == wrote_end
        cut += not wrote_end and len(call.completion_ids) == 16
        assert given["prompt_ids"][index] == outcomes[index].prompt_ids
    assert cut  # a refinement stopped at max_new_tokens, trained without an end token


def test_a_plain_run_logs_the_turn_1_reward_under_the_refine_runs_name(tmp_path: Path) -> None:
    trainer, _ = _train_one_step(None, tmp_path)
    logged = trainer.state.log_history[0]
    assert logged["self_refine/reward_t1/verifier_long_enough"] == pytest.approx(
        logged["rewards/verifier_long_enough/mean"]
    )
    # of the refine metrics, a plain step has only its drafts' tokens
    assert {f"self_refine/{name}" for name in METRICS} & set(logged) == {
        "self_refine/sampled_tokens"
    }
    assert logged["self_refine/sampled_tokens"] == pytest.approx(
        logged["completions/mean_length"] * 8
    )


def test_a_reward_function_of_ones_own_logs_the_refine_metrics_through_log_metric() -> None:
    from self_refine.training import log_refine_metrics

    logged: dict[str, float] = {}
    entries: list[dict[str, Any]] = [
        {"draft": "7", "refinement": None, "correct_before": True, "correct_after": True},
        {"draft": "abcd", "refinement": "abXd", "correct_before": False, "correct_after": True},
        {"draft": "hello", "refinement": None, "correct_before": False, "correct_after": False},
        {"draft": "same ", "refinement": "same", "correct_before": False, "correct_after": False},
    ]
    for entry, refine_tokens in zip(entries, (0, 12, 9, 5), strict=True):
        entry.update(refine_tokens=refine_tokens, draft_tokens=10, refine_seconds=2.5)
    log_refine_metrics(entries, logged.__setitem__)
    assert logged == {
        "self_refine/acc_t1": 0.25,
        "self_refine/acc_t2": 0.5,
        "self_refine/wrong_to_right": 0.25,
        "self_refine/right_to_wrong": 0.0,
        "self_refine/refined": 0.75,
        # of the three refined: one changed a character of four; two changed nothing
        "self_refine/edited": pytest.approx(1 / 3),
        "self_refine/edit_distance": pytest.approx(0.25 / 3),
        "self_refine/draft_tokens": 40.0,
        "self_refine/refine_tokens": 26.0,
        "self_refine/sampled_tokens": 66.0,
        "self_refine/refine_seconds": 2.5,
    }
    right_only = entries[:1]
    logged.clear()
    log_refine_metrics(right_only, logged.__setitem__)  # nothing refined: no edit figures
    assert "self_refine/edited" not in logged and logged["self_refine/refined"] == 0


def test_a_crash_in_a_refine_call_fails_the_step(tmp_path: Path) -> None:
    model, _ = tiny_policy()
    generate = model.generate
    calls: list[int] = []

    def crashing_after_the_first(**kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("out of memory while refining")
        return generate(**kwargs)

    model.generate = crashing_after_the_first
    log = tmp_path / "refined.jsonl"
    rollout = refine_rollout(ROWS, verifiers=[long_enough], log=log)
    with pytest.raises(RefineStepError, match="RuntimeError: out of memory while refining"):
        _train_one_step(rollout, tmp_path, model=model)
    assert not log.exists()


def test_bad_settings_are_refused_before_any_model_runs() -> None:
    from self_refine.errors import ConfigError

    with pytest.raises(ConfigError, match="has no verifier"):
        refine_rollout(ROWS)
    with pytest.raises(ConfigError, match="train_on must be one of exchange, refinement"):
        refine_rollout(ROWS, verifiers=[long_enough], train_on="turns")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="failed must be one of draft, refinement"):
        refine_rollout(ROWS, verifiers=[long_enough], failed="both")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="human critic cannot critique inside a trainer"):
        refine_rollout(ROWS, verifiers=[long_enough], critics=["human"])
    with pytest.raises(ConfigError, match="unknown critic 'llm-judge'"):
        refine_rollout(ROWS, verifiers=[long_enough], critics=["llm-judge"])
    with pytest.raises(ConfigError, match="row 0 of the dataset has no 'answer' column"):
        refine_rollout(ROWS, verifiers=["answer"], reference="answer")
    with pytest.raises(ConfigError, match=r'row 0: no verifier can judge.*reference\["answer"\]'):
        refine_rollout(ROWS, verifiers=["answer"])
    rollout = refine_rollout(ROWS, verifiers=[long_enough])
    with pytest.raises(ConfigError, match="not in the rollout's dataset"):
        rollout([[{"role": "user", "content": "Something else."}]], trainer=object())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"settings": "search"}, r"strategy='refine' and candidates=1 \(got strategy='search'"),
        ({"settings": "sample"}, r"strategy='refine' and candidates=1 \(got strategy='sample'"),
        ({"settings": "candidates"}, r"candidates=1 \(got strategy='auto', candidates=3\)"),
        ({"settings": {"max_tokens": 64}}, r"settings must be a RefineContext, got dict: pass "),
        ({"verifiers": "concepts"}, r"verifiers must be a list .*write verifiers=\['concepts'\]"),
        ({"max_new_tokens": "10"}, r"max_new_tokens must be a whole number .*got '10'"),
        ({"max_new_tokens": float("nan")}, r"max_new_tokens must be a whole number .*got nan"),
        ({"gather_seconds": -1}, r"gather_seconds must be a finite number of seconds >= 0"),
        ({"log": "directory"}, r"log must name a JSONL file, got the directory .*refined\.jsonl"),
        ({"critic_model": "gpt-4o-mini"}, r"'gpt-4o-mini' needs an API key: set OPENAI_API_KEY"),
        ({"dataset": None}, r"dataset must be the rows the trainer trains on .*got NoneType"),
    ],
    ids=[
        "strategy-search",
        "strategy-sample",
        "candidates",
        "settings-dict",
        "verifiers-string",
        "max_new_tokens-string",
        "max_new_tokens-nan",
        "gather_seconds-negative",
        "log-directory",
        "critic_model-no-key",
        "dataset-none",
    ],
)
def test_a_rollout_refuses_what_it_would_ignore_or_fail_on_later(
    options: dict[str, Any], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from self_refine import RefineContext
    from self_refine.errors import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    named = {
        "search": RefineContext(strategy="search", candidates=2),
        "sample": RefineContext(strategy="sample"),
        "candidates": RefineContext(candidates=3),
    }
    given: dict[str, Any] = {"verifiers": [long_enough], **options}
    if isinstance(given.get("settings"), str):
        given["settings"] = named[given["settings"]]
    if given.get("log") == "directory":
        given["log"] = tmp_path
    dataset = given.pop("dataset", ROWS)
    with pytest.raises(ConfigError, match=message):
        refine_rollout(dataset, **given)
