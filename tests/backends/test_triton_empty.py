"""Size-0 dims through Triton's kernels (an empty KV cache, an empty batch): a kernel over zero
elements launches nothing, a reduction over an empty dim stores its identity, and the graph is
lowered, not handed to torch."""

from __future__ import annotations

import torch

import pdyn
from tests.backends.util import check, check_like_eager, randn


def _lowered(rec):
    assert all(g is not None for g in rec.graphs), "a graph ran wholly with torch"
    assert pdyn.stats()["graphs_on_torch"] == 0


def test_pointwise_reductions_and_cat_over_an_empty_dim():
    def f(x, y):
        return (x * 2 + 1).sum(-1), torch.cat([y, x], 1), x.mean(0), (x + 1).softmax(-1), x.amax(0)
    rec = check(f, (randn(3, 0), randn(3, 2)))
    _lowered(rec)
    assert rec.last.kernel_count >= 3


def test_an_empty_batch():
    def f(x, w):
        return torch.relu(x @ w + 1).sum(-1)
    _lowered(check(f, (randn(0, 4), randn(4, 5))))


def test_an_empty_cache_joined_with_new_keys_as_transformers_does():
    def f(q, k, v):
        keys = torch.cat([torch.tensor([], device=k.device), k], dim=-2)  # DynamicCache's first update
        values = torch.cat([torch.tensor([], device=v.device), v], dim=-2)
        out = torch.nn.functional.scaled_dot_product_attention(q, keys, values, is_causal=True)
        return out * 2, keys, values
    rec = check(f, (randn(2, 2, 5, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 4)),
                (randn(3, 2, 7, 4), randn(3, 2, 7, 4), randn(3, 2, 7, 4)))
    _lowered(rec)
    assert [(e.op, e.kind) for e in rec.last.externs] == [
        ("tensor", "fallback"), ("tensor", "fallback"), ("scaled_dot_product_attention", "library")]


def test_a_reduction_eager_refuses_over_an_empty_dim_raises_as_eager():
    def f(x):
        return x.amax(0) + 1
    check_like_eager(f, (randn(0, 3),), (randn(2, 3),))
