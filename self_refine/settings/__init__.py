"""A run's settings, in one place.

- `fields.py`: `RefineContext`, the settings' fields, defaults and per-field checks;
- `resolve.py`: `resolve`, what a call's settings are ("auto" made concrete);
- `check.py`: `check`, every refusal of a call's settings, before anything is written;
- `plan.py`: `Parts` (what the factory was given) and `RunPlan` (what a run's
  settings come to), kept per distinct settings.
"""

from self_refine.settings.fields import FIELD_NAMES, NO_CRITIC, RefineContext

__all__ = ["FIELD_NAMES", "NO_CRITIC", "RefineContext"]
