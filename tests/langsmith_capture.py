"""A stand-in for the LangSmith API on 127.0.0.1 that records the runs a client sends.

The LangSmith client asks `GET /info`, then posts runs to `/runs/multipart`
(multipart form parts named `post.<id>`, `patch.<id>`, `post.<id>.inputs`, ...,
optionally zstd-compressed) or to `/runs/batch` (JSON). Every request body is
kept raw, for searching, and the runs are merged by id, for reading.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INFO = {
    "version": "0.11.0",
    "instance_flags": {"zstd_compression_enabled": True},
    "batch_ingest_config": {
        "use_multipart_endpoint": True,
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
        "scale_up_nthreads_limit": 16,
        "scale_up_qsize_trigger": 1000,
        "scale_down_nempty_trigger": 4,
    },
}


@dataclass
class Capture:
    """What the server received: raw bodies, and the runs they describe."""

    requests: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    runs: dict[str, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, path: str, headers: Any, body: bytes) -> None:
        if headers.get("Content-Encoding", "") == "zstd":
            import zstandard

            body = zstandard.ZstdDecompressor().decompressobj().decompress(body)
        with self.lock:
            self.bodies.append(body)
            if path.startswith("/runs/multipart"):
                self._multipart(headers.get("Content-Type", ""), body)
            elif path.startswith("/runs/batch"):
                payload = json.loads(body or b"{}")
                for run in [*payload.get("post", []), *payload.get("patch", [])]:
                    self.runs[run["id"]].update(run)
            elif path.rstrip("/") == "/runs":
                run = json.loads(body)
                self.runs[run["id"]].update(run)

    def _multipart(self, content_type: str, body: bytes) -> None:
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition") or ""
            data = part.get_payload(decode=True) or b""
            kind, _, rest = str(name).partition(".")
            run_id, _, field_name = rest.partition(".")
            if kind not in ("post", "patch") or not run_id:
                continue
            value = json.loads(data) if data else None
            if field_name:
                self.runs[run_id][field_name] = value
            elif isinstance(value, dict):
                self.runs[run_id].update(value)

    def text(self) -> str:
        """Everything received, decoded, for searching."""
        with self.lock:
            return b"\n".join(self.bodies).decode("utf-8", "replace")


class LangSmithCapture:
    """The server; use as a context manager. `url` goes into LANGSMITH_ENDPOINT."""

    def __init__(self) -> None:
        self.capture = Capture()
        capture = self.capture

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with capture.lock:
                    capture.requests.append(("GET", self.path))
                if self.path.rstrip("/").endswith("/info"):
                    self._reply(200, INFO)
                else:
                    self._reply(404, {"detail": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                with capture.lock:
                    capture.requests.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                capture.add(self.path, self.headers, self.rfile.read(length))
                self._reply(202, {})

            do_PATCH = do_POST  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> LangSmithCapture:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
