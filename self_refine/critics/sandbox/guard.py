"""The sandbox's Python-level guard: an audit hook in the child process; stdlib only.

A second line behind the kernel's isolation, not a security boundary: it turns
common attempts (sockets, other programs, signals, ctypes, writes outside the
working directory) into a clear PermissionError. The runner loads this file by
path; nothing here runs in the host process.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["install"]

_BLOCKED = {
    "socket.__new__": "network access",
    "socket.socketpair": "network access",
    "os.system": "running other programs",
    "os.exec": "running other programs",
    "os.posix_spawn": "running other programs",
    "os.spawn": "running other programs",
    "subprocess.Popen": "running other programs",
    "os.kill": "signalling processes",
    "os.killpg": "signalling processes",
    "signal.pthread_kill": "signalling processes",
}
_PATH_EVENTS = {  # event -> positions of the paths it changes
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.link": (1,),
    "os.symlink": (1,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.truncate": (0,),
    "os.utime": (0,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _outside(path: Any, work: str) -> bool:
    if isinstance(path, int) or path is None:
        return False
    resolved = os.path.realpath(os.fsdecode(path))
    return resolved != work and not resolved.startswith(work + os.sep)


def install(work: str) -> None:
    """Refuse network access, other programs, signals and writes outside `work`, in Python."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        what = _BLOCKED.get(event) or ("ctypes" if event.startswith("ctypes.") else None)
        if what:
            raise PermissionError(f"{what} is not allowed in the sandbox")
        if event == "open" and len(args) > 2 and isinstance(args[2], int):
            if args[2] & _WRITE_FLAGS and _outside(args[0], work):
                raise PermissionError(f"writing outside the working directory: {args[0]}")
        for position in _PATH_EVENTS.get(event, ()):
            if position < len(args) and _outside(args[position], work):
                raise PermissionError(
                    f"changing files outside the working directory: {args[position]}"
                )

    sys.addaudithook(hook)
