"""A responder for the test server that answers scripted replies per role, else as offline."""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

from tests.openai_server import offline_responder


def role_of(messages: list[dict[str, Any]]) -> str:
    """The role line of the system prompt ("generator", "critic", "refiner")."""
    for message in messages:
        content = str(message.get("content") or "")
        if message.get("role") == "system" and content.startswith("Role: "):
            return content.split("\n", 1)[0].removeprefix("Role: ").strip()
    return ""


class ScriptedResponder:
    """Answers each role's queued replies in order, then falls back to the offline model."""

    def __init__(self, **replies: list[str]) -> None:
        self.queues: defaultdict[str, deque[str]] = defaultdict(deque)
        for role, texts in replies.items():
            self.queues[role].extend(texts)

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        queue = self.queues[role_of(messages)]
        return queue.popleft() if queue else offline_responder(messages, request)
