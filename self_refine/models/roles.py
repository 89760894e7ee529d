"""Any runnable as a role: a messages-to-message `Runnable`, or a compiled graph (an agent).

A role is usually a chat model. It may also be:

- a LangChain `Runnable` that takes a list of messages and returns a message (or a
  string), such as `RunnableLambda(with_system_prompt) | model`;
- a compiled LangGraph graph whose state has `messages`, such as langgraph's
  `create_react_agent` or langchain's `create_agent`: it gets the request as its
  `messages`, runs its own steps (tool calls included), and its last AI message is
  the reply. Called inside a node of the refine graph, it runs as that node's
  subgraph: its checkpoints nest under the refine run (namespace `generate:<task id>`,
  say), Studio shows and steps them, and `stream(..., subgraphs=True)` streams them.

`as_role` wraps either in `RunnableRole`, which the nodes call as they call a chat
model: `invoke(messages, config)` returns one `AIMessage` whose `usage_metadata` adds
up every model call the runnable made for it (an agent's tool-calling turns too).

A graph runs each request within a recursion limit of its own: the one it was given
(`agent.with_config(recursion_limit=N)`), else `ROLE_RECURSION_LIMIT`. It does not
share the refine run's limit (worked out for the refine loop's own steps, 15 for three
iterations: an agent's seventh tool call would end the run), nor run without one (a
graph invoked with no limit gets LangGraph's default of about 10,000 steps: an agent
that never stops would call its model thousands of times). Running out of steps is a
`GraphRecursionError`, which `models/calls.model_errors` turns into one line naming
the role.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langgraph.pregel import Pregel

from self_refine.errors import ConfigError
from self_refine.state import add_usage

__all__ = [
    "ROLE_RECURSION_LIMIT",
    "ModelLike",
    "RoleModel",
    "RunnableRole",
    "as_role",
    "is_role_runnable",
]

ROLE_RECURSION_LIMIT = 25
"""Steps a graph in a role may take per request unless it was given its own limit: LangChain's
long-standing default, about a dozen tool calls for a ReAct agent."""

ModelLike = BaseChatModel | Runnable[Any, Any] | str
"""What may fill a role: a chat model, a model string, or any runnable `as_role` wraps."""


class RoleModel(Protocol):
    """What the nodes need of a role's model: a LangChain chat model has all of it, and so
    does `RunnableRole` (an agent or a chain in a role).

    `bind` makes a draw of its own (a candidate's temperature or seed). A model that
    reads text only says so with a class attribute, `accepts_images = False`
    (`models/images.py`); `model_name` names it in errors and traces.
    """

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Answer the messages with one message."""
        ...

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async twin of invoke()."""
        ...

    def bind(self, **kwargs: Any) -> Any:
        """The same model, asked with these call settings too."""
        ...

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        """A runnable answering JSON of `schema` (NotImplementedError when it has none)."""
        ...


def is_role_runnable(value: Any) -> bool:
    """True for a runnable that can fill a role without being a chat model."""
    return isinstance(value, Runnable) and not isinstance(value, BaseChatModel)


def _check_graph(graph: Pregel[Any, Any, Any, Any]) -> None:
    """Refuse a graph that cannot take `messages` or keeps checkpoints of its own."""
    channels = getattr(graph, "channels", {}) or {}
    if "messages" not in channels:
        raise ConfigError(
            f"the graph {graph.get_name()!r} has no 'messages' in its state: a graph in a role "
            "gets the request as messages and answers with its last AI message "
            "(build it on MessagesState, as create_react_agent does)"
        )
    saver = graph.checkpointer
    if saver is not None and saver is not False:
        raise ConfigError(
            f"the graph {graph.get_name()!r} was compiled with a checkpointer of its own: "
            "compile it without one, so that its steps are checkpointed inside the refine run"
        )


class RunnableRole(Runnable[Sequence[BaseMessage], AIMessage]):
    """A runnable called as a chat model: messages in, one AI message out, usage added up."""

    accepts_images: bool | None = None
    """Unknown: what the runnable does with image blocks is its own business."""

    def __init__(self, runnable: Runnable[Any, Any]) -> None:
        self.runnable = runnable
        bound = runnable.bound if isinstance(runnable, RunnableBinding) else runnable
        self.is_graph = isinstance(bound, Pregel)
        if isinstance(bound, Pregel):
            _check_graph(bound)
        own = (getattr(runnable, "config", None) or {}).get("recursion_limit")  # with_config's
        self.recursion_limit: int | None = (own or ROLE_RECURSION_LIMIT) if self.is_graph else None
        """The steps a graph may take per request (None: not a graph)."""
        self.name = runnable.get_name()
        self.model_name = self.name

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        """Refused, as by chat models without structured output: critics ask in plain text."""
        raise NotImplementedError(f"{self.name!r} is not a chat model: no structured output")

    def _input(self, messages: Sequence[BaseMessage]) -> Any:
        return {"messages": list(messages)} if self.is_graph else list(messages)

    def _config(self, config: RunnableConfig | None) -> RunnableConfig | None:
        """The node's config, with a graph's own recursion limit in place of the run's."""
        if self.recursion_limit is None:
            return config
        return {**(config or {}), "recursion_limit": self.recursion_limit}

    def invoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **_: Any
    ) -> AIMessage:
        """Run the runnable on the request and return its reply."""
        output = self.runnable.invoke(self._input(input), self._config(config))
        return self._reply(output, len(input))

    async def ainvoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **_: Any
    ) -> AIMessage:
        """Async twin of invoke()."""
        output = await self.runnable.ainvoke(self._input(input), self._config(config))
        return self._reply(output, len(input))

    def _reply(self, output: Any, sent: int) -> AIMessage:
        """The reply in the runnable's output, with the usage of every model call it made."""
        if isinstance(output, str):
            return AIMessage(output)
        if isinstance(output, AIMessage):
            return output
        messages = output.get("messages") if isinstance(output, dict) else None
        if not isinstance(messages, list):
            raise ConfigError(
                f"{self.name!r} returned {type(output).__name__}: a runnable in a role must "
                "return a message, a string, or a state with 'messages'"
            )
        new = [m for m in messages[sent:] if isinstance(m, AIMessage)]
        replies = [m for m in new if not m.tool_calls and m.text.strip()]
        if not replies:
            return AIMessage("", usage_metadata=_usage(new))
        return replies[-1].model_copy(update={"usage_metadata": _usage(new)})


def _usage(messages: Sequence[AIMessage]) -> Any:
    """The usage of several replies added up, in a message's `usage_metadata` shape."""
    return add_usage(*(m.usage_metadata for m in messages))


def as_role(model: Any) -> Any:
    """The model as the nodes call it: a chat model as it is, any other runnable wrapped."""
    if isinstance(model, RunnableRole) or not is_role_runnable(model):
        return model
    return RunnableRole(model)
