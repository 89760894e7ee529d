"""examples/train_grpo.py loaded as a module, for tests of its rows and checks."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def train_grpo() -> Any:
    """The example script as a module (its `main` not run)."""
    spec = importlib.util.spec_from_file_location("train_grpo", ROOT / "examples/train_grpo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
