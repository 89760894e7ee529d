"""One batch's settings beside its items: who judges, which critics, what is refined, its key.

Both doors into a batch use it: `refine_batch` (items in memory) and the command
line's `self-refine batch` (items in a JSONL file, see `files.py`). It checks the
settings and each item's reference before any model call, names its settings'
fingerprint (the items' thread ids derive from it) and runs the items on an engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from self_refine.batch.items import BatchItem
from self_refine.batch.judge import DEFAULT_VERIFIERS, ReferenceCheck, VerifierJudge
from self_refine.batch.runner import BatchRunner, Engine, run_key
from self_refine.content import has_images
from self_refine.critics import Verifier
from self_refine.errors import ConfigError
from self_refine.settings.call import Parts, check_models, check_plan, critic_specs
from self_refine.settings.fields import RESULT_FIELDS, RefineContext

__all__ = ["BatchJob"]

_ADDED_LATER = {"candidates": 1, "first_verified": True, "temperature": None, "seed": None}
"""Settings newer than the first batches, and their defaults."""


@dataclass
class BatchJob:
    """How a batch judges and refines its items, whatever they come from.

    `context` is every run's settings; `critics` are the runs' critics (default:
    the context's, else the profile's), against which each item's reference is
    checked up front; `verifiers` tell right from wrong (names or callables;
    empty: nothing is judged) and, with `refine_only_incorrect`, judge each first
    draft inside the graph (names in the runs' `judge` setting; callables cannot be
    named there: the caller builds the graph with them as its `judge`); at most `concurrency`
    model calls run at once. `graph` describes a graph given in Python (its models
    and options) for the key.
    """

    context: RefineContext = field(default_factory=RefineContext)
    critics: Sequence[Any] | None = None
    verifiers: Sequence[str | Verifier] = DEFAULT_VERIFIERS
    refine_only_incorrect: bool = False
    concurrency: int = 8
    response_format: dict[str, Any] | None = None
    graph: Any = None
    judge: VerifierJudge | None = field(init=False)
    unjudged: RefineContext = field(init=False)
    """The runs' settings without the judge: for an item whose draft the caller says is wrong."""
    key: str = field(init=False)
    _references: ReferenceCheck = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.critics is None:
            self.critics = critic_specs(self.context)
        self._references = ReferenceCheck(self.verifiers, self.critics)  # bad lists fail here
        if self._references.critics.explainer == "human":
            raise ConfigError(
                "the human critic asks a person about every draft, which a batch cannot do: "
                "refine those tasks one at a time, or choose another critic for the batch"
            )
        self.judge = VerifierJudge(self.verifiers) if self.verifiers else None
        named = all(isinstance(v, str) for v in self.verifiers)
        if self.refine_only_incorrect and named:
            names = tuple(str(name) for name in self.verifiers)
            self.context = dataclasses.replace(self.context, judge=names)
        self.unjudged = dataclasses.replace(self.context, judge=())
        self.key = self._key()

    def _key(self) -> str:
        """A fingerprint of what shapes the results: the same settings give the same threads."""
        settings: dict[str, Any] = {
            name: getattr(self.context, name) for name in RESULT_FIELDS if name != "judge"
        }
        for name, default in _ADDED_LATER.items():
            if settings[name] == default:
                # Left out at its default: batches begun before the setting existed keep
                # their threads.
                del settings[name]
        verifiers = [
            v if isinstance(v, str) else getattr(v, "__name__", repr(v)) for v in self.verifiers
        ]
        settings.update(refine_only_incorrect=self.refine_only_incorrect, verifiers=verifiers)
        if self.response_format is not None:  # a typed batch's items get threads of their own
            settings["response_format"] = self.response_format
        if self.graph is not None:
            settings["graph"] = self.graph
        return run_key(settings)

    def check(self, items: Sequence[BatchItem]) -> tuple[list[BatchItem], list[tuple[int, str]]]:
        """The items whose reference the verifiers and critics can use, and why the others not.

        The second list holds (position in `items`, reason) pairs.
        """
        usable, refused = [], []
        for position, item in enumerate(items):
            try:
                self._references(item.reference)
            except ConfigError as error:
                refused.append((position, str(error)))
            else:
                usable.append(item)
        return usable, refused

    def check_models(self, parts: Parts, items: Sequence[BatchItem]) -> None:
        """Raise ConfigError, before any item starts, when a model the runs call cannot be
        had (a missing key) or cannot read the images some items' tasks hold, or when the
        runs' settings do not suit the graph (`settings.call.check_plan`: no critic
        without a vote, a vote over drafts that state no final answer)."""
        images = any(has_images(item.task) for item in items)
        plan = parts.plan(self.context)
        check_plan(plan, saved=True)
        check_models(plan, images=images)

    def runner(self, engine: Engine) -> BatchRunner:
        """A runner of this batch's items on `engine` (a Ray actor makes its own)."""
        return BatchRunner(
            engine,
            self.context,
            self.unjudged,
            judge=self.judge,
            refine_only_incorrect=self.refine_only_incorrect,
            key=self.key,
        )

    async def run(
        self,
        engine: Engine,
        items: Sequence[BatchItem],
        *,
        on_record: Callable[[BatchItem, dict[str, Any]], Awaitable[None]],
        on_error: Callable[[BatchItem, Exception], Awaitable[None]],
    ) -> None:
        """Run the items on the engine, handing each record or failure on as it comes."""
        await self.runner(engine).run_all(
            items, concurrency=self.concurrency, on_record=on_record, on_error=on_error
        )
