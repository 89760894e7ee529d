"""An instant scripted LM for DSPy: answers in DSPy's chat format with the same texts.

A `dspy.LM` with a custom engine (DSPy 3.4's way of plugging in a model): the
engine reads which output fields the prompt asks for and fills each with a
precomputed text of the benchmark's size (2 KB drafts, 2 KB critiques), so DSPy
does all its own work (prompt formatting, parsing, history, callbacks) and the
model none.
"""

from __future__ import annotations

import itertools
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from benchmarks.texts import dspy_fields, dspy_reply

_POOL = 256

__all__ = ["ScriptedEngine", "scripted_lm"]


class ScriptedEngine:
    """Fills the output fields a prompt asks for: drafts for `draft`, critique text for others."""

    def __init__(self) -> None:
        self.calls = 0
        self._count = itertools.count()
        self._replies: dict[tuple[tuple[str, ...], int], str] = {}

    def _reply(self, fields: list[str], n: int) -> str:
        key = (tuple(fields), n % _POOL)
        if key not in self._replies:
            self._replies[key] = dspy_reply(fields, key[1])
        return self._replies[key]

    def complete(self, request: Any) -> Response:
        """Answer one request at once."""
        self.calls += 1
        system = request.system if isinstance(request.system, str) else ""
        if not isinstance(request.system, str) and request.system is not None:
            system = "".join(part.text for part in request.system)
        fields = dspy_fields(system) or ["draft"]
        return Response(
            id=None,
            model="scripted",
            message=Message.assistant([TextPart(self._reply(fields, next(self._count)))]),
            finish_reason="stop",
            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )

    def stream(self, request: Any) -> Any:
        raise NotImplementedError("the scripted engine does not stream")

    def close(self) -> None:
        """Nothing to close."""


def scripted_lm() -> tuple[Any, ScriptedEngine]:
    """A DSPy LM over the scripted engine (DSPy's cache off: every call is made)."""
    engine = ScriptedEngine()
    return dspy.LM("openai/scripted", engine=engine, cache=False), engine
