"""Where batch items run: what a missing extra for the server engine says."""

from __future__ import annotations

import sys

import pytest

from self_refine.batch.engines import ServerEngine
from self_refine.errors import ConfigError


def test_server_engine_without_the_studio_extra_says_how_to_install_it_from_a_clone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph_sdk", None)
    with pytest.raises(
        ConfigError,
        match=r'--server needs the studio extra: pip install -e "\.\[studio\]" in a clone',
    ):
        ServerEngine("http://127.0.0.1:9")
