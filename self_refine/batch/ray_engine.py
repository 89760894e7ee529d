"""A batch's items on a Ray cluster: actors that each hold the graph, the driver the output.

The driver (the process that runs `self-refine batch --ray` or `arefine_batch(engine=...)`)
reads the input, checks it, and keeps the output file, the summary and the progress as
a local batch does; only the items' runs move. Each actor (`ItemWorker`, one per node by
default, each pinned to its node) compiles the batch's graph once with its own connection
to the checkpoint database and runs the items the driver hands it with the same
`BatchRunner` a local batch uses, at most its share of `--concurrency` model calls at
once. An item's thread id follows from its settings and id, so an item whose actor died
(its worker or its node went away) is handed to another actor by the driver and
continues from its thread's last checkpoint; an actor gone with its node is replaced on
a node that is alive. The driver writes each result line once, as it comes back.

Plain actors, not Ray Data: the output file is the batch's record of what is finished
(resume reads it), and it must be written by one process, as each item finishes;
Ray Data's `map_batches` writes its results by blocks at the end, from the workers.
Ray is imported only when a batch runs on it (`pip install 'langgraph-self-refine[ray]'`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from self_refine.batch.engines import LocalEngine
from self_refine.batch.heap import long_lived_frozen
from self_refine.batch.items import BatchItem
from self_refine.batch.job import BatchJob
from self_refine.batch.runner import BatchRunner, run_items
from self_refine.batch.schedule import open_items
from self_refine.errors import ConfigError, install_hint
from self_refine.graphs import GRAPH_NAME
from self_refine.models.calls import model_call_limit

__all__ = ["LOCAL", "ItemWorker", "RayEngine", "import_ray", "run_on_ray"]

LOCAL = "local"
"""The address that starts a Ray instance on this machine for the batch (Ray's own word)."""

RETRIES = 3
"""How many times the driver hands an item again whose actor was lost (its worker or node died)."""

PAUSE = 1.0
"""Seconds between two questions to a lost actor (doubling, up to 10)."""

RESTART_WAIT = 120.0
"""Seconds an item waits for a lost actor to be restarted when no other actor is up."""

_LOST = "its Ray worker was lost"


def import_ray() -> Any:
    """The `ray` module; ConfigError saying how to install it when it is missing."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"running a batch on Ray needs Ray: {install_hint('ray')}, "
            "or run the batch without --ray"
        ) from None
    return ray


@dataclass(frozen=True)
class RayEngine:
    """Where a batch's items run on Ray, and the checkpoint database its actors share.

    `address` is Ray's: "local" (the default) starts a Ray instance on this
    machine for the batch and stops it after; "auto" joins the cluster that
    `ray start` runs on this machine; "HOST:PORT" the cluster whose head is
    there. `db` is the checkpoint database every actor opens: a postgresql://
    URL, which any node can reach; a SQLite file only with "local" (the actors
    are then processes of this machine). `actors` is how many actors run items
    (default: one per node alive when the batch starts); the batch's
    concurrency (model calls at once) is shared among them.
    """

    address: str = LOCAL
    db: str | None = None
    actors: int | None = None

    def __post_init__(self) -> None:
        if not str(self.address).strip():
            raise ConfigError(
                'the Ray address is empty: give "local", "auto" or the head\'s HOST:PORT'
            )
        if self.actors is not None and self.actors < 1:
            raise ConfigError(f"the Ray actors must be >= 1, got {self.actors}")

    @property
    def local(self) -> bool:
        """Whether the batch starts its own Ray instance on this machine."""
        return self.address == LOCAL

    def database(self) -> str:
        """The database the actors open (a SQLite path made absolute); ConfigError when the
        nodes could not share it."""
        from self_refine.persistence.postgres import is_postgres_url

        if not self.db:
            raise ConfigError("a batch on Ray needs a checkpoint database: give --db")
        if is_postgres_url(self.db):
            return self.db
        if not self.local:
            raise ConfigError(
                f"--ray {self.address} runs items on other machines, which cannot open the "
                f"SQLite file {self.db!r} of this one: give --db postgresql://... (one "
                "database every node reaches), or leave the address out to run on this "
                "machine only"
            )
        return str(Path(self.db).expanduser().resolve())

    def check(self) -> None:
        """Raise ConfigError, before any model call, when Ray is missing or the database
        does not suit the cluster."""
        import_ray()
        self.database()


class ItemWorker:
    """One Ray actor: the batch's graph, compiled with a checkpointer of `db`, running items.

    `recipe()` builds the uncompiled graph (it travels to the actor, the graph does
    not); at most `calls` of its items' model calls run at once.
    """

    def __init__(self, job: BatchJob, recipe: Callable[[], Any], db: str, calls: int) -> None:
        self._job = job
        self._recipe = recipe
        self._db = db
        self._calls = calls
        self._runner: BatchRunner | None = None
        self._opening: asyncio.Lock | None = None
        self._stack = AsyncExitStack()
        with model_call_limit(calls):
            # Every item runs in a copy of this context: they share the call slots.
            self._context = contextvars.copy_context()

    async def _open(self) -> BatchRunner:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._runner is None:
                from self_refine.persistence.storage import open_async_checkpointer

                opened = open_async_checkpointer(self._db, pool_size=open_items(self._calls))
                saver = await self._stack.enter_async_context(opened)
                graph = self._recipe().compile(checkpointer=saver, name=GRAPH_NAME)
                self._runner = self._job.runner(LocalEngine(graph))
                # What is alive now lives as long as the actor: out of the collector's passes.
                self._stack.enter_context(long_lived_frozen())
        return self._runner

    async def ready(self) -> str:
        """Open the database and compile the graph; the node this actor runs on."""
        await self._open()
        import ray

        return str(ray.get_runtime_context().get_node_id())

    async def run_item(self, item: BatchItem) -> dict[str, Any]:
        """Refine one item (or finish its thread, begun by an actor that was lost)."""
        runner = await self._open()
        task = asyncio.create_task(runner.run_item(item), context=self._context.copy())
        return await task


class _Pool:
    """The actors, each item handed to the one with the fewest items in hand.

    An actor that was lost is left out until it answers again: Ray restarts one
    whose worker died; one whose node died is gone for good (it was pinned there),
    and `spawn(nodes)` starts another on the alive node with the fewest of the
    actors' `nodes`. Its items go to the others meanwhile.
    """

    def __init__(
        self,
        ray: Any,
        actors: list[Any],
        nodes: list[str],
        spawn: Callable[[list[str]], tuple[Any, str]],
        note: Callable[[str], None],
    ) -> None:
        self._ray = ray
        self._actors = actors
        self._nodes = nodes
        self._spawn = spawn
        self._held = [0] * len(actors)
        self._down: set[int] = set()
        self._probes: dict[int, asyncio.Task[None]] = {}
        self._note = note
        errors = ray.exceptions
        self._gone = (errors.ActorDiedError, errors.ActorUnschedulableError)
        self._lost = (
            errors.RayActorError,
            errors.ActorUnschedulableError,
            errors.WorkerCrashedError,
            errors.NodeDiedError,
            errors.ObjectLostError,
        )

    def _pick(self) -> int:
        up = [i for i in range(len(self._actors)) if i not in self._down]
        return min(up or range(len(self._actors)), key=self._held.__getitem__)

    def _lose(self, index: int) -> None:
        self._down.add(index)
        if index not in self._probes or self._probes[index].done():
            self._probes[index] = asyncio.create_task(self._probe(index))

    async def _probe(self, index: int) -> None:
        """Ask the lost actor until it answers (restarted), starting another in its place
        when it is gone; then hand it items again."""
        pause = PAUSE
        while True:
            try:
                node = await self._actors[index].ready.remote()
            except self._gone:
                others = self._nodes[:index] + self._nodes[index + 1 :]
                self._actors[index], self._nodes[index] = self._spawn(others)
                self._note(
                    f"Ray: actor {index + 1} of {len(self._actors)} is gone with its node; "
                    "another starts on a node that is alive"
                )
            except self._lost:
                await asyncio.sleep(pause)
                pause = min(2 * pause, 10.0)
            else:
                self._nodes[index] = str(node)
                self._down.discard(index)
                return

    async def run_item(self, item: BatchItem) -> dict[str, Any]:
        """The item's record from an actor; handed again (up to RETRIES times) when the
        actor is lost, the failure inside the actor raised as it was raised there."""
        for attempt in range(RETRIES + 1):
            index = self._pick()
            self._held[index] += 1
            try:
                return dict(await self._actors[index].run_item.remote(item))
            except self._ray.exceptions.RayTaskError as error:
                cause = getattr(error, "cause", None)
                raise (cause if isinstance(cause, Exception) else error) from None
            except self._lost as error:
                reason = _short(str(error))
                if attempt == RETRIES:
                    raise RuntimeError(
                        f"{_LOST} {RETRIES + 1} times ({type(error).__name__}: {reason})"
                    ) from None
                self._lose(index)
                if isinstance(error, self._gone):
                    reason = "the actor is gone with its node"
                elif type(error).__name__ == "ActorUnavailableError":
                    reason = "the actor stopped answering: its worker or its node died"
                self._note(
                    f"item {item.id!r}: {_LOST} ({type(error).__name__}: {reason}); running it "
                    f"again from its last checkpoint ({attempt + 2} of {RETRIES + 1} tries)"
                )
            finally:
                self._held[index] -= 1
            await self._one_up()
        raise AssertionError("unreachable")

    async def _one_up(self) -> None:
        """Wait (up to RESTART_WAIT) while every actor is lost."""
        waited = 0.0
        while len(self._down) >= len(self._actors) and waited < RESTART_WAIT:
            await asyncio.sleep(0.2)
            waited += 0.2

    def close(self) -> None:
        """Stop asking lost actors."""
        for probe in self._probes.values():
            probe.cancel()


def _alive(ray: Any) -> list[str]:
    """The ids of the cluster's nodes that are alive, in Ray's order."""
    return [str(node["NodeID"]) for node in ray.nodes() if node.get("Alive")]


def _short(text: str, limit: int = 160) -> str:
    """Ray's message on one line, cut after a sentence within `limit` characters."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit]
    return cut[: cut.rfind(". ") + 1] if ". " in cut else cut + "..."


def _connect(ray: Any, engine: RayEngine) -> bool:
    """Start or join Ray; whether this call did (and so the batch disconnects at its end)."""
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"logging_level": logging.WARNING}
    if engine.local:
        options["include_dashboard"] = False
        # Ray runs its workers 15 steps nicer than the raylet by default; here the actors
        # are the batch's work (the driver only writes the output): they run as this
        # process does. A cluster's own settings are its operator's.
        options["_system_config"] = {"worker_niceness": 0}
    try:
        ray.init(address=engine.address, **options)
    except ConnectionError as error:
        raise ConfigError(
            f"cannot reach the Ray cluster at {engine.address} ({error}): start it "
            "(`ray start --head` on the head node) or fix the address"
        ) from None
    return True


