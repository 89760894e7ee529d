"""Tiny Qwen2 models and tokenizers made here, from configs (no download, random weights).

`tiny_policy()` is a chat policy with a character-level tokenizer: every printable ASCII
character is one token, so a decoded reply encodes back to the same ids and its length
in characters is its length in tokens. `write_tiny_gguf()` writes a tiny Qwen2 model with
a byte-level tokenizer as a GGUF file, as llama.cpp's conversion lays one out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _qwen2(vocab_size: int, eos: int, pad: int, seed: int) -> Any:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=pad,
        tie_word_embeddings=False,
    )
    return Qwen2ForCausalLM(config).eval()


def tiny_policy(seed: int = 0) -> tuple[Any, Any]:
    """A random two-layer Qwen2 chat model and its character-level tokenizer."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    characters = ["\n", "\t", *(chr(i) for i in range(32, 127))]
    vocab = {token: index for index, token in enumerate([*SPECIALS, "<unk>", *characters])}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    model = _qwen2(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed)
    return model, tokenizer


def write_tiny_gguf(path: Path, seed: int = 0) -> Any:
    """Write a tiny Qwen2 GGUF file (float32 tensors, byte-level BPE); return the model it holds."""
    import gguf
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    alphabet = list(bytes_to_unicode().values())
    merged = ["\u0120t", "he"]
    tokens = [*alphabet, *merged, *SPECIALS]
    eos, pad = tokens.index("<|im_end|>"), tokens.index("<|endoftext|>")
    model = _qwen2(len(tokens), eos, pad, seed)
    config = model.config
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_name("tiny qwen2")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (len(alphabet) + len(merged)) + [3] * len(SPECIALS))
    writer.add_token_merges(["\u0120 t", "h e"])
    writer.add_bos_token_id(pad)
    writer.add_eos_token_id(eos)
    writer.add_pad_token_id(pad)
    writer.add_chat_template(CHAT_TEMPLATE)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, config.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        gguf_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert gguf_name is not None, name
        writer.add_tensor(gguf_name, tensor.detach().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model


VISION_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}"
    "{{ m['content'] }}{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
    "<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_vision_policy(seed: int = 0) -> tuple[Any, Any]:
    """A random LLaVA (a one-layer CLIP encoder of 28x28 images, two-layer Qwen2) and its processor.

    The processor is built here: a CLIP image processor and the character-level tokenizer
    with an `<image>` token, which the processor expands to the image's 5 features.
    """
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        Qwen2Config,
    )

    _, tokenizer = tiny_policy()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<image>"]})
    torch.manual_seed(seed)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            image_size=28,
            patch_size=14,
            projection_dim=32,
        ),
        text_config=Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        ),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-1,
        vision_feature_select_strategy="full",
    )
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
        ),
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="full",
        num_additional_image_tokens=1,
        chat_template=VISION_TEMPLATE,
        image_token="<image>",
    )
    return LlavaForConditionalGeneration(config), processor
