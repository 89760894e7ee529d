"""What a GRPO prompt asks, and the reference that checks its answers.

TRL's prompts are a string (standard format) or a list of chat messages
(conversational format). The refine graph is given the prompt's task: the string
itself, or the text of its last user message. A rollout function receives only the
prompts, so the references that verifiers check answers against are looked up by
that task, from the dataset the trainer trains on (`References`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from self_refine.critics import Verifier, resolve_verifier
from self_refine.errors import ConfigError

__all__ = ["References", "completion_text", "task_of"]


def task_of(prompt: Any, *, images: bool = False) -> str:
    """The task text of a TRL prompt: the string, or its last user message's text.

    A message with an image block is refused unless `images` is true, where its text
    blocks alone are the task (a verifier reads text; the refine rollout's policy
    would not see the image, so the rollout refuses it).
    """
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ConfigError("a prompt is empty: every prompt must ask something")
        return prompt
    if isinstance(prompt, Sequence) and prompt and all(isinstance(m, Mapping) for m in prompt):
        users = [m for m in prompt if m.get("role") == "user"]
        if users:
            return _content_text(users[-1].get("content"), images)
    raise ConfigError(
        "a prompt must be a string or a list of chat messages with a user message "
        f"(TRL's standard or conversational format), got {str(prompt)[:80]!r}"
    )


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: the string, or its messages' contents joined."""
    if isinstance(completion, str):
        return completion
    return "".join(_content_text(m.get("content")) for m in completion if isinstance(m, Mapping))


def _content_text(content: Any, images: bool = False) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if not images and any(
            isinstance(b, Mapping) and b.get("type") not in ("text", None) for b in content
        ):
            raise ConfigError(
                "a prompt with images cannot be refined: refine_rollout's policy reads text "
                "(train a vision-language model with TRL's own rollouts: rollout_func=None)"
            )
        return "".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, Mapping) and b.get("type") in ("text", None)
        )
    raise ConfigError(f"a message's content must be text, got {type(content).__name__}")


class References:
    """Each task's reference, read from the training rows (prompt and reference columns).

    Checked when built: every row has a prompt and a reference that at least one
    verifier can judge, and a task given twice has one reference.
    """

    def __init__(
        self, rows: Iterable[Mapping[str, Any]], column: str, verifiers: Sequence[str | Verifier]
    ) -> None:
        critics = [resolve_verifier(v) for v in verifiers]
        self._by_task: dict[str, Any] = {}
        for index, row in enumerate(rows):
            missing = next((k for k in ("prompt", column) if k not in row), None)
            if missing is not None:
                raise ConfigError(
                    f"row {index} of the dataset has no {missing!r} column: each row needs "
                    f"'prompt' and {column!r} (the verifiers' reference)"
                )
            task, reference = task_of(row["prompt"]), row[column]
            if task in self._by_task and self._by_task[task] != reference:
                raise ConfigError(
                    f"row {index}: its prompt appears earlier with another reference; a rollout "
                    "finds references by prompt, so a prompt must have one"
                )
            reasons = [why for c in critics if (why := c.applies(reference)) is not None]
            if len(reasons) == len(critics):
                raise ConfigError(
                    f"row {index}: no verifier can judge its answers ({'; '.join(reasons)})"
                )
            self._by_task[task] = reference
        if not self._by_task:
            raise ConfigError("the dataset has no rows: give the rows the trainer trains on")

    def __len__(self) -> int:
        return len(self._by_task)

    def of(self, task: str) -> Any:
        """The reference of a task the dataset holds."""
        try:
            return self._by_task[task]
        except KeyError:
            raise ConfigError(
                f"the trainer sent a prompt that is not in the rollout's dataset ({task[:80]!r}): "
                "build the rollout from the dataset the trainer trains on"
            ) from None