async def run_on_ray(
    engine: RayEngine,
    job: BatchJob,
    recipe: Callable[[], Any],
    items: Sequence[BatchItem],
    *,
    on_record: Callable[[BatchItem, dict[str, Any]], Awaitable[None]],
    on_error: Callable[[BatchItem, Exception], Awaitable[None]],
    on_note: Callable[[str], None],
) -> None:
    """Run the items on Ray's actors, handing each record or failure on as it comes (in the
    driver, this process). `on_note` gets what the user should know as it goes: the actors
    ready, and each item handed again after its actor was lost."""
    ray = import_ray()
    db = engine.database()
    if not items:
        return
    started = time.perf_counter()
    joined = _connect(ray, engine)  # here, not in a thread: Ray sets its signal handlers
    actors: list[Any] = []
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        count = engine.actors or max(1, len(_alive(ray)))
        calls = math.ceil(job.concurrency / count)
        # Twice its items' share: the batch's last items start at once (`run_scheduled`).
        open_here = 2 * open_items(calls)
        worker = ray.remote(
            num_cpus=0, max_restarts=-1, max_task_retries=0, max_concurrency=open_here
        )(ItemWorker)

        def spawn(nodes: list[str]) -> tuple[Any, str]:
            """A new actor, pinned to the alive node that holds the fewest of `nodes`; and
            that node."""
            alive = _alive(ray)
            if not alive:
                return worker.remote(job, recipe, db, calls), ""
            node = min(alive, key=nodes.count)
            where = NodeAffinitySchedulingStrategy(node, soft=False)
            actor = worker.options(scheduling_strategy=where).remote(job, recipe, db, calls)
            return actor, node

        try:
            placed: list[str] = []
            for _ in range(count):
                actor, node = spawn(placed)
                actors.append(actor)
                placed.append(node)
            nodes = list(await asyncio.gather(*(actor.ready.remote() for actor in actors)))
        except ray.exceptions.RayError as error:
            cause = getattr(error, "cause", None) or error
            reason = " ".join(str(cause).split())[:500]
            raise ConfigError(
                f"the Ray actors could not start the batch ({type(cause).__name__}: {reason}); "
                "every node needs langgraph-self-refine (the same version as here) and must "
                "reach the database"
            ) from None
        on_note(
            f"Ray: {count} actor(s) ready on {len(set(nodes))} node(s), {calls} model call(s) "
            f"at once each, after {time.perf_counter() - started:.1f} s"
        )
        pool = _Pool(ray, actors, nodes, spawn, on_note)
        try:
            # Scheduled as a local batch's items are (twice as many open as call slots, the
            # last ones all at once, so they share the slots rather than run alone at the
            # end); the slots themselves are the actors' (this process calls no model).
            await run_items(
                pool.run_item,
                items,
                concurrency=count * calls,
                calls_here=True,
                on_record=on_record,
                on_error=on_error,
            )
        finally:
            pool.close()
    finally:
        for actor in actors:
            ray.kill(actor)
        if joined:
            ray.shutdown()
