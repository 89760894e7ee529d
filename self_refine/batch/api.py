"""refine_batch(): refine a batch of a policy's answers between generation and reward."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from self_refine.batch.engines import LocalEngine
from self_refine.batch.items import BatchItem
from self_refine.batch.job import BatchJob
from self_refine.batch.judge import DEFAULT_VERIFIERS
from self_refine.batch.metrics import summarize
from self_refine.batch.output import append_jsonl
from self_refine.content import TaskContent, task_problem
from self_refine.critics import Verifier
from self_refine.errors import ConfigError
from self_refine.graphs.self_refine import GRAPH_NAME, create_self_refine_graph, group_options
from self_refine.input_checks import MAX_TASK_CHARS
from self_refine.redact import model_secrets, redact
from self_refine.settings.call import resolve
from self_refine.settings.fields import RefineContext

if TYPE_CHECKING:
    from self_refine.batch.ray_engine import RayEngine

__all__ = ["BatchResult", "arefine_batch", "refine_batch"]


@dataclass
class BatchResult:
    """Refined answers in input order, one record per item, and the batch's statistics.

    An item whose refinement failed keeps its given answer ("" when none was
    given); `errors` maps its position to the reason. With a `response_format`,
    `structured` holds each answer as a validated instance (None where no draft
    matched the format, or the item failed); the records hold its JSON.
    """

    answers: list[str]
    records: list[dict[str, Any] | None]
    summary: dict[str, Any]
    errors: dict[int, str] = field(default_factory=dict)
    structured: list[Any] = field(default_factory=list)


def _column(name: str, values: Sequence[Any] | None, size: int) -> list[Any]:
    if values is None:
        return [None] * size
    if isinstance(values, str) or len(values) != size:
        count = "a string" if isinstance(values, str) else f"{len(values)} entries"
        raise ConfigError(f"{name} has {count} but tasks has {size}: pass one per task")
    return list(values)


def _items(
    tasks: Sequence[TaskContent],
    answers: Sequence[str] | None,
    references: Sequence[Any] | None,
    correct: Sequence[bool | None] | None,
    ids: Sequence[str] | None,
) -> list[BatchItem]:
    if isinstance(tasks, str):
        raise ConfigError("tasks must be a list of task texts, got one string: wrap it in [...]")
    if correct is not None and answers is None:
        raise ConfigError("correct says which answers are right: pass answers too")
    size = len(tasks)
    columns = zip(
        _column("answers", answers, size),
        _column("references", references, size),
        _column("correct", correct, size),
        _column("ids", ids, size),
        strict=True,
    )
    items = []
    for index, (task, (answer, reference, right, given_id)) in enumerate(
        zip(tasks, columns, strict=True)
    ):
        if isinstance(task, list):
            if why := task_problem(task, MAX_TASK_CHARS):
                raise ConfigError(f"tasks[{index}]: {why}")
        elif not isinstance(task, str) or not task.strip():
            raise ConfigError(f"tasks[{index}] is empty or not a string: give the task text")
        if answer is not None and not isinstance(answer, str):
            raise ConfigError(f"answers[{index}] must be a string, got {type(answer).__name__}")
        item_id = str(index) if given_id is None else str(given_id)
        items.append(BatchItem(item_id, task, reference, answer, None, right))
    if len({item.id for item in items}) != len(items):
        raise ConfigError("ids must be unique: two tasks share an id")
    return items


async def arefine_batch(
    tasks: Sequence[TaskContent],
    *,
    model: BaseChatModel | str,
    answers: Sequence[str] | None = None,
    references: Sequence[Any] | None = None,
    correct: Sequence[bool | None] | None = None,
    ids: Sequence[str] | None = None,
    verifiers: Sequence[str | Verifier] | None = None,
    refine_only_incorrect: bool = True,
    concurrency: int = 8,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    context: RefineContext | None = None,
    log: str | Path | None = None,
    engine: RayEngine | None = None,
    **options: Any,
) -> BatchResult:
    """Refine a batch of tasks (from the given `answers`, else from generated drafts).

    `correct[i]` says whether `answers[i]` is already right (None: unknown);
    with `refine_only_incorrect` (the default) right answers come back as
    they were, with no model call. `verifiers` (names or callables; default:
    every built-in verifier, each judging the items whose reference holds its
    data, e.g. `{"answer": "42"}`) tell right from wrong where `correct` does
    not, and judge the refined answers, so the summary reports accuracy before
    and after; `verifiers=()` judges nothing. `options` go to
    `create_self_refine_graph` (`roles`, `settings`, `critics`, ...; the flat
    shortcuts `critic_model=`, `max_iterations=`, ... work too).
    Each record is appended to the JSONL file `log` when given. Threads live
    in an in-memory checkpointer unless you pass one. At most `concurrency`
    model calls run at once: set it to what the model server serves at once.
    A failing item is kept in `errors` (keys masked); a failing storage (a
    full disk) stops the batch with `BatchStoppedError`.

    `engine=RayEngine(address, db=...)` (`self_refine.batch.ray_engine`) runs
    the items on Ray's actors, each building the graph from `model` and
    `options` (so they must pickle: a model name rather than a client) and
    keeping its threads in `db` (a postgresql:// URL every node reaches; on
    this machine's own Ray, a SQLite file; none: a temporary one); an item
    whose actor is lost runs again from its thread's last checkpoint.
    """
    items = _items(tasks, answers, references, correct, ids)
    given = dict(options)
    judges = list(DEFAULT_VERIFIERS if verifiers is None else verifiers)
    # Callables cannot be named in a run's settings: the graph takes them as its judge.
    callables = refine_only_incorrect and not all(isinstance(v, str) for v in judges)
    builder = create_self_refine_graph(
        model, **group_options(options), judge=judges if callables else ()
    )
    parts = builder.parts
    settings = resolve(parts, context).settings
    job = BatchJob(
        settings,
        parts.critic_specs(settings),
        judges,
        refine_only_incorrect=refine_only_incorrect,
        concurrency=concurrency,
        response_format=parts.response_format.schema if parts.response_format else None,
        graph={"model": model if isinstance(model, str) else repr(model), "options": given},
    )
    refused = job.check(items)[1]
    if refused:
        index, reason = refused[0]
        raise ConfigError(f"references[{index}]: {reason}")
    if engine is not None and checkpointer is not None:
        raise ConfigError(
            "a batch on Ray keeps its threads in engine's db, not in a checkpointer: "
            "leave checkpointer out"
        )
    job.check_models(builder.parts, items)
    records: dict[int, dict[str, Any]] = {}
    errors: dict[int, str] = {}
    position = {item.id: index for index, item in enumerate(items)}

    async def keep(item: BatchItem, record: dict[str, Any]) -> None:
        records[position[item.id]] = record

    secrets = _secrets(model, job.context, builder.parts.roles.values())

    async def fail(item: BatchItem, error: Exception) -> None:
        errors[position[item.id]] = redact(f"{type(error).__name__}: {error}", secrets)

    if engine is not None:
        recipe = functools.partial(
            create_self_refine_graph,
            model,
            **group_options(options),
            judge=judges if callables else (),
        )
        await _on_ray(engine, job, recipe, items, on_record=keep, on_error=fail)
    else:
        if checkpointer is None:
            from langgraph.checkpoint.memory import InMemorySaver

            checkpointer = InMemorySaver()
        graph = builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)
        await job.run(LocalEngine(graph), items, on_record=keep, on_error=fail)
    ordered = [records.get(index) for index in range(len(items))]
    if log is not None:
        await asyncio.to_thread(append_jsonl, log, [r for r in ordered if r is not None])
    refined = [
        record["answer"] if record is not None else (item.draft or "")
        for item, record in zip(items, ordered, strict=True)
    ]
    summary = summarize(r for r in ordered if r is not None)
    summary["failed"] = len(errors)
    answer_format = builder.parts.response_format
    structured = (
        [answer_format.instance((r or {}).get("structured_response")) for r in ordered]
        if answer_format is not None
        else []
    )
    return BatchResult(refined, ordered, summary, errors, structured)


async def _on_ray(
    engine: RayEngine,
    job: BatchJob,
    recipe: Any,
    items: list[BatchItem],
    **handlers: Any,
) -> None:
    """Run the items on Ray; with no database, in a temporary SQLite file on this machine."""
    from self_refine.batch.ray_engine import import_ray, run_on_ray

    import_ray()
    with contextlib.ExitStack() as stack:
        if engine.db is None:
            if not engine.local:
                engine.database()  # the ConfigError that asks for a shared database
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="self-refine-ray-"))
            engine = dataclasses.replace(engine, db=str(Path(folder) / "checkpoints.sqlite"))
        engine.check()
        try:
            await run_on_ray(engine, job, recipe, items, on_note=_note, **handlers)
        except TypeError as error:
            if "pickle" not in str(error) and "serialize" not in str(error):
                raise
            raise ConfigError(
                f"the graph's settings cannot be sent to Ray's actors ({error}): pass the "
                "model as a name (e.g. model='gpt-4o-mini') and options that pickle"
            ) from None


def _note(message: str) -> None:
    print(f"self-refine: {message}", file=sys.stderr, flush=True)


def _secrets(model: Any, settings: RefineContext, models: Iterable[Any]) -> list[str]:
    """Every key the batch's models and settings hold, to mask in the errors it keeps."""
    found = [settings.api_key or ""]
    for each in (model, *models):
        if isinstance(each, BaseChatModel):
            found += model_secrets(each)
    return [secret for secret in found if secret]


_LOOP_LOCK = threading.Lock()


@functools.cache
def _background_loop() -> asyncio.AbstractEventLoop:
    """One event loop, in its own thread, for every blocking call of this process.

    Chat clients keep connection pools bound to the loop that first used them,
    so a training loop calling refine_batch() every step must reuse one loop.
    """
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="self-refine-batch", daemon=True).start()
    return loop


def refine_batch(tasks: Sequence[TaskContent], **kwargs: Any) -> BatchResult:
    """Blocking twin of arefine_batch() (same arguments); works inside a running loop too."""
    with _LOOP_LOCK:
        loop = _background_loop()
    future = asyncio.run_coroutine_threadsafe(arefine_batch(tasks, **kwargs), loop)
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise
