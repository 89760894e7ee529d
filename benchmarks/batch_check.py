"""The batch regression check, run before merging any change to the batch path.

    python -m benchmarks.batch_check

Target 3's quick batch (72 items x 8 calls against the stand-in server: 500 ms
per answer, 32 at once) through both doors, `self-refine batch` and
`arefine_batch`, and the plain asyncio loop over the same client as the
machine's own baseline; each batch in a fresh process against a fresh server,
about 40 s in all. Prints each wall time over the ideal (calls x 500 ms / 32)
and the load average before and after; exits 1 when a door is above 1.1x.

A door far above the plain loop means calls are held back somewhere (the
regression of issue 25: 4.3x); a plain loop above 1.1x too means the machine
is busy: run it again when the load is lower.
"""

from __future__ import annotations

import os
import sys

from benchmarks.t3_batch import QUICK_ITEMS, measure

TARGET = 1.1
DOORS = ("library", "api")
NAMES = {"library": "self-refine batch", "api": "arefine_batch", "plain": "plain asyncio loop"}


def main() -> int:
    """Measure the doors and the plain loop; 1 when a door misses the target."""
    load = os.getloadavg()[0]
    ratios = {way: measure(way, QUICK_ITEMS)["ratio"] for way in (*DOORS, "plain")}
    for way, ratio in ratios.items():
        verdict = "reference" if way not in DOORS else "ok" if ratio <= TARGET else "ABOVE TARGET"
        print(f"{NAMES[way]:<20} {ratio:.2f}x ideal  {verdict}")
    print(f"load average (1 min) {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    return 0 if all(ratios[way] <= TARGET for way in DOORS) else 1


if __name__ == "__main__":
    sys.exit(main())
