"""An instant scripted LM for DSPy: answers in DSPy's chat format with the same texts.

A `dspy.LM` with a custom engine (DSPy 3.4's way of plugging in a model): the
engine reads which output fields the prompt asks for and fills each with a
precomputed text of the benchmark's size (2 KB drafts, 2 KB critiques), so DSPy
does all its own work (prompt formatting, parsing, history, callbacks) and the
model none.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from benchmarks.texts import critique_json, draft_text

__all__ = ["ScriptedEngine", "scripted_lm"]

_OUTPUTS = re.compile(r"Your output fields are:\n(.*?)\nAll interactions", re.S)
_FIELD = re.compile(r"^\d+\. `(\w+)`", re.M)
_POOL = 256


def _drafts() -> list[str]:
    return [draft_text(n) for n in range(_POOL)]


def _critiques() -> list[str]:
    return [" ".join(json.loads(critique_json(n))["feedback"]) for n in range(_POOL)]


class ScriptedEngine:
    """Fills the asked output fields: drafts for `draft`, critique text for the others."""

    def __init__(self) -> None:
        self.calls = 0
        self._drafts = _drafts()
        self._critiques = _critiques()
        self._count = itertools.count()

    def _value(self, name: str, n: int) -> str:
        if name == "draft":
            return self._drafts[n % _POOL]
        if name == "advice":
            return json.dumps({"self": self._critiques[n % _POOL]})
        return self._critiques[n % _POOL]

    def complete(self, request: Any) -> Response:
        """Answer one request at once."""
        self.calls += 1
        n = next(self._count)
        system = request.system if isinstance(request.system, str) else ""
        if not isinstance(request.system, str) and request.system is not None:
            system = "".join(part.text for part in request.system)
        found = _OUTPUTS.search(system)
        names = _FIELD.findall(found.group(1)) if found else ["draft"]
        text = "".join(f"[[ ## {name} ## ]]\n{self._value(name, n)}\n\n" for name in names)
        return Response(
            id=None,
            model="scripted",
            message=Message.assistant([TextPart(text + "[[ ## completed ## ]]")]),
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
