"""One measured batch for target 3, run in a process of its own: `python -m benchmarks.batch_runs`.

    python -m benchmarks.batch_runs WAY URL ITEMS FOLDER

WAY is `library` (`self-refine batch` as a user runs it, with its SQLite
checkpoints and its output file, called in this process so that its CPU time
can be read), `ray` (the same command with `--ray`: a Ray instance started on
this machine, its actor making the calls; the JSON adds `startup`, the seconds
until the actors were ready, read from the batch's own line, and `last_write`, the
seconds until the last result line was written, before Ray stops; its CPU time is
the driver's alone), `api` (`arefine_batch` over the same model string, with its
default in-memory checkpointer, the records logged to FOLDER/out.jsonl) or a
plain asyncio loop over the same `ChatOpenAI` client, with
the same prompts and the same calls per item (generate, then critique and
refine until the third refine step has been critiqued): `plain` starts every
item and lets a semaphore hold the calls to the server's slots, `plain-items`
runs `SLOTS` items at a time, a worker per slot. Both write one JSON line per
finished item to FOLDER/out.jsonl. Prints the wall and CPU seconds (all
threads of this process) of the batch, after the imports.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import langgraph.checkpoint.memory  # noqa: F401 - imported before the clock starts
import langgraph.checkpoint.sqlite  # noqa: F401
import langgraph.graph  # noqa: F401
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

import self_refine.batch.api  # noqa: F401
import self_refine.batch.engines  # noqa: F401
import self_refine.cli.batch  # noqa: F401
import self_refine.graphs  # noqa: F401
import self_refine.persistence.sqlite  # noqa: F401
from self_refine import cli
from self_refine.critics.llm import CritiqueReply
from self_refine.prompts import feedback_messages, generate_messages, get_profile, refine_messages

SLOTS = 32
STEPS = 3
WAYS = ("library", "ray", "api", "plain", "plain-items")
_READY = re.compile(r"Ray: .* ready .* after ([0-9.]+) s")


def task_text(n: int) -> str:
    """The n-th item's task."""
    return f"Write a two-kilobyte essay, number {n}, on why cities plant trees along streets."


def _library(url: str, source: Path, folder: Path, *more: str) -> None:
    code = cli.main(
        ["batch", str(source), "-o", str(folder / "out.jsonl"), "--db", str(folder / "db.sqlite")]
        + ["--model", "stub", "--base-url", url, "--api-key", "unused", "--verifiers", ""]
        + ["--max-iterations", str(STEPS), "--concurrency", str(SLOTS), *more]
    )
    if code != 0:
        raise SystemExit(f"self-refine batch failed with exit code {code}")


class _Tee(io.TextIOBase):
    """Standard error as it was, and a copy kept to read the batch's own lines back."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return int(self.stream.write(text))

    def flush(self) -> None:
        self.stream.flush()


def _on_ray(url: str, source: Path, folder: Path) -> float:
    """`self-refine batch --ray`; the seconds Ray took to have its actors ready."""
    tee = _Tee(sys.stderr)
    sys.stderr = tee
    try:
        _library(url, source, folder, "--ray")
    finally:
        sys.stderr = tee.stream
    found = _READY.search(tee.kept.getvalue())
    if found is None:
        raise SystemExit("the Ray batch did not say when its actors were ready")
    return float(found.group(1))


async def _api(url: str, items: int, folder: Path) -> None:
    from self_refine import RefineContext, arefine_batch

    result = await arefine_batch(
        [task_text(n) for n in range(items)],
        model="stub",
        verifiers=(),
        concurrency=SLOTS,
        settings=RefineContext(max_iterations=STEPS, base_url=url, api_key="unused"),
        log=folder / "out.jsonl",
    )
    if result.errors:
        raise SystemExit(f"arefine_batch failed: {next(iter(result.errors.values()))}")


async def _plain(url: str, items: int, folder: Path, workers: bool) -> None:
    model = ChatOpenAI(model="stub", base_url=url, api_key=SecretStr("unused"))
    critic = model.with_structured_output(CritiqueReply, include_raw=True)
    prompts = get_profile("general")
    slots = asyncio.Semaphore(SLOTS)
    output = (folder / "out.jsonl").open("w", encoding="utf-8")

    async def call(runnable: Any, messages: Any) -> Any:
        if workers:
            return await runnable.ainvoke(messages)
        async with slots:
            return await runnable.ainvoke(messages)

    async def item(n: int) -> None:
        task = task_text(n)
        draft = (await call(model, generate_messages(prompts, task))).text
        attempts: list[Any] = []
        for step in range(STEPS + 1):
            reply = await call(critic, feedback_messages(prompts, task, draft))
            critique = reply["parsed"].model_dump()
            attempts.append({"iteration": step, "draft": draft, "critique": critique})
            if step == STEPS:
                break
            messages = refine_messages(prompts, task, attempts, critique, None)
            draft = (await call(model, messages)).text
        record = {"id": str(n), "answer": draft, "attempts": attempts}
        output.write(json.dumps(record) + "\n")
        output.flush()

    if workers:
        pending = iter(range(items))

        async def worker() -> None:
            for n in pending:
                await item(n)

        await asyncio.gather(*(worker() for _ in range(SLOTS)))
    else:
        await asyncio.gather(*(item(n) for n in range(items)))
    output.close()


def main() -> None:
    """Run one batch and print its wall and CPU seconds as JSON."""
    way, url, items, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    if way not in WAYS:
        raise SystemExit(f"unknown way {way!r}; choose from {', '.join(WAYS)}")
    source = folder / "in.jsonl"
    source.write_text(
        "".join(json.dumps({"id": str(n), "task": task_text(n)}) + "\n" for n in range(items))
    )
    if way == "ray":
        import ray  # noqa: F401 - imported before the clock starts, as the others are

    wall, cpu, began = time.perf_counter(), time.process_time(), time.time()
    startup = None
    if way == "library":
        _library(url, source, folder)
    elif way == "ray":
        startup = _on_ray(url, source, folder)
    elif way == "api":
        asyncio.run(_api(url, items, folder))
    else:
        asyncio.run(_plain(url, items, folder, workers=way == "plain-items"))
    result = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    if startup is not None:
        result["startup"] = startup
        result["last_write"] = (folder / "out.jsonl").stat().st_mtime - began
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
