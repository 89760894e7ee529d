"""A scripted fake chat model for unit tests: no network, every request recorded.

`FakeChatModel` answers each request with the next reply scripted for the
request's role, read from the "Role: generator|critic|refiner" first line of
the system prompt that this library's prompts start with:

    model = FakeChatModel(
        script={
            "generator": ["first draft"],
            "critic": [critique(["Add an example."], score=0.4), critique(score=1, done=True)],
            "refiner": ["second draft"],
        }
    )
    refine("task", model=model)
    assert model.requests_for("refiner")[0].prompt.count("<draft>") == 1

A role's replies are used in order and the last one repeats once the list runs
out. A reply is a string, a dict (sent as its JSON text), an `AIMessage` (sent as
it is, tool calls included: `bind_tools` is accepted, so a LangGraph agent such
as `create_react_agent` can run on this model), an exception
instance (raised instead of answering, to simulate a failing call), or a
callable that takes the request's messages and returns one of those. The key
"*" serves every role that has no script of its own; a role with no script at
all fails the test with an AssertionError naming it.

Structured output (`with_structured_output`, which the LLM critic uses) works
in one of two modes, chosen by `structured`:

- "json" (default): the reply text is parsed as JSON into the schema, as the
  offline model does; with `include_raw=True` a reply that does not fit the
  schema gives `parsed=None` and a `parsing_error`, as LangChain models do;
- "unsupported": `with_structured_output` raises NotImplementedError, as chat
  models without tool calling or JSON mode do, so the critic must fall back to
  plain text.

Every request is recorded in `requests` (in order) as a `Sent`, which says
whether it was a structured-output request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr

from self_refine.models.offline import json_reply_parser

__all__ = ["FakeChatModel", "Reply", "Sent", "critique", "role_of"]

Reply = str | dict[str, Any] | BaseException | Callable[[list[BaseMessage]], Any]


def critique(
    feedback: Sequence[str] = (), *, score: float | None = None, done: bool = False
) -> dict[str, Any]:
    """A critic reply in the JSON shape the LLM critic asks for."""
    reply: dict[str, Any] = {"feedback": list(feedback), "done": done}
    if score is not None:
        reply["score"] = score
    return reply


def role_of(messages: Sequence[BaseMessage]) -> str:
    """The role named on the first line of the system prompt ("" when there is none)."""
    for message in messages:
        if isinstance(message, SystemMessage) and message.text.startswith("Role: "):
            return message.text.split("\n", 1)[0].removeprefix("Role: ").strip()
    return ""


@dataclass(frozen=True)
class Sent:
    """One request the fake model received."""

    role: str
    messages: list[BaseMessage]
    structured: bool

    @property
    def system(self) -> str:
        """The system prompt's text."""
        return next((m.text for m in self.messages if isinstance(m, SystemMessage)), "")

    @property
    def prompt(self) -> str:
        """The last message's text: the task, draft and feedback the model was given."""
        return self.messages[-1].text if self.messages else ""


class ByCandidate:
    """A script entry that answers a step's parallel branches by their candidate index, not
    by the order their calls come in (a race): the n-th call of candidate c gets reply
    n * width + c (cycling); a call of no candidate takes the next of its own."""

    def __init__(self, replies: Sequence[str], width: int) -> None:
        self.replies, self.width = list(replies), width
        self._calls: dict[Any, int] = {}
        self._lock = threading.Lock()

    def reply(self, candidate: int | None) -> str:
        with self._lock:
            n = self._calls.get(candidate, 0)
            self._calls[candidate] = n + 1
        place = n if candidate is None else n * self.width + candidate
        return self.replies[place % len(self.replies)]


class FakeChatModel(BaseChatModel):
    """Chat model that answers from a per-role script and records every request."""

    script: dict[str, list[Any]] = Field(default_factory=dict)
    structured: Literal["json", "unsupported"] = "json"
    input_tokens: int = 10
    output_tokens: int = 5
    requests: list[Sent] = Field(default_factory=list)
    _positions: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "fake-scripted"

    def requests_for(self, role: str) -> list[Sent]:
        """The requests of one role, in order."""
        return [sent for sent in self.requests if sent.role == role]

    def _next_reply(self, role: str) -> Any:
        key = role if role in self.script else "*"
        replies = self.script.get(key)
        if not replies:
            raise AssertionError(f"FakeChatModel has no scripted reply for role {role!r}")
        with self._lock:
            position = self._positions.get(key, 0)
            self._positions[key] = position + 1
        return replies[min(position, len(replies) - 1)]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        role = role_of(messages)
        self.requests.append(Sent(role, list(messages), bool(kwargs.get("fake_structured"))))
        reply = self._next_reply(role)
        if isinstance(reply, ByCandidate):
            reply = reply.reply((run_manager.metadata if run_manager else {}).get("candidate"))
        elif callable(reply) and not isinstance(reply, BaseException):
            reply = reply(list(messages))
        if isinstance(reply, BaseException):
            raise reply
        usage: Any = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        if isinstance(reply, AIMessage):
            message = reply.model_copy(update={"usage_metadata": usage})
        else:
            text = reply if isinstance(reply, str) else json.dumps(reply)
            message = AIMessage(text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChatModel:
        """Accept the tools an agent binds: the script says which calls the model makes."""
        return self

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Parse the reply's JSON into `schema`, or refuse when `structured` is "unsupported"."""
        if self.structured == "unsupported":
            raise NotImplementedError("FakeChatModel(structured='unsupported')")

        return self.bind(fake_structured=True) | json_reply_parser(schema, include_raw=include_raw)
