"""Model calls that survive bad replies and, when the endpoint keeps failing, fail in one line.

Transport failures (rate limits, server errors, timeouts, dropped connections)
are retried by the model client itself, with exponential backoff and jitter,
up to the run's `max_retries`; what is left after that becomes a
`ModelCallError` naming the role, the model, the endpoint and the last error.
Replies that arrive but are unusable (empty, a refusal) are retried once or
recorded as a problem of the attempt; they never end a run.

A batch bounds how many of the library's async model calls run at once with
`model_call_limit`: every call goes through `ainvoke_in_slot`, which waits for
a free slot (first come, first served) only when a limit is set.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

from langchain_core.exceptions import ModelError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from self_refine.errors import ModelCallError
from self_refine.models.hygiene import DraftGuard, clean_reply, rejected
from self_refine.models.resolve import describe_model, message_text, message_usage
from self_refine.redact import model_secrets, redact
from self_refine.state import RejectedReply, Usage, add_usage

__all__ = [
    "DraftReply",
    "ainvoke_in_slot",
    "awrite_draft",
    "is_transport_error",
    "model_call_limit",
    "model_errors",
    "refusal_of",
    "trace_config",
    "write_draft",
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
async def _call_slot() -> AsyncIterator[None]:
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
    async with _call_slot():
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
    """Turn a transport failure inside the block into a one-line ModelCallError."""
    try:
        yield
    except Exception as error:
        if isinstance(error, ModelCallError) or not is_transport_error(error):
            raise
        raise _model_call_error(role, model, error) from None


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
    """A draft from the generator or refiner, the tokens it cost, and what went wrong.

    `text` is "" when no reply was usable; `rejected` lists the replies that
    were not taken as the draft (see `self_refine.models.hygiene`).
    """

    text: str
    usage: Usage
    problems: list[str]
    rejected: list[RejectedReply]


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 160 else flat[:157] + "..."


def _read_draft(role: str, replies: Sequence[Any], guard: DraftGuard | None) -> DraftReply:
    """Judge the last reply: a clean draft, or a rejected reply and why."""
    usage = add_usage(*(message_usage(r) for r in replies))
    reply = replies[-1]
    raw = message_text(reply)
    refusal = refusal_of(reply)
    text = clean_reply(raw, keep_code_fences=guard.keep_code_fences) if guard else raw
    problems: list[str] = []
    if not text and not refusal:
        twice = "twice" if len(replies) > 1 else "(nothing was left after cleaning)"
        problems.append(f"the {role} returned an empty reply {twice}")
    elif len(replies) > 1:
        problems.append(f"the {role} returned an empty reply; asked again")
    verdict = guard.check(text, refusal) if guard else None
    if guard is None and refusal:
        verdict = ("refusal", f"the model refused: {_short(refusal)!r}")
    if verdict is None:
        return DraftReply(text, usage, problems, [])
    reason, detail = verdict
    if reason == "refusal":
        problems.append(f"the {role} refused: {_short(refusal or raw)!r}")
    elif reason != "empty":
        problems.append(f"the {role}'s reply was rejected: {detail}")
    return DraftReply("", usage, problems, [rejected(reason, detail, raw)])


def _needs_retry(reply: Any) -> bool:
    return not message_text(reply) and refusal_of(reply) is None


def _ask_again(first: DraftReply) -> bool:
    """A rejected reply (other than silence, already asked again) gets one more chance."""
    return bool(first.rejected) and first.rejected[-1]["reason"] != "empty"


RESAMPLE_TEMPERATURE = 0.8
"""The temperature a cold model (set below this) is asked again at when it repeated its draft."""


def _again(
    model: BaseChatModel, messages: list[BaseMessage], first: DraftReply, config: RunnableConfig
) -> tuple[Any, list[BaseMessage]]:
    """How to ask again after a rejected reply: the model to call and the messages.

    A reply that repeated the draft unchanged is a sample too likely at a low
    temperature: the same request is sent again, warmer when the model was set to
    sample cold (a small model copies its own draft at 0.2), and with a seed of its
    own when the model has a fixed seed (so each step's resample is a new draw). Any
    other rejected reply is answered with what was wrong with it.
    """
    rejected = first.rejected[-1]
    if rejected["reason"] == "unchanged":
        return _resampling(model, config), messages
    again = (
        f"That reply cannot be used: {rejected['detail']}. Reply again with only the text "
        "of the draft itself: no tags, no instructions, no feedback, no preamble."
    )
    return model, [*messages, AIMessage(rejected["reply"]), HumanMessage(again)]


def _resampling(model: BaseChatModel, config: RunnableConfig) -> Any:
    """The model bound to sample anew: warmer if it samples cold, another seed if it has one."""
    change: dict[str, Any] = {}
    temperature = getattr(model, "temperature", None)
    if isinstance(temperature, int | float) and temperature < RESAMPLE_TEMPERATURE:
        change["temperature"] = RESAMPLE_TEMPERATURE
    seed = getattr(model, "seed", None)
    if isinstance(seed, int) and not isinstance(seed, bool):
        iteration = (config.get("metadata") or {}).get("iteration", 0)
        change["seed"] = seed + 1 + int(iteration or 0)
    return model.bind(**change) if change else model


def _merged(role: str, first: DraftReply, second: DraftReply | None) -> DraftReply:
    """The outcome of one or two tries, with what happened said once."""
    keep = "the previous draft was kept" if role == "refiner" else "the first draft is empty"
    if second is None:
        if first.rejected and first.rejected[-1]["reason"] == "refusal" and role == "refiner":
            return first._replace(problems=[*first.problems[:-1], first.problems[-1] + f"; {keep}"])
        return first
    problems = [*first.problems[:-1], first.problems[-1] + "; asked again", *second.problems]
    if second.rejected:
        problems[-1] += f"; {keep}"
    usage = add_usage(first.usage, second.usage)
    return DraftReply(second.text, usage, problems, [*first.rejected, *second.rejected])


def write_draft(
    model: BaseChatModel,
    messages: list[BaseMessage],
    role: str,
    config: RunnableConfig,
    guard: DraftGuard | None = None,
) -> DraftReply:
    """Ask for a draft; an empty reply is asked once more, a rejected one too (with a guard)."""
    with model_errors(role, model):
        replies = [model.invoke(messages, config)]
        if _needs_retry(replies[0]):
            replies.append(model.invoke(messages, config))
        first = _read_draft(role, replies, guard)
        if guard is None or not _ask_again(first):
            return _merged(role, first, None)
        runnable, retry = _again(model, messages, first, config)
        again = runnable.invoke(retry, config)
    return _merged(role, first, _read_draft(role, [again], guard))


async def awrite_draft(
    model: BaseChatModel,
    messages: list[BaseMessage],
    role: str,
    config: RunnableConfig,
    guard: DraftGuard | None = None,
) -> DraftReply:
    """Async twin of write_draft()."""
    with model_errors(role, model):
        replies = [await ainvoke_in_slot(model, messages, config)]
        if _needs_retry(replies[0]):
            replies.append(await ainvoke_in_slot(model, messages, config))
        first = _read_draft(role, replies, guard)
        if guard is None or not _ask_again(first):
            return _merged(role, first, None)
        runnable, retry = _again(model, messages, first, config)
        again = await ainvoke_in_slot(runnable, retry, config)
    return _merged(role, first, _read_draft(role, [again], guard))
