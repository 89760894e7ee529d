"""One batch's settings beside its items: who judges, which critics, what is refined, its key.

Both doors into a batch use it: `refine_batch` (items in memory) and the command
line's `self-refine batch` (items in a JSONL file, see `files.py`). It checks each
item's reference before any model call and runs the items on an engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from self_refine.batch.items import BatchItem
from self_refine.batch.judge import DEFAULT_VERIFIERS, ReferenceCheck, VerifierJudge
from self_refine.batch.runner import BatchRunner, Engine
from self_refine.context import RefineContext
from self_refine.critics import Verifier
from self_refine.errors import ConfigError
from self_refine.nodes.plan import critic_specs

__all__ = ["BatchJob"]


@dataclass
class BatchJob:
    """How a batch judges and refines its items, whatever they come from.

    `context` is every run's settings; `critics` are the runs' critics (default:
    the context's, else the profile's), against which each item's reference is
    checked up front; `verifiers` tell right from wrong (names or callables;
    empty: nothing is judged); `key` fingerprints the settings that shape
    results (the items' thread ids derive from it); at most `concurrency` model
    calls run at once.
    """

    context: RefineContext = field(default_factory=RefineContext)
    critics: Sequence[Any] | None = None
    verifiers: Sequence[str | Verifier] = DEFAULT_VERIFIERS
    refine_only_incorrect: bool = False
    key: str = ""
    concurrency: int = 8
    judge: VerifierJudge | None = field(init=False)
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

    async def run(
        self,
        engine: Engine,
        items: Sequence[BatchItem],
        *,
        on_record: Callable[[BatchItem, dict[str, Any]], Awaitable[None]],
        on_error: Callable[[BatchItem, Exception], Awaitable[None]],
    ) -> None:
        """Run the items on the engine, handing each record or failure on as it comes."""
        runner = BatchRunner(
            engine,
            judge=self.judge,
            refine_only_incorrect=self.refine_only_incorrect,
            select=self.context.select,
            key=self.key,
        )
        await runner.run_all(
            items, concurrency=self.concurrency, on_record=on_record, on_error=on_error
        )
