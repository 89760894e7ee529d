"""Errors the library raises on purpose, each naming what to do."""

from __future__ import annotations

__all__ = [
    "BatchStoppedError",
    "ConfigError",
    "ModelCallError",
    "SelfRefineError",
    "ThreadBusyError",
    "install_hint",
]


def install_hint(extra: str) -> str:
    """How to install one of the package's extras, in the form that works today."""
    return (
        f'pip install -e ".[{extra}]" in a clone of the project '
        f'(pip install "langgraph-self-refine[{extra}]" once it is published)'
    )


class SelfRefineError(Exception):
    """Base class of this library's own errors."""


class ConfigError(SelfRefineError, ValueError):
    """A setting or an input is invalid; the message says how to fix it."""


class ModelCallError(SelfRefineError, RuntimeError):
    """A model kept failing; the run's last checkpoint is intact and resumable."""


class ThreadBusyError(SelfRefineError, RuntimeError):
    """Another run is writing the thread; nothing was written. Wait for it, then try again."""

    def __init__(self, thread_id: str, holder: str) -> None:
        super().__init__(thread_id, holder)
        self.thread_id = thread_id
        self.holder = holder

    def __str__(self) -> str:
        return (
            f"thread {self.thread_id!r} is being run by another writer ({self.holder}): wait "
            "for that run to finish, then try again; reading the thread (get_state) is not blocked"
        )


class BatchStoppedError(SelfRefineError, RuntimeError):
    """A whole batch stopped: its storage is full or failing. Finished items are kept.

    Every further item would fail the same way, so the batch stops at the
    first one with this single error instead; free the space (or fix the
    storage), then run the batch again to continue it.
    """
