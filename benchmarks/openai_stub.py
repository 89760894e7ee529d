"""A stand-in OpenAI-compatible model server, run as its own process on 127.0.0.1.

It answers `POST /v1/chat/completions` for the real `ChatOpenAI` client, in
the role the library's prompts name ("Role: critic" gets a JSON critique, the
other roles a draft; a DSPy module's prompt gets its output fields in DSPy's
format, with the same texts), after `--delay` seconds, serving at most
`--max-concurrency` requests at once (the others wait their turn). It is an
asyncio server, so waiting requests cost it nothing, and it runs in its own
process, so its CPU time is never the orchestrator's. With `--record`, it
appends each request (arrival time and JSON body) to a JSON-lines file.

    python -m benchmarks.openai_stub --delay 0.5 --max-concurrency 32

prints `http://127.0.0.1:PORT/v1` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from benchmarks.texts import critique_json, draft_text, dspy_fields, dspy_reply

__all__ = ["serve"]

_ROLE = re.compile(r"^Role: (\w+)")


def _reply_text(body: dict[str, Any], n: int) -> str:
    messages: list[dict[str, Any]] = body.get("messages", [])
    content = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    system = content if isinstance(content, str) else ""
    fields = dspy_fields(system)
    if fields is not None:
        return dspy_reply(fields, n)  # a DSPy module's prompt: its fields, in its format
    found = _ROLE.search(system)
    return critique_json(n) if found and found.group(1) == "critic" else draft_text(n)


def _completion(body: dict[str, Any], n: int) -> dict[str, Any]:
    text = _reply_text(body, n)
    prompt_bytes = len(json.dumps(body.get("messages", [])).encode())
    usage = {"prompt_tokens": prompt_bytes // 4, "completion_tokens": len(text) // 4}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


class _Server:
    def __init__(self, delay: float, slots: int, record: TextIO | None) -> None:
        self.delay = delay
        self.slots = asyncio.Semaphore(slots)
        self.record = record
        self.counter = itertools.count(1)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        arrived = time.time()
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in header_lines if line)
        }
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        method, path, _ = request_line.split(" ", 2)
        if method != "POST" or not path.endswith("/chat/completions"):
            self._send(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return headers.get("connection", "").lower() != "close"
        body = json.loads(raw or b"{}")
        n = next(self.counter)
        if self.record is not None:
            self.record.write(json.dumps({"time": arrived, "body": body}) + "\n")
            self.record.flush()
        async with self.slots:
            await asyncio.sleep(self.delay)
        self._send(writer, 200, _completion(body, n))
        await writer.drain()
        return headers.get("connection", "").lower() != "close"

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        reason = "OK" if status == 200 else "Not Found"
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )


async def _main(args: argparse.Namespace) -> None:
    record = open(args.record, "a", encoding="utf-8") if args.record else None  # noqa: SIM115
    server = _Server(args.delay, args.max_concurrency, record)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", args.port, backlog=1024)
    port = listener.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    async with listener:
        await listener.serve_forever()


@contextmanager
def serve(
    *, delay: float = 0.0, max_concurrency: int = 1024, record: Path | None = None
) -> Iterator[str]:
    """Start the server in a child process; yield its base URL; stop it on exit."""
    command = [sys.executable, "-m", "benchmarks.openai_stub", "--delay", str(delay)]
    command += ["--max-concurrency", str(max_concurrency)]
    if record is not None:
        command += ["--record", str(record)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the stub server did not start (exit code {process.poll()})")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    """Run the server until it is stopped."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--max-concurrency", type=int, default=1024, help="requests served at once")
    parser.add_argument("--record", type=Path, help="append each request to this JSON-lines file")
    args = parser.parse_args()
    try:
        asyncio.run(_main(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
