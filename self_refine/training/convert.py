"""trainable_model(): the embedded GGUF model as a transformers model directory a trainer trains.

transformers reads a GGUF file (`from_pretrained(folder, gguf_file=...)`, with the
`gguf` package) as a model that remains marked GGUF-quantized: a trainer refuses to
fine-tune it and `save_pretrained` refuses to save it. Rebuilt from its config without
the quantization settings, with the dequantized weights assigned, it is a plain
float32 model. That is done once per GGUF file: the directory is written beside the
cached model (`<models cache>/transformers/<file name>/`), under a temporary name
renamed only when complete, with a manifest of the source file's sha256 and every
written file's size and sha256. A later call checks the manifest against the source
and the files (hashing again only a file whose identity changed) and converts again
when anything is off; the saved model is read back once after writing, and must give
the same logits as the converted one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from self_refine.errors import ConfigError
from self_refine.models.fetch import KNOWN_MODELS, cache_dir, local_model_path

__all__ = ["MANIFEST", "trainable_model"]

MANIFEST = "self-refine-manifest.json"
"""The file in a converted directory that says what it was made from and holds."""
_CHUNK = 1 << 20
_CHECK_TEXT = "def add(a, b):\n    return"
"""What the read-back check feeds both models."""


def trainable_model(model: str = "local", *, folder: str | Path | None = None) -> Path:
    """The transformers model directory of a local GGUF model, converted once and checked.

    `model` is a `local` model string: `local` (Qwen2.5-Coder-0.5B-Instruct),
    `local:qwen2.5-coder-1.5b` or `local:PATH.gguf`; a known model is fetched
    first if needed. The directory (`folder`, default: beside the cached models)
    holds the float32 weights, config, generation config and tokenizer with its
    chat template: `AutoModelForCausalLM.from_pretrained(path)` loads it, and so
    does `GRPOTrainer(model=str(path))`. Converting the 0.5B model takes about
    90 s and 2.4 GB of disk.
    """
    if not (model == "local" or model.startswith("local:")):
        raise ConfigError(
            f"trainable_model converts a local GGUF model ('local', 'local:NAME' or "
            f"'local:PATH.gguf'), got {model!r}"
        )
    source = local_model_path(model)
    target = Path(folder) if folder is not None else cache_dir() / "transformers" / source.stem
    digest = _source_sha256(model, source)
    if _intact(target, digest):
        return target
    _say(f"converting {source.name} into a transformers model once, into {target} ...")
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.converting-"))
    try:
        _convert(source, scratch)
        manifest = {
            "source": {"file": source.name, "sha256": digest},
            "files": {
                p.name: {"size": p.stat().st_size, "sha256": _sha256(p)}
                for p in sorted(scratch.iterdir())
            },
        }
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(scratch, target)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    _remember(target)
    _say(f"  done: {target}")
    return target


def _source_sha256(model: str, source: Path) -> str:
    """The GGUF file's sha256: a known model's (fetch verified it), else hashed here."""
    name = model.partition(":")[2].strip() or "qwen2.5-coder-0.5b"
    known = KNOWN_MODELS.get(name)
    return known.sha256 if known is not None else _sha256(source)


def _convert(source: Path, into: Path) -> None:
    """Load the GGUF file with transformers, rebuild it as a plain model, save and read back."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise ConfigError(
            f"converting a GGUF model needs the training extra ({error.name} is missing): "
            'pip install "langgraph-self-refine[training]"'
        ) from None
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"{source.name} carries no chat template: it cannot be a chat policy")
    loaded = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch.float32
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), assign=True)
    plain.tie_weights()
    plain.generation_config = loaded.generation_config
    del loaded
    plain.eval()
    plain.save_pretrained(into)
    tokenizer.save_pretrained(into)
    _check_read_back(plain, tokenizer, into)


def _check_read_back(model: Any, tokenizer: Any, folder: Path) -> None:
    """The saved directory gives the converted model's logits, or the conversion fails."""
    import torch
    from transformers import AutoModelForCausalLM

    ids = torch.tensor([tokenizer.encode(_CHECK_TEXT)])
    with torch.no_grad():
        expected = model(ids).logits
        saved = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        got = saved(ids).logits
    if not torch.allclose(expected, got, atol=1e-4, rtol=1e-4):
        raise ConfigError(
            f"the converted model saved in {folder} does not read back as it was written "
            f"(largest logit difference {float((expected - got).abs().max()):.3g})"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while block := data.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _identity(path: Path) -> list[int]:
    found = path.stat()
    return [found.st_size, found.st_ino, found.st_dev, found.st_mtime_ns, found.st_ctime_ns]


def _marker(folder: Path) -> Path:
    return folder.with_name(folder.name + ".verified")


def _remember(folder: Path) -> None:
    """Note each file's identity, so that an unchanged file is not hashed again."""
    identities = {p.name: _identity(p) for p in folder.iterdir()}
    try:
        _marker(folder).write_text(json.dumps(identities))
    except OSError:
        pass  # a cache that cannot be written is hashed again next time


def _intact(folder: Path, source_sha256: str) -> bool:
    """True when the directory was converted from this source and every file is as written."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest["source"]["sha256"] != source_sha256:
            return False
        try:
            known = json.loads(_marker(folder).read_text())
        except (OSError, ValueError):
            known = {}
        files = manifest["files"]
        on_disk = {p.name for p in folder.iterdir()} - {MANIFEST}
        if on_disk != set(files):
            return False
        for name, expected in files.items():
            path = folder / name
            if known.get(name) == _identity(path):
                continue
            if path.stat().st_size != expected["size"] or _sha256(path) != expected["sha256"]:
                return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    _remember(folder)
    return True


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
