"""The objects a batch starts with, left out of the garbage collector's full passes.

A batch process holds hundreds of thousands of objects from before its first item
(the imported modules of LangChain, LangGraph and the openai SDK, the compiled
graph, the model clients) that live until it ends. Python's collector walks every
one of them at each full pass, and a batch's items bring several such passes
(about 0.3 to 0.5 ms of CPU per model call, issue 41). `gc.freeze()` moves them
out of the collector's reach for the batch; `gc.unfreeze()` hands them back when
the last batch running in the process ends, so anything among them that becomes
garbage meanwhile is collected then. A freeze the program made itself is left
alone: nothing is frozen or unfrozen then.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["long_lived_frozen"]

_LOCK = threading.Lock()
_running = 0
_froze = False


@contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Keep the objects alive at the start out of the collector's passes while the block runs."""
    global _running, _froze
    with _LOCK:
        if _running == 0 and gc.get_freeze_count() == 0:
            gc.freeze()
            _froze = True
        _running += 1
    try:
        yield
    finally:
        with _LOCK:
            _running -= 1
            if _running == 0 and _froze:
                gc.unfreeze()
                _froze = False
