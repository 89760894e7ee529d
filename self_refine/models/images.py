"""Which models can read the images of a task: checked before the first model call.

A chat model says it cannot with a class attribute, `accepts_images = False` (the
offline stand-in and the local text model do); any other model is taken to read
them, as the provider will say otherwise on the first call.
"""

from __future__ import annotations

from typing import Any

from self_refine.errors import ConfigError
from self_refine.models.resolve import describe_model

__all__ = ["refuse_images", "takes_images"]


def takes_images(model: Any) -> bool:
    """False for a model that says it reads text only."""
    return getattr(model, "accepts_images", None) is not False


def refuse_images(role: str, model: Any) -> None:
    """Raise ConfigError when the model of `role` cannot read the task's images."""
    if takes_images(model):
        return
    name, where = describe_model(model)
    raise ConfigError(
        f"the task has images, and the {role} model {name!r} (at {where}) reads text only: "
        'give that role a model that reads images (e.g. model="gpt-4o-mini", or a vision '
        "model behind base_url=...), or give the task as text"
    )
