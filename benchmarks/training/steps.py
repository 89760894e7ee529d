"""GRPO steps of the local 0.5B model with refine rollouts and with TRL's plain ones.

Runs `examples/train_grpo.py` twice with the same settings, each in its own process:
`--plain` (TRL's own generation) and with `refine_rollout` (the wrong samples refined
once, "exchange" form). Per step: seconds (TRL's `step_time`), acc@t1 and acc@t2 (for
plain rollouts, the reward: the verifier's verdict of the trained completions),
wrong -> right, the reward; per run, the peak resident memory of its process. Target
(issue 31): seconds per step with refine rollouts within 2x of plain rollouts.

    python -m benchmarks.training.steps --steps 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_grpo.py"


def run_example(steps: int, plain: bool, extra: list[str]) -> dict[str, Any]:
    """Run the example in a fresh process; return its summary."""
    with tempfile.TemporaryDirectory(prefix="self-refine-grpo-") as folder:
        command = [sys.executable, str(EXAMPLE), "--steps", str(steps), "--out", folder, *extra]
        if plain:
            command.append("--plain")
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
        summary: dict[str, Any] = json.loads((Path(folder) / "summary.json").read_text())
        refined = Path(folder) / "refined.jsonl"
        summary["refined_samples"] = (
            [json.loads(line) for line in refined.read_text().splitlines()]
            if refined.exists()
            else []
        )
        return summary


def measure(steps: int, extra: list[str]) -> dict[str, Any]:
    """Both runs, plain first."""
    plain = run_example(steps, True, extra)
    refine = run_example(steps, False, extra)
    seconds = {
        name: sum(s["step_time"] for s in run["steps"]) / len(run["steps"])
        for name, run in (("plain", plain), ("refine", refine))
    }
    return {
        "steps": steps,
        "options": extra,
        "plain": plain,
        "refine": refine,
        "seconds_per_step": seconds,
        "refine_over_plain": seconds["refine"] / seconds["plain"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args, extra = parser.parse_known_args()
    figures = measure(args.steps, extra)
    print(json.dumps({k: v for k, v in figures.items() if k not in ("plain", "refine")}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
