"""A run's settings, in one place.

- `fields.py`: `RefineContext`, the settings' fields, defaults and per-field checks;
- `call.py`: a call's settings, once per call at the door: `resolve` (what they are,
  "auto" made concrete) and `check` (every refusal, before anything is written);
- `plan.py`: `Parts` (what the factory was given) and `RunPlan` (what a run's
  settings come to: prompts, select, critics, stop policies, models), kept per
  distinct settings;
- `deployment.py`: `Deployment`, what a served graph's runs may choose (models, base URLs).
"""

from self_refine.settings.deployment import Deployment
from self_refine.settings.fields import FIELD_NAMES, RefineContext

__all__ = ["FIELD_NAMES", "Deployment", "RefineContext"]
