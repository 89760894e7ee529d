"""Batch results: the JSONL file that records what is finished, and resumes safely.

The output file is the record of what is finished: one JSON object per line,
each written whole, flushed and fsynced as its item finishes. Reopening it
skips the ids it holds, cuts off a last line that a crash left half written,
and refuses a file written with other settings, or one that holds no results.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from self_refine.errors import ConfigError

__all__ = [
    "OutputFile",
    "RESULT_FIELDS",
    "STDOUT",
    "StreamOutput",
    "append_jsonl",
    "result_record",
]


RESULT_FIELDS = ("id", "answer", "stop_reason")
"""Fields every result line has: a line without them is another file's."""


def result_record(
    line: str | bytes, number: int, torn_allowed: bool, path: str | Path, fix: str
) -> dict[str, Any] | None:
    """The result record on one line of an output file; None for a blank line.

    With `torn_allowed` (the last line, after lines that were results), a line
    that is not JSON is taken for one a crash left half written: None too. Any
    other line that is not a result record is a ConfigError naming the file,
    the line and `fix`.
    """
    if not line.strip():
        return None
    where = f"line {number} of {str(path)!r} is not a batch result line"
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        if torn_allowed:
            return None
        raise ConfigError(f"{where} (not JSON): {fix}") from None
    if isinstance(record, dict) and all(name in record for name in RESULT_FIELDS):
        return record
    if isinstance(record, dict) and "task" in record and "answer" not in record:
        why = "it looks like batch input, not its results (a task, no answer)"
    else:
        why = f"it has no {', '.join(RESULT_FIELDS)}; it was not written by self-refine batch"
    raise ConfigError(f"{where}: {why}; {fix}")


@dataclass
class OutputFile:
    """The JSONL file results go to, opened for resuming.

    The lines already there are read once, as it opens: each record is handed
    to `on_record` (a batch adds it to its summary) and only its id is kept, so
    memory does not grow with the file. Only one process may write a file at a
    time (an advisory lock, released by the system if the process dies).
    """

    path: Path
    run_key: str | None = None
    repaired: bool = False
    _ids: set[str] = field(default_factory=set)
    _fd: int = -1
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _failed: OSError | None = None

    @classmethod
    def open(
        cls,
        path: str | Path,
        run_key: str | None = None,
        *,
        on_record: Callable[[dict[str, Any]], None] | None = None,
    ) -> OutputFile:
        """Open (or create) the file, lock it, repair a torn last line, and read its records."""
        target = Path(path).expanduser()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as error:
            raise ConfigError(
                f"cannot write {str(target)!r} ({error.strerror}): choose a writable -o path"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ConfigError(
                f"{str(target)!r} is being written by another running batch: "
                "wait for it or choose another -o path"
            ) from None
        output = cls(target, run_key, _fd=fd)
        try:
            output._load(on_record)
        except BaseException:
            output.close()
            raise
        return output

    def _load(self, on_record: Callable[[dict[str, Any]], None] | None) -> None:
        """Read the file a line at a time; cut a last line that a crash left half written.

        Only a file of results is resumed: any other line (another program's
        JSON, a dataset, a last line without results before it) is a
        ConfigError, and the file is left as it was.
        """
        good = size = 0
        ended = True
        fix = "choose another -o path (a new file, or one self-refine batch wrote)"
        with self.path.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                size += len(line)
                ended = line.endswith(b"\n")
                torn_allowed = not ended and bool(self._ids)
                record = result_record(line, number, torn_allowed, self.path, fix)
                if record is None:
                    if line.strip():  # the last line, torn by a crash mid-write
                        break
                    good += len(line)
                    continue
                self._check_key(record, number)
                self._ids.add(str(record["id"]))
                if on_record is not None:
                    on_record(record)
                good += len(line)
        if good < size or not ended:
            os.ftruncate(self._fd, good)
            if self._ids and not self._ends_with_newline():
                os.write(self._fd, b"\n")
            os.fsync(self._fd)
            self.repaired = good < size

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return True
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def _check_key(self, record: dict[str, Any], number: int) -> None:
        key = record.get("run_key")
        if self.run_key is not None and key is not None and key != self.run_key:
            raise ConfigError(
                f"{str(self.path)!r} holds results made with other settings (line {number}): "
                "rerun with the settings it was started with, or choose another -o path"
            )

    def done_ids(self) -> set[str]:
        """Ids that already have a result line."""
        return set(self._ids)

    def write(self, record: dict[str, Any]) -> None:
        """Append one record as one line, and make it durable before returning.

        A write that fails (a full disk) is cut off again, so the file stays
        whole lines; every later write then fails with the same error.
        """
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        with self._lock:
            if self._failed is not None:
                raise self._failed
            start = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start)
                self._failed = error
                raise
            self._ids.add(str(record["id"]))

    def write_all(self, records: Iterable[dict[str, Any]]) -> None:
        """Append several records."""
        for record in records:
            self.write(record)

    def close(self) -> None:
        """Release the lock and the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


STDOUT = "-"
"""The output path that means standard output: results streamed, nothing read back."""


class StreamOutput:
    """Results written to a stream (standard output) as each item finishes.

    Nothing is read back, so nothing is resumed from it: a rerun on the same
    database reads its finished threads again instead of calling the model.
    """

    repaired = False

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def done_ids(self) -> set[str]:
        """None: a stream holds no results of an earlier run."""
        return set()

    def write(self, record: dict[str, Any]) -> None:
        """Write one record as one line, flushed."""
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        with self._lock:
            self._stream.write(line)
            self._stream.flush()

    def close(self) -> None:
        """Nothing to release: the stream stays open."""


def append_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Append records to a JSONL log, one line each, durably."""
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
