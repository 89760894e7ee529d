"""Importing the training package loads no torch, transformers or TRL until they are used."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_the_training_package_loads_no_machine_learning_library() -> None:
    code = (
        "import json, sys\nimport self_refine.training\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}"
        " & {'torch', 'transformers', 'trl', 'gguf', 'datasets'})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout) == []
