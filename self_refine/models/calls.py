"""Model calls that survive bad replies and, when the endpoint keeps failing, fail in one line.

Transport failures (rate limits, server errors, timeouts, dropped connections)
are retried by the model client itself, with exponential backoff and jitter,
up to the run's `max_retries`; what is left after that becomes a
`ModelCallError` naming the role, the model, the endpoint and the last error.
A reply that arrives but is unusable (empty, a refusal, an echo of the prompt)
is judged here (`ask_draft`) and never ends a run: the node that asked records
it and asks once more as a step of its own (`asking_again`).

A batch bounds how many of the library's async model calls run at once with
`model_call_limit`: every call goes through `ainvoke_in_slot`, which waits for
a free slot (first come, first served) only when a limit is set.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

from langchain_core.exceptions import ModelError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError

from self_refine.errors import ModelCallError
from self_refine.models.cancel import CallCancelled, calls_cancelled, check_cancelled, note_reply
from self_refine.models.hygiene import DraftGuard, clean_reply, rejected
from self_refine.models.resolve import describe_model, message_text, message_usage
from self_refine.prompts.render import ASK_AGAIN
from self_refine.redact import model_secrets, redact
from self_refine.state import RejectedReply, Usage

__all__ = [
    "DraftReply",
    "aask_draft",
    "ainvoke_in_slot",
    "ask_draft",
    "asking_again",
    "call_slot",
    "candidate_model",
    "is_transport_error",
    "model_call_limit",
    "model_errors",
    "refusal_of",
    "trace_config",
]

_RETRIED_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "RateLimitError", "InternalServerError"}
)
_HTTP_MODULES = frozenset({"httpx", "httpcore"})
_SDK_MODULES = frozenset({"openai", "anthropic"})
_REFUSAL = re.compile(
    r"^\W*(?:(?:i['’]?m|i am) sorry|sorry|i apologi[sz]e|unfortunately)?[^.!?\n]{0,30}?"
    r"\b(?:i|we)\s*(?:can(?:['’]|no)?t|won['’]?t|will not|am unable to|['’]m unable to|"
    r"am not able to|must decline to)\s+(?:help|assist|comply|do that|provide|fulfil|"
    r"complete|write|create|answer|support|continue)",
    re.IGNORECASE,
)
_REFUSAL_MAX_CHARS = 400
_CALL_SLOTS: ContextVar[asyncio.Semaphore | None] = ContextVar(
    "self_refine_call_slots", default=None
)


@contextmanager
def model_call_limit(slots: int) -> Iterator[None]:
    """Let at most `slots` async model calls of this task, and of tasks it starts, run at once."""
    token = _CALL_SLOTS.set(asyncio.Semaphore(slots))
    try:
        yield
    finally:
        _CALL_SLOTS.reset(token)


@asynccontextmanager
async def call_slot() -> AsyncIterator[None]:
    """Hold one of the batch's model-call slots (at once when no batch limits them)."""
    slots = _CALL_SLOTS.get()
    if slots is None:
        yield
        return
    async with slots:
        yield


async def ainvoke_in_slot(
    runnable: Any, messages: list[BaseMessage], config: RunnableConfig | None = None
) -> Any:
    """Await the model call in one of the batch's call slots (at once when no batch limits them)."""
    async with call_slot():
        return await runnable.ainvoke(messages, config)


def is_transport_error(error: BaseException) -> bool:
    """True for failures of the connection or the endpoint, not of the reply's content."""
    if isinstance(error, TimeoutError | ConnectionError | ModelError):
        return True
    for cls in type(error).__mro__:
        root = cls.__module__.split(".")[0]
        if root in _HTTP_MODULES or (root in _SDK_MODULES and cls.__name__ == "APIError"):
            return True
    return False


