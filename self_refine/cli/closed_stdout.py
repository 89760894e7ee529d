"""Handle a standard output closed by its reader (`self-refine show --json | head -1`)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

__all__ = ["PromptOutput", "drop_closed_stdout", "stdout_closed"]


def drop_closed_stdout() -> None:
    """Point stdout at /dev/null so no later write or the exit flush raises again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def stdout_closed() -> bool:
    """Whether stdout leads nowhere: /dev/null, as after drop_closed_stdout (or `> /dev/null`)."""
    try:
        out, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):
        return False  # not a file descriptor (a test's capture): it is read
    return (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino)


class PromptOutput:
    """Where questions to a person go: stdout, or stderr once the reader closed stdout.

    A person answering at the terminal still sees stderr when stdout went to
    a pipe whose reader left (`self-refine run ... | head -1`); a question cut
    off mid-way carries on there, so the answers read so far stay in step.
    """

    def __init__(self, stdout: TextIO, stderr: TextIO, note: str) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._note = note
        self._closed = False

    def _target(self) -> TextIO:
        return self._stderr if self._closed else self._stdout

    def write(self, text: str) -> int:
        """Write to stdout, or to stderr once stdout is found closed (saying so once)."""
        if not self._closed:
            try:
                return self._stdout.write(text)
            except BrokenPipeError:
                self._switch()
        return self._stderr.write(text)

    def flush(self) -> None:
        """Flush the current target; a stdout that turns out closed switches to stderr."""
        try:
            self._target().flush()
        except BrokenPipeError:
            self._switch()

    def _switch(self) -> None:
        self._closed = True
        drop_closed_stdout()
        print(f"\n{self._note}", file=self._stderr, flush=True)
