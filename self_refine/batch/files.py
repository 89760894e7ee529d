"""A batch from a JSONL file into another, resumable: what `self-refine batch` runs.

The input is read and every reference checked before any model call; the
output file is locked, a torn last line cut, and the items it already holds are
skipped, so running the same batch again continues it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from self_refine.batch.engines import check_server, open_engine
from self_refine.batch.items import BatchItem, InputProblem, in_shard, parse_shard, read_items
from self_refine.batch.job import BatchJob
from self_refine.batch.metrics import Summary
from self_refine.batch.output import STDOUT, OutputFile, StreamOutput
from self_refine.errors import BatchStoppedError, ConfigError
from self_refine.persistence.storage import check_database

if TYPE_CHECKING:
    from self_refine.batch.ray_engine import RayEngine

__all__ = ["BatchEvents", "FileBatch", "FileBatchResult"]


class BatchEvents(Protocol):
    """What a file batch tells its caller as it goes (the command line shows it)."""

    def warn(self, message: str) -> None:
        """Something the user should know that does not stop the batch."""
        ...

    def start(self, total: int, done_before: Iterable[dict[str, Any]]) -> None:
        """The batch starts: `total` items, of which `done_before` an earlier run finished.

        `done_before` holds, per finished item, its `correct_first` and `correct_final`.
        """
        ...

    def finished(self, record: dict[str, Any]) -> None:
        """One item finished and its line is written."""
        ...

    def failed(self, item: BatchItem, error: Exception) -> None:
        """One item failed; the others go on."""
        ...


@dataclass
class FileBatchResult:
    """The summary of every record in the output file (earlier runs' too), and the failures.

    The records themselves are not kept: they are in the output file.
    """

    summary: dict[str, Any]
    failed: int = 0


@dataclass
class FileBatch:
    """Items of the JSONL file `input` refined into `output`.

    `shard` ("I/N") keeps the I-th of N parts of the input, split by a hash of
    each id so that machines agree. `output` "-" streams the results to standard
    output (nothing resumed from it). The items run on the LangGraph server at
    `server`, on Ray's actors (`ray`, with its own database), else as threads of
    `builder` compiled with the checkpointer of `db`.
    """

    job: BatchJob
    input: str
    output: str
    shard: str | None = None
    db: str | None = None
    server: str | None = None
    ray: RayEngine | None = None
    problems: list[InputProblem] = field(default_factory=list)
    _shard: tuple[int, int] | None = field(default=None, init=False, repr=False)
    _opened: _Opened | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._shard = parse_shard(self.shard) if self.shard else None

    def read(self, events: BatchEvents) -> list[BatchItem]:
        """The items to run; unusable lines are skipped with a warning and kept in `problems`.

        ConfigError when no line is usable.
        """
        items, self.problems = read_items(self.input)
        usable, refused = self.job.check(items)
        for position, reason in refused:
            self.problems.append(InputProblem(items[position].line or 0, f'"reference": {reason}'))
        self.problems.sort(key=lambda problem: problem.line)
        for problem in self.problems:
            events.warn(f"warning: {self.input} {problem}; skipped")
        if not usable:
            raise ConfigError(
                f'no usable items in {self.input}: give one JSON object with a "task" per line'
            )
        if self._shard:
            usable = [item for item in usable if in_shard(item.id, self._shard)]
        return usable

    def prepare(self, items: Sequence[BatchItem]) -> None:
        """Check, before any work, what the run needs: the server reachable, the output usable.

        The output is opened and locked; a torn last line is cut; a file that
        is not results, or was written with other settings, is a ConfigError
        and left as it was. `-` (STDOUT) streams the results to standard output.
        """
        if self._opened is not None:
            return
        if self.server:
            check_server(self.server)
        elif self.ray:
            self.ray.check()
            check_database(self.ray.database())
        elif self.db:
            check_database(self.db)
        summary = Summary()
        wanted = {item.id for item in items}
        verdicts: list[tuple[Any, Any]] = []

        def earlier(record: dict[str, Any]) -> None:
            summary.add(record)
            if str(record["id"]) in wanted:
                verdicts.append((record.get("correct_first"), record.get("correct_final")))

        output: OutputFile | StreamOutput
        if self.output == STDOUT:
            output = StreamOutput(sys.stdout.buffer)
        else:
            output = OutputFile.open(self.output, self.job.key, on_record=earlier)
        self._opened = _Opened(output, summary, verdicts)

    async def run(
        self,
        items: Sequence[BatchItem],
        events: BatchEvents,
        *,
        builder: Any = None,
        recipe: Callable[[], Any] | None = None,
    ) -> FileBatchResult:
        """Run the items the output file does not hold yet, appending a line as each finishes.

        `builder` is the uncompiled graph for a local batch (None with a server);
        on Ray, `recipe()` builds it in each actor.
        """
        if self._opened is None:
            await asyncio.to_thread(self.prepare, items)
        assert self._opened is not None
        output, summary, verdicts = self._opened
        try:
            if output.repaired:
                events.warn(
                    f"note: {self.output} ended in a torn line (an interrupted write); removed it"
                )
            done = output.done_ids()
            events.start(
                len(items),
                ({"correct_first": first, "correct_final": final} for first, final in verdicts),
            )
            failed = 0

            async def write(item: BatchItem, record: dict[str, Any]) -> None:
                try:
                    await asyncio.to_thread(output.write, record)
                except OSError as error:
                    raise BatchStoppedError(self._write_failure(error)) from None
                summary.add(record)
                events.finished(record)

            async def report(item: BatchItem, error: Exception) -> None:
                nonlocal failed
                failed += 1
                events.failed(item, error)

            todo = [item for item in items if item.id not in done]
            del done
            if self.ray is not None:
                from self_refine.batch.ray_engine import run_on_ray

                if recipe is None:
                    raise ConfigError("a batch on Ray needs the recipe of its graph")
                await run_on_ray(
                    self.ray, self.job, recipe, todo,
                    on_record=write, on_error=report, on_note=events.warn,
                )  # fmt: skip
                return FileBatchResult(summary.result(), failed)
            engine = open_engine(
                builder=builder,
                db=self.db,
                server=self.server,
                pool_size=self.job.concurrency,
            )
            async with engine as running:
                await self.job.run(running, todo, on_record=write, on_error=report)
            return FileBatchResult(summary.result(), failed)
        finally:
            output.close()
            self._opened = None

    def _write_failure(self, error: OSError) -> str:
        if self.output == STDOUT:
            return (
                f"cannot write the results to standard output ({error.strerror}); the batch "
                "stopped: its finished threads are saved in the database, so the same command "
                "reads them back without calling the model again"
            )
        return (
            f"cannot write {self.output} ({error.strerror}); the batch stopped, and "
            "the items finished so far are saved: free some disk space, then run "
            "the batch again to continue it"
        )


class _Opened(NamedTuple):
    output: OutputFile | StreamOutput
    summary: Summary
    verdicts: list[tuple[Any, Any]]
