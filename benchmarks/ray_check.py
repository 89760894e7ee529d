"""The Ray engine's check: target 3's batch through `self-refine batch --ray` on one machine.

    python -m benchmarks.ray_check

200 items x 8 calls against the stand-in server (500 ms per answer, 32 at once),
each batch in a fresh process against a fresh server: `self-refine batch --ray`
(a Ray instance started on this machine for the batch, one actor making the
calls, the driver writing the output) and, as the machine's reference at the
same load, the same batch without Ray. Prints Ray's start-up (from `ray.init`
until the actors are ready, the batch's own line) and its stop (from the last
result line written until the process ends) apart from the batch's wall time,
each over the ideal (calls x 500 ms / 32), and the load average before and after;
exits 1 when the Ray batch, its start-up and stop left out, is above 1.15x.
"""

from __future__ import annotations

import os
import sys

from benchmarks.t3_batch import ITEMS, measure

TARGET = 1.15


def main() -> int:
    """Measure the batch on Ray and without it; 1 when Ray's misses the target."""
    load = os.getloadavg()[0]
    ray = measure("ray", ITEMS)
    local = measure("library", ITEMS)
    batch = ray["last_write"] - ray["startup"]
    ratio = batch / ray["ideal"]
    verdict = "ok" if ratio <= TARGET else "ABOVE TARGET"
    rows = [
        ("Ray start-up (ray.init to actors ready)", f"{ray['startup']:.1f} s", ""),
        (
            "self-refine batch --ray, ready to last line",
            f"{batch:.1f} s",
            f"{ratio:.2f}x {verdict}",
        ),
        ("Ray stop (last line to exit)", f"{ray['wall'] - ray['last_write']:.1f} s", ""),
        ("self-refine batch --ray, in all", f"{ray['wall']:.1f} s", f"{ray['ratio']:.2f}x"),
        ("self-refine batch (reference)", f"{local['wall']:.1f} s", f"{local['ratio']:.2f}x"),
    ]
    print(f"{ITEMS} items, {ray['calls']:.0f} calls served; ideal {ray['ideal']:.1f} s")
    for name, seconds, over in rows:
        print(f"{name:<42} {seconds:>8}  {over}")
    print(f"load average (1 min) {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
