"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 only.

It speaks enough of the protocol for the real `ChatOpenAI` client: plain and
streamed (SSE) chat completions, `response_format` json_schema structured
output, and token usage. What it answers is decided by a `responder` (by
default the project's offline model), and faults can be injected on command:
HTTP 429 and 500, stalls, dropped connections, malformed JSON, empty replies,
and refusals (OpenAI's `refusal` field, with no content). The pseudo-fault
"ok" answers normally, so that a fault queued after it hits a later request;
"401" refuses the key and, as careless servers do, echoes it in the message;
"401_partial" echoes only pieces of it ("sk-canary****xLx4", a middle slice);
"500_escapes" answers an error message holding terminal escape sequences.

It is a plain asyncio server in a background thread, so it serves many
requests at once; `latency` and `max_concurrency` make it behave like a
model server with a fixed service time and a bounded number of slots.

    with OpenAIServer() as server:              # or OpenAIServer(structured_output=False)
        server.fail_next("500", times=2, role="refiner")
        ChatOpenAI(model="test-model", base_url=server.base_url, api_key="unused")
        ...
        critic_calls = server.chat_requests("critic")   # Recorded: .body, .messages, .role, .fault
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from self_refine.models.offline import OfflineModel

Responder = Callable[[list[dict[str, Any]], dict[str, Any]], str]

FAULTS = (
    "429",
    "500",
    "stall",
    "drop",
    "malformed",
    "empty",
    "no_structured",
    "refusal",
    "ok",
    "401",
    "401_partial",
    "500_escapes",
)
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m"
REFUSAL = "I'm sorry, but I can't help with that."


def offline_responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """Answer as the project's offline model would."""
    converted: list[BaseMessage] = []
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        role = message.get("role")
        cls = {"system": SystemMessage, "assistant": AIMessage}.get(role or "", HumanMessage)
        converted.append(cls(content))
    return OfflineModel().respond(converted)


@dataclass
class Recorded:
    """One request the server received."""

    body: dict[str, Any]
    time: float
    fault: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's chat messages, as sent (role and content dicts)."""
        return list(self.body.get("messages", []))

    @property
    def text(self) -> str:
        """All message contents joined, for searching."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)

    @property
    def role(self) -> str:
        """The role line of the system prompt ("generator", "critic", "refiner"), if any."""
        for message in self.messages:
            content = str(message.get("content", ""))
            if message.get("role") == "system" and content.startswith("Role: "):
                return content.split("\n", 1)[0].removeprefix("Role: ").strip()
        return ""


@dataclass
class OpenAIServer:
    """The server; use as a context manager or call start() / stop()."""

    responder: Responder = offline_responder
    latency: float = 0.0
    max_concurrency: int | None = None
    structured_output: bool = True
    json_schema_status: int = 400
    """The status a server without structured output answers a json_schema format with."""
    json_schema_body: str = "openai"
    """How that 5xx answer's body is shaped: "openai" ({"error": {"message": ...}}) or
    "fastapi" ({"detail": ...}, whose text the openai client leaves out of its message)."""
    stall_seconds: float = 30.0
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _faults: deque[tuple[str, str | None]] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.AbstractServer | None = None
    _slots: asyncio.Semaphore | None = None

    @property
    def base_url(self) -> str:
        """The URL to give ChatOpenAI or `--base-url`: http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, fault: str, times: int = 1, role: str | None = None) -> None:
        """Make the next `times` chat requests (of `role`, if given) fail with `fault`."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; choose from {FAULTS}")
        with self._lock:
            self._faults.extend([(fault, role)] * times)

    def _take_fault(self, recorded: Recorded) -> str | None:
        for index, (fault, role) in enumerate(self._faults):
            if role is None or role == recorded.role:
                del self._faults[index]
                return fault
        return None

    def clear_faults(self) -> None:
        """Drop the faults that fail_next() queued and no request has taken yet."""
        with self._lock:
            self._faults.clear()

    def start(self) -> OpenAIServer:
        """Start serving on 127.0.0.1 (on a free port unless `port` is set)."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            if self.max_concurrency:
                self._slots = asyncio.Semaphore(self.max_concurrency)
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", self.port, backlog=1024)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            self._server.close()
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=run, name="openai-test-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("test OpenAI server did not start")
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server's thread to end."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def chat_requests(self, role: str | None = None) -> list[Recorded]:
        """Requests to chat/completions, optionally only those of one role."""
        with self._lock:
            found = list(self.requests)
        return [r for r in found if role is None or r.role == role]

    # -- HTTP ---------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, headers, body = request
                keep_open = await self._route(method, path, body, writer, headers)
                if not keep_open:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _route(
        self,
        method: str,
        path: str,
        raw: bytes,
        writer: asyncio.StreamWriter,
        headers: dict[str, str] | None = None,
    ) -> bool:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            await _send_json(writer, 200, {"object": "list", "data": [{"id": "test-model"}]})
            return True
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            await _send_json(writer, 404, {"error": {"message": f"no route {path}"}})
            return True
        body = json.loads(raw or b"{}")
        recorded = Recorded(body, time.monotonic(), headers=dict(headers or {}))
        with self._lock:
            fault = recorded.fault = self._take_fault(recorded)
            self.requests.append(recorded)
        if fault == "401":
            key = recorded.headers.get("authorization", "").removeprefix("Bearer ")
            await _send_json(writer, 401, {"error": {"message": f"Incorrect API key: {key}"}})
            return True
        if fault == "401_partial":
            key = recorded.headers.get("authorization", "").removeprefix("Bearer ")
            message = f"Incorrect API key provided: {key[:9]}****{key[-4:]} ({key[4:14]})"
            await _send_json(writer, 401, {"error": {"message": message}})
            return True
        if self._slots is not None:
            async with self._slots:
                return await self._complete(body, fault, writer)
        return await self._complete(body, fault, writer)

    async def _complete(
        self, body: dict[str, Any], fault: str | None, writer: asyncio.StreamWriter
    ) -> bool:
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault == "429":
            await _send_json(
                writer,
                429,
                {"error": {"message": "rate limited", "type": "rate_limit"}},
                headers={"retry-after-ms": "10"},
            )
            return True
        if fault == "500":
            await _send_json(writer, 500, {"error": {"message": "internal error"}})
            return True
        if fault == "500_escapes":
            await _send_json(writer, 500, {"error": {"message": f"{ESCAPES}overloaded"}})
            return True
        if fault == "stall":
            await asyncio.sleep(self.stall_seconds)
            return False
        if fault == "drop":
            return False
        wanted = (body.get("response_format") or {}).get("type", "text")
        if wanted == "json_schema" and self.json_schema_status >= 500:
            message = "body.response_format.type: Input should be 'text' or 'json_object'"
            shaped = {"detail": message} if self.json_schema_body == "fastapi" else None
            error = shaped or {"error": {"message": message}}
            await _send_json(writer, self.json_schema_status, error)
            return True
        if wanted != "text" and (fault == "no_structured" or not self.structured_output):
            await _send_json(
                writer, 400, {"error": {"message": f"response_format {wanted} unsupported"}}
            )
            return True
        if fault == "refusal":
            await _send_json(writer, 200, _completion(body, "", _usage(body, ""), REFUSAL))
            return True
        if fault == "malformed":
            text = '{"feedback": ["unterminated'
        elif fault == "empty":
            text = ""
        else:
            text = self.responder(body.get("messages", []), body)
        usage = _usage(body, text)
        if body.get("stream"):
            await _send_stream(writer, body, text, usage)
            return False
        await _send_json(writer, 200, _completion(body, text, usage))
        return True


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(text.split()),
        "total_tokens": prompt_tokens + len(text.split()),
    }


def _completion(
    body: dict[str, Any], text: str, usage: dict[str, int], refusal: str | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal is not None:
        message = {"role": "assistant", "content": None, "refusal": refusal}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


async def _read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, str, dict[str, str], bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body


async def _send_json(
    writer: asyncio.StreamWriter,
    status: int,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> None:
    data = json.dumps(payload).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n{extra}\r\n".encode()
        + data
    )
    await writer.drain()


def _chunks(text: str, size: int = 16) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


async def _send_stream(
    writer: asyncio.StreamWriter, body: dict[str, Any], text: str, usage: dict[str, int]
) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    base = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model", "test-model"),
    }
    first = {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    events = [first]
    events += [
        {**base, "choices": [{"index": 0, "delta": {"content": piece}}]} for piece in _chunks(text)
    ]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append({**base, "choices": [], "usage": usage})
    for event in events:
        writer.write(f"data: {json.dumps(event)}\n\n".encode())
    writer.write(b"data: [DONE]\n\n")
    await writer.drain()
