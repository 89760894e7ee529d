"""trainable_model(): a GGUF file becomes a plain transformers model directory, once, checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from self_refine.errors import ConfigError
from self_refine.training.convert import MANIFEST, trainable_model
from tests.training.tiny import write_tiny_gguf


@pytest.fixture
def gguf_file(tmp_path: Path) -> tuple[Path, Any]:
    path = tmp_path / "tiny-qwen2.gguf"
    return path, write_tiny_gguf(path)


def _logits(model: Any, folder: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = torch.tensor([tokenizer.encode("the hat sat")])
    with torch.no_grad():
        converted = _load(folder)(ids).logits
        original = model(ids).logits
    return converted, original


def _load(folder: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder)


def test_the_gguf_model_becomes_a_plain_model_with_the_same_weights_and_chat_template(
    gguf_file: tuple[Path, Any], tmp_path: Path
) -> None:
    import torch
    from transformers import AutoTokenizer

    path, original = gguf_file
    folder = trainable_model(f"local:{path}", folder=tmp_path / "converted")

    loaded = _load(folder)
    assert getattr(loaded.config, "quantization_config", None) is None
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    converted, expected = _logits(original, folder)
    assert torch.allclose(converted, expected, atol=1e-5)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    chat = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    assert "<|im_start|>user\nhi<|im_end|>" in chat
    manifest = json.loads((folder / MANIFEST).read_text())
    assert set(manifest["files"]) == {p.name for p in folder.iterdir()} - {MANIFEST}
    assert "model.safetensors" in manifest["files"]


def test_a_converted_model_is_reused_and_a_damaged_one_converted_again(
    gguf_file: tuple[Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    path, original = gguf_file
    spec = f"local:{path}"
    folder = trainable_model(spec, folder=tmp_path / "converted")
    weights = folder / "model.safetensors"
    written = weights.stat().st_mtime_ns
    capsys.readouterr()

    assert trainable_model(spec, folder=tmp_path / "converted") == folder
    assert weights.stat().st_mtime_ns == written
    assert "converting" not in capsys.readouterr().err

    size = weights.stat().st_size
    with weights.open("r+b") as damaged:
        damaged.seek(size // 2)
        damaged.write(b"\0" * 64)
    assert trainable_model(spec, folder=tmp_path / "converted") == folder
    assert "converting tiny-qwen2.gguf" in capsys.readouterr().err
    converted, expected = _logits(original, folder)
    assert torch.allclose(converted, expected, atol=1e-5)


def test_only_local_models_convert(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="converts a local GGUF model"):
        trainable_model("gpt-4o-mini")
    with pytest.raises(ConfigError, match="no GGUF file at"):
        trainable_model(f"local:{tmp_path / 'missing.gguf'}")
