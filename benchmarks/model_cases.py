"""The models the GPU benchmarks run: small Hugging Face configs with random weights, built with the
models' default settings (KV cache on, sdpa attention), and the inputs of one call.

Each case builds its model from `Size` (layers, width, heads, vocabulary) and makes the keyword
arguments of one call of (batch, length); for ViT the length is the image side in pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import transformers


SPECIAL = {"bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0}  # inside the small vocabulary


@dataclass(frozen=True)
class Size:
    layers: int = 4
    hidden: int = 512
    heads: int = 8
    vocab: int = 16384


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Size], torch.nn.Module]
    inputs: Callable[[int, int, int], dict[str, Any]]  # (batch, length, seed) -> kwargs
    decoder: bool = False  # greedy generate() applies
    image: bool = False  # the length is an image side (a multiple of the patch)


def _ids(batch: int, seq: int, seed: int, vocab: int) -> torch.Tensor:
    return torch.randint(1, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def text(size: Size) -> Callable[[int, int, int], dict[str, Any]]:
    def make(batch: int, seq: int, seed: int) -> dict[str, Any]:
        return {"input_ids": _ids(batch, seq, seed, size.vocab),
                "attention_mask": torch.ones(batch, seq, dtype=torch.long)}
    return make


def encoder_decoder(size: Size) -> Callable[[int, int, int], dict[str, Any]]:
    def make(batch: int, seq: int, seed: int) -> dict[str, Any]:
        return text(size)(batch, seq, seed) | {"decoder_input_ids": _ids(batch, max(1, seq // 2), seed + 1, size.vocab)}
    return make


def images(batch: int, side: int, seed: int) -> dict[str, Any]:
    g = torch.Generator().manual_seed(seed)
    return {"pixel_values": torch.randn(batch, 3, side, side, generator=g), "interpolate_pos_encoding": True}


def gpt2(s: Size) -> torch.nn.Module:
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=s.layers, n_embd=s.hidden, n_head=s.heads, vocab_size=s.vocab, n_positions=1024, **SPECIAL))


def llama(s: Size) -> torch.nn.Module:
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        hidden_size=s.hidden, intermediate_size=4 * s.hidden, num_hidden_layers=s.layers,
        num_attention_heads=s.heads, num_key_value_heads=s.heads, vocab_size=s.vocab, **SPECIAL))


def qwen2(s: Size) -> torch.nn.Module:  # grouped-query attention, biases on q/k/v
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        hidden_size=s.hidden, intermediate_size=4 * s.hidden, num_hidden_layers=s.layers,
        num_attention_heads=s.heads, num_key_value_heads=max(1, s.heads // 4), vocab_size=s.vocab, **SPECIAL))


def bert(s: Size) -> torch.nn.Module:
    return transformers.BertForMaskedLM(transformers.BertConfig(
        hidden_size=s.hidden, num_hidden_layers=s.layers, num_attention_heads=s.heads,
        intermediate_size=4 * s.hidden, vocab_size=s.vocab))


def t5(s: Size) -> torch.nn.Module:
    return transformers.T5ForConditionalGeneration(transformers.T5Config(
        d_model=s.hidden, d_ff=4 * s.hidden, d_kv=s.hidden // s.heads, num_layers=s.layers,
        num_heads=s.heads, vocab_size=s.vocab, decoder_start_token_id=0, pad_token_id=0))


def vit(s: Size) -> torch.nn.Module:
    return transformers.ViTForImageClassification(transformers.ViTConfig(
        hidden_size=s.hidden, num_hidden_layers=s.layers, num_attention_heads=s.heads,
        intermediate_size=4 * s.hidden, image_size=224, patch_size=16, num_labels=1000))


def cases(size: Size) -> dict[str, Case]:
    return {
        "gpt2": Case("gpt2", gpt2, text(size), decoder=True),
        "llama": Case("llama", llama, text(size), decoder=True),
        "qwen2": Case("qwen2", qwen2, text(size), decoder=True),
        "bert": Case("bert", bert, text(size)),
        "t5": Case("t5", t5, encoder_decoder(size)),
        "vit": Case("vit", vit, images, image=True),
    }