def _model_call_error(role: str, model: Any, error: BaseException) -> ModelCallError:
    name, endpoint = describe_model(model)
    retries = getattr(model, "max_retries", None)
    kinds = {cls.__name__ for cls in type(error).__mro__}
    retried = bool(kinds & _RETRIED_NAMES) and isinstance(retries, int)
    tried = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retried else ""
    detail = " ".join(str(error).split())[:300] or "no detail"
    for note in getattr(error, "__notes__", ()):
        detail += f" ({note})"
    text = (
        f"the {role} model {name!r} at {endpoint} failed{tried}: {type(error).__name__}: {detail}"
    )
    return ModelCallError(redact(text, model_secrets(model)))


@contextmanager
def model_errors(role: str, model: Any) -> Iterator[None]:
    """Turn a transport failure inside the block into a one-line ModelCallError.

    So too a graph in the role (an agent) that ran out of its own steps. Raises
    CallCancelled, before the call, when its calls were stopped (`models/cancel.py`).
    """
    check_cancelled()
    try:
        yield
    except GraphRecursionError:
        raise _steps_error(role, model) from None
    except Exception as error:
        if calls_cancelled():
            # A call stopped inside the model can come out as another error: LangChain's
            # async generate reads `.generations` of the BaseException raised in it.
            raise CallCancelled("the calls of this scope were stopped") from error
        if isinstance(error, ModelCallError) or not is_transport_error(error):
            raise
        raise _model_call_error(role, model, error) from None


def _steps_error(role: str, model: Any) -> ModelCallError:
    name, _ = describe_model(model)
    limit = getattr(model, "recursion_limit", None)
    within = f"within {limit} steps" if limit else "within its recursion limit"
    return ModelCallError(
        f"the {role} agent {name!r} did not finish {within} (GraphRecursionError): give "
        "it more with agent.with_config(recursion_limit=N), or make sure it stops"
    )


def refusal_of(reply: Any) -> str | None:
    """The refusal a reply carries (the API's refusal field, or a short refusing text)."""
    extra = getattr(reply, "additional_kwargs", None) or {}
    if isinstance(extra.get("refusal"), str) and extra["refusal"].strip():
        return str(extra["refusal"]).strip()
    text = message_text(reply) if isinstance(reply, BaseMessage) else ""
    if text and len(text) <= _REFUSAL_MAX_CHARS and _REFUSAL.search(text):
        return text
    return None


def trace_config(
    node: str, role: str, model: Any, *, iteration: int, profile: str
) -> RunnableConfig:
    """Metadata and tags for a model call, as traces (LangSmith) show them."""
    name, _ = describe_model(model)
    return {
        "metadata": {"role": role, "iteration": iteration, "profile": profile, "model": name},
        "tags": ["self-refine", node],
    }


class DraftReply(NamedTuple):
    """One reply of the generator or refiner, judged: a draft, or a rejected reply and why.

    `text` is "" when the reply was rejected; `rejected` then records it (see
    `self_refine.models.hygiene`) and `problem` says what happened in one line.
    """

    text: str
    usage: Usage
    rejected: RejectedReply | None = None
    problem: str | None = None


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 160 else flat[:157] + "..."


def _judge(role: str, reply: Any, guard: DraftGuard | None) -> DraftReply:
    """A clean draft of the reply, or the reply rejected and why."""
    usage = message_usage(reply)
    raw = message_text(reply)
    refusal = refusal_of(reply)
    text = clean_reply(raw, keep_code_fences=guard.keep_code_fences) if guard else raw
    if guard is not None:
        verdict = guard.check(text, refusal)
        if verdict is not None and verdict[0] == "echo" and (own := guard.salvage(raw)):
            text, verdict = own, None
    elif refusal:
        verdict = ("refusal", f"the model refused: {_short(refusal)!r}")
    else:
        verdict = None if text else ("empty", "the reply was empty")
    if verdict is None:
        return DraftReply(text, usage)
    reason, detail = verdict
    if reason == "refusal":
        problem = f"the {role} refused: {_short(refusal or raw)!r}"
    elif reason == "empty":
        problem = f"the {role} returned an empty reply"
    else:
        problem = f"the {role}'s reply was rejected: {detail}"
    return DraftReply("", usage, rejected(reason, detail, raw), problem)


