"""Real models through the Triton backend's kernels (under Triton's interpreter on machines without
a GPU), with their default settings (the KV cache on): tiny configs (one layer, hidden 32), every
graph lowered (`graphs_on_torch == 0`), outputs equal to eager, and the nodes each graph runs as
torch calls listed exactly (op, kind). The interpreter is slow: one call per model, two where the
shapes change (GPT-2's batch and length, ViT's image size); greedy decoding of a few tokens."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest
import torch

import pdyn
from pdyn.backends.triton import triton_backend
from model_suite.case import assert_close_outputs

transformers = pytest.importorskip("transformers")
TINY = {"hidden": 32, "heads": 2, "ffn": 64, "vocab": 64, "positions": 64}


class Lowered:
    """The Triton backend, keeping each graph's torch calls."""

    def __init__(self) -> None:
        self.externs: list[list[tuple[str, str]]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = triton_backend(gm, example_inputs)
        graph = getattr(compiled, "pdyn_triton", None)
        assert graph is not None, "a graph ran wholly with torch"
        self.externs.append([(e.op, e.kind) for e in graph.externs])
        return compiled


def _compare(model: torch.nn.Module, calls: list[dict[str, Any]], method: str = "forward") -> Lowered:
    model = model.eval()
    eager = copy.deepcopy(model)
    backend = Lowered()
    optimized = pdyn.optimize(model, backend=backend)
    with torch.no_grad():
        for number, kwargs in enumerate(calls):
            expected = getattr(eager, method)(**copy.deepcopy(kwargs))
            actual = getattr(optimized, method)(**copy.deepcopy(kwargs))
            assert_close_outputs(actual, expected, f"call {number}")
    stats = pdyn.stats()
    assert stats["graphs_on_torch"] == 0 and stats["graph_breaks"] == 0, stats
    assert stats["kernels"] > 0 and stats["nodes_on_torch"] == sum(map(len, backend.externs)), stats
    return backend


def _ids(batch: int, seq: int, seed: int) -> torch.Tensor:
    return torch.randint(1, TINY["vocab"], (batch, seq), generator=torch.Generator().manual_seed(seed))


def _text(*shapes: tuple[int, int]) -> list[dict[str, Any]]:
    return [{"input_ids": _ids(b, s, i)} for i, (b, s) in enumerate(shapes)]


def gpt2() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=TINY["hidden"], n_head=TINY["heads"], vocab_size=TINY["vocab"],
                                     n_positions=TINY["positions"], bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.GPT2LMHeadModel(config)


def _llama_like(config_cls: Any, model_cls: Any) -> torch.nn.Module:
    torch.manual_seed(0)
    config = config_cls(num_hidden_layers=1, hidden_size=TINY["hidden"], num_attention_heads=TINY["heads"],
                        num_key_value_heads=1, intermediate_size=TINY["ffn"], vocab_size=TINY["vocab"],
                        max_position_embeddings=TINY["positions"], bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return model_cls(config)


LINEAR, ATTENTION = ("linear", "library"), ("scaled_dot_product_attention", "library")
CACHE = [("tensor", "fallback"), ("tensor", "fallback")]  # DynamicCache's empty key and value tensors
# the attention's output made contiguous after a reshape whose layout depends on the sizes
CONTIGUOUS = ("contiguous", "fallback")


def test_gpt2_with_its_cache():
    backend = _compare(gpt2(), _text((2, 3), (3, 5)))
    addmm = ("addmm", "library")
    assert backend.externs == [[addmm, ("split", "fallback"), *CACHE, ATTENTION, CONTIGUOUS, addmm, addmm, addmm,
                                LINEAR]]


def llama() -> torch.nn.Module:
    return _llama_like(transformers.LlamaConfig, transformers.LlamaForCausalLM)


def qwen2() -> torch.nn.Module:
    return _llama_like(transformers.Qwen2Config, transformers.Qwen2ForCausalLM)


def bert() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.BertConfig(num_hidden_layers=1, hidden_size=TINY["hidden"], num_attention_heads=TINY["heads"],
                                     intermediate_size=TINY["ffn"], vocab_size=TINY["vocab"],
                                     max_position_embeddings=TINY["positions"], pad_token_id=0)
    return transformers.BertModel(config)


def t5() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.T5Config(d_model=TINY["hidden"], d_kv=TINY["hidden"] // TINY["heads"], d_ff=TINY["ffn"],
                                   num_layers=1, num_heads=TINY["heads"], vocab_size=TINY["vocab"],
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return transformers.T5Model(config)


def vit() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.ViTConfig(hidden_size=TINY["hidden"], num_hidden_layers=1, num_attention_heads=TINY["heads"],
                                    intermediate_size=TINY["ffn"], image_size=8, patch_size=4, num_channels=3)
    return transformers.ViTModel(config)


DECODER = [[LINEAR] * 3 + CACHE + [ATTENTION, CONTIGUOUS] + [LINEAR] * 5]  # q k v, o gate up down, lm head


def test_llama_with_its_cache():
    assert _compare(llama(), _text((2, 5))).externs == DECODER


def test_qwen2_with_its_cache():
    assert _compare(qwen2(), _text((2, 5))).externs == DECODER


def test_bert():
    assert _compare(bert(), _text((2, 5))).externs == [[LINEAR] * 3 + [ATTENTION, CONTIGUOUS] + [LINEAR] * 4]


def test_t5_full_forward_with_decoder_inputs():
    calls = [{"input_ids": _ids(b, s, i), "decoder_input_ids": _ids(b, d, i + 9)}
             for i, (b, s, d) in enumerate([(2, 5, 3)])]
    got = _compare(t5(), calls).externs
    attention = [LINEAR] * 3 + [ATTENTION, CONTIGUOUS, LINEAR]  # q, k, v, attention, o
    cached = [LINEAR] * 3 + CACHE + [ATTENTION, CONTIGUOUS, LINEAR]  # the same through the decoder's cache
    feed_forward = [LINEAR, LINEAR]
    assert got == [attention + feed_forward + cached + cached + feed_forward], got


def test_vit_over_changing_image_sizes():
    calls = [{"pixel_values": torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(size)),
              "interpolate_pos_encoding": True} for size in (8, 12)]
    got = _compare(vit(), calls).externs
    assert got[0] == [("conv2d", "library"), LINEAR, LINEAR, LINEAR, ATTENTION, CONTIGUOUS, CONTIGUOUS,
                      LINEAR, LINEAR, LINEAR, LINEAR], got


@torch.no_grad()
def test_gpt2_greedy_generate_equals_eager_on_kernels():
    model = gpt2().eval()
    prompt = _ids(2, 4, 7)
    expected = model.generate(prompt, max_new_tokens=3, do_sample=False)
    backend = Lowered()
    model.forward = pdyn.optimize(model.forward, backend=backend)
    assert torch.equal(model.generate(prompt, max_new_tokens=3, do_sample=False), expected)
    stats = pdyn.stats()
    assert stats["graphs_on_torch"] == 0 and stats["compiles"] == 2, stats  # the prompt, then each one-token step
    addmm, split = ("addmm", "library"), ("split", "fallback")
    step = [addmm, split, ATTENTION, CONTIGUOUS, addmm, addmm, addmm, LINEAR]  # the cache's cat is a kernel
    assert backend.externs == [step[:2] + CACHE + step[2:], step], backend.externs
