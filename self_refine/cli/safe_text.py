"""Make text from a task or a model safe to print on a terminal, and commands safe to paste."""

from __future__ import annotations

import re
import shlex

__all__ = ["shell_command", "terminal_safe"]

# C0 controls except tab and newline, DEL, and C1 controls (0x80-0x9f, e.g. the 8-bit CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Show control characters as visible escapes (ESC as \\x1b), so none acts on the terminal.

    Defuses every ESC/CSI/OSC sequence (colours, cursor moves, window titles,
    hyperlinks) because its introducer is no longer a control character; a
    Windows line end stays a line end.
    """
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def shell_command(*words: str) -> str:
    """A command to show the user: each word quoted for a POSIX shell, so a thread id or a
    path with spaces, quotes or `;` pastes back as itself; control characters as escapes."""
    return terminal_safe(" ".join(shlex.quote(word) for word in words))