def ask_draft(
    model: Any,
    messages: list[BaseMessage],
    role: str,
    config: RunnableConfig,
    guard: DraftGuard | None = None,
) -> DraftReply:
    """Ask the model for a draft, once, and judge its reply."""
    with model_errors(role, model):
        reply = _judge(role, model.invoke(messages, config), guard)
    note_reply(reply.text or (reply.rejected["reply"] if reply.rejected else ""), reply.usage)
    return reply


async def aask_draft(
    model: Any,
    messages: list[BaseMessage],
    role: str,
    config: RunnableConfig,
    guard: DraftGuard | None = None,
) -> DraftReply:
    """Async twin of ask_draft(): the call waits for a slot when a batch limits them."""
    with model_errors(role, model):
        reply = _judge(role, await ainvoke_in_slot(model, messages, config), guard)
    note_reply(reply.text or (reply.rejected["reply"] if reply.rejected else ""), reply.usage)
    return reply


RESAMPLE_TEMPERATURE = 0.8
"""The temperature a cold model (set below this) is asked again at when it repeated its draft."""


def asking_again(
    model: Any,
    messages: list[BaseMessage],
    rejected: RejectedReply,
    config: RunnableConfig,
) -> tuple[Any, list[BaseMessage]]:
    """How to ask again after a rejected reply: the model to call and the messages.

    An empty reply is asked again as it was. A reply that repeated the draft
    unchanged is a sample too likely at a low temperature: the same request is
    sent again, warmer when the model was set to sample cold (a small model copies
    its own draft at 0.2), and with a seed of its own when the model has a fixed
    seed (so each step's resample is a new draw). Any other rejected reply is
    answered with what was wrong with it.
    """
    if rejected["reason"] == "empty":
        return model, messages
    if rejected["reason"] == "unchanged":
        return _resampling(model, config), messages
    again = ASK_AGAIN.format(detail=rejected["detail"])
    return model, [*messages, AIMessage(rejected["reply"]), HumanMessage(again)]


def _resampling(model: Any, config: RunnableConfig, draw: int = 1, *, warm: bool = True) -> Any:
    """The model bound to sample anew: warmer if it samples cold (unless `warm` is False:
    the run set the temperature), and a seed of its own if it takes one.

    `draw` tells the draws of one step apart (a resample is draw 1, candidate k draw k).
    A model that takes a seed but has none (a server's `ChatOpenAI`) draws from seed 0,
    so that each draw is a request of its own, which a server that samples the same
    way every time (a fixed seed, or none) answers anew.
    """
    change: dict[str, Any] = {}
    temperature = getattr(model, "temperature", None)
    if warm and isinstance(temperature, int | float) and temperature < RESAMPLE_TEMPERATURE:
        change["temperature"] = RESAMPLE_TEMPERATURE
    if hasattr(model, "seed"):
        seed = model.seed if isinstance(model.seed, int) and not isinstance(model.seed, bool) else 0
        iteration = (config.get("metadata") or {}).get("iteration", 0)
        change["seed"] = seed + 1000 * (draw - 1) + 1 + int(iteration or 0)
    return model.bind(**change) if change else model


def candidate_model(model: Any, index: int, config: RunnableConfig, *, warm: bool = True) -> Any:
    """The model that samples candidate `index` of a draft step.

    Candidate 0 is the model as it is; each other one is a draw of its own: warmer
    when the model samples cold (a cold model gives the same reply N times) unless the
    run set the temperature (`warm` False), with a seed of its own when the model takes
    one (see `_resampling`).
    """
    return model if index == 0 else _resampling(model, config, draw=index, warm=warm)
