"""What a GRPO prompt asks, and the reference that checks its answers.

TRL's prompts are a string (standard format) or a list of chat messages
(conversational format); a dataset's images reach them as `{"type": "image", "image":
<PIL image>}` parts of the first user message. The prompt's task is the string itself,
or the text of its last user message; the refine graph is given that text, with the
prompt's images before it as inline PNG blocks (`graph_task`). A rollout function
receives only the prompts, so the references that verifiers check answers against are
looked up by the task's text and the prompt's images (their pixels: one question asked
of many images is many tasks), from the dataset the trainer trains on (`References`).
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from self_refine.critics import Verifier, resolve_verifier
from self_refine.errors import ConfigError

__all__ = [
    "References",
    "completion_text",
    "graph_task",
    "loggable_prompt",
    "prompt_images",
    "task_of",
]


def task_of(prompt: Any) -> str:
    """The task text of a TRL prompt: the string, or its last user message's text blocks."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ConfigError("a prompt is empty: every prompt must ask something")
        return prompt
    if isinstance(prompt, Sequence) and prompt and all(isinstance(m, Mapping) for m in prompt):
        users = [m for m in prompt if m.get("role") == "user"]
        if users:
            return _content_text(users[-1].get("content"))
    raise ConfigError(
        "a prompt must be a string or a list of chat messages with a user message "
        f"(TRL's standard or conversational format), got {str(prompt)[:80]!r}"
    )


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: the string, or its messages' contents joined."""
    if isinstance(completion, str):
        return completion
    return "".join(_content_text(m.get("content")) for m in completion if isinstance(m, Mapping))


def prompt_images(prompt: Any) -> list[Any]:
    """The images of a TRL prompt's messages, in their order (none for a string)."""
    if isinstance(prompt, str):
        return []
    return [
        block["image"]
        for message in prompt
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, Mapping) and block.get("type") == "image" and "image" in block
    ]


def graph_task(prompt: Any, task: str) -> str | list[dict[str, Any]]:
    """What the refine graph is given for a prompt: its task text, after its images.

    Each image is an inline PNG block (lossless, so a processor reads the pixels the
    trainer's dataset holds); a prompt without images gives the text alone.
    """
    images = prompt_images(prompt)
    if not images:
        return task
    blocks: list[dict[str, Any]] = []
    for image in images:  # PIL images: `References.of` refused any other before
        png = io.BytesIO()
        image.save(png, format="PNG")
        data = base64.b64encode(png.getvalue()).decode("ascii")
        blocks.append({"type": "image", "base64": data, "mime_type": "image/png"})
    return [*blocks, {"type": "text", "text": task}]


def loggable_prompt(prompt: Any) -> Any:
    """The prompt with each image part's image left out (a JSONL line holds text)."""
    if isinstance(prompt, str):
        return prompt
    return [
        {
            **message,
            "content": [
                {k: v for k, v in block.items() if k != "image"}
                if isinstance(block, Mapping) and block.get("type") == "image"
                else block
                for block in message["content"]
            ],
        }
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        else message
        for message in prompt
    ]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, Mapping) and b.get("type") in ("text", None)
        )
    raise ConfigError(f"a message's content must be text, got {type(content).__name__}")


_Key = tuple[str, tuple[str, ...]]
"""A task's text and the fingerprints of its images, sorted."""


def _fingerprint(image: Any) -> str:
    """The sha256 of an image's mode, size and pixels (a dataset decodes it anew each read)."""
    if not hasattr(image, "tobytes"):
        raise ConfigError(
            f"a prompt's image is a {type(image).__name__}, not a PIL image: give the "
            "dataset's image column as images (datasets' Image feature decodes them)"
        )
    digest = hashlib.sha256(f"{image.mode} {image.size}".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def _row_images(row: Mapping[str, Any]) -> list[Any]:
    """A training row's images, as GRPOTrainer puts them into its prompt."""
    if "images" in row:
        column = list(row["images"] or [])
    else:
        column = [row["image"]] if row.get("image") is not None else []
    return [*column, *prompt_images(row["prompt"])]


def _key(task: str, images: Sequence[Any]) -> _Key:
    return task, tuple(sorted(_fingerprint(i) for i in images))


class References:
    """Each task's reference, read from the training rows (prompt and reference columns).

    Checked when built: every row has a prompt and a reference that at least one
    verifier can judge, and a task given twice (its text and images) has one reference.
    """

    def __init__(
        self, rows: Iterable[Mapping[str, Any]], column: str, verifiers: Sequence[str | Verifier]
    ) -> None:
        critics = [resolve_verifier(v) for v in verifiers]
        self._by_task: dict[_Key, Any] = {}
        for index, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise ConfigError(
                    f"row {index} of the dataset is a {type(row).__name__}, not a row: each row "
                    'is a dict such as {"prompt": ..., "reference": ...}'
                )
            missing = next((k for k in ("prompt", column) if k not in row), None)
            if missing is not None:
                raise ConfigError(
                    f"row {index} of the dataset has no {missing!r} column: each row needs "
                    f"'prompt' and {column!r} (the verifiers' reference)"
                )
            task = _key(task_of(row["prompt"]), _row_images(row))
            reference = row[column]
            if task in self._by_task and self._by_task[task] != reference:
                raise ConfigError(
                    f"row {index}: its prompt (text and images) appears earlier with another "
                    "reference; a rollout finds references by prompt, so a prompt must have one"
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

    def of(self, prompt: Any) -> Any:
        """The reference of a prompt (as the trainer sends it) that the dataset holds."""
        task = task_of(prompt)
        try:
            return self._by_task[_key(task, prompt_images(prompt))]
        except KeyError:
            raise ConfigError(
                f"the trainer sent a prompt that is not in the rollout's dataset ({task[:80]!r}"
                f"{' with its images' if prompt_images(prompt) else ''}): build the rollout "
                "from the dataset the trainer trains on"
            ) from None
