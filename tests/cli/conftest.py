"""Fixtures of the command-line tests: the offline model's requests, recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from self_refine.models.offline import OfflineModel
from tests.fakes import role_of


class Calls:
    """The roles of every request the offline model answered, and faults to raise."""

    def __init__(self) -> None:
        self.roles: list[str] = []
        self.prompts: list[str] = []
        self.fail: dict[str, BaseException] = {}

    def sent_to(self, role: str) -> list[str]:
        """The text of every request the given role received, oldest first."""
        return [text for seen, text in zip(self.roles, self.prompts, strict=True) if seen == role]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Record the offline model's requests; `calls.fail[role] = error` raises once."""
    seen = Calls()
    original: Callable[..., Any] = OfflineModel._generate

    def spy(self: OfflineModel, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        role = role_of(messages)
        seen.roles.append(role)
        seen.prompts.append("\n".join(m.text for m in messages))
        if role in seen.fail:
            raise seen.fail.pop(role)
        return original(self, messages, *args, **kwargs)

    monkeypatch.setattr(OfflineModel, "_generate", spy)
    return seen
